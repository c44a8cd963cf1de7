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
NUMBERED_MIN_COLUMNS = 4  # a loop varying this many names of one numbered family runs over its numbers
SECTION_PENALTY = 2  # lines a loop must save beyond its own when its rows carry their sections
# The fields of a pattern config whose values may vary between iterations; every other must be equal.
VARYING = (
    "pattern", "pattern_complex_format", "root_module", "qat_module", "reference_quantized_module",
    "fused_module", "fuser_method", "root_node_getter", "extra_inputs_getter", "section",
)  # fmt: skip
_SEQUENTIAL = "sequential"  # the template of torch's _sequential_wrapper2(fused), written sequential(fused)
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


@dataclass(frozen=True)
class Numbered:
    """A value of a family numbered by the loop's variable: `nn[f"Conv{d}d"]`, section `f"conv{d}d"`.

    `template` is the dotted path (a torch name) or the string, with `{d}` where the number goes."""

    template: str
    variable: LoopVariable
    is_ref: bool

    def value(self, number: int):
        text = self.template.replace("{d}", str(number))
        return model.TorchRef(text) if self.is_ref else text


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
    choice: list[Loop | None] = [None] * (count + 1)  # None writes one config out
    for start in range(count - 1, -1, -1):
        cost[start], choice[start] = lines[start] + cost[start + 1], None
        for size, counts in rows.items():
            n = counts[start]
            if n >= 2:
                end = start + size * n
                loop = _loop(configs[start:end], size, taken)
                if loop is None:
                    continue
                candidate = _loop_lines(lines[start : start + size]) + _rows_lines(loop) + cost[end]
                # a row that names its own section reads worse than configs that say it: worth it only for more
                candidate += SECTION_PENALTY * (len({c.section for c in configs[start:end]}) > 1)
                if candidate < min(cost[start], sum(lines[start:end]) + cost[end]):
                    cost[start], choice[start] = candidate, loop
    result, index = [], 0
    while index < count:
        loop = choice[index]
        result.append(configs[index] if loop is None else loop)
        index += 1 if loop is None else len(loop.configs)
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


def _rows_lines(loop: Loop) -> int:
    """About how many lines black gives the rows a loop runs over beyond the `for` line: none while they fit
    there, else a row a line, else a value a line (so framing a family by its own rows, with fewer variables,
    costs less than a frame that straddles two)."""
    if len(loop.variables) == 1 and len(loop.rows) >= NAMED_LIST_MIN:
        return 0  # a list of its own at module level (`_named_lists`)
    widths = [sum(_width(value) + 2 for value in row) + 2 for row in loop.rows]
    if sum(widths) <= 80:
        return 0
    if max(widths) <= 100:
        return len(loop.rows) + 1
    return len(loop.rows) * (len(loop.variables) + 2) + 1


def _width(value) -> int:
    if isinstance(value, model.TorchRef):
        return len(value.path.rsplit(".", 1)[-1]) + 4  # nn.Conv2d, nni.ConvReLU2d
    return len(repr(value))


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
    # A few varying names read best as the builder's own rows; a whole numbered family as its numbers.
    numbered = _numbered(unifier.columns, taken) if len(columns) > NUMBERED_MIN_COLUMNS - 1 else None
    if numbered is not None:
        variable, numbers, placeholders = numbered
        variables, rows = (variable,), tuple((number,) for number in numbers)
    else:
        names = _variable_names(columns, unifier.section_columns, taken)
        variables = tuple(LoopVariable(name) for name in names)
        placeholders = dict(zip(unifier.columns.values(), variables))
        rows = tuple(zip(*columns))
    body = tuple(_substituted(c, placeholders) for c in body)
    loop = Loop(variables, rows, body, tuple(configs))
    return loop if loop.expanded() == loop.configs else None


_DIGIT = re.compile(r"(?<![0-9])[1-9](?![0-9])")


def _numbered(columns: dict, taken: set[str]):
    """(variable `d`, its numbers, placeholder -> Numbered) where every column is one family numbered alike
    (Conv1d/Conv2d, nni.ConvReLU1d/2d, "conv1d"/"conv2d": the rows' numbers the same in each), else None."""
    numbers = None
    templates = []
    for column in columns:  # values per row -> its placeholder
        found = None
        texts = [v.path if isinstance(v, model.TorchRef) else v for v in column]
        if not all(isinstance(t, str) and not set(t) & set("{}'\"\\") for t in texts):
            return None
        for index in range(len(_DIGIT.findall(texts[0]))):
            split = [_split_at_digit(t, index) for t in texts]
            if all(s is not None for s in split) and len({t for t, _ in split}) == 1:
                found = (split[0][0], tuple(n for _, n in split))
                break
        if found is None or (numbers is not None and found[1] != numbers) or len(set(found[1])) != len(found[1]):
            return None
        numbers = found[1]
        templates.append((found[0], isinstance(column[0], model.TorchRef)))
    if not templates or any(is_ref and "{d}" in t.rpartition(".")[0] for t, is_ref in templates):
        return None  # the number must be in the name's last part: nn[f"Conv{d}d"]
    name = next(n for n in ("d", "dim", "n") if n not in taken)
    variable = LoopVariable(name)
    placeholders = {placeholder: Numbered(t, variable, is_ref) for placeholder, (t, is_ref)
                    in zip(columns.values(), templates)}  # fmt: skip
    return variable, numbers, placeholders


def _split_at_digit(text: str, index: int):
    """(text with its index-th lone digit as `{d}`, that digit) or None."""
    matches = list(_DIGIT.finditer(text))
    if index >= len(matches):
        return None
    match = matches[index]
    return text[: match.start()] + "{d}" + text[match.end() :], int(match.group())


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
        if all(isinstance(v, model.FunctionDef) and v.template == _SEQUENTIAL for v in values):
            # sequential(fused): its name follows from the fused module, which may vary
            return replace(first, params=self.unify([v.params for v in values]))
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
    if isinstance(value, Numbered):
        number = placeholders.get(value.variable)
        return value if number is None else value.value(number)
    if isinstance(value, tuple):
        return tuple(_substituted(v, placeholders) for v in value)
    if isinstance(value, model.Call):
        keywords = tuple((k, _substituted(v, placeholders)) for k, v in value.keywords)
        return replace(value, args=_substituted(value.args, placeholders), keywords=keywords)
    if isinstance(value, model.PatternConfig):
        return replace(value, **{f: _substituted(getattr(value, f), placeholders) for f in VARYING})
    if isinstance(value, model.FunctionDef) and value.template == _SEQUENTIAL:
        params = _substituted(value.params, placeholders)
        fused = dict(params)["fused_module"]
        if isinstance(fused, model.TorchRef):
            return replace(value, name=dsl.sequential_fuser_name(fused.path.rsplit(".", 1)[-1]), params=params)
        return replace(value, params=params)
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
