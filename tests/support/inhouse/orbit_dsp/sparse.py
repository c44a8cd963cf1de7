"""Orbit's sparse-conv builder, in spconv's style: it loops over a set of its conv classes, so the order of
their patterns is the set's iteration order, which changes between runs.

spconv's classes hash by identity (their addresses); these hash by name and the interpreter's string hash
seed, so that a test can make two runs that differ for certain (PYTHONHASHSEED). tests/test_import_order.py
imports `get_orbit_sparse_backend_config`.
"""

import torch
import torch.nn as nn
from torch.ao.quantization.backend_config import BackendConfig, BackendPatternConfig, DTypeConfig


class _HashedByName(type):
    def __hash__(cls):
        return hash(cls.__qualname__)


class SubMConv3d(nn.Conv3d, metaclass=_HashedByName):
    pass


class SparseConv3d(nn.Conv3d, metaclass=_HashedByName):
    pass


class SparseInverseConv3d(nn.Conv3d, metaclass=_HashedByName):
    pass


class SparseConvReLU(nn.Sequential):
    pass


SPARSE_CONVS = {SubMConv3d, SparseConv3d, SparseInverseConv3d}

int8 = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8)


def fuse_sparse_conv_relu(is_qat, conv, relu):
    return SparseConvReLU(conv, relu)


def get_orbit_sparse_backend_config():
    """Return the `BackendConfig` of Orbit's sparse accelerator."""
    configs = [BackendPatternConfig(nn.Linear).set_dtype_configs([int8]).set_root_module(nn.Linear)]
    for conv in SPARSE_CONVS:
        configs.append(BackendPatternConfig(conv).set_dtype_configs([int8]).set_root_module(conv))
        configs.append(
            BackendPatternConfig((conv, nn.ReLU))
            .set_dtype_configs([int8])
            .set_fuser_method(fuse_sparse_conv_relu)
            .set_fused_module(SparseConvReLU)
        )
    configs.append(BackendPatternConfig(nn.ReLU).set_dtype_configs([int8]))
    return BackendConfig("orbit_sparse").set_backend_pattern_configs(configs)
