"""ACME's NPU as the team first wrote it: no constraint or dtype config bound to a global.

tests/test_import_readable.py imports `get_acme_readable_backend_config`. Every constraint is
made by a helper, every dtype config inside the builder, so `import` must name them from what
they hold; the numbers are spelt as a reviewer reads them (`2 ** -12`, `1.0 / 256.0`), one is
computed (`_finest_weight_scale()`), and two constraints differ only in their quantization
range. Two of its fusers are private helpers (`_fuse_with`, `_make_relu6_fuser`).
"""

import copy
import functools

import torch
import torch.nn as nn
from torch.ao.quantization.backend_config import (
    BackendConfig,
    BackendPatternConfig,
    DTypeConfig,
    DTypeWithConstraints,
    ObservationType,
)


def fuse_conv_bn_relu(is_qat, conv, bn, relu):
    """This team's own conv + bn + relu fuser."""
    return nn.Sequential(conv, bn, relu)


def _fuse_with(cls, is_qat, *modules):
    return cls(*modules)


def _make_relu6_fuser(cls):
    def fuser(is_qat, conv, relu6):
        return cls(conv, relu6)

    return fuser


def _activation(relu=False):
    if relu:  # the output stage clips to 0..127 once a relu ran
        return DTypeWithConstraints(
            dtype=torch.quint8, quant_min_lower_bound=0, quant_max_upper_bound=127, scale_min_lower_bound=2 ** -12
        )
    return DTypeWithConstraints(dtype=torch.quint8, scale_min_lower_bound=2 ** -12)


def _finest_weight_scale():
    return 1 / 3


def get_acme_readable_backend_config():
    """Return the `BackendConfig` of ACME's NPU, as first written."""
    weight = DTypeWithConstraints(
        dtype=torch.qint8, quant_min_lower_bound=-127, quant_max_upper_bound=127,
        scale_min_lower_bound=_finest_weight_scale(),
    )
    weighted = DTypeConfig(input_dtype=_activation(), output_dtype=_activation(), weight_dtype=weight,
                           bias_dtype=torch.float)
    weighted_relu = copy.deepcopy(weighted)
    weighted_relu.output_dtype_with_constraints = _activation(relu=True)
    activation = DTypeConfig(input_dtype=_activation(), output_dtype=_activation())
    sigmoid_output = DTypeWithConstraints(
        dtype=torch.quint8, quant_min_lower_bound=0, quant_max_upper_bound=255,
        scale_exact_match=1.0 / 256.0, zero_point_exact_match=0,
    )
    sigmoid = DTypeConfig(input_dtype=_activation(), output_dtype=sigmoid_output)
    configs = []
    for op in (nn.Conv2d, nn.Linear):
        configs.append(BackendPatternConfig(op).set_dtype_configs([weighted]).set_root_module(op))
        configs.append(
            BackendPatternConfig((op, nn.ReLU))
            .set_dtype_configs([weighted_relu])
            .set_fuser_method(functools.partial(_fuse_with, nn.Sequential))
        )
    configs.append(
        BackendPatternConfig((nn.Conv2d, nn.BatchNorm2d, nn.ReLU))
        .set_dtype_configs([weighted_relu])
        .set_fuser_method(fuse_conv_bn_relu)
    )
    configs.append(
        BackendPatternConfig((nn.Conv2d, nn.ReLU6))
        .set_dtype_configs([weighted_relu])
        .set_fuser_method(_make_relu6_fuser(nn.Sequential))
    )
    configs.append(BackendPatternConfig(nn.Sigmoid).set_dtype_configs([sigmoid]))
    for op in (nn.ReLU, nn.MaxPool2d):
        configs.append(
            BackendPatternConfig(op)
            .set_observation_type(ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT)
            .set_dtype_configs([activation])
        )
    return BackendConfig("acme_readable").set_backend_pattern_configs(configs)
