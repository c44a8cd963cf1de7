"""Stage 4b: a static check of each formatted module before it is written.

A template change can produce a module that black accepts but Python does not
compile (e.g. `return` outside a function), or one that uses a name it neither
defines nor imports; the second fails only when a builder runs. Both are found
here from the text alone, without importing torch, so no such module reaches
generated/.
"""

from __future__ import annotations

import ast
import builtins
import symtable

from generator.errors import OutputCheckError

_BUILTINS = frozenset(dir(builtins))


def check_module(text: str, output: str) -> None:
    """Raise OutputCheckError unless `text` compiles and every name it reads is bound."""
    try:
        compile(text, output, "exec", dont_inherit=True)
        table = symtable.symtable(text, output, "exec")
    except SyntaxError as error:
        raise OutputCheckError(
            f"{output}:{error.lineno}: the templates rendered code that does not compile: {error.msg}"
        ) from None
    module_names = {s.get_name() for s in table.get_symbols() if _binds(s)}
    for name, line in _undefined(table, module_names, text):
        raise OutputCheckError(
            f"{output}:{line}: the templates rendered a use of {name!r}, which the module neither defines nor imports"
        )


def _binds(symbol: symtable.Symbol) -> bool:
    return symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace() or symbol.is_parameter()


def _undefined(table: symtable.SymbolTable, module_names: set[str], text: str):
    """(name, line) of each global name read in `table` or below that nothing binds."""
    for symbol in table.get_symbols():
        name = symbol.get_name()
        reads_global = symbol.is_referenced() and (table.get_type() == "module" or symbol.is_global())
        if reads_global and name not in module_names and name not in _BUILTINS and not name.startswith("__"):
            yield name, _first_use(text, name)
    for child in table.get_children():
        yield from _undefined(child, module_names, text)


def _first_use(text: str, name: str) -> int:
    lines = [node.lineno for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Name) and node.id == name]
    return min(lines, default=1)


def check_bindings(text: str, output: str) -> None:
    """Raise OutputCheckError when `text` binds one module-level name twice: a later import, assignment,
    def or class replaces the earlier object, and every use gets the later one, silently.

    The module's own statements are read, those nested in its `if`, `try`, `for`, `while` and `with`
    blocks too. `import torch` and `import torch.ao.quantization.backend_config.utils` both bind `torch`,
    to one package: plain imports of one package without `as` are one binding. The generator gives every
    object it imports a name of its own (building/import_names.py), and a spec's own names that clash are
    refused before this runs (naming.check_spec_names), so a text this refuses is the generator's bug.
    """
    twice = _bound_twice(ast.parse(text).body)
    if twice is not None:
        name, first, line = twice
        raise OutputCheckError(
            f"{output}:{line}: the generator bound {name!r} a second time (first at line {first}), so one object "
            "silently replaces the other: a bug of the generator's templates or naming; please report it"
        )


def check_imports(lines: list[str], output: str) -> None:
    """Raise OutputCheckError when two of a module's import lines (rendering's, one statement each, before
    the template places them) bind one name: the check rendering makes of every module it renders, whoever
    asks (import's validation too); check_bindings reads the whole module, once rendered."""
    twice = _bound_twice(ast.parse("\n".join(lines)).body)
    if twice is not None:
        name, first, line = twice
        raise OutputCheckError(
            f"{output}: the generator imports two objects as {name!r} (`{lines[first - 1]}` and "
            f"`{lines[line - 1]}`), so one silently replaces the other: a bug of the generator's naming; "
            "please report it"
        )


def _bound_twice(body: list[ast.stmt]) -> tuple[str, int, int] | None:
    """(name, line of its first binding, line of its second) of the first name bound twice, or None."""
    first: dict[str, tuple[int, str | None]] = {}  # name -> (line, package) of its first binding
    for line, name, package in _module_level_bindings(body):
        if name not in first:
            first[name] = (line, package)
        elif package is None or package != first[name][1]:
            return name, first[name][0], line
    return None


def _module_level_bindings(body: list[ast.stmt]):
    """(line, name, package) of each module-level binding in `body`, in order; `package` is the package a
    plain import without `as` binds (two of them bind one object), else None."""
    for node in body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                package = alias.name.split(".")[0]
                yield node.lineno, alias.asname or package, None if alias.asname else package
            continue
        for name in _names_bound_by(node):
            yield node.lineno, name, None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue  # its body binds names of its own scope
        for handler in getattr(node, "handlers", []):
            if handler.name:
                yield handler.lineno, handler.name, None
            yield from _module_level_bindings(handler.body)
        for field in ("body", "orelse", "finalbody"):
            yield from _module_level_bindings(getattr(node, field, []))


def _names_bound_by(node: ast.stmt) -> list[str]:
    """The names a statement other than a plain import binds at module level, its nested blocks aside."""
    if isinstance(node, ast.ImportFrom):
        return [alias.asname or alias.name for alias in node.names]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets: list[ast.AST] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor)) or (
        isinstance(node, ast.AnnAssign) and node.value is not None
    ):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    names = [n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)]
    # Assignment expressions (`(x := ...)`) in the statement's own expressions; nested blocks are walked apart.
    expressions = [getattr(node, field, None) for field in ("value", "test", "iter")]
    walrus = (n for e in expressions if isinstance(e, ast.AST) for n in ast.walk(e) if isinstance(n, ast.NamedExpr))
    return names + [n.target.id for n in walrus]


def module_bindings(text: str) -> dict[str, list[tuple[int, str]]]:
    """(line, "imports" or "defines") of each module-level binding of each name."""
    found: dict[str, list[tuple[int, str]]] = {}
    for node in ast.parse(text).body:
        verb = "imports" if isinstance(node, (ast.Import, ast.ImportFrom)) else "defines"
        for name in _bound_names(node):
            found.setdefault(name, []).append((node.lineno, verb))
    return found


def _bound_names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [alias.asname or alias.name.split(".")[0] for alias in node.names]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return [n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)]
