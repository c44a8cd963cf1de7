"""The support matrix: which backend supports which pattern, with which dtype configs.

A pure function of the expanded modules. One table per pattern family (the
`section` a spec gives its configs), one row per pattern and a column per backend;
each cell lists the dtype configs that backend registers for the pattern, empty
when it does not support it. A pattern has one row whatever section each backend
puts it in: its family is the first, alphabetically, of the sections the backends
give it, "other" only when none gives another. Families are in alphabetical order;
rows keep the order in which the backends, read left to right, register the
patterns. Both orders move only when a pattern comes or goes, so a one-op spec
change touches one row. A pattern a backend declares removed (relative to its
reference builder) keeps a row, and every declared difference is listed with its
reason and spec file (not its line: a matrix does not change when only a spec's
layout does).
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.building.expansion import Declaration, ExpandedBackend, ExpandedModule
from generator.model import DTypeConfig, DTypeWithConstraints, PatternConfig
from generator.spelling import bound_source, python_source

OTHER_FAMILY = "other"


@dataclass(frozen=True)
class Column:
    backend: str
    builder: str
    module: str
    patterns: int
    output: str = ""  # the generated module's file (generated/x86.py), where the project's layout puts it


@dataclass(frozen=True)
class Row:
    pattern: str
    cells: tuple[tuple[str, ...], ...]  # per column: dtype config names, () when unsupported

    @property
    def everywhere(self) -> bool:
        return all(self.cells)


@dataclass(frozen=True)
class Family:
    name: str
    rows: tuple[Row, ...]

    @property
    def anchor(self) -> str:
        """The GitHub heading anchor of the family's section."""
        return "".join(c for c in self.name.lower().replace(" ", "-") if c.isalnum() or c in "-_")


@dataclass(frozen=True)
class LegendEntry:
    """A dtype config name, what it holds, and the modules that define it so."""

    name: str
    fields: tuple[tuple[str, str], ...]
    modules: tuple[str, ...]


@dataclass(frozen=True)
class SupportMatrix:
    columns: tuple[Column, ...]
    families: tuple[Family, ...]
    legend: tuple[LegendEntry, ...]
    declarations: tuple[Declaration, ...] = ()  # declared differences from reference builders


def support_matrix(modules: list[ExpandedModule], wanted: frozenset[str] = frozenset()) -> SupportMatrix:
    """The matrix of every backend, or of the `wanted` labels only (`matrix --backend`): their columns, and the
    rows of the patterns they have or declare removed."""
    backends = [
        (module, expanded)
        for module in modules
        for expanded in module.backends
        if not wanted or expanded.backend.label in wanted
    ]
    columns = tuple(
        Column(e.backend.label, e.backend.builder, m.spec.name, len(e.backend.configs), m.spec.output)
        for m, e in backends
    )
    cells: dict[str, list[tuple[str, ...]]] = {}  # by pattern key, in the order the backends register them
    labels: dict[str, str] = {}
    sections: dict[str, set[str]] = {}
    for index, (_, expanded) in enumerate(backends):
        for config in expanded.backend.configs:
            key = python_source(config.key)
            labels.setdefault(key, _label(config))
            sections.setdefault(key, set()).add(config.section or OTHER_FAMILY)
            cells.setdefault(key, [()] * len(backends))[index] = tuple(d.name for d in config.dtype_configs)
    expanded = [e for _, e in backends]
    _add_removed_rows(expanded, cells, labels, sections)
    families: dict[str, list[Row]] = {}
    for key, row in cells.items():
        families.setdefault(_family(sections[key]), []).append(Row(labels[key], tuple(row)))
    ordered = tuple(Family(name, tuple(families[name])) for name in sorted(families))
    declarations = tuple(d for e in expanded for d in e.declarations)
    return SupportMatrix(columns, ordered, _legend(modules, {e.backend.label for e in expanded}), declarations)


def _family(sections: set[str]) -> str:
    """A pattern's family, decided by the sections given to it, not by which backend gives which."""
    named = sections - {OTHER_FAMILY}
    return min(named) if named else OTHER_FAMILY


def _add_removed_rows(backends: list[ExpandedBackend], cells: dict, labels: dict, sections: dict) -> None:
    """A pattern declared removed keeps its row, so a reader sees what was dropped."""
    for expanded in backends:
        for removal in expanded.backend.removals if expanded.declarations else ():
            key = python_source(removal.key)
            labels.setdefault(key, python_source(removal.pattern))
            sections.setdefault(key, set()).add(removal.section or OTHER_FAMILY)
            cells.setdefault(key, [()] * len(backends))


def _label(config: PatternConfig) -> str:
    """The pattern as a reviewer writes it: the simple form when the spec uses it."""
    return python_source(config.pattern if config.pattern is not None else config.key)


def _legend(modules: list[ExpandedModule], shown: set[str]) -> tuple[LegendEntry, ...]:
    """The dtype configs of the modules that hold a `shown` backend."""
    defined: dict[tuple[str, tuple], list[str]] = {}
    for module in modules:
        if not any(e.backend.label in shown for e in module.backends):
            continue
        for dtype_config in module.dtype_configs:
            defined.setdefault((dtype_config.name, _fields(dtype_config)), []).append(module.spec.name)
    return tuple(LegendEntry(name, fields, tuple(found)) for (name, fields), found in sorted(defined.items()))


def _fields(dtype_config: DTypeConfig) -> tuple[tuple[str, str], ...]:
    values = (
        ("input", dtype_config.input_dtype),
        ("output", dtype_config.output_dtype),
        ("weight", dtype_config.weight_dtype),
        ("bias", dtype_config.bias_dtype),
        ("dynamic", dtype_config.is_dynamic),
    )
    return tuple((label, _dtype_text(value)) for label, value in values if value is not None)


def _dtype_text(value) -> str:
    if isinstance(value, DTypeWithConstraints):
        bounds = ", ".join(f"{k}={bound_source(value, k)}" for k in value.bounds)
        return f"{python_source(value.dtype)} ({bounds})" if bounds else python_source(value.dtype)
    return python_source(value)
