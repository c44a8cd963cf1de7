"""An in-house builder, written the way a hardware team writes one over three years.

A dict of op lists, loops over it, `functools.partial`, `copy.deepcopy`, a closure
made by a factory function, its own fused module with a classmethod fuser, its own
`fuse_conv_bn` and `fuse_conv_bn_relu` (the names of torch's functions), numbers
spelt as a reviewer reads them (`2 ** -12`), and two constraints that differ only in
one bound. tests/test_import_inhouse.py imports `get_acme_npu_backend_config`.
"""

import copy
import functools
import operator

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.ao.quantization.backend_config import (
    BackendConfig,
    BackendPatternConfig,
    DTypeConfig,
    DTypeWithConstraints,
    ObservationType,
)

# The accelerator's activation range: scales no finer than 2 ** -12.
ACT = DTypeWithConstraints(dtype=torch.quint8, scale_min_lower_bound=2 ** -12)
# Its output stage clips to 0..127 once a relu ran.
ACT_RELU = DTypeWithConstraints(dtype=torch.quint8, quant_min_lower_bound=0, quant_max_upper_bound=127,
                                scale_min_lower_bound=2 ** -12)
WEIGHT = DTypeWithConstraints(dtype=torch.qint8, quant_min_lower_bound=-127, quant_max_upper_bound=127)

weighted = DTypeConfig(input_dtype=ACT, output_dtype=ACT, weight_dtype=WEIGHT, bias_dtype=torch.float)
weighted_relu = copy.deepcopy(weighted)
weighted_relu.output_dtype_with_constraints = ACT_RELU
activation = DTypeConfig(input_dtype=ACT, output_dtype=ACT)

OPS = {
    "conv": [nn.Conv1d, nn.Conv2d],
    "linear": [nn.Linear],
    "binary": [operator.add, torch.add, operator.mul, torch.mul],
    "shared": [nn.ReLU, F.relu, nn.ReLU6, F.relu6, nn.MaxPool2d, torch.flatten],
}


class ConvReLU62d(nn.Sequential):
    """This accelerator fuses conv + relu6 into one block."""

    def __init__(self, conv, relu6):
        super().__init__(conv, relu6)

    @classmethod
    def fuser_method(cls, is_qat, conv, relu6):
        return cls(conv, relu6)


def fuse_conv_bn(is_qat, conv, bn):
    """This team's own conv + bn fuser: folds bn in eval, keeps both for QAT."""
    if is_qat:
        return nn.Sequential(conv, bn)
    return nn.Sequential(conv, bn)


def fuse_conv_bn_relu(is_qat, conv, bn, relu):
    """This team's own conv + bn + relu fuser."""
    return nn.Sequential(conv, bn, relu)


def _fuse_with(cls, is_qat, *modules):
    return cls(*modules)


def _make_relu6_fuser(cls):
    def fuser(is_qat, conv, relu6):
        return cls(conv, relu6)

    return fuser


def _weighted_configs(ops):
    configs = []
    for op in ops:
        configs.append(
            BackendPatternConfig(op)
            .set_observation_type(ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT)
            .set_dtype_configs([weighted])
            .set_root_module(op)
        )
        configs.append(
            BackendPatternConfig((op, nn.ReLU))
            .set_dtype_configs([weighted_relu])
            .set_fuser_method(functools.partial(_fuse_with, nn.Sequential))
        )
    return configs


def get_acme_npu_backend_config():
    """Return the `BackendConfig` of ACME's NPU."""
    configs = _weighted_configs(OPS["conv"]) + _weighted_configs(OPS["linear"])
    for conv, bn in ((nn.Conv1d, nn.BatchNorm1d), (nn.Conv2d, nn.BatchNorm2d)):
        configs.append(BackendPatternConfig((conv, bn)).set_dtype_configs([weighted]).set_fuser_method(fuse_conv_bn))
        configs.append(
            BackendPatternConfig((conv, bn, nn.ReLU))
            .set_dtype_configs([weighted_relu])
            .set_fuser_method(fuse_conv_bn_relu)
        )
    configs.append(
        BackendPatternConfig((nn.Conv2d, nn.ReLU6))
        .set_dtype_configs([weighted_relu])
        .set_fuser_method(ConvReLU62d.fuser_method)
        .set_fused_module(ConvReLU62d)
    )
    configs.append(
        BackendPatternConfig((nn.Conv1d, nn.ReLU6))
        .set_dtype_configs([weighted_relu])
        .set_fuser_method(_make_relu6_fuser(nn.Sequential))
    )
    for op in OPS["binary"]:
        configs.append(
            BackendPatternConfig(op)
            .set_observation_type(ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT)
            .set_dtype_configs([activation])
        )
    for op in OPS["shared"]:
        configs.append(
            BackendPatternConfig(op)
            .set_observation_type(ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT)
            .set_dtype_configs([activation])
        )
    return BackendConfig("acme_npu").set_backend_pattern_configs(configs)
