"""How values of the model are written as Python source.

Torch objects are written with the aliases torch's own sources use (`nn.`, `F.`,
`nni.`, ...), and the imports are derived from the references a module
contains. Kept apart from rendering so that the lint, which names patterns the
same way, does not import Jinja2.
"""

from __future__ import annotations

import ast
import math
import operator
import re
import sys
import types
from collections.abc import Mapping

from generator.errors import TemplateRenderError
from generator.model import Call, DTypeConfig, DTypeWithConstraints, FunctionDef, TorchRef

# Modules imported under an alias: `import torch.nn as nn` renders torch.nn.X as nn.X.
MODULE_ALIASES = {
    "operator": "operator",
    "torch": "torch",
    "torch.nn": "nn",
    "torch.nn.functional": "F",
    "torch.ao.nn.intrinsic": "nni",
    "torch.ao.nn.intrinsic.qat": "nniqat",
    "torch.ao.nn.qat": "nnqat",
    "torch.ao.nn.quantized.reference": "nnqr",
}
# Modules whose members are imported by name: `from M import fuse_conv_bn`.
FROM_IMPORT_MODULES = (
    "torch.ao.quantization.backend_config",
    "torch.ao.quantization.fuser_method_mappings",
    "torch.ao.quantization.utils",
)


# {(module, name): alias} for objects a generated module imports under an alias (building/import_names.py).
Aliases = Mapping[tuple[str, str], str]

_LONGEST_MODULE_FIRST = sorted([*MODULE_ALIASES, *FROM_IMPORT_MODULES], key=len, reverse=True)


def split_ref(path: str) -> tuple[str, str, bool]:
    """(module, rest, imported by name?) for the longest known module prefix of a path."""
    for module in _LONGEST_MODULE_FIRST:
        if path.startswith(module + "."):
            return module, path[len(module) + 1 :], module in FROM_IMPORT_MODULES
    if "." in path and not path.startswith("torch."):
        # importable("pkg.module.name") in the spec: a module-level name of the user's code, or an
        # attribute of one (`pkg.module.Class.method`: `from pkg.module import Class`).
        module = user_module(path)
        return module, path[len(module) + 1 :], True
    raise TemplateRenderError(f"no import is known for {path}; add its module to generator/building/rendering.py")


def user_module(path: str) -> str:
    """The module of a user's dotted name: its longest prefix that is a module, found as `import` would
    find it but without running any of it; all but the last part when none is found."""
    parts = path.split(".")
    count, locations = 0, None
    for index in range(len(parts) - 1):  # the last part is a name in a module, never the module
        name = ".".join(parts[: index + 1])
        module = sys.modules.get(name)
        if isinstance(module, types.ModuleType):  # imported already (os.path too, which is no file of os)
            count, locations = index + 1, getattr(module, "__path__", None)
            continue
        if index > 0 and locations is None:
            break  # a module that is no package has no submodules to find
        spec = _find_spec(name, None if index == 0 else list(locations))
        if spec is None:
            break
        count, locations = index + 1, spec.submodule_search_locations
    return ".".join(parts[:count]) if count else path.rsplit(".", 1)[0]


def _find_spec(name: str, locations: list[str] | None):
    """The module spec the import system's finders give `name`, without importing its parents."""
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        try:
            spec = find_spec(name, locations) if find_spec is not None else None
        except (ImportError, ValueError, AttributeError, TypeError):
            spec = None
        if spec is not None:
            return spec
    return None


def ref_source(ref: TorchRef, aliases: Aliases | None = None) -> str:
    """How the generated module spells `ref`: through its module's alias, or by the name it imports it under
    (its alias in `aliases`, {(module, name): alias}, else the name itself)."""
    module, rest, by_name = split_ref(ref.path)
    if not by_name:
        return f"{MODULE_ALIASES[module]}.{rest}"
    if aliases:
        name, dot, attribute = rest.partition(".")
        return aliases.get((module, name), name) + dot + attribute
    return rest


def import_lines(refs, extra_names: dict[str, set[str]], aliases: Aliases | None = None) -> list[str]:
    """Sorted import statements for the given references plus names imported by name (`name as alias`
    for each in `aliases`)."""
    plain: set[str] = set()
    by_name: dict[str, set[str]] = {m: set(n) for m, n in extra_names.items()}
    for path in dict.fromkeys(ref.path for ref in refs):  # the same few hundred paths, thousands of times
        module, rest, imported_by_name = split_ref(path)
        if imported_by_name:
            by_name.setdefault(module, set()).add(rest.split(".")[0])
        else:
            alias = MODULE_ALIASES[module]
            plain.add(f"import {module}" if alias == module else f"import {module} as {alias}")
    lines = sorted(plain, key=lambda line: line.split(" as ")[0])
    for module in sorted(by_name):
        aliased = aliases or {}
        names = (f"{n} as {aliased[module, n]}" if (module, n) in aliased else n for n in sorted(by_name[module]))
        lines.append(f"from {module} import {', '.join(names)}")
    return lines


def python_source(value, aliases: Aliases | None = None) -> str:
    """A Python expression that evaluates to `value`, for values of the model (`aliases`: see ref_source)."""
    if isinstance(value, TorchRef):
        return ref_source(value, aliases)
    if isinstance(value, (DTypeConfig, DTypeWithConstraints, FunctionDef)):
        return value.name
    if isinstance(value, Call):
        arguments = [python_source(v, aliases) for v in value.args]
        arguments += [f"{k}={python_source(v, aliases)}" for k, v in value.keywords]
        return f"{ref_source(value.function, aliases)}({', '.join(arguments)})"
    if isinstance(value, tuple):
        items = [python_source(v, aliases) for v in value]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    if isinstance(value, float) and math.isinf(value):
        return infinity_source(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    raise TemplateRenderError(f"cannot write {value!r} as Python source")


def infinity_source(value: float) -> str:
    """`float("inf")` or `-float("inf")`: an infinite float has no literal (its repr, `inf`, is a name)."""
    return ("-" if value < 0 else "") + 'float("inf")'



def bound_source(constraints: DTypeWithConstraints, bound: str) -> str:
    """A constraint bound as the spec spells it (`2**-12`) when that spelling is proven to equal
    the value, else as its repr."""
    value = getattr(constraints, bound)
    return proven(value, dict(constraints.spellings).get(bound)) or python_source(value)


_MARKER_LINE = re.compile(r"^# generator: format-", re.MULTILINE)


def docstring(text: str) -> str:
    """A docstring literal for spec text, falling back to repr when quoting needs it, or when a line of it
    would read as a line the formatter cuts a module at (generator/building/formatting.py's markers)."""
    if '"""' in text or "\\" in text or text.endswith('"') or _MARKER_LINE.search(text):
        return repr(text)
    return f'"""{text}"""'


# Numbers: a spec's spelling of a number (`2**-12`) is kept only when proven to be that number.
_OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
# No bound is an int this large: nested powers of small exponents would grow past it for hours,
# and Python refuses the repr of an int over 4,300 digits.
_MAX_BITS = 1024


def evaluate(text: str) -> int | float | None:
    """The value of an arithmetic expression of number literals, or None for anything else."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
        return _value(tree.body)
    except (SyntaxError, ValueError, ArithmeticError, TypeError, OverflowError):
        return None


def _value(node):
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_value(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _value(node.left), _value(node.right)
        if isinstance(node.op, ast.Pow) and (abs(right) > _MAX_BITS or _bits(left) * abs(right) > _MAX_BITS):
            raise ValueError("exponent too large")  # a spelling, not a computation
        result = _OPERATORS[type(node.op)](left, right)
        if _bits(result) > _MAX_BITS:
            raise ValueError("number too large")
        return result
    raise ValueError("not an arithmetic expression of number literals")


def _bits(number) -> int:
    """An int's size in bits; 0 for a float (its own range bounds it)."""
    return number.bit_length() if isinstance(number, int) else 0


def proven(value, text: str | None) -> str | None:
    """`text` when it evaluates to exactly `value` (type and repr) and says more than its repr."""
    if text is None or text == repr(value):
        return None
    spelt = evaluate(text)
    if spelt is None or type(spelt) is not type(value) or repr(spelt) != repr(value):
        return None
    return " ".join(text.split())  # one line, as the generated module writes it
