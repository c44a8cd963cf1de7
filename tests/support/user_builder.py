"""A backend author's own dynamic builder, written the way torch writes its builders.

tests/test_import.py imports it with `python -m generator import`. It has what an
imported spec must reproduce: constrained dtypes, a fuser that is a module-level
function of this module (to be imported, not copied), a `_sequential_wrapper2`
closure, a dtype-config list shared by many patterns, and a pattern registered
twice (torch keeps the first position with the later content). The other
builders here are the ones `import` must refuse.
"""

import functools
import operator

import torch
import torch.ao.nn.intrinsic as nni
import torch.nn as nn
import torch.nn.functional as F
from torch.ao.quantization.backend_config import (
    BackendConfig,
    BackendPatternConfig,
    DTypeConfig,
    DTypeWithConstraints,
    ObservationType,
)
from torch.ao.quantization.fuser_method_mappings import _sequential_wrapper2

act_quint8_scale_min_2_neg_12 = DTypeWithConstraints(dtype=torch.quint8, scale_min_lower_bound=2**-12)
weight_qint8_neg_127_to_127 = DTypeWithConstraints(
    dtype=torch.qint8, quant_min_lower_bound=-127, quant_max_upper_bound=127
)
user_weighted_dtype_config = DTypeConfig(
    input_dtype=act_quint8_scale_min_2_neg_12,
    output_dtype=act_quint8_scale_min_2_neg_12,
    weight_dtype=weight_qint8_neg_127_to_127,
    bias_dtype=torch.float,
)
user_default_dtype_config = DTypeConfig(
    input_dtype=act_quint8_scale_min_2_neg_12, output_dtype=act_quint8_scale_min_2_neg_12
)


def fuse_linear_relu(is_qat, linear, relu):
    """This backend's own fuser: an imported spec must import it, not copy it."""
    if is_qat:
        raise NotImplementedError("this backend fuses eval modules only")
    return nni.LinearReLU(linear, relu)


def get_user_backend_config():
    """Return the `BackendConfig` of a backend that is not torch's."""
    weighted = [user_weighted_dtype_config]
    shared = [user_default_dtype_config]
    configs = [
        BackendPatternConfig(op).set_dtype_configs(shared)
        for op in (torch.add, operator.add, operator.mul, nn.ReLU, F.relu, nn.Hardswish, "mean")
    ]
    configs += [
        BackendPatternConfig(nn.Linear).set_dtype_configs(weighted).set_root_module(nn.Linear),
        BackendPatternConfig((nn.Linear, nn.ReLU))
        .set_dtype_configs(weighted)
        .set_fuser_method(fuse_linear_relu)
        .set_fused_module(nni.LinearReLU),
        BackendPatternConfig((nn.Conv2d, nn.ReLU))
        .set_dtype_configs(weighted)
        .set_fuser_method(_sequential_wrapper2(nni.ConvReLU2d))
        .set_fused_module(nni.ConvReLU2d),
        # Registered again: the relu module keeps its position above, with this content.
        BackendPatternConfig(nn.ReLU)
        .set_observation_type(ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT)
        .set_dtype_configs(shared),
    ]
    return BackendConfig("user_backend").set_backend_pattern_configs(configs)


def get_unnamed_closure_backend_config():
    """A fuser closure that no template matches and no import path names."""

    def fuse_reversed(is_qat, conv, relu):
        return nn.Sequential(relu, conv)

    config = (
        BackendPatternConfig((nn.Conv2d, nn.ReLU))
        .set_dtype_configs([user_weighted_dtype_config])
        .set_fuser_method(fuse_reversed)
    )
    return BackendConfig("unnamed").set_backend_pattern_config(config)


def get_not_a_backend_config():
    return {"name": "not a BackendConfig"}


def get_raising_backend_config():
    raise RuntimeError("this backend needs a license server")


def make_backend_config(name):
    """Return the `BackendConfig` of one of this vendor's backends."""
    config = BackendPatternConfig(nn.ReLU).set_dtype_configs([user_default_dtype_config])
    return BackendConfig(name).set_backend_pattern_configs([config])


# Builders that are not plain functions: each imports to a spec that regenerates, equal.
get_partial_backend_config = functools.partial(make_backend_config, "partial_backend")
get_lambda_backend_config = lambda: make_backend_config("lambda_backend")  # noqa: E731


class Vendor:
    """A vendor's namespace of builders."""

    @staticmethod
    def get_backend_config():
        return make_backend_config("static_backend")

    def __call__(self):
        return make_backend_config("object_backend")


get_object_backend_config = Vendor()


def get_empty_backend_config():
    """Return a backend that quantizes nothing yet."""
    return BackendConfig("empty_backend")


def get_default_named_backend_config():
    """torch's BackendConfig() has the empty name: the generated builder returns it too."""
    return make_backend_config(BackendConfig().name)


def get_fbgemm_with_another_relu_backend_config():
    """torch's fbgemm builder with one pattern changed: not what spec/fbgemm.py builds."""
    from torch.ao.quantization.backend_config import get_fbgemm_backend_config

    relu = BackendPatternConfig(nn.ReLU).set_dtype_configs([user_default_dtype_config])
    return get_fbgemm_backend_config().set_backend_pattern_config(relu)


def get_native_with_another_relu_backend_config():
    """torch's native builder with one pattern changed: spec/native.py declares a second backend."""
    from torch.ao.quantization.backend_config import get_native_backend_config

    relu = BackendPatternConfig(nn.ReLU).set_dtype_configs([user_default_dtype_config])
    return get_native_backend_config().set_backend_pattern_config(relu)
