"""The BackendConfig of PyTorch's own unit test of BackendConfig, made the way the test makes it.

Source: pytorch/pytorch, test/quantization/core/test_backend_config.py, TestBackendConfig
(`_get_backend_op_config1`, `_get_backend_op_config2` and `test_backend_config_to_dict`). Adapted: the class
derives from unittest.TestCase instead of torch's QuantizationTestCase (the same attributes and methods the
configs use), and module-level functions return the configs the test builds.

- Its fuser is the class attribute `_fuser_method = _sequential_wrapper2(nni.LinearReLU)` read through `self`:
  a bound method of that closure, bound to the test's instance. `get_test_backend_config` registers it as the
  test does; nothing outside the builder can name the instance, so a spec cannot either.
- `get_test_class_attribute_backend_config` reads the same attribute from the class (the function itself).
- `get_test_local_getter_backend_config` defines its extra-inputs getter inside a test method, which returns
  a BackendConfig, not the getter.
"""
# ruff: noqa  (third-party code kept in its own style)
import unittest

import torch
import torch.ao.nn.intrinsic as nni
import torch.ao.nn.qat as nnqat
import torch.ao.nn.quantized.reference as nnqr
import torch.ao.quantization.backend_config.utils  # noqa: F401 (torch 2.13: set_backend_pattern_config needs it imported)

from torch.ao.quantization.backend_config import (
    BackendConfig,
    BackendPatternConfig,
    DTypeConfig,
    ObservationType,
)
from torch.ao.quantization.fuser_method_mappings import _sequential_wrapper2
from torch.ao.quantization.fx.quantize_handler import _default_root_node_getter


class TestBackendConfig(unittest.TestCase):
    dtype_config1 = DTypeConfig(
        input_dtype=torch.quint8,
        output_dtype=torch.quint8,
        weight_dtype=torch.qint8,
        bias_dtype=torch.float
    )

    dtype_config2 = DTypeConfig(
        input_dtype=torch.float16,
        output_dtype=torch.float,
        is_dynamic=True
    )

    _fuser_method = _sequential_wrapper2(nni.LinearReLU)

    def _get_backend_op_config1(self):
        return BackendPatternConfig((torch.nn.Linear, torch.nn.ReLU)) \
            .set_observation_type(ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT) \
            .add_dtype_config(self.dtype_config1) \
            .add_dtype_config(self.dtype_config2) \
            .set_root_module(torch.nn.Linear) \
            .set_qat_module(nnqat.Linear) \
            .set_reference_quantized_module(nnqr.Linear) \
            .set_fused_module(nni.LinearReLU) \
            .set_fuser_method(self._fuser_method)

    def test_backend_config_with_local_getter(self):
        def _extra_inputs_getter(p):
            return (torch.rand(3, 3),)

        return BackendConfig("name1").set_backend_pattern_config(
            BackendPatternConfig(torch.add)
            .add_dtype_config(self.dtype_config2)
            ._set_root_node_getter(_default_root_node_getter)
            ._set_extra_inputs_getter(_extra_inputs_getter)
        )


def get_test_backend_config():
    return BackendConfig("name1").set_backend_pattern_config(TestBackendConfig()._get_backend_op_config1())


def get_test_class_attribute_backend_config():
    config = TestBackendConfig()._get_backend_op_config1().set_fuser_method(TestBackendConfig._fuser_method)
    return BackendConfig("name1").set_backend_pattern_config(config)


def get_test_local_getter_backend_config():
    return TestBackendConfig().test_backend_config_with_local_getter()
