"""Import: a constraint's numbers spelt as the builder's source spells them (`2 ** -12`, `1.0 / 256.0`).

A BackendConfig holds only the numbers (`0.000244140625`); how the builder wrote them is in
its source. This reads the source of the builder's module (and of the modules it imports
from, `dtype_names.GlobalNames.modules`) and collects, per bound, each expression bound into
a `DTypeWithConstraints(...)` call (keyword, positional, or a module-level name one of those
names) or assigned to that attribute (`c.scale_min_lower_bound = 2 ** -12`).

A spelling is used for a value only when `generator.spelling.proven` evaluates it (without
eval) to exactly that value, same type and same repr; where the builder computes the number
(a variable, a function call), nothing evaluates and the spec writes the repr. The spelling
then rides on `model.DTypeWithConstraints.spellings`, which the spec writer writes and the
loader reads back into the generated module (`generator/loading/spellings.py`).
"""

from __future__ import annotations

import ast
import inspect
import math
from collections import Counter

from generator import model
from generator.spelling import proven

_BOUNDS = model.CONSTRAINT_BOUNDS
_POSITIONAL = ("dtype", *_BOUNDS)  # torch's DTypeWithConstraints is a dataclass of these fields, in this order
_MAX_NAME_HOPS = 4  # `A = B`, `B = 2 ** -12`: deeper chains keep the repr


class NumberSpellings:
    """Every spelling the sources give each bound, in source order."""

    def __init__(self, found: dict[str, list[str]]):
        self.found = found

    @classmethod
    def of(cls, modules) -> NumberSpellings:
        found: dict[str, list[str]] = {bound: [] for bound in _BOUNDS}
        for module in modules:
            try:
                source = inspect.getsource(module)
                tree = ast.parse(source)
            except (OSError, TypeError, SyntaxError, ValueError):  # no source: a C extension, a module made at run time
                continue
            _collect(tree, source, found)
        return cls(found)

    def spelling(self, bound: str, value) -> str | None:
        """The spelling of `value` the sources use most (first in source order on a tie), proven equal."""
        proved = [text for text in (proven(value, t) for t in self.found.get(bound, ())) if text is not None]
        if not proved:
            return None
        counts = Counter(proved)
        return max(dict.fromkeys(proved), key=lambda text: counts[text])

    def spellings(self, bounds: dict) -> tuple[tuple[str, str], ...]:
        """(bound, spelling) for each bound the sources spell otherwise than its repr."""
        pairs = ((bound, self.spelling(bound, value)) for bound, value in bounds.items())
        return tuple((bound, text) for bound, text in pairs if text is not None)


def _collect(tree: ast.Module, source: str, found: dict[str, list[str]]) -> None:
    names = _module_level_values(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _callee(node) == "DTypeWithConstraints":
            bound_nodes = [(f, a) for f, a in zip(_POSITIONAL, node.args) if f in _BOUNDS]
            bound_nodes += [(k.arg, k.value) for k in node.keywords if k.arg in _BOUNDS]
        elif isinstance(node, ast.Assign):
            targets = [t for t in node.targets if isinstance(t, ast.Attribute)]
            bound_nodes = [(t.attr, node.value) for t in targets if t.attr in _BOUNDS]
        else:
            continue
        for bound, value in bound_nodes:
            text = _spelt(value, source, names)
            if text is not None:
                found[bound].append(text)


def _spelt(node, source: str, names: dict[str, ast.expr]) -> str | None:
    """The source of a value, following a module-level name to what it is bound to."""
    for _ in range(_MAX_NAME_HOPS):
        if not isinstance(node, ast.Name):
            return ast.get_source_segment(source, node)
        node = names.get(node.id)
        if node is None:
            return None
    return None


def _module_level_values(tree: ast.Module) -> dict[str, ast.expr]:
    """Name -> the expression of its one module-level assignment (a name assigned twice is left out)."""
    values: dict[str, ast.expr] = {}
    twice: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name):
                if target.id in values:
                    twice.add(target.id)
                values[target.id] = value
    return {name: value for name, value in values.items() if name not in twice}


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def name_text(value, spelling: str | None = None, exact: bool = False) -> str:
    """A number as part of an identifier: from its spelling where it has one (`2 ** -12` -> `2_neg_12`,
    `1.0 / 256.0` -> `1_over_256`), else from its value (a power of two as `2_neg_12`).

    `exact` tells apart what the short text does not, for constraints that differ by no more: a float
    that is a whole number keeps its type and sign (`0` -> `0`, `0.0` -> `0p0`, `-0.0` -> `neg_0p0`)."""
    if exact and isinstance(value, float) and value.is_integer():
        return _literal_text(value, exact=True)
    if spelling is not None:
        try:
            return _node_text(ast.parse(spelling, mode="eval").body)
        except (SyntaxError, ValueError):
            pass
    if isinstance(value, float) and value > 0 and not value.is_integer():
        mantissa, exponent = math.frexp(value)
        if mantissa == 0.5 and -64 <= exponent - 1 < 0:
            return f"2_neg_{1 - exponent}"
    return _literal_text(value)


_OPERATOR_WORDS = {ast.Pow: "_", ast.Div: "_over_", ast.FloorDiv: "_over_", ast.Mult: "_times_", ast.Add: "_plus_",
                   ast.Sub: "_minus_"}  # fmt: skip


def _node_text(node) -> str:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return _literal_text(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return ("neg_" if isinstance(node.op, ast.USub) else "") + _node_text(node.operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATOR_WORDS:
        return _node_text(node.left) + _OPERATOR_WORDS[type(node.op)] + _node_text(node.right)
    raise ValueError("not an arithmetic expression of number literals")


def _literal_text(value, exact: bool = False) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53 and not exact:
        value = int(value)
    text = repr(value)
    sign = "neg_" if text.startswith("-") else ""
    return sign + text.lstrip("-").replace(".", "p").replace("e-", "e_neg_").replace("e+", "e")
