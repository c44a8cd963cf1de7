"""Tests for the readable names given to torch objects in patterns and diffs."""

from __future__ import annotations

import operator

import torch
import torch.ao.nn.intrinsic as nni
import torch.ao.nn.intrinsic.qat as nniqat
import torch.ao.nn.qat as nnqat
import torch.ao.nn.quantized.reference as nnqr
import torch.nn.functional as F
from torch import nn
from torch.ao.quantization.backend_config import ObservationType, onednn
from torch.ao.quantization.fuser_method_mappings import (
    _sequential_wrapper2,
    fuse_conv_bn,
)
from torch.ao.quantization.utils import MatchAllNode

from generator.building.torch_names import describe_pattern, public_path, short_name


def test_torch_builtin_is_named_by_its_public_path() -> None:
    # torch.cat's __qualname__ is _VariableFunctionsClass.cat.
    assert public_path(torch.cat) == "torch.cat"
    assert short_name(torch.cat) == "torch.cat"


def test_boolean_dispatch_wrapper_gets_its_functional_name() -> None:
    # F.max_pool2d's __qualname__ is boolean_dispatch.<locals>.fn.
    assert public_path(F.max_pool2d) == "torch.nn.functional.max_pool2d"
    assert short_name(F.max_pool2d) == "F.max_pool2d"


def test_functional_name_is_preferred_over_torch_c_nn() -> None:
    assert torch._C._nn.avg_pool2d is F.avg_pool2d
    assert public_path(torch._C._nn.avg_pool2d) == "torch.nn.functional.avg_pool2d"
    assert short_name(torch._C._nn.avg_pool2d) == "F.avg_pool2d"


def test_aten_overloads_and_packets() -> None:
    assert public_path(torch.ops.aten.add_.Tensor) == "torch.ops.aten.add_.Tensor"
    assert short_name(torch.ops.aten.add_.Tensor) == "torch.ops.aten.add_.Tensor"
    assert short_name(torch.ops.aten.addmm.default) == "torch.ops.aten.addmm.default"
    assert short_name(torch.ops.aten.add_) == "torch.ops.aten.add_"


def test_module_classes_use_the_usual_aliases() -> None:
    assert public_path(nn.Conv2d) == "torch.nn.Conv2d"
    assert public_path(nni.ConvReLU2d) == "torch.ao.nn.intrinsic.ConvReLU2d"
    assert public_path(nnqr.Conv2d) == "torch.ao.nn.quantized.reference.Conv2d"
    names = [short_name(c) for c in (nn.Conv2d, nni.ConvAdd2d, nniqat.ConvBn2d)]
    assert names == ["nn.Conv2d", "nni.ConvAdd2d", "nniqat.ConvBn2d"]
    assert [short_name(c) for c in (nnqat.Linear, nnqr.Linear)] == [
        "nnqat.Linear",
        "nnqr.Linear",
    ]


def test_operator_dtype_and_fuser_paths() -> None:
    assert public_path(operator.add) == "operator.add"
    assert public_path(torch.quint8) == "torch.quint8"
    assert short_name(torch.float) == "torch.float32"
    assert (
        public_path(fuse_conv_bn)
        == "torch.ao.quantization.fuser_method_mappings.fuse_conv_bn"
    )


def test_match_all_node_and_observation_type() -> None:
    assert public_path(MatchAllNode) == "torch.ao.quantization.utils.MatchAllNode"
    assert short_name(MatchAllNode) == "MatchAllNode"
    member = ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT
    assert short_name(member) == "ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT"


def test_nested_patterns_render_like_source() -> None:
    pattern = (nn.ReLU, (torch.add, (nn.BatchNorm2d, nn.Conv2d), MatchAllNode))
    assert (
        describe_pattern(pattern)
        == "(nn.ReLU, (torch.add, (nn.BatchNorm2d, nn.Conv2d), MatchAllNode))"
    )
    assert describe_pattern((nn.Conv2d, nn.ReLU)) == "(nn.Conv2d, nn.ReLU)"
    assert describe_pattern("contiguous") == "'contiguous'"
    assert describe_pattern((operator.getitem, 0)) == "(operator.getitem, 0)"


def test_functions_without_public_path_are_named_where_defined() -> None:
    assert public_path(onednn._fuse_conv_add_left) is None
    assert (
        short_name(onednn._fuse_conv_add_left)
        == "torch.ao.quantization.backend_config.onednn._fuse_conv_add_left"
    )


def test_closures_show_what_they_captured() -> None:
    assert short_name(_sequential_wrapper2(nni.ConvReLU1d)) == (
        "torch.ao.quantization.fuser_method_mappings._sequential_wrapper2"
        ".<locals>.fuser_method[sequential=nni.ConvReLU1d]"
    )


def test_names_are_deterministic() -> None:
    # No memory addresses, even for objects with a default repr.
    assert " at 0x" not in short_name(object())
    assert short_name(object()) == short_name(object())


def test_unknown_values_have_no_public_path() -> None:
    assert public_path("contiguous") is None
    assert public_path(0) is None
    assert public_path(None) is None
