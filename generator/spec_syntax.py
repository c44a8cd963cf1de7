"""The calls and assignments of a spec file's syntax tree, parsed and walked once per file content.

Locating a spec line (the argument a wrong value was written at, the name a
dtype config is assigned to) and reading a module's name without running its
spec both look at the same trees. Each file is parsed once for what it holds
now: the index is kept by the bytes it was made from, so an edited file is parsed again.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SyntaxIndex:
    """A file's `ast.Call` and `ast.Assign` nodes, each list in ast.walk order."""

    calls: tuple[ast.Call, ...]
    assignments: tuple[ast.Assign, ...]


# source bytes -> index: positions do not depend on the file's name, and one file is often
# reached by two spellings of its path (planning's and the loader's).
_indexes: dict[bytes, SyntaxIndex] = {}
_KEPT = 64


def index(filename: str | Path) -> SyntaxIndex:
    """The file's index; raises OSError or SyntaxError as reading and ast.parse do."""
    source = Path(filename).read_bytes()
    found = _indexes.get(source)
    if found is not None:
        return found
    tree = ast.parse(source, str(filename))  # bytes: decoded as Python decodes source (BOM, coding cookie)
    calls, assignments = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            calls.append(node)
        elif isinstance(node, ast.Assign):
            assignments.append(node)
    if len(_indexes) >= _KEPT:
        _indexes.clear()  # a long-lived process (the tests) must not keep every version of every file
    found = _indexes[source] = SyntaxIndex(tuple(calls), tuple(assignments))
    return found
