"""The equality proof of two quantization BackendConfigs.

``compare_backend_configs`` proves that a generated BackendConfig equals the one
torch builds: same name, same patterns in the same order, and for every pattern
the same observation type, dtype configs (down to each constraint), modules,
dicts and callables (interchangeable as `generator.review.callables` decides).
Every difference is reported as a ``Difference``; an empty list means equal.
Values compare exactly (`generator.review.identity.same`), patterns are matched
by the key torch files them under (`generator.review.identity.pattern_key`).
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterator
from typing import Any

from torch.ao.quantization.backend_config import (
    BackendConfig,
    BackendPatternConfig,
    DTypeConfig,
    DTypeWithConstraints,
)

from generator.building.torch_names import describe_pattern, short_name
from generator.model import DTYPE_SIDES
from generator.review.callables import callables_match
from generator.review.identity import CONSTRAINT_FIELDS, DTYPE_CONFIG_FIELDS, configs_by_key, pattern_key, same

# Every attribute of a BackendPatternConfig, in comparison order.  Attributes
# outside this list are reported, so a field torch adds later is not skipped.
PATTERN_FIELDS = (
    "pattern",
    "_pattern_complex_format",
    "observation_type",
    "dtype_configs",
    "root_module",
    "qat_module",
    "reference_quantized_module",
    "fused_module",
    "fuser_method",
    "_root_node_getter",
    "_extra_inputs_getter",
    "_num_tensor_args_to_observation_type",
    "_input_type_to_index",
)
CALLABLE_FIELDS = ("fuser_method", "_root_node_getter", "_extra_inputs_getter")
DICT_FIELDS = ("_num_tensor_args_to_observation_type", "_input_type_to_index")
VALUE_FIELDS = tuple(
    f
    for f in PATTERN_FIELDS
    if f not in CALLABLE_FIELDS + DICT_FIELDS and f != "dtype_configs"
)

_DTYPE_CONFIG_ATTRIBUTES = frozenset(
    [f"{side}_with_constraints" for side in DTYPE_SIDES] + list(DTYPE_CONFIG_FIELDS)
)
_BACKEND_CONFIG_ATTRIBUTES = frozenset({"name", "_pattern_complex_format_to_config"})

# (field, detail) pairs; the public functions add backend and pattern.
_Finding = tuple[str, str]


@dataclasses.dataclass(frozen=True)
class Difference:
    """One way in which our config differs from torch's."""

    backend: str
    pattern: str
    field: str
    detail: str

    def __str__(self) -> str:
        parts = (self.backend, self.pattern, self.field, self.detail)
        return ": ".join(part for part in parts if part)


# ---------------------------------------------------------------------------
# Whole backend configs
# ---------------------------------------------------------------------------


def compare_backend_configs(
    backend: str, ours: BackendConfig, theirs: BackendConfig
) -> list[Difference]:
    """Compare two BackendConfigs completely; [] means they are equal."""
    findings = []
    if type(ours) is not type(theirs):  # a subclass may answer `.configs` otherwise than torch's flow reads
        findings.append(("type", _mismatch(type(ours), type(theirs))))
    findings += attribute_findings(
        "attributes", ours, theirs, _BACKEND_CONFIG_ATTRIBUTES
    )
    if not same(ours.name, theirs.name):
        findings.append(("name", _mismatch(ours.name, theirs.name)))
    differences = [Difference(backend, "", f, d) for f, d in findings]
    differences += _stale_key_differences(backend, "ours", ours)
    differences += _stale_key_differences(backend, "theirs", theirs)
    differences += _pattern_list_differences(backend, ours.configs, theirs.configs)
    return differences


def _pattern_list_differences(
    backend: str,
    ours: list[BackendPatternConfig],
    theirs: list[BackendPatternConfig],
) -> list[Difference]:
    """Report missing, extra and moved patterns, then compare matching pairs.

    Patterns are matched by key rather than by position, and only patterns
    outside the longest in-order run count as moved, so that one inserted
    pattern does not make every later position look different.
    """
    ours_by_key = configs_by_key(ours)
    theirs_by_key = configs_by_key(theirs)
    differences = []
    if len(ours) != len(theirs):
        detail = f"{len(ours)} patterns != {len(theirs)} patterns"
        differences.append(Difference(backend, "", "configs", detail))
    for key, (index, config) in theirs_by_key.items():
        if key not in ours_by_key:
            detail = f"missing from ours (torch has it at position {index})"
            differences.append(Difference(backend, pattern_label(config), "configs", detail))
    for key, (index, config) in ours_by_key.items():
        if key not in theirs_by_key:
            detail = f"extra in ours at position {index} (not in torch)"
            differences.append(Difference(backend, pattern_label(config), "configs", detail))
    for key in moved_keys(theirs_by_key, ours_by_key):
        index, config = ours_by_key[key]
        detail = f"out of order: at position {index} != {theirs_by_key[key][0]}"
        differences.append(Difference(backend, pattern_label(config), "position", detail))
    for key, (_, config) in theirs_by_key.items():
        if key in ours_by_key:
            differences += compare_pattern_configs(backend, ours_by_key[key][1], config)
    return differences


def moved_keys(old_by_key: dict, new_by_key: dict) -> list[Any]:
    """Patterns outside the longest run of common patterns kept in order."""
    old_order = [key for key in old_by_key if key in new_by_key]
    new_order = [key for key in new_by_key if key in old_by_key]
    matcher = difflib.SequenceMatcher(None, old_order, new_order, autojunk=False)
    kept = set()
    for block in matcher.get_matching_blocks():
        kept.update(range(block.b, block.b + block.size))
    return [key for i, key in enumerate(new_order) if i not in kept]


def _stale_key_differences(
    backend: str, side: str, config: BackendConfig
) -> list[Difference]:
    """FX reads the internal dict keys, so they must match their configs."""
    return [
        Difference(
            backend,
            pattern_label(pattern_config),
            "_pattern_complex_format_to_config",
            f"{side} keys it under {describe_pattern(key)}",
        )
        for key, pattern_config in config._pattern_complex_format_to_config.items()
        if not same(key, pattern_key(pattern_config))
    ]


# ---------------------------------------------------------------------------
# One pattern config
# ---------------------------------------------------------------------------


def compare_pattern_configs(
    backend: str, ours: BackendPatternConfig, theirs: BackendPatternConfig
) -> list[Difference]:
    """Compare two BackendPatternConfigs field by field."""
    findings = list(_pattern_config_findings(ours, theirs))
    if not findings:
        return []
    label = pattern_label(theirs)
    return [Difference(backend, label, field, detail) for field, detail in findings]


def _pattern_config_findings(
    ours: BackendPatternConfig, theirs: BackendPatternConfig
) -> Iterator[_Finding]:
    if type(ours) is not type(theirs):
        yield "type", _mismatch(type(ours), type(theirs))
        return
    yield from attribute_findings(
        "attributes", ours, theirs, frozenset(PATTERN_FIELDS)
    )
    for field in VALUE_FIELDS:
        ours_value, theirs_value = getattr(ours, field), getattr(theirs, field)
        if not same(ours_value, theirs_value):
            yield field, _mismatch(ours_value, theirs_value)
    yield from _dtype_config_list_findings(ours.dtype_configs, theirs.dtype_configs)
    for field in CALLABLE_FIELDS:
        yield from callable_findings(field, ours, theirs)
    for field in DICT_FIELDS:
        yield from _dict_findings(field, getattr(ours, field), getattr(theirs, field))


def pattern_label(config: BackendPatternConfig) -> str:
    """The pattern as the config's author wrote it."""
    if config.pattern is not None:
        return describe_pattern(config.pattern)
    return describe_pattern(config._pattern_complex_format)


def attribute_findings(
    field: str, ours: Any, theirs: Any, expected: frozenset[str]
) -> list[_Finding]:
    """A finding for each side whose object's attributes are not exactly `expected`."""
    findings = []
    for side, obj in (("ours", ours), ("theirs", theirs)):
        keys = set(vars(obj))
        if keys != expected:
            detail = (
                f"{side} has unexpected {sorted(keys - expected)} "
                f"and lacks {sorted(expected - keys)}"
            )
            findings.append((field, detail))
    return findings


def _dict_findings(field: str, ours: Any, theirs: Any) -> Iterator[_Finding]:
    if not (isinstance(ours, dict) and isinstance(theirs, dict)):
        if not same(ours, theirs):
            yield field, _mismatch(ours, theirs)
        return
    for key in theirs:
        if key not in ours:
            yield field, f"lacks key {short_name(key)}"
        elif not same(ours[key], theirs[key]):
            yield field, f"[{short_name(key)}]: {_mismatch(ours[key], theirs[key])}"
    for key in ours:
        if key not in theirs:
            yield field, f"has extra key {short_name(key)}"
    if set(ours) == set(theirs) and list(ours) != list(theirs):
        # Not used semantically by FX, but generated code should mirror torch.
        yield field, f"key order {short_name(list(ours))} != {short_name(list(theirs))}"


# ---------------------------------------------------------------------------
# Dtype configs
# ---------------------------------------------------------------------------


def _dtype_config_list_findings(ours: Any, theirs: Any) -> Iterator[_Finding]:
    if not (isinstance(ours, list) and isinstance(theirs, list)):
        yield "dtype_configs", _mismatch(type(ours), type(theirs))
        return
    if len(ours) != len(theirs):
        yield "dtype_configs", f"{len(ours)} dtype configs != {len(theirs)}"
    for index, (ours_dc, theirs_dc) in enumerate(zip(ours, theirs)):
        yield from _dtype_config_findings(f"dtype_configs[{index}]", ours_dc, theirs_dc)


def _dtype_config_findings(prefix: str, ours: Any, theirs: Any) -> Iterator[_Finding]:
    if not (type(ours) is type(theirs) is DTypeConfig):
        yield prefix, _mismatch(type(ours), type(theirs))
        return
    if ours is theirs:
        return  # one object on both sides (a config compared with its copy): nothing in it differs
    yield from attribute_findings(prefix, ours, theirs, _DTYPE_CONFIG_ATTRIBUTES)
    for side in DTYPE_SIDES:
        attribute = f"{side}_with_constraints"
        yield from _constraint_findings(
            f"{prefix}.{side}", getattr(ours, attribute), getattr(theirs, attribute)
        )
    for field in DTYPE_CONFIG_FIELDS:
        ours_value, theirs_value = getattr(ours, field), getattr(theirs, field)
        if not same(ours_value, theirs_value):
            yield f"{prefix}.{field}", _mismatch(ours_value, theirs_value)


def _constraint_findings(prefix: str, ours: Any, theirs: Any) -> Iterator[_Finding]:
    if not (type(ours) is type(theirs) is DTypeWithConstraints):
        yield prefix, _mismatch(type(ours), type(theirs))
        return
    if ours is theirs:
        return  # one object on both sides: nothing in it differs
    yield from attribute_findings(prefix, ours, theirs, frozenset(CONSTRAINT_FIELDS))
    for field in CONSTRAINT_FIELDS:
        ours_value, theirs_value = getattr(ours, field), getattr(theirs, field)
        if not same(ours_value, theirs_value):
            yield f"{prefix}.{field}", _mismatch(ours_value, theirs_value)


def _mismatch(ours: Any, theirs: Any) -> str:
    ours_name, theirs_name = short_name(ours), short_name(theirs)
    if ours_name == theirs_name:
        # e.g. two distinct classes sharing a qualname
        return f"{ours_name} != {theirs_name} (different objects with the same name)"
    return f"{ours_name} != {theirs_name}"


# ---------------------------------------------------------------------------
# Callables
# ---------------------------------------------------------------------------


def callable_findings(
    field: str, ours: BackendPatternConfig, theirs: BackendPatternConfig
) -> Iterator[_Finding]:
    """A finding when the two configs' callables of `field` are not interchangeable (`callables_match`)."""
    ours_fn, theirs_fn = getattr(ours, field), getattr(theirs, field)
    if ours_fn is None or theirs_fn is None:
        if ours_fn is not theirs_fn:
            yield field, _mismatch(ours_fn, theirs_fn)
        return
    equal, how = callables_match(field, ours_fn, theirs_fn, theirs)
    if not equal:
        yield field, f"{short_name(ours_fn)} != {short_name(theirs_fn)} ({how})"
