"""Two small custom BackendConfigs of PyTorch's own FX tests: torch's default empty name
(`BackendConfig()`), patterns in the complex format with `MatchAllNode`, root-node and extra-inputs getters.

Source: pytorch/pytorch, test/quantization/fx/test_quantize_fx.py, TestFuseFx.test_fusion_pattern_with_multiple_inputs
and TestFuseFx.test_fusion_pattern_with_matchallnode. Adapted: each test's BackendConfig is returned by a
function instead of being passed to `fuse_fx`.
- `get_matchallnode_backend_config` keeps the test's fuser and getters where the test defines them, inside
  the function: nothing outside it can name them, so a spec cannot either.
- `get_multiple_inputs_backend_config` has them at module level, which is what a spec needs (the only change
  from the test).
And it imports torch.ao.quantization.backend_config.utils, which torch 2.13 needs imported before
set_backend_pattern_config (a real project has it imported once anything imports quantize_fx).
"""
# ruff: noqa  (third-party code kept in its own style)
import torch
import torch.ao.quantization.backend_config.utils  # noqa: F401 (torch 2.13: BackendConfig.set_backend_pattern_config needs it imported)
import torch.nn as nn
from torch.ao.quantization.backend_config import BackendConfig, BackendPatternConfig
from torch.ao.quantization.utils import MatchAllNode


def fuse_conv_bn_relu(is_qat, relu, add_pattern):
    _, bn_pattern, _ = add_pattern
    bn, conv = bn_pattern
    return conv


def conv_bn_res_relu_root_node_getter(pattern):
    relu, add_pattern = pattern
    _, bn_pattern, _ = add_pattern
    bn, conv = bn_pattern
    return conv


def conv_bn_res_relu_extra_inputs_getter(pattern):
    """ get inputs pattern for extra inputs, inputs for root node
    are assumed to be copied over from root node to the fused node
    """
    relu, add_pattern = pattern
    _, bn_pattern, extra_input = add_pattern
    bn, conv = bn_pattern
    return [extra_input]


def get_multiple_inputs_backend_config():
    conv_bn_res_relu_config = BackendPatternConfig() \
        ._set_pattern_complex_format((nn.ReLU, (torch.add, (nn.BatchNorm2d, nn.Conv2d), MatchAllNode))) \
        .set_fuser_method(fuse_conv_bn_relu) \
        ._set_root_node_getter(conv_bn_res_relu_root_node_getter) \
        ._set_extra_inputs_getter(conv_bn_res_relu_extra_inputs_getter)
    backend_config = BackendConfig().set_backend_pattern_config(conv_bn_res_relu_config)
    return backend_config


def get_matchallnode_backend_config():
    def fuse_conv_relu(is_qat, conv, relu):
        return conv

    def fuse_conv_res_relu(is_qat, relu, add_pattern):
        _, conv, _ = add_pattern
        return conv

    def conv_res_relu_root_node_getter(pattern):
        relu, (_, conv, _) = pattern
        return conv

    def conv_res_relu_extra_inputs_getter(pattern):
        relu, (_, _, extra_input) = pattern
        return [extra_input]

    conv_relu_config = BackendPatternConfig((nn.Conv2d, nn.ReLU)) \
        .set_fuser_method(fuse_conv_relu)
    conv_res_relu_config = BackendPatternConfig() \
        ._set_pattern_complex_format((nn.ReLU, (torch.add, nn.Conv2d, MatchAllNode))) \
        .set_fuser_method(fuse_conv_res_relu) \
        ._set_root_node_getter(conv_res_relu_root_node_getter) \
        ._set_extra_inputs_getter(conv_res_relu_extra_inputs_getter)
    backend_config = BackendConfig() \
        .set_backend_pattern_config(conv_relu_config) \
        .set_backend_pattern_config(conv_res_relu_config)
    return backend_config
