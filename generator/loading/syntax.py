"""The calls and assignments of a spec file's syntax tree, parsed once per file content.

Locating a spec line (the argument a wrong value was written at, the name a
dtype config is assigned to) and reading a module's name without running its
spec both look at the same trees. Each file is parsed once for what it holds
now: the index is kept by the bytes it was made from, so an edited file is
parsed again. A spec of thousands of patterns has a hundred thousand nodes but
a handful of statements, so assignments (always statements) are found without
visiting expressions, and calls only when asked for.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path


class SyntaxIndex:
    """A parsed file's `ast.Call` nodes (in ast.walk order) and `ast.Assign` statements (in source order)."""

    def __init__(self, tree: ast.Module):
        self.tree = tree

    @functools.cached_property
    def calls(self) -> tuple[ast.Call, ...]:
        return tuple(node for node in ast.walk(self.tree) if isinstance(node, ast.Call))

    @functools.cached_property
    def assignments(self) -> tuple[ast.Assign, ...]:
        return tuple(node for node in _statements(self.tree) if isinstance(node, ast.Assign))


def _statements(tree: ast.Module):
    """Every statement, outer ones first, each block in source order: expressions hold no statements."""
    blocks = [tree.body]
    while blocks:
        block = blocks.pop(0)
        for statement in block:
            yield statement
            for field in statement._fields:
                value = getattr(statement, field, None)
                if isinstance(value, list) and value:
                    if isinstance(value[0], ast.stmt):
                        blocks.append(value)
                    elif isinstance(value[0], (ast.excepthandler, ast.match_case)):
                        blocks.extend(item.body for item in value)


# source bytes -> index: positions do not depend on the file's name, and one file is often
# reached by two spellings of its path (planning's and the loader's).
_indexes: dict[bytes, SyntaxIndex] = {}
_KEPT = 64


def index(filename: str | Path) -> SyntaxIndex:
    """The file's index; raises OSError or SyntaxError as reading and ast.parse do."""
    return index_of(Path(filename).read_bytes(), filename)


def index_of(source: bytes, filename: str | Path) -> SyntaxIndex:
    """The index of `source`, the bytes just read from `filename`; raises SyntaxError as ast.parse does."""
    found = _indexes.get(source)
    if found is None:
        tree = ast.parse(source, str(filename))  # bytes: decoded as Python decodes source (BOM, coding cookie)
        if len(_indexes) >= _KEPT:
            _indexes.clear()  # a long-lived process (the tests) must not keep every version of every file
        found = _indexes[source] = SyntaxIndex(tree)
    return found


# What forget() keeps: the trees of files of this much source in all (about 15 MB of trees). A spec
# of ordinary size stays parsed for the next run in this process (the tests run the generator
# hundreds of times in one); a large one is freed, for its process and its formatting workers.
_KEPT_SOURCE_BYTES = 256 * 1024


def forget() -> None:
    """Drop the kept indexes, but those of small files within _KEPT_SOURCE_BYTES: a large spec's tree holds
    about 60 bytes of memory per byte of source."""
    kept, size = {}, 0
    for source, found in _indexes.items():
        size += len(source)
        if size > _KEPT_SOURCE_BYTES:
            break
        kept[source] = found
    _indexes.clear()
    _indexes.update(kept)


def error_place(error: SyntaxError, path: Path) -> tuple[str, int]:
    """(file, line) a spec file's SyntaxError is about. Python names neither for a NUL byte in the
    source ("source code string cannot contain null bytes"): the spec file then, at the NUL's line."""
    if error.filename is not None:
        return error.filename, error.lineno or 1
    line = error.lineno or 1
    try:
        source = path.read_bytes()
        if b"\0" in source:
            line = source[: source.index(b"\0")].count(b"\n") + 1
    except OSError:
        pass
    return str(path), line
