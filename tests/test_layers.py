"""The package's architecture, held against its code: layers, one-way imports, no cycles, no private names
across modules, no heavy import on the fast path, modules of a readable size.

The layers, lowest first (generator/__init__.py says the same in words). A module may import from its own
layer and from the layers below it; never from one above.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "generator"

LAYERS = ("base", "loading", "freshness", "building", "review", "importer", "commands", "cli")
# Top-level modules, by layer; a module of a subpackage is in the layer its subpackage names.
TOP_LEVEL = {
    "errors": "base", "model": "base", "spelling": "base", "digests": "base", "files": "base",
    "project": "base", "process": "base", "heap": "base", "progress": "base", "user_code": "base",
    "cache": "base",
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
    """`from generator.x import _y` and `x._y` where x is a generator module bound by an import."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    bound = {}
    uses = []
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
                if alias.name.startswith("generator") and alias.asname:
                    bound[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            uses.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
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
