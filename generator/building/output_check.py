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
