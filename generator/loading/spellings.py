"""Numbers keep the spelling the spec gives them: `2**-12`, not `0.000244140625`.

A spec value is a plain number by the time the DSL sees it, so its spelling is read
back from the spec's source: the keyword of the `DTypeWithConstraints(...)` call, or,
when the call takes `**SOME_DICT`, the entry of that dict (a `dict(...)` call or a
`{...}` literal, assigned in any spec file, later entries winning as in Python).

A spelling is only kept when it is a plain arithmetic expression of number literals
whose value is the value the spec produced, same type and same repr: `generator.spelling.proven`
evaluates it (without eval) and checks. Otherwise the number is written as its repr, so a
spelling can never change a value.
"""

from __future__ import annotations

import ast
import functools
import io
import tokenize
from pathlib import Path

from generator import project
from generator.loading import reads, syntax
from generator.spelling import proven

_MAX_DEPTH = 8  # `**A` whose A holds `**B` ...: deeper chains keep the repr


# bound_spellings' answers in this run (forget clears them), by call site and bounds (each by type and repr:
# 1 and 1.0 are equal, their spellings are not). spec/_common.py runs once per spec file, and asks again.
_answers: dict[tuple, tuple[tuple[str, str], ...]] = {}


def bound_spellings(root: Path, file: str, line: int, bounds: dict) -> tuple[tuple[str, str], ...]:
    """(bound, spelling) for each bound of the `DTypeWithConstraints(...)` call at `file:line` spelt
    otherwise than its repr, e.g. (("scale_min_lower_bound", "2**-12"),)."""
    key = (root, file, line, tuple((name, type(value), repr(value)) for name, value in bounds.items()))
    if key not in _answers:
        _answers[key] = _bound_spellings(root, file, line, bounds)
    return _answers[key]


def _bound_spellings(root: Path, file: str, line: int, bounds: dict) -> tuple[tuple[str, str], ...]:
    call = _call_at(root / file, line)
    if call is None:
        return ()
    found = []
    for key, value in bounds.items():
        text = proven(value, _argument_source(root, root / file, call, key, 0))
        if text is not None:
            found.append((key, text))
    return tuple(found)


@functools.cache
def _parsed(path: Path) -> tuple[ast.Module, str] | None:
    try:
        data = path.read_bytes()
        # The tree the loader's questions parsed (dtype config names) serves here too. It is
        # parsed from the bytes, decoded as Python decodes them (BOM, coding cookie): so is the text.
        tree = syntax.index_of(data, path).tree
        return tree, data.decode(tokenize.detect_encoding(io.BytesIO(data).readline)[0])
    except (OSError, SyntaxError, ValueError):
        return None


def prepare(path: Path) -> None:
    """Read `path` now as a later question about its spellings would (a process forking loads)."""
    _lines(path)
    _constraint_calls(path)


def forget() -> None:
    """Drop parsed spec sources: a run reads each file as it is now."""
    _parsed.cache_clear()
    _lines.cache_clear()
    _constraint_calls.cache_clear()
    _answers.clear()


@functools.cache
def _lines(path: Path) -> list[bytes]:
    """The file's lines as UTF-8 (ast's column offsets count bytes), split once, not once per segment."""
    parsed = _parsed(path)
    return [] if parsed is None else [line.encode() for line in ast._splitlines_no_ff(parsed[1])]


@functools.cache
def _constraint_calls(path: Path) -> list[ast.Call]:
    """Every `DTypeWithConstraints(...)` call of the file, found by one walk of its tree."""
    parsed = _parsed(path)
    if parsed is None:
        return []
    return [n for n in ast.walk(parsed[0]) if isinstance(n, ast.Call) and _callee(n) == "DTypeWithConstraints"]


def _call_at(path: Path, line: int) -> ast.Call | None:
    """The innermost `DTypeWithConstraints(...)` call spanning `line`."""
    calls = [node for node in _constraint_calls(path) if node.lineno <= line <= node.end_lineno]
    return max(calls, key=lambda node: (node.lineno, node.col_offset), default=None)


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _argument_source(root: Path, path: Path, call: ast.Call, key: str, depth: int) -> str | None:
    """The source of `key`'s value in a call's keywords or `**` arguments (the last one wins)."""
    for keyword in reversed(call.keywords):
        if keyword.arg == key:
            return _segment(path, keyword.value)
        if keyword.arg is None:
            found = _mapping_source(root, path, keyword.value, key, depth + 1)
            if found is not None:
                return found
    return None


def _mapping_source(root: Path, path: Path, node, key: str, depth: int) -> str | None:
    """The source of `key`'s value in a dict literal, a `dict(...)` call or a name bound to one."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(node, ast.Dict):
        for item_key, item_value in reversed(list(zip(node.keys, node.values))):
            if item_key is None:  # {**OTHER, ...}
                found = _mapping_source(root, path, item_value, key, depth + 1)
                if found is not None:
                    return found
            elif isinstance(item_key, ast.Constant) and item_key.value == key:
                return _segment(path, item_value)
        return None
    if isinstance(node, ast.Call) and _callee(node) == "dict" and not node.args:
        return _argument_source(root, path, node, key, depth)
    if isinstance(node, ast.Name):
        for where, value in _assignments(root, path, node.id):
            found = _mapping_source(root, where, value, key, depth + 1)
            if found is not None:
                return found
    return None


def _assignments(root: Path, path: Path, name: str):
    """Module-level `name = ...` in this spec file first, then in the others (where it is imported from)."""
    files = [path, *sorted(p for p in project.spec_folder(root).glob("*.py") if p != path)]
    for file in files:
        with reads.unobserved():  # only a file that assigns the name is an input of this load
            parsed = _parsed(file)
        if parsed is None:
            continue
        for node in parsed[0].body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                reads.note_read(str(file))
                yield file, node.value


def _segment(path: Path, node) -> str | None:
    """What ast.get_source_segment gives, from the file's lines split once."""
    lines = _lines(path)
    if not lines or getattr(node, "end_lineno", None) is None:
        return None
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        return lines[first][node.col_offset : node.end_col_offset].decode()
    middle = [line.decode() for line in lines[first + 1 : last]]
    return "".join([lines[first][node.col_offset :].decode(), *middle, lines[last][: node.end_col_offset].decode()])
