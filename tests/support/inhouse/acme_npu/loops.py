"""ACME's NPU builder as backend.py has it, with only what today's import reads.

The same dict of op lists and loops, `functools.partial`, `copy.deepcopy`, a closure
made by a factory function and constraints as backend.py; its fusers are module-level
functions named for this team (no classmethod, no function named like torch's).
tests/test_import_compaction.py imports `get_acme_npu_loops_backend_config`.
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


def acme_fold_bn(is_qat, conv, bn):
    """This team's conv + bn fuser: keeps both, the compiler folds them."""
    return nn.Sequential(conv, bn)


def acme_fold_bn_relu(is_qat, conv, bn, relu):
    """This team's conv + bn + relu fuser."""
    return nn.Sequential(conv, bn, relu)


def fuse_with(cls, is_qat, *modules):
    return cls(*modules)


def make_relu6_fuser(cls):
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
            .set_fuser_method(functools.partial(fuse_with, nn.Sequential))
        )
    return configs


def get_acme_npu_loops_backend_config():
    """Return the `BackendConfig` of ACME's NPU."""
    configs = _weighted_configs(OPS["conv"]) + _weighted_configs(OPS["linear"])
    for conv, bn in ((nn.Conv1d, nn.BatchNorm1d), (nn.Conv2d, nn.BatchNorm2d)):
        configs.append(BackendPatternConfig((conv, bn)).set_dtype_configs([weighted]).set_fuser_method(acme_fold_bn))
        configs.append(
            BackendPatternConfig((conv, bn, nn.ReLU))
            .set_dtype_configs([weighted_relu])
            .set_fuser_method(acme_fold_bn_relu)
        )
    for conv in OPS["conv"]:
        configs.append(
            BackendPatternConfig((conv, nn.ReLU6))
            .set_dtype_configs([weighted_relu])
            .set_fuser_method(make_relu6_fuser(nn.Sequential))
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
