"""The reviewer's changes: how one BackendConfig differs from another, pattern by pattern.

``backend_diff`` is the reviewer's view of two configs (either may be absent: a
backend added or removed): a keyed diff that lists added, removed, moved and
changed patterns and changed dtype configs (``BackendDiff``, in
`generator.review.results`); ``diff_backend_configs`` gives its short readable
lines. Patterns are matched by key and fields compared as the equality proof
compares them (`generator.review.equality`); dtype configs are matched by their
names in the generated module where they have them, else by content
(`generator.review.identity.dtype_config_key`); ``dtype_config_fields`` names
the fields in which two dtype configs differ.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any

from torch.ao.quantization.backend_config import (
    BackendConfig,
    BackendPatternConfig,
    DTypeConfig,
    DTypeWithConstraints,
)

from generator.building.torch_names import short_name
from generator.model import DTYPE_SIDES
from generator.review.equality import (
    CALLABLE_FIELDS,
    PATTERN_FIELDS,
    attribute_findings,
    callable_findings,
    moved_keys,
    pattern_label,
)
from generator.review.identity import CONSTRAINT_FIELDS, DTYPE_CONFIG_FIELDS, configs_by_key, dtype_config_key, same
from generator.review.results import BackendDiff, DTypeConfigChange, FieldChange, PatternChange
from generator.review.spellings import Spellings, power_of_two


def diff_backend_configs(
    backend: str,
    old: BackendConfig,
    new: BackendConfig,
    names: dict[int, str] | None = None,
) -> list[str]:
    """Readable lines describing how ``new`` differs from ``old`` (see ``backend_diff``)."""
    return backend_diff(backend, old, new, names).lines()


def backend_diff(
    backend: str,
    old: BackendConfig | None,
    new: BackendConfig | None,
    names: dict[int, str] | None = None,
    locations: tuple[dict[str, str], dict[str, str]] = ({}, {}),
    spellings: tuple[Spellings, Spellings] = (Spellings(), Spellings()),
) -> BackendDiff:
    """How ``new`` differs from ``old``; either may be None (a backend added or removed).

    Patterns are matched by their complex-format key and ordered by position
    (removed patterns by their old position, everything else by the new one).
    ``names`` maps id(dtype config) to its name: named dtype configs are matched
    by name, and one whose content changed is reported once, by field.
    ``locations`` maps pattern labels to spec lines, on the old and the new side;
    ``spellings`` are how each side's module spells its dtype configs' values and
    names their constraints (a changed dtype config speaks the spec's words).
    """
    names = names or {}
    if old is None or new is None:
        config, change = (new, "added") if old is None else (old, "removed")
        where = locations[1] if old is None else locations[0]
        patterns = tuple(
            _whole_pattern(change, i, c, names, where) for i, c in enumerate(config.configs)
        )
        return BackendDiff(backend, change, patterns=patterns)
    entries: list[tuple[int, int, PatternChange]] = []
    shared = _used_names(old.configs, names).keys() & _used_names(new.configs, names).keys()
    old_by_key, new_by_key = configs_by_key(old.configs), configs_by_key(new.configs)
    for key, (index, config) in old_by_key.items():
        if key not in new_by_key:
            entries.append((index, 0, _whole_pattern("removed", index, config, names, locations[0])))
    for key, (index, config) in new_by_key.items():
        if key not in old_by_key:
            entries.append((index, 1, _whole_pattern("added", index, config, names, locations[1])))
            continue
        fields = tuple(_changed_fields(old_by_key[key][1], config, names, shared))
        if fields:
            label = pattern_label(config)
            entries.append((index, 2, PatternChange("changed", label, index, fields, location=locations[1].get(label))))
    for key in moved_keys(old_by_key, new_by_key):
        old_index, new_index = old_by_key[key][0], new_by_key[key][0]
        label = pattern_label(new_by_key[key][1])
        moved = (FieldChange("position", str(old_index), str(new_index)),)
        where = locations[1].get(label)
        entries.append((new_index, 3, PatternChange("moved", label, new_index, moved, location=where)))
    patterns = tuple(change for _, _, change in sorted(entries, key=lambda e: (e[0], e[1])))
    name = None if same(old.name, new.name) else FieldChange("name", repr(old.name), repr(new.name))
    dtype_configs = _dtype_config_changes(old.configs, new.configs, names, spellings, locations[1])
    changed = bool(patterns or name or dtype_configs)
    return BackendDiff(backend, "changed" if changed else "same", name, dtype_configs, patterns)


def _whole_pattern(change: str, index: int, config: BackendPatternConfig, names, locations) -> PatternChange:
    label = pattern_label(config)
    dtype_configs = tuple(_dtype_config_name(dc, names) for dc in config.dtype_configs)
    return PatternChange(change, label, index, dtype_configs=dtype_configs, location=locations.get(label))


def _changed_fields(
    old: BackendPatternConfig, new: BackendPatternConfig, names: dict[int, str], shared
) -> Iterator[FieldChange]:
    for field, detail in attribute_findings(
        "attributes", new, old, frozenset(PATTERN_FIELDS)
    ):
        yield FieldChange(field, "", detail)
    for field in PATTERN_FIELDS:
        if field == "dtype_configs":
            yield from _dtype_config_list_changes(
                old.dtype_configs, new.dtype_configs, names, shared
            )
        elif field in CALLABLE_FIELDS:
            if next(callable_findings(field, new, old), None) is not None:
                yield _change(field, getattr(old, field), getattr(new, field))
        elif not same(getattr(old, field), getattr(new, field)):
            yield _change(field, getattr(old, field), getattr(new, field))


def _change(field: str, old: Any, new: Any) -> FieldChange:
    return FieldChange(field, short_name(old), short_name(new))


def _dtype_config_list_changes(
    old: list[DTypeConfig], new: list[DTypeConfig], names: dict[int, str], shared
) -> Iterator[FieldChange]:
    # A dtype config named alike on both sides is the same entry whatever its
    # content: a content change is reported once, by _dtype_config_changes.
    def key(dtype_config):
        name = names.get(id(dtype_config))
        return name if name in shared else dtype_config_key(dtype_config)

    old_keys, new_keys = [key(dc) for dc in old], [key(dc) for dc in new]
    if old_keys == new_keys:  # what the matcher would find, without it: nothing but equal runs
        return
    matcher = difflib.SequenceMatcher(None, old_keys, new_keys, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for dtype_config in old[i1:i2]:
            yield FieldChange("dtype_configs", _dtype_config_name(dtype_config, names), "")
        for dtype_config in new[j1:j2]:
            yield FieldChange("dtype_configs", "", _dtype_config_name(dtype_config, names))


def _dtype_config_changes(
    old: list[BackendPatternConfig], new: list[BackendPatternConfig], names: dict[int, str], spellings, where
) -> tuple[DTypeConfigChange, ...]:
    """Named dtype configs used on both sides whose content differs, field by field, with the patterns using them."""
    old_used, new_used = _used_names(old, names), _used_names(new, names)
    changes = []
    for name in sorted(old_used.keys() & new_used.keys()):
        fields = tuple(dtype_config_fields(old_used[name], new_used[name], (name, name), spellings, where))
        if fields:
            users = tuple(
                dict.fromkeys(pattern_label(c) for c in new for dc in c.dtype_configs if names.get(id(dc)) == name)
            )
            changes.append(DTypeConfigChange(name, fields, users))
    return tuple(changes)


def _used_names(configs: list[BackendPatternConfig], names: dict[int, str]) -> dict[str, DTypeConfig]:
    return {names[id(dc)]: dc for c in configs for dc in c.dtype_configs if id(dc) in names}


def dtype_config_fields(
    old: DTypeConfig,
    new: DTypeConfig,
    names: tuple[str, str] = ("", ""),
    spellings: tuple[Spellings, Spellings] = (Spellings(), Spellings()),
    where: dict[str, str] | None = None,
) -> Iterator[FieldChange]:
    """Each field in which `new` differs from `old`: a constraint of a side, or the bias dtype or dynamism.

    Values are spelt as each side's module spells them (`2**-14`) where `spellings` know the dtype
    config by its `names` there, and a constraint the module names is named (`_W_S8`). `where`: the
    newer side's spec lines (`spec_locations`), which give each field its constraint's or dtype config's.
    """
    where = where or {}

    def spelled(field: str, a, b, constraint: str = "") -> FieldChange:
        before = spellings[0].value(names[0], field) or power_of_two(a) or short_name(a)
        after = spellings[1].value(names[1], field) or power_of_two(b) or short_name(b)
        side = field.partition(".")[0]
        location = where.get(f"dtype config {names[1]}.{side}") or where.get(f"dtype config {names[1]}")
        return FieldChange(field, before, after, constraint, location)

    for side in DTYPE_SIDES:
        before = getattr(old, f"{side}_with_constraints")
        after = getattr(new, f"{side}_with_constraints")
        constraint = spellings[1].constraint(names[1], side) or spellings[0].constraint(names[0], side) or ""
        for field in CONSTRAINT_FIELDS:
            a, b = getattr(before, field), getattr(after, field)
            if repr(a) != repr(b):
                yield spelled(side if field == "dtype" else f"{side}.{field}", a, b, constraint)
    for field in DTYPE_CONFIG_FIELDS:
        a, b = getattr(old, field), getattr(new, field)
        if repr(a) != repr(b):
            yield spelled(field, a, b)


def _dtype_config_name(dtype_config: DTypeConfig, names: dict[int, str]) -> str:
    if id(dtype_config) in names:
        return names[id(dtype_config)]
    parts = []
    for side in DTYPE_SIDES:
        constraints = getattr(dtype_config, f"{side}_with_constraints")
        if constraints.dtype is None and _constraint_extras(constraints) == "":
            continue
        parts.append(
            f"{side.removesuffix('_dtype')}={short_name(constraints.dtype)}"
            + _constraint_extras(constraints)
        )
    for field in DTYPE_CONFIG_FIELDS:
        value = getattr(dtype_config, field)
        if value is not None:
            parts.append(f"{field.removesuffix('_dtype')}={short_name(value)}")
    return f"DTypeConfig({', '.join(parts)})"


def _constraint_extras(constraints: DTypeWithConstraints) -> str:
    extras = [
        f"{field}={short_name(getattr(constraints, field))}"
        for field in CONSTRAINT_FIELDS[1:]
        if getattr(constraints, field) is not None
    ]
    return "{" + ", ".join(extras) + "}" if extras else ""
