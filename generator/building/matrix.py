"""The support matrix: which backend supports which pattern, with which dtype configs.

A pure function of the expanded modules. One table per pattern family (the
`section` a spec gives its configs), a row per pattern and a column per backend;
each cell lists the dtype configs that backend registers for the pattern, empty
when it does not support it. Families are in alphabetical order; rows keep the
order in which the backends, read left to right, register the patterns. Both
orders move only when a pattern comes or goes, so a one-op spec change touches
one row. A pattern a backend declares removed (relative to its reference
builder) keeps a row, and every declared difference is listed with its reason.
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


def support_matrix(modules: list[ExpandedModule]) -> SupportMatrix:
    backends = [(module, expanded.backend) for module in modules for expanded in module.backends]
    columns = tuple(Column(b.label, b.builder, m.spec.name, len(b.configs), m.spec.output) for m, b in backends)
    cells: dict[tuple[str, str], list[tuple[str, ...]]] = {}
    labels: dict[tuple[str, str], str] = {}
    for index, (_, backend) in enumerate(backends):
        for config in backend.configs:
            row = (config.section or OTHER_FAMILY, python_source(config.key))
            labels.setdefault(row, _label(config))
            cells.setdefault(row, [()] * len(backends))[index] = tuple(d.name for d in config.dtype_configs)
    expanded = [e for module in modules for e in module.backends]
    _add_removed_rows(expanded, cells, labels)
    families = {}
    for family, key in cells:
        families.setdefault(family, []).append(Row(labels[(family, key)], tuple(cells[(family, key)])))
    ordered = tuple(Family(name, tuple(families[name])) for name in sorted(families))
    declarations = tuple(d for e in expanded for d in e.declarations)
    return SupportMatrix(columns, ordered, _legend(modules), declarations)


def _add_removed_rows(backends: list[ExpandedBackend], cells: dict, labels: dict) -> None:
    """A pattern declared removed keeps its row, so a reader sees what was dropped."""
    for expanded in backends:
        for removal in expanded.backend.removals if expanded.declarations else ():
            row = (removal.section or OTHER_FAMILY, python_source(removal.key))
            labels.setdefault(row, python_source(removal.pattern))
            cells.setdefault(row, [()] * len(backends))


def _label(config: PatternConfig) -> str:
    """The pattern as a reviewer writes it: the simple form when the spec uses it."""
    return python_source(config.pattern if config.pattern is not None else config.key)


def _legend(modules: list[ExpandedModule]) -> tuple[LegendEntry, ...]:
    defined: dict[tuple[str, tuple], list[str]] = {}
    for module in modules:
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
