"""Self-tests of the BackendConfig comparator, using torch's own builders.

A comparator that reports nothing is only useful if it would have reported
something: besides checking that every torch builder equals itself, these
tests mutate every field of every pattern of every builder and require the
comparator to name the mutated field. Its behaviour trials of callables share one verdict among
equivalent copies, never with other code, and leave the caller's random state as it was.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import itertools
import math
import operator
import sys
import traceback
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
import torch.ao.nn.intrinsic as nni
import torch.nn.functional as F
from torch import nn
from torch.ao.quantization.backend_config import (
    BackendConfig,
    BackendPatternConfig,
    DTypeConfig,
    ObservationType,
    get_fbgemm_backend_config,
    get_onednn_backend_config,
    onednn,
)
from torch.ao.quantization.backend_config._qnnpack_pt2e import (
    get_qnnpack_pt2e_backend_config,
)
from torch.ao.quantization.backend_config.x86 import get_x86_backend_config
from torch.ao.quantization.fuser_method_mappings import (
    _sequential_wrapper2,
    fuse_conv_bn,
)
from torch.ao.quantization.utils import MatchAllNode

from generator.building.torch_names import describe_pattern
from generator.review import callables, equality, sides
from generator.review.callables import callables_match
from generator.review.changes import diff_backend_configs
from generator.review.equality import (
    CALLABLE_FIELDS,
    DICT_FIELDS,
    DTYPE_SIDES,
    PATTERN_FIELDS,
    compare_backend_configs,
    compare_pattern_configs,
)
from generator.review.identity import CONSTRAINT_FIELDS, DTYPE_CONFIG_FIELDS
from tests.support.builders import REFERENCED
from tests.support.projects import ROOT

# Every reference builder (torch's), each compared with itself and mutated.
BUILDERS: dict[str, Callable[[], BackendConfig]] = {b.id: b.theirs() for b in REFERENCED}
# The torch builders whose patterns the hand-written cases below pick from.
TORCH_BUILDERS: dict[str, Callable[[], BackendConfig]] = {
    "fbgemm": get_fbgemm_backend_config,
    "onednn": get_onednn_backend_config,
    "qnnpack_pt2e": get_qnnpack_pt2e_backend_config,
}
MODULE_FIELDS = (
    "root_module",
    "qat_module",
    "reference_quantized_module",
    "fused_module",
)

# A class no torch config mentions, used as "some other module/pattern".
OTHER_CLASS = nn.Hardshrink


# ---------------------------------------------------------------------------
# Torch equals torch
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BUILDERS)
def test_builder_equals_a_second_call_of_itself(backend: str) -> None:
    # A second call creates fresh _sequential_wrapper2 closures, so this also
    # exercises the equivalent-code rule.
    build = BUILDERS[backend]
    assert compare_backend_configs(backend, build(), build()) == []


@pytest.mark.parametrize("backend", BUILDERS)
def test_builder_equals_its_deep_copy(backend: str) -> None:
    config = BUILDERS[backend]()
    assert compare_backend_configs(backend, copy.deepcopy(config), config) == []


# ---------------------------------------------------------------------------
# Every mutation of every field of every pattern is reported
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BUILDERS)
def test_every_field_mutation_is_reported(backend: str) -> None:
    unreported = []
    for config in BUILDERS[backend]().configs:
        mutated_fields = set()
        for field, mutated in _mutations(config):
            mutated_fields.add(_top_level_field(field))
            # Both directions: ours may be the mutated one or torch's.
            for ours, theirs in ((mutated, config), (config, mutated)):
                reported = {
                    d.field for d in compare_pattern_configs(backend, ours, theirs)
                }
                # Exactly that field: a mutation must not be blamed elsewhere.
                if reported != {field}:
                    unreported.append(
                        f"{_pattern_of(config)}: {field}: got {sorted(reported)}"
                    )
        # Guard the test itself: no field may be left unmutated.
        assert mutated_fields == {*PATTERN_FIELDS, "attributes"}, _pattern_of(config)
    assert unreported == []


def _mutations(
    config: BackendPatternConfig,
) -> Iterator[tuple[str, BackendPatternConfig]]:
    """(field the comparator must report, mutated copy of config) pairs."""
    yield from _pattern_mutations(config)
    for member in ObservationType:
        if member is not config.observation_type:
            yield "observation_type", _replaced(config, observation_type=member)
    yield from _dtype_config_mutations(config)
    for field in MODULE_FIELDS:
        for other in (None, OTHER_CLASS):
            if other is not getattr(config, field):
                yield field, _replaced(config, **{field: other})
    yield from _callable_mutations(config)
    yield from _dict_mutations(config)
    # An attribute torch might add in a later release.
    yield "attributes", _replaced(config, _new_torch_field=None)


def _replaced(config: BackendPatternConfig, **changes: Any) -> BackendPatternConfig:
    # Bypasses the setters on purpose: set_pattern refuses a pattern when a
    # complex-format pattern is set, but the comparator must still see it.
    clone = copy.copy(config)
    vars(clone).update(changes)
    return clone


def _pattern_mutations(
    config: BackendPatternConfig,
) -> Iterator[tuple[str, BackendPatternConfig]]:
    for field in ("pattern", "_pattern_complex_format"):
        pattern = getattr(config, field)
        variants = [OTHER_CLASS] if pattern is None else []
        if pattern is not None:
            # Changing the first and the last leaf reaches into nested tuples.
            variants = [_with_other_leaf(pattern, 0), _with_other_leaf(pattern, -1)]
        for variant in variants:
            yield field, _replaced(config, **{field: variant})


def _with_other_leaf(pattern: Any, index: int) -> Any:
    if isinstance(pattern, tuple):
        items = list(pattern)
        items[index] = _with_other_leaf(items[index], index)
        return tuple(items)
    if isinstance(pattern, str):
        return pattern + "_"
    if isinstance(pattern, int):
        return pattern + 1
    return nn.Softshrink if pattern is OTHER_CLASS else OTHER_CLASS


def _dtype_config_mutations(
    config: BackendPatternConfig,
) -> Iterator[tuple[str, BackendPatternConfig]]:
    dtype_configs = config.dtype_configs
    if dtype_configs:
        yield "dtype_configs", _replaced(config, dtype_configs=dtype_configs[:-1])
    extra = DTypeConfig(input_dtype=torch.qint32)
    yield "dtype_configs", _replaced(config, dtype_configs=[*dtype_configs, extra])
    constraint_fields = itertools.product(DTYPE_SIDES, CONSTRAINT_FIELDS)
    for n, (side, field) in enumerate(constraint_fields if dtype_configs else ()):
        # Rotate through the dtype configs so every position is exercised.
        index = n % len(dtype_configs)
        changed = _with_constraint(dtype_configs[index], side, field)
        yield (
            f"dtype_configs[{index}].{side}.{field}",
            _replaced(config, dtype_configs=_with_item(dtype_configs, index, changed)),
        )
    for index, dtype_config in enumerate(dtype_configs):
        for field in DTYPE_CONFIG_FIELDS:
            changed = copy.copy(dtype_config)
            setattr(changed, field, _other_value(field, getattr(dtype_config, field)))
            yield (
                f"dtype_configs[{index}].{field}",
                _replaced(
                    config, dtype_configs=_with_item(dtype_configs, index, changed)
                ),
            )


def _with_constraint(dtype_config: DTypeConfig, side: str, field: str) -> DTypeConfig:
    attribute = f"{side}_with_constraints"
    constraints = getattr(dtype_config, attribute)
    changed = copy.copy(dtype_config)
    value = _other_value(field, getattr(constraints, field))
    setattr(changed, attribute, dataclasses.replace(constraints, **{field: value}))
    return changed


def _other_value(field: str, value: Any) -> Any:
    if field in ("dtype", "bias_dtype"):
        return torch.quint8 if value is torch.qint32 else torch.qint32
    if field == "is_dynamic":
        # None, False and True are three different settings.
        return {None: False, False: True, True: None}[value]
    if value is None:
        return 0
    if isinstance(value, float):
        # The smallest possible change: floats must compare exactly.
        return math.nextafter(value, math.inf)
    return value + 1


def _with_item(items: list, index: int, item: Any) -> list:
    return [item if i == index else old for i, old in enumerate(items)]


def _callable_mutations(
    config: BackendPatternConfig,
) -> Iterator[tuple[str, BackendPatternConfig]]:
    for field in CALLABLE_FIELDS:
        current = getattr(config, field)
        if current is not None:
            yield field, _replaced(config, **{field: None})
        yield field, _replaced(config, **{field: _other_callable(field, current, config)})


def _other_callable(field: str, current: Callable | None, config: BackendPatternConfig) -> Callable:
    """A callable that behaves differently from ``current`` on its pattern."""
    sibling = _left_right_sibling(current)
    if sibling is not None:
        return sibling
    if field != "fuser_method":
        return _first_node
    candidates = [_sequential_wrapper2(nni.LinearReLU), _sequential_wrapper2(nni.ConvReLU1d)]
    if current is None:
        return candidates[0]
    # Judged by behaviour, not by closure contents: a hand-written fuser may
    # build the same module as a _sequential_wrapper2 closure.
    return next(c for c in candidates if not callables_match(field, c, current, config)[0])


def _left_right_sibling(func: Callable | None) -> Callable | None:
    """onednn's _left helpers have _right twins (and vice versa)."""
    name = getattr(func, "__name__", "")
    for suffix, other in (("_left", "_right"), ("_right", "_left")):
        if name.endswith(suffix):
            module = sys.modules[func.__module__]
            return getattr(module, name.removesuffix(suffix) + other)
    return None


def _first_node(pattern: Any) -> Any:
    return pattern[0]


def _dict_mutations(
    config: BackendPatternConfig,
) -> Iterator[tuple[str, BackendPatternConfig]]:
    for field in DICT_FIELDS:
        current = getattr(config, field)
        if not current:
            added = (
                {"weight": 1}
                if field == "_input_type_to_index"
                else {0: ObservationType.INPUT_OUTPUT_NOT_OBSERVED}
            )
            yield field, _replaced(config, **{field: added})
            continue
        key = next(iter(current))
        altered = {**current, key: _other_dict_value(current[key])}
        yield field, _replaced(config, **{field: altered})
        yield field, _replaced(
            config, **{field: {k: v for k, v in current.items() if k != key}}
        )


def _other_dict_value(value: Any) -> Any:
    if isinstance(value, ObservationType):
        return ObservationType((value.value + 1) % len(ObservationType))
    return value + 1


def _top_level_field(field: str) -> str:
    return field.split("[")[0].split(".")[0]


def _pattern_of(config: BackendPatternConfig) -> str:
    pattern = (
        config.pattern if config.pattern is not None else config._pattern_complex_format
    )
    return describe_pattern(pattern)


# ---------------------------------------------------------------------------
# Reporting format and strictness of plain values
# ---------------------------------------------------------------------------

def _config_for(backend: str, pattern: Any) -> BackendPatternConfig:
    for config in TORCH_BUILDERS[backend]().configs:
        if config.pattern == pattern or config._pattern_complex_format == pattern:
            return config
    raise LookupError(pattern)


def test_difference_reads_backend_pattern_field_detail() -> None:
    theirs = _config_for("fbgemm", (nn.Conv2d, nn.ReLU))
    constraints = dataclasses.replace(
        theirs.dtype_configs[0].input_dtype_with_constraints, quant_min_lower_bound=0
    )
    changed = copy.copy(theirs.dtype_configs[0])
    changed.input_dtype_with_constraints = constraints
    ours = _replaced(theirs, dtype_configs=[changed, *theirs.dtype_configs[1:]])
    assert [str(d) for d in compare_pattern_configs("fbgemm", ours, theirs)] == [
        (
            "fbgemm: (nn.Conv2d, nn.ReLU): dtype_configs[0].input_dtype.quant_min_lower_bound: "
            "0 != None"
        )
    ]


def test_int_and_float_bounds_are_not_interchangeable() -> None:
    theirs = _config_for("fbgemm", nn.Sigmoid)
    field = "dtype_configs[0].input_dtype.quant_min_lower_bound"
    constraints = theirs.dtype_configs[0].input_dtype_with_constraints
    assert constraints.quant_min_lower_bound == 0
    changed = copy.copy(theirs.dtype_configs[0])
    changed.input_dtype_with_constraints = dataclasses.replace(
        constraints, quant_min_lower_bound=0.0
    )
    ours = _replaced(theirs, dtype_configs=[changed])
    assert [d.field for d in compare_pattern_configs("fbgemm", ours, theirs)] == [field]


def test_dict_key_order_is_reported() -> None:
    theirs = _config_for("fbgemm", torch.add)
    reordered = dict(reversed(theirs._num_tensor_args_to_observation_type.items()))
    ours = _replaced(theirs, _num_tensor_args_to_observation_type=reordered)
    details = [d.detail for d in compare_pattern_configs("fbgemm", ours, theirs)]
    assert details == ["key order [2, 1, 0] != [0, 1, 2]"]


# ---------------------------------------------------------------------------
# Callables: identical, equivalent code, same behaviour, different
# ---------------------------------------------------------------------------

def _fuse_conv_relu_1d(is_qat, conv, relu):
    return nni.ConvReLU1d(conv, relu)


def _fuse_conv_relu_2d(is_qat, conv, relu):
    return nni.ConvReLU2d(conv, relu)


def _fuse_after_doubling_weights(is_qat, conv, relu):
    with torch.no_grad():
        conv.weight.mul_(2)
    return nni.ConvReLU1d(conv, relu)


def _fuse_conv_bn_ignoring_running_mean(is_qat, conv, bn):
    with torch.no_grad():
        bn.running_mean.zero_()
    return fuse_conv_bn(is_qat, conv, bn)


def test_two_sequential_wrappers_are_equivalent_code() -> None:
    config = _config_for("fbgemm", (nn.Conv1d, nn.ReLU))
    ours, theirs = _sequential_wrapper2(nni.ConvReLU1d), _sequential_wrapper2(
        nni.ConvReLU1d
    )
    assert ours is not theirs
    assert callables_match("fuser_method", ours, theirs, config) == (
        True,
        "equivalent code",
    )


def _fuse_pair_with(cls, is_qat, first, second):
    return cls(first, second)


def test_partials_are_their_function_and_bound_arguments() -> None:
    config = _config_for("fbgemm", (nn.Conv1d, nn.ReLU))
    ours = functools.partial(_fuse_pair_with, nni.ConvReLU1d)
    theirs = functools.partial(_fuse_pair_with, nni.ConvReLU1d)
    assert callables_match("fuser_method", ours, theirs, config) == (True, "equivalent code")
    # another bound class: the comparator's trials tell them apart
    other = functools.partial(_fuse_pair_with, nni.ConvReLU2d)
    assert callables_match("fuser_method", other, theirs, config)[0] is False
    # a bound function compares by code, as closure contents do
    nested = functools.partial(_fuse_pair_with, _sequential_wrapper2(nni.ConvReLU1d))
    again = functools.partial(_fuse_pair_with, _sequential_wrapper2(nni.ConvReLU1d))
    assert callables_match("fuser_method", nested, again, config) == (True, "equivalent code")


def test_hand_written_fuser_with_same_behaviour_is_equal() -> None:
    theirs = _config_for("fbgemm", (nn.Conv1d, nn.ReLU))
    ours = _replaced(theirs, fuser_method=_fuse_conv_relu_1d)
    assert compare_pattern_configs("fbgemm", ours, theirs) == []
    match = callables_match(
        "fuser_method", _fuse_conv_relu_1d, theirs.fuser_method, theirs
    )
    assert match == (True, "same behaviour")


def test_hand_written_fuser_with_other_fused_module_differs() -> None:
    theirs = _config_for("fbgemm", (nn.Conv1d, nn.ReLU))
    ours = _replaced(theirs, fuser_method=_fuse_conv_relu_2d)
    (difference,) = compare_pattern_configs("fbgemm", ours, theirs)
    assert difference.field == "fuser_method"
    assert difference.detail.startswith(
        f"{__name__}._fuse_conv_relu_2d != torch.ao.quantization.fuser_method_mappings"
        "._sequential_wrapper2.<locals>.fuser_method[sequential=nni.ConvReLU1d] ("
    )


def test_fuser_that_mutates_its_inputs_differs() -> None:
    # Shared arguments would hide this: torch's fuser would wrap the already
    # doubled conv and both results would look the same.
    theirs = _config_for("fbgemm", (nn.Conv1d, nn.ReLU))
    equal, how = callables_match(
        "fuser_method", _fuse_after_doubling_weights, theirs.fuser_method, theirs
    )
    assert not equal
    assert "tensors differ" in how


def test_fuser_results_compare_batchnorm_folding() -> None:
    # Batchnorm statistics are randomised; with torch's defaults (mean 0) a
    # fuser that zeroes the running mean would look exactly like fuse_conv_bn.
    theirs = _config_for("fbgemm", (nn.Conv2d, nn.BatchNorm2d))
    equal, how = callables_match(
        "fuser_method", _fuse_conv_bn_ignoring_running_mean, theirs.fuser_method, theirs
    )
    assert (equal, how) == (
        False,
        "is_qat=False, eval mode: result.bias: tensors differ",
    )


def test_fusers_for_functional_activations_are_told_apart() -> None:
    # torch passes F.leaky_relu itself to the fuser, where every fused-module
    # constructor rejects it with the same message; only the extra argument
    # set with an nn.LeakyReLU in its place shows the fusers differ.
    theirs = _config_for("onednn", (nn.Linear, F.leaky_relu))
    ours = _sequential_wrapper2(nni.LinearReLU)
    equal, how = callables_match("fuser_method", ours, theirs.fuser_method, theirs)
    assert not equal
    assert how.startswith("is_qat=False, train mode, functional ops as modules: ")


def _fuse_conv_add_storing_sub(is_qat, add, conv, _):
    return nni.ConvAdd2d(conv, torch.sub)


def test_fuser_storing_another_callable_on_the_module_differs() -> None:
    # ConvAdd2d keeps its add op as a plain attribute: no state dict shows it.
    theirs = _config_for("onednn", (torch.add, nn.Conv2d, MatchAllNode))
    equal, how = callables_match(
        "fuser_method", _fuse_conv_add_storing_sub, theirs.fuser_method, theirs
    )
    assert (equal, how) == (
        False,
        "is_qat=False, train mode: result.add: torch.sub vs torch.add",
    )


def _fuse_linear_bn_leaky_relu_without(guard: str) -> Callable:
    """torch's onednn fuser with its mode guard or its type guard removed."""

    def fuse(is_qat, linear, bn, leaky_relu):
        same_mode = linear.training == bn.training == leaky_relu.training
        if guard != "mode" and not same_mode:
            raise AssertionError(
                "Linear, BN and LeakyReLU all must be in the same mode (train or eval)."
            )
        if is_qat:
            raise NotImplementedError(
                f"Cannot fuse train modules: {(linear, bn, leaky_relu)}"
            )
        if guard != "type" and type(linear) is not nn.Linear:
            raise NotImplementedError(
                f"Cannot fuse eval modules: {(linear, bn, leaky_relu)}"
            )
        fused_linear = nn.utils.fusion.fuse_linear_bn_eval(linear, bn)
        return nni.LinearLeakyReLU(fused_linear, leaky_relu)

    return fuse


@pytest.mark.parametrize(
    "guard, trial",
    [
        ("mode", "is_qat=False, mixed mode: "),
        ("type", "is_qat=False, train mode, subclassed modules: "),
    ],
)
def test_fuser_without_torch_s_guard_differs(guard: str, trial: str) -> None:
    # Torch raises AssertionError on mixed modes and NotImplementedError on a
    # Linear subclass; trials with uniform modes and exact types cannot tell.
    theirs = _config_for("onednn", (nn.Linear, nn.BatchNorm1d, nn.LeakyReLU))
    fuse = _fuse_linear_bn_leaky_relu_without(guard)
    equal, how = callables_match("fuser_method", fuse, theirs.fuser_method, theirs)
    assert not equal
    assert how.startswith(trial), how


def test_fuser_with_both_guards_in_other_words_is_equal() -> None:
    # The guards rewritten (messages kept) still behave like torch's.
    theirs = _config_for("onednn", (nn.Linear, nn.BatchNorm1d, nn.LeakyReLU))

    def fuse(is_qat, linear, bn, leaky_relu):
        if not linear.training == bn.training == leaky_relu.training:
            raise AssertionError(
                "Linear, BN and LeakyReLU all must be in the same mode (train or eval)."
            )
        if is_qat:
            raise NotImplementedError(
                f"Cannot fuse train modules: {(linear, bn, leaky_relu)}"
            )
        if type(linear) is not nn.Linear:
            raise NotImplementedError(
                f"Cannot fuse eval modules: {(linear, bn, leaky_relu)}"
            )
        fused_linear = nn.utils.fusion.fuse_linear_bn_eval(linear, bn)
        return nni.LinearLeakyReLU(fused_linear, leaky_relu)

    assert callables_match("fuser_method", fuse, theirs.fuser_method, theirs) == (
        True,
        "same behaviour",
    )


def test_fuser_leaving_a_child_in_another_mode_differs() -> None:
    # A training flag of a child module is part of the result.
    theirs = _config_for("fbgemm", (nn.Conv1d, nn.ReLU))

    def fuse(is_qat, conv, relu):
        return nni.ConvReLU1d(conv, relu.train(conv.training))

    equal, how = callables_match("fuser_method", fuse, theirs.fuser_method, theirs)
    assert (equal, how) == (
        False,
        "is_qat=False, mixed mode: result.1.training: True vs False",
    )


def test_recreated_local_root_node_getter_is_equivalent_code() -> None:
    # qnnpack_pt2e defines its root-node getter inside the builder function.
    aten_max_pool = torch.ops.aten.max_pool2d_with_indices.default
    first, second = (
        _config_for("qnnpack_pt2e", (operator.getitem, aten_max_pool, 0))
        for _ in range(2)
    )
    assert first._root_node_getter is not second._root_node_getter
    match = callables_match(
        "_root_node_getter", first._root_node_getter, second._root_node_getter, second
    )
    assert match == (True, "equivalent code")


def test_copied_onednn_fuser_with_same_globals_is_equivalent_code() -> None:
    theirs = _config_for("onednn", (torch.add, nn.Conv2d, MatchAllNode))
    copied = types.FunctionType(onednn._fuse_conv_add_left.__code__, {"nni": nni})
    match = callables_match("fuser_method", copied, theirs.fuser_method, theirs)
    assert match == (True, "equivalent code")


def test_copied_onednn_fuser_with_other_globals_differs() -> None:
    theirs = _config_for("onednn", (torch.add, nn.Conv2d, MatchAllNode))
    fake_nni = types.SimpleNamespace(ConvAdd2d=nni.ConvAddReLU2d)
    copied = types.FunctionType(onednn._fuse_conv_add_left.__code__, {"nni": fake_nni})
    equal, _ = callables_match("fuser_method", copied, theirs.fuser_method, theirs)
    assert not equal


def test_complex_fuser_gets_nested_modules() -> None:
    # Mirrors DefaultFuseHandler: (relu, (add, (bn, conv), extra)).
    theirs = _config_for(
        "onednn", (nn.ReLU, (torch.add, (nn.BatchNorm2d, nn.Conv2d), MatchAllNode))
    )

    def fuse(is_qat, relu, add_pattern):
        add, (bn, conv), _extra = add_pattern
        if is_qat:
            raise NotImplementedError(
                f"Cannot fuse train modules: {(conv, bn, add, relu)}"
            )
        fused = nn.utils.fusion.fuse_conv_bn_eval(conv, bn)
        return nni.ConvAddReLU2d(fused, add, relu)

    assert callables_match("fuser_method", fuse, theirs.fuser_method, theirs) == (
        True,
        "same behaviour",
    )


def test_rewritten_root_node_getter_is_equal_by_behaviour() -> None:
    theirs = _config_for("onednn", (torch.add, nn.Conv2d, MatchAllNode))
    match = callables_match(
        "_root_node_getter", lambda p: p[1], theirs._root_node_getter, theirs
    )
    assert match == (True, "same behaviour")


def test_left_and_right_extra_inputs_getters_differ() -> None:
    theirs = _config_for("onednn", (torch.add, nn.Conv2d, MatchAllNode))
    ours = _replaced(
        theirs, _extra_inputs_getter=onednn._conv_add_extra_inputs_getter_right
    )
    (difference,) = compare_pattern_configs("onednn", ours, theirs)
    assert difference.field == "_extra_inputs_getter"
    assert "_conv_add_extra_inputs_getter_right != " in difference.detail
    assert "_conv_add_extra_inputs_getter_left (" in difference.detail


# ---------------------------------------------------------------------------
# Whole configs: name, order, missing and extra patterns
# ---------------------------------------------------------------------------

def _rebuilt(name: str, configs: list[BackendPatternConfig]) -> BackendConfig:
    return BackendConfig(name).set_backend_pattern_configs(configs)


def test_backend_name_is_compared() -> None:
    theirs = get_qnnpack_pt2e_backend_config()
    ours = _rebuilt("other", theirs.configs)
    assert [str(d) for d in compare_backend_configs("pt2e", ours, theirs)] == [
        "pt2e: name: 'other' != 'qnnpack_pytorch_2.0_export'"
    ]


@pytest.mark.parametrize("stale_side", ["ours", "theirs"])
def test_a_config_keyed_under_a_stale_pattern_is_reported(stale_side: str) -> None:
    # FX looks patterns up by the dict's keys, not by each config's pattern:
    # a config changed after registration keeps its old key, and FX would
    # match the old pattern while .configs shows the new one.
    def build(stale: bool) -> BackendConfig:
        config = BackendPatternConfig(nn.Conv1d if stale else nn.Conv2d)
        backend_config = BackendConfig("b").set_backend_pattern_config(config)
        config.set_pattern(nn.Conv2d)
        return backend_config

    ours, theirs = build(stale_side == "ours"), build(stale_side == "theirs")
    assert compare_pattern_configs("b", ours.configs[0], theirs.configs[0]) == []
    assert [str(d) for d in compare_backend_configs("b", ours, theirs)] == [
        f"b: nn.Conv2d: _pattern_complex_format_to_config: {stale_side} keys it under nn.Conv1d"
    ]


def test_missing_extra_and_moved_patterns_are_named() -> None:
    theirs = get_qnnpack_pt2e_backend_config()
    configs = theirs.configs
    extra = BackendPatternConfig(OTHER_CLASS)
    ours = _rebuilt(theirs.name, [configs[1], configs[0], *configs[3:], extra])
    assert [str(d) for d in compare_backend_configs("pt2e", ours, theirs)] == [
        (
            "pt2e: (torch.ops.aten.add.Tensor, torch.ops.aten.relu.default): configs: "
            "missing from ours (torch has it at position 2)"
        ),
        "pt2e: nn.Hardshrink: configs: extra in ours at position 12 (not in torch)",
        "pt2e: torch.ops.aten.mm.default: position: out of order: at position 0 != 1",
    ]


def test_pattern_count_is_reported() -> None:
    theirs = get_qnnpack_pt2e_backend_config()
    ours = _rebuilt(theirs.name, theirs.configs[:-1])
    assert [str(d) for d in compare_backend_configs("pt2e", ours, theirs)] == [
        "pt2e: configs: 12 patterns != 13 patterns",
        "pt2e: torch.ops.aten.relu.default: configs: missing from ours (torch has it at position 12)",
    ]


def test_unexpected_backend_config_attribute_is_reported() -> None:
    theirs = get_qnnpack_pt2e_backend_config()
    ours = copy.deepcopy(theirs)
    ours.extra = 1
    assert [d.field for d in compare_backend_configs("pt2e", ours, theirs)] == [
        "attributes"
    ]


# ---------------------------------------------------------------------------
# Reviewer diff
# ---------------------------------------------------------------------------

def test_diff_of_equal_configs_is_empty() -> None:
    assert (
        diff_backend_configs(
            "onednn", get_onednn_backend_config(), get_onednn_backend_config()
        )
        == []
    )


def test_diff_lists_removed_added_changed_and_moved_patterns() -> None:
    old = get_onednn_backend_config()
    configs = old.configs
    weighted = onednn.onednn_weighted_op_int8_dtype_config
    changed = _replaced(configs[3], dtype_configs=[*configs[3].dtype_configs, weighted])
    new = _rebuilt(old.name, [configs[1], configs[0], changed, *configs[4:]])
    names = {id(weighted): "onednn_weighted_op_int8_dtype_config"}
    assert diff_backend_configs("onednn", old, new, names) == [
        "onednn: nnqat.Conv1d: moved from position 1 to 0",
        "onednn: - pattern F.conv1d",
        "onednn: (nn.Conv1d, nn.ReLU): dtype_configs: + onednn_weighted_op_int8_dtype_config",
    ]


def test_diff_describes_unnamed_dtype_configs_and_changed_fields() -> None:
    old = get_onednn_backend_config()
    configs = old.configs
    changed = _replaced(
        configs[0],
        dtype_configs=[],
        observation_type=ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT,
        fuser_method=_fuse_conv_relu_1d,
    )
    new = _rebuilt(old.name, [changed, *configs[1:]])
    assert diff_backend_configs("onednn", old, new) == [
        (
            "onednn: nn.Conv1d: observation_type: ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT"
            " -> ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT"
        ),
        (
            "onednn: nn.Conv1d: dtype_configs: - DTypeConfig(input=torch.quint8, output=torch.quint8,"
            " weight=torch.qint8, bias=torch.float32)"
        ),
        f"onednn: nn.Conv1d: fuser_method: None -> {__name__}._fuse_conv_relu_1d",
    ]


def test_diff_reports_name_change_first() -> None:
    old = get_qnnpack_pt2e_backend_config()
    new = _rebuilt("renamed", old.configs)
    assert diff_backend_configs("pt2e", old, new) == [
        "pt2e: name: 'qnnpack_pytorch_2.0_export' -> 'renamed'"
    ]


# ---------------------------------------------------------------------------
# Behaviour verdicts: shared by equivalent copies, never by other code; a trial leaves the caller's random state
# ---------------------------------------------------------------------------

@pytest.fixture
def counted_trials(monkeypatch) -> list:
    """Every behavioural trial of fuser methods the comparator runs, from an empty verdict cache."""
    monkeypatch.setattr(callables, "_BEHAVIOUR_VERDICTS", {})
    monkeypatch.setattr(callables, "_REPRESENTATIVES", {})
    trials = []
    real = callables._fuser_behaviour_difference

    def counted(ours, theirs, config):
        trials.append((ours, theirs))
        return real(ours, theirs, config)

    monkeypatch.setattr(callables, "_fuser_behaviour_difference", counted)
    return trials


def _generated_x86():
    """A fresh run of generated/x86.py: its fuser methods are new function objects each time."""
    path = ROOT / "generated" / "x86.py"
    return sides._module_from_source("generated_x86_copy", path.read_text(), str(path))


def test_equivalent_copies_of_fuser_methods_share_one_verdict(counted_trials) -> None:
    # Each backend of a diff has its own module's functions and torch's fresh closures.
    first = equality.compare_backend_configs("x86", _generated_x86().get_x86_backend_config(), get_x86_backend_config())
    tried = len(counted_trials)
    assert tried > 0  # the generated module's own fuser methods are compared by behaviour
    generated = _generated_x86().get_x86_backend_config()
    second = equality.compare_backend_configs("x86", generated, get_x86_backend_config())
    assert len(counted_trials) == tried
    assert first == second == []


def _fuse_conv_relu(is_qat, conv, relu):
    return nni.ConvReLU1d(conv, relu)


def _with_globals(function, **names):
    return types.FunctionType(function.__code__, {**function.__globals__, **names}, function.__name__)


@pytest.mark.parametrize("right_first", [True, False])
def test_same_bytecode_with_other_globals_gets_its_own_verdict(counted_trials, right_first) -> None:
    config = next(c for c in get_fbgemm_backend_config().configs if c.pattern == (torch.nn.Conv1d, torch.nn.ReLU))
    theirs = _sequential_wrapper2(nni.ConvReLU1d)
    right = _with_globals(_fuse_conv_relu)
    wrong = _with_globals(_fuse_conv_relu, nni=types.SimpleNamespace(ConvReLU1d=nni.ConvReLU2d))
    order = [right, wrong] if right_first else [wrong, right]
    verdicts = {id(f): callables.callables_match("fuser_method", f, theirs, config) for f in order}
    assert verdicts[id(right)] == (True, "same behaviour")
    assert verdicts[id(wrong)][0] is False
    assert len(counted_trials) == 2


def test_trials_seed_only_the_cpu_generator(monkeypatch) -> None:
    # torch.manual_seed also queues a seeding of each accelerator not yet initialised,
    # capturing the stack each time: milliseconds a trial, most of a diff --against-torch.
    config = next(c for c in get_fbgemm_backend_config().configs if c.pattern == (torch.nn.Conv1d, torch.nn.ReLU))
    stacks = []
    monkeypatch.setattr(traceback, "format_stack", lambda *args: stacks.append(args) or [])
    state = torch.get_rng_state()
    assert callables._fuser_behaviour_difference(_fuse_conv_relu, _sequential_wrapper2(nni.ConvReLU1d), config) is None
    assert stacks == []
    assert torch.equal(torch.get_rng_state(), state)  # the caller's random state is left as it was
