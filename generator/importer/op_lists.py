"""Import, looped: runs of patterns that differ only in their ops written as one loop over an op list.

A builder registers its ops in loops (`for op in OPS["shared"]: ...`); what it returns
lists each pattern. Where consecutive patterns repeat one body of `k` configs that differ
only in torch names, method names or sections (the same dtype configs, observation type
and every other setting), the spec writes the body once over the rows that vary:

    [config(op, activation_dtype_configs, observation_type=..., section="share qparams ops")
     for op in share_qparams_ops]
    [[config((conv, bn), ...), config((conv, bn, nn.ReLU), ...)]
     for conv, bn in ((nn.Conv1d, nn.BatchNorm1d), (nn.Conv2d, nn.BatchNorm2d))]

The DSL flattens nested lists in order, so the loop registers exactly the builder's
patterns in the builder's order; each loop is expanded back (`Loop.expanded`) and must
equal the patterns it stands for, else they stay written out. The cheapest cover (a
pattern written out costs about the lines black gives it, a loop its body's and the lines
around it) is chosen in builder order; a loop must be shorter than what it replaces, so two
short configs stay two configs.
"""

from __future__ import annotations

import builtins
import keyword
import re
from dataclasses import dataclass, fields, replace

from generator import dsl, model

MAX_BODY = 4  # the most configs one iteration may hold
NAMED_LIST_MIN = 3  # an op list of this many ops or more gets a module-level name
SECTION_PENALTY = 2  # lines a loop must save beyond its own when its rows carry their sections
# The fields of a pattern config whose values may vary between iterations; every other must be equal.
VARYING = (
    "pattern", "pattern_complex_format", "root_module", "qat_module", "reference_quantized_module",
    "fused_module", "fuser_method", "root_node_getter", "extra_inputs_getter", "section",
)  # fmt: skip
FIXED = (*(f.name for f in fields(model.PatternConfig) if f.compare and f.name not in VARYING), "overrides")


@dataclass(frozen=True)
class LoopVariable:
    """Where an iteration's value goes in a loop's body: the loop's target `name`."""

    name: str


@dataclass(frozen=True)
class Loop:
    """`[body for variables in rows]`: `configs`, the builder's patterns, written once."""

    variables: tuple[LoopVariable, ...]
    rows: tuple[tuple, ...]  # per iteration, a value per variable
    body: tuple[model.PatternConfig, ...]  # with LoopVariables where the rows' values go
    configs: tuple[model.PatternConfig, ...]
    list_name: str | None = None  # the module-level op list the loop runs over, if named

    @property
    def op_list(self) -> tuple:
        """The values the loop runs over, as the spec writes them (a row's one value or the row)."""
        return tuple(row[0] if len(self.variables) == 1 else row for row in self.rows)

    def expanded(self) -> tuple[model.PatternConfig, ...]:
        """What the loop registers, in order."""
        return tuple(_substituted(c, dict(zip(self.variables, row))) for row in self.rows for c in self.body)


class _NoLoop(Exception):
    pass


def recover(entries: list, taken: set[str]) -> list:
    """`entries` (pattern configs and other entries) with runs of pattern configs written as loops.

    `taken`: the names the spec defines or imports, which no loop variable or op list may hide."""
    taken = set(taken) | set(dsl.__all__) | set(keyword.kwlist) | set(dir(builtins))
    result, run = [], []
    for entry in [*entries, None]:
        if isinstance(entry, model.PatternConfig):
            run.append(entry)
            continue
        result += _looped(run, taken)
        run = []
        if entry is not None:
            result.append(entry)
    return _named_lists(result, taken)


def _looped(configs: list, taken: set[str]) -> list:
    """The cheapest cover of `configs` by single configs and loops, in order."""
    count = len(configs)
    if count < 2:
        return list(configs)
    rows = {k: _row_counts(configs, k) for k in range(1, min(MAX_BODY, count // 2) + 1)}
    lines = [_lines(c) for c in configs]
    cost = [0] * (count + 1)
    choice: list[tuple[int, int]] = [(0, 0)] * (count + 1)  # (body size, rows); (0, 0) writes one config out
    for start in range(count - 1, -1, -1):
        cost[start], choice[start] = lines[start] + cost[start + 1], (0, 0)
        for size, counts in rows.items():
            n = counts[start]
            if n >= 2:
                end = start + size * n
                candidate = _loop_lines(lines[start : start + size]) + cost[end]
                # a row that names its own section reads worse than configs that say it: worth it only for more
                candidate += SECTION_PENALTY * (len({c.section for c in configs[start:end]}) > 1)
                if candidate < min(cost[start], sum(lines[start:end]) + cost[end]):
                    cost[start], choice[start] = candidate, (size, n)
    result, index = [], 0
    while index < count:
        size, n = choice[index]
        loop = _loop(configs[index : index + size * n], size, taken) if size else None
        if loop is None:
            result.append(configs[index])
            index += 1
        else:
            result.append(loop)
            index += size * n
    return result


def _lines(config: model.PatternConfig) -> int:
    """About how many lines black gives a config(...): one if it has few arguments, else one per argument."""
    arguments = 2 + sum(getattr(config, f) not in (None, (), "") for f in VARYING[2:])
    arguments += config.observation_type != model.DEFAULT_OBSERVATION_TYPE
    arguments += bool(config.num_tensor_args_to_observation_type) + bool(config.input_type_to_index)
    return 1 if arguments <= 3 else arguments + 2


def _loop_lines(body: list[int]) -> int:
    """About how many lines a loop over this body takes: a short one-config loop fits on one line or two."""
    if body == [1]:
        return 2
    return sum(body) + 3 + (2 if len(body) > 1 else 0)


def _row_counts(configs: list, size: int) -> list[int]:
    """For each start, how many consecutive rows of `size` configs repeat one body (by neighbours)."""
    count = len(configs)
    alike = [j + size < count and _alike(configs[j], configs[j + size]) for j in range(count)]
    counts = [1] * (count + 1)
    for start in range(count - size, -1, -1):
        if start + 2 * size <= count and all(alike[start : start + size]):
            counts[start] = 1 + counts[start + size]
    return counts


def _alike(a: model.PatternConfig, b: model.PatternConfig) -> bool:
    if any(getattr(a, f) != getattr(b, f) for f in FIXED):
        return False
    try:
        _Unifier().unify_config([a, b])
    except _NoLoop:
        return False
    return True


def _loop(configs, size: int, taken: set[str]) -> Loop | None:
    instances = [configs[i : i + size] for i in range(0, len(configs), size)]
    unifier = _Unifier()
    try:
        body = tuple(unifier.unify_config([instance[o] for instance in instances]) for o in range(size))
    except _NoLoop:
        return None
    columns = list(unifier.columns)
    names = _variable_names(columns, unifier.section_columns, taken)
    variables = tuple(LoopVariable(name) for name in names)
    placeholders = dict(zip(unifier.columns.values(), variables))
    body = tuple(_substituted(c, placeholders) for c in body)
    loop = Loop(variables, tuple(zip(*columns)), body, tuple(configs))
    return loop if loop.expanded() == loop.configs else None


class _Unifier:
    """One body for several instances: equal values kept, differing names made variables."""

    def __init__(self):
        self.columns: dict[tuple, LoopVariable] = {}  # values per instance -> a placeholder
        self.section_columns: set[tuple] = set()

    def unify_config(self, configs: list[model.PatternConfig]) -> model.PatternConfig:
        first = configs[0]
        if any(getattr(c, f) != getattr(first, f) for c in configs for f in FIXED):
            raise _NoLoop
        changes = {}
        for name in VARYING:
            values = [getattr(c, name) for c in configs]
            if name == "section":
                if any(v != values[0] for v in values):
                    self.section_columns.add(tuple(values))
                    changes[name] = self.variable(tuple(values))
            else:
                changes[name] = self.unify(values)
        return replace(first, **changes)

    def unify(self, values: list):
        first = values[0]
        if all(v == first for v in values):
            return first
        if all(isinstance(v, (model.TorchRef, str)) for v in values):
            return self.variable(tuple(values))
        if all(isinstance(v, tuple) for v in values) and len({len(v) for v in values}) == 1:
            return tuple(self.unify([v[i] for v in values]) for i in range(len(first)))
        if all(isinstance(v, model.Call) for v in values):
            if any(v.function != first.function or [k for k, _ in v.keywords] != [k for k, _ in first.keywords]
                   for v in values):  # fmt: skip
                raise _NoLoop
            keywords = tuple(
                (key, self.unify([v.keywords[i][1] for v in values])) for i, (key, _) in enumerate(first.keywords)
            )
            return replace(first, args=self.unify([v.args for v in values]), keywords=keywords)
        raise _NoLoop

    def variable(self, column: tuple) -> LoopVariable:
        return self.columns.setdefault(column, LoopVariable(f"#{len(self.columns)}"))


def _variable_names(columns: list[tuple], section_columns: set[tuple], taken: set[str]) -> list[str]:
    names: list[str] = []
    for column in columns:
        wanted = "section" if column in section_columns else _common_stem(column) or "op"
        name, letter = wanted, "b"
        while name in taken or name in names:
            name, letter = f"{wanted}_{letter}", chr(ord(letter) + 1)
        names.append(name)
    return names


def _common_stem(column: tuple) -> str:
    """`conv` for nn.Conv1d and nn.Conv2d: what the names have in common, if it reads as a word."""
    last = [(v.path.rsplit(".", 1)[-1] if isinstance(v, model.TorchRef) else v).lower() for v in column]
    stem = last[0]
    for other in last[1:]:
        while not other.startswith(stem):
            stem = stem[:-1]
    stem = re.sub(r"[^a-z]+$", "", stem)
    return stem if len(stem) >= 3 and stem.isidentifier() else ""


def _substituted(value, placeholders: dict):
    """`value` with each placeholder key replaced by its value, through configs, tuples and calls."""
    if isinstance(value, LoopVariable):
        return placeholders.get(value, value)
    if isinstance(value, tuple):
        return tuple(_substituted(v, placeholders) for v in value)
    if isinstance(value, model.Call):
        keywords = tuple((k, _substituted(v, placeholders)) for k, v in value.keywords)
        return replace(value, args=_substituted(value.args, placeholders), keywords=keywords)
    if isinstance(value, model.PatternConfig):
        return replace(value, **{f: _substituted(getattr(value, f), placeholders) for f in VARYING})
    return value


# ---------------------------------------------------------------------------
# Op lists named once
# ---------------------------------------------------------------------------


def _named_lists(entries: list, taken: set[str]) -> list:
    """Loops over one long op list in one section run over a module-level list named for it
    (`share_qparams_ops`); the same list in several loops is named once."""
    names: dict[tuple, str] = {}
    result = []
    for entry in entries:
        if isinstance(entry, Loop) and len(entry.variables) == 1 and len(entry.rows) >= NAMED_LIST_MIN:
            name = names.get(entry.op_list) or _list_name(entry, taken | set(names.values()))
            if name is not None:
                names[entry.op_list] = name
                entry = replace(entry, list_name=name)
        result.append(entry)
    return result


def _list_name(loop: Loop, taken: set[str]) -> str | None:
    sections = {c.section for c in loop.body}
    if len(sections) != 1 or not isinstance(next(iter(sections)), str) or not next(iter(sections)):
        return None
    stem = re.sub(r"[^a-z0-9]+", "_", next(iter(sections)).lower()).strip("_")
    name = stem if stem.endswith("ops") else f"{stem}_ops"
    return name if name.isidentifier() and name not in taken else None


def loops_in(entries) -> list[Loop]:
    return [e for e in entries if isinstance(e, Loop)]
