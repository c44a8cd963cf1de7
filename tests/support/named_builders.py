"""Builders whose BackendConfig's name cannot be their name in a project (tests/test_import_names.py).

torch's `BackendConfig()` has the empty name; three real builders return "native" or
"tensorrt", as torch's own do. Each must import under a project name of its own and
regenerate a builder that returns the same name it does.
"""

import torch
import torch.ao.nn.intrinsic as nni
import torch.nn as nn
from torch.ao.quantization.backend_config import BackendConfig, BackendPatternConfig, DTypeConfig, ObservationType

npu_int8_dtype_config = DTypeConfig(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)
npu_act_dtype_config = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)


def _patterns(linear: bool):
    configs = [
        BackendPatternConfig(nn.Conv2d)
        .set_observation_type(ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT)
        .set_dtype_configs([npu_int8_dtype_config])
        .set_root_module(nn.Conv2d),
        BackendPatternConfig((nn.Conv2d, nn.ReLU))
        .set_dtype_configs([npu_int8_dtype_config])
        .set_fused_module(nni.ConvReLU2d),
        BackendPatternConfig(nn.ReLU)
        .set_observation_type(ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT)
        .set_dtype_configs([npu_act_dtype_config]),
    ]
    if linear:
        configs.append(BackendPatternConfig(nn.Linear).set_dtype_configs([npu_int8_dtype_config]))
    return configs


def get_unnamed_npu_backend_config():
    """Return the NPU's BackendConfig, with torch's default empty name."""
    return BackendConfig().set_backend_pattern_configs(_patterns(linear=True))


def get_other_unnamed_npu_backend_config():
    """Return another NPU's BackendConfig, with torch's default empty name too."""
    return BackendConfig().set_backend_pattern_configs(_patterns(linear=False))


def get_acme_trt_backend_config():
    """Return a BackendConfig named like torch's tensorrt one, as a vendor's fork of it is."""
    return BackendConfig("tensorrt").set_backend_pattern_configs(_patterns(linear=True))


def get_lambda_fuser_backend_config():
    """A fuser made inside the builder as a lambda: no spec can name it (tests/test_import_errors.py)."""
    config = (
        BackendPatternConfig((nn.Conv2d, nn.ReLU))
        .set_dtype_configs([npu_int8_dtype_config])
        .set_fuser_method(lambda is_qat, conv, relu: nn.Sequential(relu, conv))
    )
    return BackendConfig("lambda_npu").set_backend_pattern_config(config)
