"""Import, ordered: a builder whose pattern order varies between runs gets one order, the spec's.

A builder that loops over a set of classes (`for conv in {SubMConv3d, SparseConv3d}`, as spconv's
does, or over a module-level set) registers their patterns in the set's iteration order, which follows
the classes' hashes: their addresses, different in every interpreter. What it returns is the same set of
patterns each run, in another order. A spec fixes one order, and it must be the same whatever run import
read: the patterns built on a member of such a set keep their positions among themselves and are sorted
there by that member's dotted path (each member's own patterns keep the order the builder gives them),
every other pattern stays where the builder put it. The BackendConfig read is reordered so, before
anything reads it; the proof then compares the generated module with it in that order, which is the
builder's own order up to the set's, and `import` says once which order the spec fixes.

The sets are found in the source of the builder's module (without running anything): the iterable of a
`for` or a comprehension that is a set literal, `set(...)`/`frozenset(...)` of a literal, or a name the
module (or the builder, as it returned) binds to a set.
"""

from __future__ import annotations

import ast
import os
import types
from dataclasses import dataclass
from pathlib import Path

from generator.importer.object_paths import object_path


@dataclass(frozen=True)
class Unstable:
    """A set the builder iterates: where, and the members that patterns are built on."""

    where: str  # file:line of the loop
    members: tuple  # the set's members, objects


def iterated_sets(module, local_names=()) -> list[Unstable]:
    """The sets the module's source iterates, with their members (resolved by name in the module's globals,
    else the builder's locals)."""
    source = vars(module).get("__file__")  # read without getattr: a module's __getattr__ is user code
    try:
        tree = ast.parse(Path(source).read_text(encoding="utf-8")) if isinstance(source, str) else None
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):  # no source: nothing found
        tree = None
    if tree is None:
        return []
    names = {**dict(local_names), **vars(module)}
    file = _file_of(module)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            members = _members(node.iter, names)
            if members:
                found.append(Unstable(f"{file}:{getattr(node.iter, 'lineno', 0)}", members))
    return sorted(found, key=lambda u: u.where)


def _file_of(module) -> str:
    """The module's file, relative to the current folder when inside it, else its name."""
    file = vars(module).get("__file__")
    if isinstance(file, str) and os.path.isabs(file) and not os.path.relpath(file).startswith(".."):
        return os.path.relpath(file)
    return str(vars(module).get("__name__"))


def _members(node, names: dict) -> tuple:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("list", "tuple"):
        return _members(node.args[0], names) if len(node.args) == 1 else ()  # list(a_set): the set's order
    if isinstance(node, ast.Set):
        return _resolved(node.elts, names)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("set", "frozenset"):
        if len(node.args) == 1 and isinstance(node.args[0], (ast.List, ast.Tuple, ast.Set)):
            return _resolved(node.args[0].elts, names)
        return ()
    if isinstance(node, ast.Name) and isinstance(names.get(node.id), (set, frozenset)):
        return tuple(names[node.id])
    return ()


def _resolved(elements, names: dict) -> tuple:
    """The objects `nn.Conv2d`, `SubMConv3d` name in the module, for elements that are dotted names."""
    found = []
    for element in elements:
        parts = []
        while isinstance(element, ast.Attribute):
            parts.append(element.attr)
            element = element.value
        if not isinstance(element, ast.Name) or element.id not in names:
            continue
        value = names[element.id]
        for part in reversed(parts):  # a module's names by vars: its __getattr__ is user code
            value = vars(value).get(part) if isinstance(value, types.ModuleType) else getattr(value, part, None)
        if value is not None:
            found.append(value)
    return tuple(found)


def fix_order(backend_config, unstable: list[Unstable]) -> str | None:
    """Reorder `backend_config`'s patterns as the spec fixes them (see the module docstring); a note saying
    so, or None where no pattern is built on a set's member."""
    members = {id(m): (object_path(m) or repr(m)) for u in unstable for m in u.members}
    table = backend_config._pattern_complex_format_to_config
    keys = list(table)
    member_of = {index: _member_path(key, members) for index, key in enumerate(keys)}
    positions = [index for index, path in member_of.items() if path is not None]
    if len({member_of[i] for i in positions}) < 2:
        return None
    ordered = sorted(positions, key=lambda index: member_of[index])  # stable: each member's patterns in order
    new_keys = list(keys)
    for position, index in zip(positions, ordered):
        new_keys[position] = keys[index]
    if new_keys != keys:
        items = [(key, table[key]) for key in new_keys]
        table.clear()
        table.update(items)
    return (
        f"order     the builder iterates a set ({unstable[0].where}), so its pattern order changes between "
        "runs; the spec fixes it: the patterns built on the set's members sorted by the member's path, "
        "each member's own in the builder's order, the others where the builder puts them"
    )


def _member_path(key, members: dict) -> str | None:
    """The path of the first set member a pattern (in torch's reversed nested format) is built on."""
    stack = [key]
    while stack:
        item = stack.pop(0)
        if isinstance(item, tuple):
            stack[:0] = list(item)
        elif id(item) in members:
            return members[id(item)]
    return None
