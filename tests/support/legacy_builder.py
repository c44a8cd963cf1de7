"""A builder written the way torch 1.13's were: fusers made by factories.

torch 1.13 registered fusions in the reversed nested tuple format (`(nn.ReLU, nn.Conv2d)`)
with fusers made by `reverse2(f)`, `reverse3(f)` and `reverse_sequential_wrapper2(Module)`
(torch.ao.quantization.fuser_method_mappings), which torch 2 no longer has under those
names; they are re-created here as 1.13 wrote them. A vendor's own factory
(`make_fuser(cls)`), a factory with a keyword-only argument, torch's
`_sequential_wrapper2` and `functools.partial` complete the set. tests/test_import.py
imports `get_legacy_backend_config` with `python -m generator import`; the other
builders are ones `import` must refuse.
"""

import functools

import torch
import torch.ao.nn.intrinsic as nni
import torch.nn as nn
from torch.ao.quantization.backend_config import BackendConfig, BackendPatternConfig, DTypeConfig
from torch.ao.quantization.fuser_method_mappings import _sequential_wrapper2, fuse_conv_bn, fuse_conv_bn_relu

legacy_dtype_config = DTypeConfig(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)


# torch 1.13, torch/ao/quantization/fuser_method_mappings.py
def reverse_sequential_wrapper2(sequential):
    """Given a sequential class for two modules, return a function that takes
    is_qat, and then two modules as argument, that ignores the is_qat flag
    and always returns the sequential that combines the two input modules, with
    the order of two inputs reversed
    """

    def fuser_method(is_qat, m1, m2):
        return sequential(m2, m1)

    return fuser_method


def reverse2(f):
    def reversed(is_qat, x, y):
        return f(is_qat, y, x)

    return reversed


def reverse3(f):
    def reversed(is_qat, x, w):
        y, z = w
        return f(is_qat, z, y, x)

    return reversed


# A vendor's own factories.
def make_fuser(cls):
    """A fuser that wraps the matched modules, in pattern order, in `cls`."""

    def fuse(is_qat, *modules):
        return cls(*modules)

    return fuse


def make_checked_fuser(cls, *, qat_allowed=True):
    def fuse(is_qat, first, second):
        if is_qat and not qat_allowed:
            raise NotImplementedError(f"{cls.__name__} is not fused for QAT")
        return cls(first, second)

    return fuse


def fuse_with(cls, is_qat, first, second):
    """A fuser taking its module class first, for functools.partial."""
    return cls(first, second)


def _config(pattern):
    return BackendPatternConfig()._set_pattern_complex_format(pattern).set_dtype_configs([legacy_dtype_config])


def get_legacy_backend_config():
    """Return the `BackendConfig` of a backend written for torch 1.13."""
    configs = [
        _config((nn.ReLU, nn.Conv2d))
        .set_fuser_method(reverse_sequential_wrapper2(nni.ConvReLU2d))
        .set_fused_module(nni.ConvReLU2d),
        _config((nn.BatchNorm2d, nn.Conv2d)).set_fuser_method(reverse2(fuse_conv_bn)).set_fused_module(nni.ConvBn2d),
        _config((nn.ReLU, (nn.BatchNorm2d, nn.Conv2d)))
        .set_fuser_method(reverse3(fuse_conv_bn_relu))
        .set_fused_module(nni.ConvBnReLU2d),
        BackendPatternConfig((nn.Linear, nn.ReLU))
        .set_dtype_configs([legacy_dtype_config])
        .set_fuser_method(make_fuser(nni.LinearReLU))
        .set_fused_module(nni.LinearReLU),
        BackendPatternConfig((nn.Conv1d, nn.ReLU))
        .set_dtype_configs([legacy_dtype_config])
        .set_fuser_method(make_checked_fuser(nni.ConvReLU1d, qat_allowed=False))
        .set_fused_module(nni.ConvReLU1d),
        BackendPatternConfig((nn.Conv3d, nn.ReLU))
        .set_dtype_configs([legacy_dtype_config])
        .set_fuser_method(functools.partial(fuse_with, nni.ConvReLU3d))
        .set_fused_module(nni.ConvReLU3d),
        BackendPatternConfig((nn.BatchNorm1d, nn.ReLU))
        .set_dtype_configs([legacy_dtype_config])
        .set_fuser_method(reverse2(reverse2(_sequential_wrapper2(nni.BNReLU2d))))
        .set_fused_module(nni.BNReLU2d),
    ]
    return BackendConfig("legacy").set_backend_pattern_configs(configs)


def get_local_class_backend_config():
    """A factory closure over a class defined inside the builder: nothing can import it."""

    class LocalConvReLU(nn.Sequential):
        pass

    config = (
        BackendPatternConfig((nn.Conv2d, nn.ReLU))
        .set_dtype_configs([legacy_dtype_config])
        .set_fuser_method(make_fuser(LocalConvReLU))
    )
    return BackendConfig("local_class").set_backend_pattern_configs([config])
