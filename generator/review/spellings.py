"""The spec's own words in a generated module: how it spells each number and what it names each constraint.

A generated module writes a dtype config's numbers as its spec spells them (`2**-14`, `1.0 / 256.0`) and
keeps the spec's names for dtype configs and constraints (`_W_S8 = DTypeWithConstraints(...)`), so a
diff reads them from each side's module source, without running its spec: `Spellings.of(source)`.
Without a source (a reference builder's side) every look-up is None, and the diff falls back on
the value as Python prints it.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Spellings:
    """{(dtype config name, field): source} for its fields (`weight_dtype.scale_min_lower_bound`,
    `bias_dtype`), and {(dtype config name, side): constraint name} for a side given by name."""

    values: dict[tuple[str, str], str] = field(default_factory=dict)
    constraints: dict[tuple[str, str], str] = field(default_factory=dict)

    @classmethod
    def of(cls, source: str | None) -> Spellings:
        try:
            tree = ast.parse(source) if source else None
        except SyntaxError:
            tree = None
        if tree is None:
            return cls()
        calls = {
            node.targets[0].id: node.value
            for node in tree.body
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
        }  # fmt: skip
        values, constraints, segment = {}, {}, _segments(source)
        for name, call in calls.items():
            if _called(call) != "DTypeConfig":
                continue
            for keyword in call.keywords:
                if keyword.arg is None:
                    continue
                value = keyword.value
                if isinstance(value, ast.Name) and _called(calls.get(value.id)) == "DTypeWithConstraints":
                    constraints[(name, keyword.arg)] = value.id
                    value = calls[value.id]
                if isinstance(value, ast.Call) and _called(value) == "DTypeWithConstraints":
                    for bound in value.keywords:
                        if bound.arg is not None:
                            path = keyword.arg if bound.arg == "dtype" else f"{keyword.arg}.{bound.arg}"
                            values[(name, path)] = segment(bound.value)
                else:
                    values[(name, keyword.arg)] = segment(value)
        return cls(values, constraints)

    def value(self, dtype_config: str, field_name: str) -> str | None:
        return self.values.get((dtype_config, field_name))

    def constraint(self, dtype_config: str, side: str) -> str | None:
        return self.constraints.get((dtype_config, side))


def _segments(source: str):
    """ast.get_source_segment for one source, its lines split once: the standard one splits the whole source
    again for every node, which made a diff of torch's nine backends take seconds."""
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", source)

    def segment(node) -> str | None:
        if getattr(node, "end_lineno", None) is None or node.end_col_offset is None:
            return None
        first, last = node.lineno - 1, node.end_lineno - 1
        if first == last:
            return lines[first].encode()[node.col_offset : node.end_col_offset].decode()
        head = lines[first].encode()[node.col_offset :].decode()
        tail = lines[last].encode()[: node.end_col_offset].decode()
        return "".join([head, *lines[first + 1 : last], tail])

    return segment


def _called(call) -> str | None:
    """The name a call calls (`DTypeConfig(...)`, `backend_config.DTypeConfig(...)`), None for anything else."""
    if not isinstance(call, ast.Call):
        return None
    function = call.func
    return function.id if isinstance(function, ast.Name) else getattr(function, "attr", None)


def power_of_two(value) -> str | None:
    """`2**-12` for a float that is exactly a power of two below 1/4 or above 4 (as specs spell such bounds); else None.

    For a value no module spells (a reference builder's), so that `2**-12 -> 2**-10` does not read
    `0.000244140625 -> 0.0009765625`."""
    if type(value) is not float or value <= 0 or not math.isfinite(value):
        return None
    mantissa, exponent = math.frexp(value)
    if mantissa != 0.5 or -1 <= exponent - 1 <= 2:
        return None
    return f"2**{exponent - 1}"
