"""Backends of the standard fusion families, written as a backend author writes them, and wrong ones.

`get_fusion_families_backend_config` has one of each family torch's FX flows fuse: conv 1d/2d/3d + bn
(+ relu), conv + relu, linear + relu, linear + bn1d, bn + relu, and conv + add (+ relu) with the conv
on either side of the add (onednn's fusers), each with its fused, QAT and reference quantized modules
as torch's own builders register them. It is correct: `verify` must pass it with it as the reference
and without a reference (tests/test_verify_corpus.py).

The other builders are that backend made wrong in one place each, as a backend author gets it wrong;
without a reference, `verify` must fail each, naming the pattern:
- `get_wrong_fused_module_backend_config`: (nn.Conv2d, nn.ReLU) says its fused module is
  nni.ConvBnReLU2d, while its fuser makes nni.ConvReLU2d;
- `get_wrong_fuser_backend_config`: (nn.Linear, nn.ReLU)'s fuser drops the relu;
- `get_missing_weight_observer_backend_config`: nn.Linear's only dtype config has float weights, so
  nothing observes the weight and no reference quantized linear is made;
- `get_root_module_mismatch_backend_config`: nni.LinearReLU's root module and reference quantized
  module are a conv's.
"""

import operator

import torch
import torch.ao.nn.intrinsic as nni
import torch.ao.nn.intrinsic.qat as nniqat
import torch.ao.nn.qat as nnqat
import torch.ao.nn.quantized.reference as nnqr
import torch.nn as nn
from torch.ao.quantization.backend_config import BackendConfig, BackendPatternConfig, DTypeConfig, ObservationType
from torch.ao.quantization.backend_config.onednn import (
    _conv_add_extra_inputs_getter_left,
    _conv_add_extra_inputs_getter_right,
    _conv_add_relu_extra_inputs_getter_left,
    _conv_add_relu_extra_inputs_getter_right,
    _conv_add_relu_root_node_getter_left,
    _conv_add_relu_root_node_getter_right,
    _conv_add_root_node_getter_left,
    _conv_add_root_node_getter_right,
    _fuse_conv_add_left,
    _fuse_conv_add_relu_left,
    _fuse_conv_add_relu_right,
    _fuse_conv_add_right,
)
from torch.ao.quantization.fuser_method_mappings import (
    _sequential_wrapper2,
    fuse_conv_bn,
    fuse_conv_bn_relu,
    fuse_linear_bn,
)
from torch.ao.quantization.utils import MatchAllNode

families_weighted_dtype_config = DTypeConfig(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)
families_default_dtype_config = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)
families_float_weight_dtype_config = DTypeConfig(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.float, bias_dtype=torch.float
)
OUTPUT_OBSERVED = ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT

CONV = {
    1: (nn.Conv1d, nn.BatchNorm1d, nnqat.Conv1d, nnqr.Conv1d),
    2: (nn.Conv2d, nn.BatchNorm2d, nnqat.Conv2d, nnqr.Conv2d),
    3: (nn.Conv3d, nn.BatchNorm3d, nnqat.Conv3d, nnqr.Conv3d),
}
FUSED = {
    1: (nni.ConvReLU1d, nniqat.ConvReLU1d, nni.ConvBn1d, nniqat.ConvBn1d, nni.ConvBnReLU1d, nniqat.ConvBnReLU1d),
    2: (nni.ConvReLU2d, nniqat.ConvReLU2d, nni.ConvBn2d, nniqat.ConvBn2d, nni.ConvBnReLU2d, nniqat.ConvBnReLU2d),
    3: (nni.ConvReLU3d, nniqat.ConvReLU3d, nni.ConvBn3d, nniqat.ConvBn3d, nni.ConvBnReLU3d, nniqat.ConvBnReLU3d),
}


def _weighted(pattern, root, reference):
    return (
        BackendPatternConfig(pattern)
        .set_observation_type(OUTPUT_OBSERVED)
        .set_dtype_configs([families_weighted_dtype_config])
        .set_root_module(root)
        .set_reference_quantized_module(reference)
    )


def _fusion(pattern, fuser, fused):
    return (
        BackendPatternConfig(pattern)
        .set_dtype_configs([families_weighted_dtype_config])
        .set_fuser_method(fuser)
        .set_fused_module(fused)
    )


def _conv_configs(dims):
    conv, bn, qat, reference = CONV[dims]
    relu_fused, relu_qat, bn_fused, bn_qat, bn_relu_fused, bn_relu_qat = FUSED[dims]
    return [
        _weighted(conv, conv, reference).set_qat_module(qat),
        _weighted(qat, conv, reference),
        _fusion((conv, nn.ReLU), _sequential_wrapper2(relu_fused), relu_fused),
        _weighted(relu_fused, conv, reference).set_qat_module(relu_qat),
        _weighted(relu_qat, conv, reference),
        _fusion((conv, bn), fuse_conv_bn, bn_fused),
        _fusion((conv, bn, nn.ReLU), fuse_conv_bn_relu, bn_relu_fused),
        _weighted(bn_fused, conv, reference).set_qat_module(bn_qat),
        _weighted(bn_relu_fused, conv, reference).set_qat_module(bn_relu_qat),
        _weighted(bn_qat, conv, reference),
        _weighted(bn_relu_qat, conv, reference),
    ]


def _conv_add_configs():
    """conv2d + add (+ relu), the conv on either side of the add, as torch's onednn builder registers them."""
    configs = []
    for add in (torch.add, operator.add):
        for pattern, fuser, root, extra, fused in (
            ((add, nn.Conv2d, MatchAllNode), _fuse_conv_add_left, _conv_add_root_node_getter_left,
             _conv_add_extra_inputs_getter_left, nni.ConvAdd2d),
            ((add, MatchAllNode, nn.Conv2d), _fuse_conv_add_right, _conv_add_root_node_getter_right,
             _conv_add_extra_inputs_getter_right, nni.ConvAdd2d),
            ((nn.ReLU, (add, nn.Conv2d, MatchAllNode)), _fuse_conv_add_relu_left,
             _conv_add_relu_root_node_getter_left, _conv_add_relu_extra_inputs_getter_left, nni.ConvAddReLU2d),
            ((nn.ReLU, (add, MatchAllNode, nn.Conv2d)), _fuse_conv_add_relu_right,
             _conv_add_relu_root_node_getter_right, _conv_add_relu_extra_inputs_getter_right, nni.ConvAddReLU2d),
        ):  # fmt: skip
            configs.append(
                BackendPatternConfig()
                ._set_pattern_complex_format(pattern)
                .set_observation_type(OUTPUT_OBSERVED)
                .set_dtype_configs([families_weighted_dtype_config])
                .set_fuser_method(fuser)
                ._set_root_node_getter(root)
                ._set_extra_inputs_getter(extra)
                .set_fused_module(fused)
            )
    configs += [
        _weighted(nni.ConvAdd2d, nn.Conv2d, nnqr.Conv2d),
        _weighted(nni.ConvAddReLU2d, nn.Conv2d, nnqr.Conv2d),
    ]
    return configs


def _linear_configs():
    return [
        _weighted(nn.Linear, nn.Linear, nnqr.Linear).set_qat_module(nnqat.Linear),
        _weighted(nnqat.Linear, nn.Linear, nnqr.Linear),
        _fusion((nn.Linear, nn.ReLU), _sequential_wrapper2(nni.LinearReLU), nni.LinearReLU),
        _weighted(nni.LinearReLU, nn.Linear, nnqr.Linear).set_qat_module(nniqat.LinearReLU),
        _weighted(nniqat.LinearReLU, nn.Linear, nnqr.Linear),
        _fusion((nn.Linear, nn.BatchNorm1d), fuse_linear_bn, nni.LinearBn1d),
        _weighted(nni.LinearBn1d, nn.Linear, nnqr.Linear).set_qat_module(nniqat.LinearBn1d),
        _weighted(nniqat.LinearBn1d, nn.Linear, nnqr.Linear),
    ]


def _bn_relu_configs():
    return [
        BackendPatternConfig((nn.BatchNorm2d, nn.ReLU))
        .set_dtype_configs([families_default_dtype_config])
        .set_fuser_method(_sequential_wrapper2(nni.BNReLU2d))
        .set_fused_module(nni.BNReLU2d),
        BackendPatternConfig(nni.BNReLU2d).set_observation_type(OUTPUT_OBSERVED)
        .set_dtype_configs([families_default_dtype_config]),
        BackendPatternConfig(nn.BatchNorm2d).set_observation_type(OUTPUT_OBSERVED)
        .set_dtype_configs([families_default_dtype_config]),
        BackendPatternConfig(nn.ReLU).set_observation_type(ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT)
        .set_dtype_configs([families_default_dtype_config]),
    ]  # fmt: skip


def _families(name: str, linear=None) -> BackendConfig:
    configs = [c for dims in (1, 2, 3) for c in _conv_configs(dims)]
    configs += _conv_add_configs() + (linear if linear is not None else _linear_configs()) + _bn_relu_configs()
    return BackendConfig(name).set_backend_pattern_configs(configs)


def get_fusion_families_backend_config():
    """Return the `BackendConfig` of a backend with each standard fusion family."""
    return _families("fusion_families")


def get_wrong_fused_module_backend_config():
    """(nn.Conv2d, nn.ReLU) names nni.ConvBnReLU2d as its fused module; its fuser makes nni.ConvReLU2d."""
    config = _families("wrong_fused_module")
    return config.set_backend_pattern_config(
        _fusion((nn.Conv2d, nn.ReLU), _sequential_wrapper2(nni.ConvReLU2d), nni.ConvBnReLU2d)
    )


def fuse_linear_dropping_relu(is_qat, linear, relu):
    """A fuser that forgets the relu."""
    return linear


def get_wrong_fuser_backend_config():
    """(nn.Linear, nn.ReLU)'s fuser drops the relu."""
    config = _families("wrong_fuser")
    return config.set_backend_pattern_config(_fusion((nn.Linear, nn.ReLU), fuse_linear_dropping_relu, nni.LinearReLU))


def get_missing_weight_observer_backend_config():
    """nn.Linear's dtype config leaves the weight in float: nothing observes it."""
    linear = [c for c in _linear_configs() if c.pattern is not nn.Linear]
    float_weight = (
        BackendPatternConfig(nn.Linear)
        .set_observation_type(OUTPUT_OBSERVED)
        .set_dtype_configs([families_float_weight_dtype_config])
        .set_root_module(nn.Linear)
        .set_reference_quantized_module(nnqr.Linear)
        .set_qat_module(nnqat.Linear)
    )
    return _families("missing_weight_observer", [float_weight, *linear])


def get_root_module_mismatch_backend_config():
    """nni.LinearReLU's root module and reference quantized module are a conv's."""
    config = _families("root_module_mismatch")
    return config.set_backend_pattern_config(
        _weighted(nni.LinearReLU, nn.Conv2d, nnqr.Conv2d).set_qat_module(nniqat.LinearReLU)
    )
