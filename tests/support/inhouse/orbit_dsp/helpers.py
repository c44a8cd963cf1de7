"""Orbit's DSP builder, in the style teams write: a helper per family called once per op,
loops over op lists, dtype configs as local variables of the builder, no torch backend
beside it. tests/test_import_families.py imports `get_orbit_dsp_backend_config` into a
project with no torch backends in spec/.
"""

import operator

import torch
import torch.ao.nn.intrinsic as nni
import torch.ao.nn.qat as nnqat
import torch.ao.nn.quantized.reference as nnqr
import torch.nn as nn
import torch.nn.functional as F
from torch.ao.quantization.backend_config import (
    BackendConfig,
    BackendPatternConfig,
    DTypeConfig,
    DTypeWithConstraints,
    ObservationType,
)
from torch.ao.quantization.fuser_method_mappings import (
    _sequential_wrapper2,
    fuse_conv_bn,
    fuse_conv_bn_relu,
)

DIFFERENT = ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT
SHARED = ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT


def _conv_family(conv, qat_conv, ref_conv, bn, conv_relu, conv_bn, conv_bn_relu, dtype_configs):
    """conv, conv + relu, conv + bn and conv + bn + relu for one dimension."""
    return [
        BackendPatternConfig(conv)
        .set_observation_type(DIFFERENT)
        .set_dtype_configs(dtype_configs)
        .set_root_module(conv)
        .set_qat_module(qat_conv)
        .set_reference_quantized_module(ref_conv),
        BackendPatternConfig((conv, nn.ReLU))
        .set_dtype_configs(dtype_configs)
        .set_fuser_method(_sequential_wrapper2(conv_relu))
        .set_fused_module(conv_relu),
        BackendPatternConfig((conv, bn))
        .set_dtype_configs(dtype_configs)
        .set_fuser_method(fuse_conv_bn)
        .set_fused_module(conv_bn),
        BackendPatternConfig((conv, bn, nn.ReLU))
        .set_dtype_configs(dtype_configs)
        .set_fuser_method(fuse_conv_bn_relu)
        .set_fused_module(conv_bn_relu),
    ]


def _ops(ops, observation_type, dtype_configs):
    return [
        BackendPatternConfig(op).set_observation_type(observation_type).set_dtype_configs(dtype_configs) for op in ops
    ]


def get_orbit_dsp_backend_config():
    """Return the `BackendConfig` of Orbit's DSP."""
    act = DTypeWithConstraints(dtype=torch.quint8, scale_min_lower_bound=2**-12)
    weighted_int8 = DTypeConfig(
        input_dtype=act,
        output_dtype=act,
        weight_dtype=torch.qint8,
        bias_dtype=torch.float,
    )
    plain_int8 = DTypeConfig(input_dtype=act, output_dtype=act)
    sigmoid_out = DTypeWithConstraints(
        dtype=torch.quint8,
        quant_min_lower_bound=0,
        quant_max_upper_bound=255,
        scale_exact_match=1.0 / 256.0,
        zero_point_exact_match=0,
    )
    fixed_int8 = DTypeConfig(input_dtype=act, output_dtype=sigmoid_out)

    configs = []
    configs += _conv_family(
        nn.Conv1d,
        nnqat.Conv1d,
        nnqr.Conv1d,
        nn.BatchNorm1d,
        nni.ConvReLU1d,
        nni.ConvBn1d,
        nni.ConvBnReLU1d,
        [weighted_int8],
    )
    configs += _conv_family(
        nn.Conv2d,
        nnqat.Conv2d,
        nnqr.Conv2d,
        nn.BatchNorm2d,
        nni.ConvReLU2d,
        nni.ConvBn2d,
        nni.ConvBnReLU2d,
        [weighted_int8],
    )
    configs.append(
        BackendPatternConfig(nn.Linear)
        .set_observation_type(DIFFERENT)
        .set_dtype_configs([weighted_int8])
        .set_root_module(nn.Linear)
        .set_qat_module(nnqat.Linear)
        .set_reference_quantized_module(nnqr.Linear)
    )
    for op in (operator.add, torch.add, operator.mul, torch.mul):
        configs.append(BackendPatternConfig(op).set_observation_type(DIFFERENT).set_dtype_configs([plain_int8]))
        configs.append(
            BackendPatternConfig((op, nn.ReLU)).set_observation_type(DIFFERENT).set_dtype_configs([plain_int8])
        )
    configs += _ops([nn.ReLU, F.relu, nn.MaxPool2d, torch.flatten, "permute"], SHARED, [plain_int8])
    configs += _ops([nn.Sigmoid, F.sigmoid, torch.sigmoid], DIFFERENT, [fixed_int8])
    return BackendConfig("orbit_dsp").set_backend_pattern_configs(configs)
