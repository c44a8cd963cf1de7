"""Import, compacted: runs of imported patterns written as op-group calls of `spec/_common.py`.

An imported spec lists every pattern; where a run of them is exactly what one of the
project's op groups (`conv_configs(...)`, `native_layout(...)`, ...) builds from some of
the imported dtype configs, the spec can say so in one line. Nothing is guessed from
names: each candidate call is run through the real DSL and expansion (fixed-qparams
derivation, first-position-last-content deduplication) and must equal the run of
imported patterns field by field. Dtype configs compare by content, because the
expansion names the fixed-qparams copies itself (`<base>_<suffix>`). Greedy longest
match in builder order; without a `spec/_common.py` nothing is compacted.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, replace
from pathlib import Path

from generator import dsl, model, process, project, user_code
from generator.importer import op_lists
from generator.importer.dtype_names import shared_lists
from generator.importer.reading import ImportedSpec

# The op groups tried, in the order a tie in length is broken, with the option sets
# each is tried with (its defaults first).
GROUP_OPTIONS: dict[str, tuple[dict, ...]] = {
    "conv_configs": ({}, {"transpose": False}, {"dims": (2,), "transpose": False}),
    "linear_configs": ({}, {"fusions": False}),
    "binary_op_configs": ({}, {"matmul": False}),
    "default_op_configs": ({},),
    "fixed_qparams_op_configs": ({},),
    "share_qparams_op_configs": ({},),
    "bn_configs": ({},),
    "ln_configs": ({},),
    "rnn_op_configs": ({},),
    "embedding_op_configs": ({}, {"functional": True}),
    "cat_config": ({},),
    "tensor_info_op_configs": ({},),
}
LAYOUT = "native_layout"
# native_layout's sections: (group, its dtype-config argument); `None` marks where
# patterns of the backend's own go (extra_conv, extra_linear).
LAYOUT_SECTIONS = (
    ("conv_configs", "conv"), (None, "extra_conv"), ("linear_configs", "linear"), (None, "extra_linear"),
    ("binary_op_configs", "binary"), ("cat_config", "default"), ("default_op_configs", "default"),
    ("fixed_qparams_op_configs", "fixed"), ("share_qparams_op_configs", "share"),
    ("tensor_info_op_configs", "tensor_info"), ("bn_configs", "default"), ("ln_configs", "layer_norm"),
    ("rnn_op_configs", "rnn"), ("embedding_op_configs", "embedding"),
)  # fmt: skip
OPTIONAL_SECTIONS = ("tensor_info", "layer_norm")


@dataclass(frozen=True)
class GroupCall:
    """`function(*arguments)` of spec/_common.py, standing for `configs` of the imported spec.

    An argument is (keyword or None for positional, value): a dtype-config list (a tuple
    of `model.DTypeConfig`), imported patterns (a tuple of `model.PatternConfig`) or a
    plain option value.
    """

    function: str
    arguments: tuple[tuple[str | None, object], ...]
    configs: tuple[model.PatternConfig, ...]
    # What the call builds, canonical; and the imported patterns the spec writes after it
    # because the builder registers them with other settings (torch keeps the first
    # position and the last content, so a later config(..., overrides=...) replaces them).
    built: tuple[model.PatternConfig, ...] = ()
    overrides: tuple[model.PatternConfig, ...] = ()


def compact(spec: ImportedSpec, root: Path) -> ImportedSpec:
    """`spec` with runs of patterns replaced by group calls, and only the names those still use.

    The op groups are spec code: they run in a child process (generator/process.py), which
    ends with whatever they do; a child that ends without an answer compacts nothing."""
    with process.Forked(_compacted, spec, root, when_lost=spec) as child:
        return child.result()


def _compacted(spec: ImportedSpec, root: Path) -> ImportedSpec:
    common = load_common(root)
    entries = list(spec.backend.configs) if common is None else _grouped(common, spec.backend.configs)
    entries = op_lists.recover(entries, _taken(spec))
    if all(isinstance(e, model.PatternConfig) for e in entries):
        return spec
    return _with_entries(spec, tuple(entries))


def _grouped(common, configs) -> list:
    """The patterns with runs of them replaced by group calls of spec/_common.py."""
    canonical = tuple(_canonical(c) for c in configs)
    candidates = _candidates(common, _dtype_lists(configs))
    entries = _layout(common, _greedy(configs, canonical, candidates, near_misses=True))
    if not _builds(entries, canonical):
        # Overrides can meet in ways the run-by-run match does not see: exact runs only.
        entries = _layout(common, _greedy(configs, canonical, candidates, near_misses=False))
    return entries


def _taken(spec: ImportedSpec) -> set[str]:
    """The names the spec defines or imports besides the DSL's."""
    names = {dc.name for dc in spec.dtype_configs} | {c.name for c in spec.constraints}
    return names | {name for name, _ in spec.shared_lists} | set(GROUP_OPTIONS) | {LAYOUT}


# ---------------------------------------------------------------------------
# The project's op groups
# ---------------------------------------------------------------------------


def load_common(root: Path):
    """The project's spec/_common.py as the spec loader would run it, or None without one: spec code,
    to run in a child process only (compact, sections.place)."""
    if not (project.spec_folder(root) / "_common.py").is_file():
        return None
    from generator.errors import SpecExecutionError
    from generator.loading.loader import spec_context

    with spec_context(root), user_code.running(SpecExecutionError, "loading spec/_common.py", root):
        try:
            return importlib.import_module(f"{project.config(root).spec_package}._common")
        except Exception:  # a broken _common.py is regenerate's to report; import just does not compact
            return None


def expanded_call(function, arguments) -> tuple[model.PatternConfig, ...] | None:
    """What torch builds from a group call: derived fixed-qparams configs, deduplicated; None if
    the call fails or builds nothing."""
    from generator.building.expansion import expand_backend

    positional = [_argument(v) for k, v in arguments if k is None]
    keywords = {k: _argument(v) for k, v in arguments if k is not None}
    try:
        built = dsl.flatten(function(*positional, **keywords))
        backend = model.Backend(name="group", builder="group", doc="", configs=built)
        return expand_backend(backend).backend.configs if built else None
    except Exception:  # a group that does not take these arguments is not a candidate
        return None


def _argument(value):
    if isinstance(value, tuple) and value and isinstance(value[0], (model.DTypeConfig, model.PatternConfig)):
        return list(value)
    return value


def _dtype_lists(configs) -> list[tuple[model.DTypeConfig, ...]]:
    """The distinct dtype-config lists the builder uses, in first-use order."""
    return list(dict.fromkeys(c.dtype_configs for c in configs if c.dtype_configs))


def _candidates(common, dtype_lists) -> dict[object, list[GroupCall]]:
    """Every group call to try, by the canonical form of its first pattern."""
    found: dict[object, list[GroupCall]] = {}
    for name, option_sets in GROUP_OPTIONS.items():
        function = getattr(common, name, None)
        if not callable(function):
            continue
        for dtype_configs in dtype_lists:
            for options in option_sets:
                arguments = ((None, dtype_configs), *options.items())
                built = expanded_call(function, arguments)
                if built:
                    call = GroupCall(name, arguments, tuple(_canonical(c) for c in built))
                    found.setdefault(call.configs[0], []).append(call)
    return found


# ---------------------------------------------------------------------------
# Matching
# ---------------------------------------------------------------------------


def _canonical(config: model.PatternConfig) -> model.PatternConfig:
    """What the comparator sees: no section, dtype configs by content."""
    return replace(config, section="", dtype_configs=tuple(_content(dc) for dc in config.dtype_configs))


def _content(dtype_config: model.DTypeConfig) -> model.DTypeConfig:
    sides = {s: _unnamed(getattr(dtype_config, s)) for s in model.DTYPE_SIDES}
    return replace(dtype_config, name="", **sides)


def _unnamed(dtype):
    return replace(dtype, name=None) if isinstance(dtype, model.DTypeWithConstraints) else dtype


def _greedy(configs, canonical, candidates, near_misses: bool) -> list:
    """Builder order; at each pattern the longest group call that equals the run starting there,
    else (with `near_misses`) the longest that registers the same patterns in the same order
    and differs in the settings of a few, which the spec then overrides."""
    by_key: dict[object, list[GroupCall]] = {}
    for calls in candidates.values():
        for call in calls:
            by_key.setdefault(call.configs[0].key, []).append(call)
    entries, index = [], 0
    while index < len(configs):
        best, differing = None, ()
        for call in candidates.get(canonical[index], ()):
            size = len(call.configs)
            if canonical[index : index + size] == call.configs and (best is None or size > len(best.configs)):
                best = call
        for call in by_key.get(canonical[index].key, ()) if best is None and near_misses else ():
            found = _near_miss(call, canonical[index : index + len(call.configs)])
            if found is not None and (best is None or len(call.configs) > len(best.configs)):
                best, differing = call, found
        if best is None:
            entries.append(configs[index])
            index += 1
            continue
        size = len(best.configs)
        overrides = tuple(_overriding(configs[index + j], best.configs[j], best.function) for j in differing)
        entries.append(replace(best, configs=configs[index : index + size], built=best.configs, overrides=overrides))
        index += size
    return entries


# At most this share of a group's patterns may be overridden for the call to stand for them.
NEAR_MISS_SHARE = 4


def _near_miss(call: GroupCall, run) -> tuple[int, ...] | None:
    """Indices of the patterns whose settings differ, if `run` has the call's patterns in its order."""
    if len(run) != len(call.configs) or [c.key for c in run] != [c.key for c in call.configs]:
        return None
    differing = tuple(j for j, (ours, built) in enumerate(zip(run, call.configs)) if ours != built)
    return differing if 0 < len(differing) <= max(1, len(run) // NEAR_MISS_SHARE) else None


def _overriding(config: model.PatternConfig, built: model.PatternConfig, function: str) -> model.PatternConfig:
    reason = f"the builder sets it otherwise than {function}(...)"
    return replace(config, section=config.section or built.section, overrides=reason)


def _builds(entries: list, canonical: tuple) -> bool:
    """Whether the entries, run through the DSL and the expansion, give exactly these patterns."""
    from generator.building.expansion import expand_backend

    configs = []
    for entry in entries:
        configs += list(entry.built) + list(entry.overrides) if isinstance(entry, GroupCall) else [entry]
    try:
        backend = model.Backend(name="entries", builder="entries", doc="", configs=tuple(configs))
        return tuple(_canonical(c) for c in expand_backend(backend).backend.configs) == canonical
    except Exception:  # an expansion error means these entries do not stand for the patterns
        return False


def _layout(common, entries: list) -> list:
    """Group calls in native_layout's order, with the backend's own patterns where it takes
    them, become one native_layout(...) call if it builds exactly those patterns."""
    function = getattr(common, LAYOUT, None)
    if not callable(function):
        return entries
    for start, entry in enumerate(entries):
        if isinstance(entry, GroupCall) and entry.function == LAYOUT_SECTIONS[0][0]:
            found = _layout_arguments(entries, start)
            if found is None:
                continue
            arguments, stop = found
            members = entries[start:stop]
            covered = tuple(c for e in members for c in _patterns(e))
            as_built = tuple(c for e in members for c in _built(e))
            built = expanded_call(function, arguments)
            if built is not None and tuple(_canonical(c) for c in built) == as_built:
                overrides = tuple(o for e in members if isinstance(e, GroupCall) for o in e.overrides)
                layout = GroupCall(LAYOUT, arguments, covered, as_built, overrides)
                return entries[:start] + [layout] + _layout(common, entries[stop:])
    return entries


def _layout_arguments(entries: list, start: int):
    """(native_layout's keyword arguments, end index) read off the entries from `start`, or None."""
    values: dict[str, object] = {}
    index = start
    for group, keyword in LAYOUT_SECTIONS:
        if group is None:
            own = []
            while index < len(entries) and isinstance(entries[index], model.PatternConfig):
                own.append(entries[index])
                index += 1
            if own:
                values[keyword] = tuple(own)
            continue
        entry = entries[index] if index < len(entries) else None
        if not (isinstance(entry, GroupCall) and entry.function == group and len(entry.arguments) == 1):
            if keyword in OPTIONAL_SECTIONS:
                continue
            return None
        dtype_configs = entry.arguments[0][1]
        if values.setdefault(keyword, dtype_configs) != dtype_configs:
            return None
        index += 1
    return tuple(values.items()), index


def _patterns(entry) -> tuple[model.PatternConfig, ...]:
    return entry.configs if isinstance(entry, GroupCall) else (entry,)


def _built(entry) -> tuple[model.PatternConfig, ...]:
    """What an entry builds, canonical: a group call its own patterns, before its overrides."""
    return entry.built if isinstance(entry, GroupCall) else (_canonical(entry),)


# ---------------------------------------------------------------------------
# The compacted spec
# ---------------------------------------------------------------------------


def _with_entries(spec: ImportedSpec, entries: tuple) -> ImportedSpec:
    """The spec with these entries, defining only the dtype configs and constraints they use."""
    lists = [c.dtype_configs for c in _explicit(entries)]
    lists += [v for e in entries if isinstance(e, GroupCall) for _, v in e.arguments if _is_dtype_list(v)]
    used = {dc.name for members in lists for dc in members}
    dtype_configs = tuple(dc for dc in spec.dtype_configs if dc.name in used)
    constrained = {getattr(dc, s) for dc in dtype_configs for s in model.DTYPE_SIDES}
    constraints = tuple(c for c in spec.constraints if c in constrained)
    named = shared_lists([tuple(dc.name for dc in members) for members in lists], {dc.name for dc in dtype_configs})
    return replace(spec, entries=entries, dtype_configs=dtype_configs, constraints=constraints, shared_lists=named)


def _explicit(entries):
    """The patterns the spec writes out as config(...), inside group calls or not."""
    for entry in entries:
        if isinstance(entry, model.PatternConfig):
            yield entry
        elif isinstance(entry, op_lists.Loop):
            yield from entry.body
        else:
            for _, value in entry.arguments:
                if isinstance(value, tuple) and value and isinstance(value[0], model.PatternConfig):
                    yield from value
            yield from entry.overrides


def _is_dtype_list(value) -> bool:
    return isinstance(value, tuple) and bool(value) and isinstance(value[0], model.DTypeConfig)
