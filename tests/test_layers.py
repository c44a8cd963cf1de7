"""The package's architecture, held against its code: layers, one-way imports, no cycles, no private names
across modules, no heavy import on the fast path, modules of a readable size.

The layers, lowest first (generator/__init__.py says the same in words). A module may import from its own
layer and from the layers below it; never from one above.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "generator"

LAYERS = ("base", "loading", "freshness", "building", "review", "importer", "commands", "cli")
# Top-level modules, by layer; a module of a subpackage is in the layer its subpackage names.
TOP_LEVEL = {
    "errors": "base", "model": "base", "spelling": "base", "digests": "base", "files": "base",
    "project": "base", "process": "base", "heap": "base", "progress": "base", "user_code": "base",
    "starting": "base",  # init's start of a project: plain files, written once
    "cache": "base",
    "user_cache": "base",
    "annotations": "base",  # GitHub workflow commands, for --format github
    "dsl": "loading",  # the spec vocabulary: spec files import it as generator.dsl
    "commands": "commands",
    "cli": "cli", "__main__": "cli",
}  # fmt: skip
SUBPACKAGES = ("loading", "freshness", "building", "review", "importer")
# Imported by `python -m generator check` and a no-op regenerate before any command decides it needs them.
HEAVY = ("torch", "jinja2", "black")
MAX_LINES = 600


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) == 1:
        return "base"  # generator/__init__.py: a docstring
    if parts[1] in SUBPACKAGES:
        return parts[1]
    return TOP_LEVEL.get(parts[1])


def imports(module: str, *, top_level_only: bool = False) -> list[tuple[str, int, bool]]:
    """(imported module, line, at module level?) for each import in a module, names resolved to modules where
    `from package import name` names a submodule."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    found = []

    def visit(node, at_top: bool):
        for child in ast.iter_child_nodes(node):
            inner = at_top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((alias.name, child.lineno, at_top) for alias in child.names)
            elif isinstance(child, ast.Call) and dynamic_import(child):
                found.append((dynamic_import(child), child.lineno, at_top))
            elif isinstance(child, ast.ImportFrom):
                assert not child.level, f"{module}:{child.lineno}: a relative import; the package imports absolutely"
                base = child.module
                for alias in child.names:
                    submodule = f"{base}.{alias.name}"
                    found.append((submodule if submodule in MODULES else base, child.lineno, at_top))
            visit(child, inner)

    visit(tree, True)
    return [item for item in found if not top_level_only or item[2]]


PACKAGES = {name for name, path in MODULES.items() if path.name == "__init__.py"}


def dynamic_import(call: ast.Call) -> str | None:
    """The module `importlib.import_module("x")` or `__import__("x")` names, when it is a literal."""
    function = call.func
    named = (isinstance(function, ast.Name) and function.id in ("__import__", "import_module")) or (
        isinstance(function, ast.Attribute) and function.attr == "import_module"
    )
    if named and call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        return call.args[0].value
    return None


def test_every_module_of_the_generator_has_a_layer():
    unplaced = [name for name in MODULES if layer_of(name) is None]
    assert unplaced == [], "place each new top-level module in a layer: TOP_LEVEL above and generator/__init__.py"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_imports_only_from_its_own_layer_and_those_below(module):
    rank = LAYERS.index(layer_of(module))
    upward = [
        f"{MODULES[module].relative_to(PACKAGE.parent)}:{line}: imports {imported} ({layer_of(imported)})"
        for imported, line, _ in imports(module)
        if imported in MODULES and LAYERS.index(layer_of(imported)) > rank
    ]
    assert upward == []


def test_no_import_cycle_among_the_generator_s_modules():
    graph = {name: {i for i, _, _ in imports(name) if i in MODULES and i != name} for name in MODULES}
    # A package imports nothing (its __init__ is a docstring): an import of `generator.building.x` is not one of
    # `generator.building`, so packages take no part in cycles.
    state: dict[str, int] = {}
    cycles = []

    def visit(node, stack):
        state[node] = 1
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                cycles.append(" -> ".join([*stack[stack.index(target) :], target]))
            elif target not in state:
                visit(target, [*stack, target])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == []


def test_a_package_s_init_says_what_it_owns_and_holds_no_code():
    for name in sorted(PACKAGES):
        tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), f"{name}: its __init__.py says in a docstring what the package owns"
        assert len(tree.body) == 1, f"{name}: its __init__.py holds its docstring only"


def private_uses(module: str) -> list[str]:
    """Another generator module's private names, however this one reaches them: `from generator.x import _y`,
    `x._y` where x is bound to a generator module (by an import, an alias or an assignment of one),
    `generator.x._y` in full, and `getattr(x, "_y")`."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    bound: dict[str, str] = {}
    uses = []

    def module_of(node) -> str | None:
        """The generator module an expression stands for: a bound name, or a dotted path from `generator`."""
        if isinstance(node, ast.Name):
            return bound.get(node.id)
        if isinstance(node, ast.Attribute):
            parent = module_of(node.value)
            dotted = f"{parent}.{node.attr}" if parent else None
            return dotted if dotted in MODULES else None
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("generator"):
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                if submodule in MODULES:
                    bound[alias.asname or alias.name] = submodule
                elif alias.name.startswith("_"):
                    uses.append(f"line {node.lineno}: from {node.module} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("generator"):
                    bound[alias.asname or "generator"] = alias.name if alias.asname else "generator"
    for _ in range(2):  # an assignment of a bound module, then one of that name
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and (target := module_of(node.value)):
                bound.update({name.id: target for name in node.targets if isinstance(name, ast.Name)})
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = module_of(node.value)
            if owner and owner != module:
                uses.append(f"line {node.lineno}: {owner}.{node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and (owner := module_of(node.args[0]))
            and owner != module
            and isinstance(node.args[1], ast.Constant)
            and str(node.args[1].value).startswith("_")
            and not str(node.args[1].value).startswith("__")
        ):
            uses.append(f"line {node.lineno}: getattr({owner}, {node.args[1].value!r})")
    return uses


def test_no_module_uses_another_module_s_private_names():
    found = {name: uses for name in MODULES if (uses := private_uses(name))}
    assert found == {}


def test_no_module_is_past_about_600_lines():
    long = {name: n for name, path in MODULES.items() if (n := len(path.read_bytes().splitlines())) > MAX_LINES}
    assert long == {}


def reached_at_import(start: str) -> set[str]:
    """Every module importing `start` runs: module-level imports, followed through the generator's own modules
    (a package's import runs its __init__ too)."""
    seen, todo = set(), [start]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in MODULES:
            parents = [".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)]
            todo.extend(p for p in parents if p in MODULES)
            todo.extend(i for i, _, _ in imports(name, top_level_only=True))
    return seen


@pytest.mark.parametrize("start", ["generator.__main__", "generator.cli", "generator.freshness.planning",
                                   "generator.loading.loader", "generator.dsl"])  # fmt: skip
def test_the_fast_path_and_spec_loading_import_no_torch_jinja2_or_black(start):
    """check and a no-op regenerate (python -m generator: __main__, cli, planning) and a spec load (loader, and
    the dsl that spec files import) reach torch, Jinja2 and black only inside the functions that need them."""
    heavy = sorted(m for m in reached_at_import(start) if m.partition(".")[0] in HEAVY)
    assert heavy == []


def test_the_import_graph_is_read_from_the_code():
    """The reading above sees what the interpreter does, so the tests above cannot pass by reading nothing:
    the CLI reaches planning at import, the pipeline the loader, and a module-level torch import (the
    comparator's) is seen as one, while a function's import of black is not."""
    assert "generator.freshness.planning" in reached_at_import("generator.cli")
    assert "generator.loading.loader" in reached_at_import("generator.building.pipeline")
    assert "torch" in reached_at_import("generator.review.equality")
    formatting = imports("generator.building.formatting")
    assert ("black", False) in {(name, top) for name, _, top in formatting}
    assert "black" not in reached_at_import("generator.building.formatting")


NO_OP_PROBE = """
import sys
from generator import cli, dsl  # noqa: F401  -- what python -m generator and a spec file import
from generator.loading import loader  # noqa: F401
code = cli.main(["--root", sys.argv[1], "regenerate"])
heavy = sorted({m.partition(".")[0] for m in sys.modules} & {"torch", "jinja2", "black"})
print("exit", code, "imported", heavy)
"""


def test_a_no_op_regenerate_in_a_fresh_interpreter_imports_no_torch_jinja2_or_black(fresh_project):
    """What the reading above cannot see (an import made by a call at import time, a module's __getattr__), the
    interpreter does: a fresh one that imports the CLI, the spec vocabulary and the loader, then runs a
    regenerate with nothing to do, has none of the three in sys.modules. (check: tests/test_commands.py.)"""
    env = dict(os.environ, PYTHONPATH=str(PACKAGE.parent))
    done = subprocess.run([sys.executable, "-c", NO_OP_PROBE, str(fresh_project)], env=env, capture_output=True,
                          text=True, cwd=fresh_project)  # fmt: skip
    assert done.stdout.splitlines()[-1:] == ["exit 0 imported []"], done.stderr
