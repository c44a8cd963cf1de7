"""Where in a spec file a value was written: the line an error points at, and the name a value is assigned to.

While the loader runs a project's spec files (`set_project_root`), the vocabulary
(`generator.dsl`) asks here for the spec line that is calling it (`spec_location`),
the line a wrong value was written at rather than the shared helper that consumes
it (`blame`), the line of one keyword argument in a call that spans many lines
(`at_argument`), and the module-level name a dtype config's call is assigned to
(`assigned_name`): that name is its constant in the generated module. Lines come
from the running frames' line tables, names from the spec files' syntax trees
(`generator.loading.syntax`), each read once per run (`forget_source_files`).
"""

from __future__ import annotations

import ast
import bisect
import functools
import os
import sys
from pathlib import Path
from types import CodeType

from generator import project
from generator.errors import SpecFieldError
from generator.loading import syntax
from generator.model import SourceLocation

# Set by the spec loader: locations are reported relative to the project root.
_project_root: Path | None = None


def forget_source_files() -> None:
    """Drop what was read from spec files' source: a run reads each file as it is now."""
    for cached in (_assignments, name_assignments, _keyword_lines):
        cached.cache_clear()
    _line_tables.clear()
    _locations.clear()


def set_project_root(root: Path | None) -> None:
    global _project_root
    _project_root = root.resolve() if root is not None else None
    _spec_files.clear()
    _locations.clear()


def project_root() -> Path | None:
    """The root of the project whose spec files are being read, if one is."""
    return _project_root


def spec_location() -> SourceLocation | None:
    """The innermost stack frame that runs a spec file, as a spec location."""
    if _project_root is None:
        return None
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        relative = _spec_relative(code.co_filename)
        if relative is not None:
            # A spec's loops and helpers ask from the same instruction again and again: one location each.
            key = (id(code), frame.f_lasti)
            location = _locations.get(key)
            if location is None:
                location = _locations[key] = SourceLocation(relative, _line_number(frame))
            return location
        frame = frame.f_back
    return None


# (id(code object), instruction offset) -> its location; _line_number keeps the code object alive, so the
# id is not reused while the entry exists (both are cleared together).
_locations: dict[tuple[int, int], SourceLocation] = {}


# id(code object) -> (the code object, kept so that the id is not reused; instruction starts; their lines)
_line_tables: dict[int, tuple[CodeType, list[int], list[int | None]]] = {}


def _line_number(frame) -> int:
    """frame.f_lineno, found by bisection in the code object's line table, read once per code object.

    CPython 3.11 computes f_lineno by scanning the whole line table, and a spec's
    module code is one long code object: a call per pattern would make loading a
    spec quadratic in its size.
    """
    code = frame.f_code
    table = _line_tables.get(id(code))
    if table is None or table[0] is not code:
        ranges = [(start, line) for start, _, line in code.co_lines()]
        table = _line_tables[id(code)] = (code, [start for start, _ in ranges], [line for _, line in ranges])
    _, starts, lines = table
    index = bisect.bisect_right(starts, frame.f_lasti) - 1
    line = lines[index] if index >= 0 else None
    return line if line is not None else frame.f_lineno


# code file name -> `spec/x.py` or None, for the current project root (cleared when it is set)
_spec_files: dict[str, str | None] = {}


def _spec_relative(filename: str) -> str | None:
    """`spec/x.py` for a file in the project's spec folder, else None (cached: called per name)."""
    try:
        return _spec_files[filename]
    except KeyError:
        pass
    root = _project_root
    folder = str(project.spec_folder(root)) + os.sep
    relative = str(Path(filename).relative_to(root)) if filename.startswith(folder) else None
    _spec_files[filename] = relative
    return relative


def blame(value) -> SourceLocation | None:
    """The spec line where a wrong `value` was written, not where a shared helper consumes it.

    Walking out from the innermost spec frame, a frame that received the value as an
    argument only passed it on, so the blame moves to its caller. In the frame that
    did not receive it, a variable holding it points at the assignment that wrote it
    (e.g. `default = x86_dtype_config` in the backend's own spec file).
    """
    if _project_root is None:
        return None
    frames = []
    frame = sys._getframe(1)
    while frame is not None:
        relative = _spec_relative(frame.f_code.co_filename)
        # Comprehensions are frames of their own; they only pass values through.
        comprehension = frame.f_code.co_name.startswith("<") and frame.f_code.co_name != "<module>"
        if relative is not None and not comprehension:
            frames.append((frame, relative))
        frame = frame.f_back
    for frame, relative in frames:
        if not _received(frame, value):
            return SourceLocation(relative, _assignment_line(frame, value) or frame.f_lineno)
    return SourceLocation(frames[-1][1], frames[-1][0].f_lineno) if frames else None


def _arguments(frame) -> list:
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 4) + bool(code.co_flags & 8)
    return [frame.f_locals[name] for name in code.co_varnames[:count] if name in frame.f_locals]


def _holds(container, value) -> bool:
    if container is value:
        return True
    if isinstance(container, dict):
        return any(_holds(v, value) for v in container.values())
    if isinstance(container, (list, tuple)):
        return any(_holds(item, value) for item in container)
    return False


def _received(frame, value) -> bool:
    if frame.f_code.co_name == "<module>":
        return False
    return any(_holds(argument, value) for argument in _arguments(frame))


def _assignment_line(frame, value) -> int | None:
    """The latest line before this point that assigns a variable holding `value`."""
    module_level = frame.f_code.co_name == "<module>"
    names = {n for n, v in frame.f_locals.items() if _holds(v, value)}
    if not module_level:
        names |= {n for n, v in frame.f_globals.items() if not n.startswith("__") and _holds(v, value)}
    lines = [
        line
        for line, name in name_assignments(frame.f_code.co_filename)
        if name in names and (line <= frame.f_lineno or not module_level)
    ]
    return max(lines) if lines else None


@functools.cache
def name_assignments(filename: str) -> tuple[tuple[int, str], ...]:
    """(line, name) of every `name = ...` in a spec file."""
    return tuple(
        (node.lineno, target.id)
        for node in syntax.index(filename).assignments
        for target in node.targets
        if isinstance(target, ast.Name)
    )


def at_argument(location: SourceLocation | None, argument: str, root: Path | None = None) -> SourceLocation | None:
    """The line of `argument=` in the call that starts at `location`: a call spans many lines,
    and a wrong value is at the line that writes it, not at the line that opens the call.
    `root`: the project's, when no load is running (set_project_root)."""
    root = root if root is not None else _project_root
    if location is None or root is None:
        return location
    try:
        value_line = _keyword_lines(str(root / location.file)).get((argument, location.line))
    except (OSError, SyntaxError, ValueError):  # the file changed since its load: the call's line still says it
        return location
    return location if value_line is None else SourceLocation(location.file, value_line)


@functools.cache
def _keyword_lines(filename: str) -> dict[tuple[str, int], int]:
    """{(keyword, line of the call): line of the value} for each keyword argument in a spec file
    (the first, where a line opens several calls): one parse per file, whatever the keyword."""
    found: dict[tuple[str, int], int] = {}
    for node in syntax.index(filename).calls:
        for keyword_node in node.keywords:
            if keyword_node.arg is not None:
                found.setdefault((keyword_node.arg, node.lineno), keyword_node.value.lineno)
    return found


@functools.cache
def _assignments(filename: str) -> tuple[tuple[int, int, str], ...]:
    """(first line, last line, target name) of each `name = call(...)` in a spec file."""
    found = []
    for node in syntax.index(filename).assignments:
        if len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and isinstance(node.value, ast.Call):
                found.append((node.value.lineno, node.value.end_lineno, target.id))
    return tuple(found)


def assigned_name(kind: str, location: SourceLocation | None) -> str:
    """The variable the `kind(...)` call at `location` (a dtype config) is assigned to: that is its name
    in generated code."""
    if location is None or _project_root is None:
        raise SpecFieldError(f"{kind} must be created in a spec file", location)
    for first, last, name in _assignments(str(_project_root / location.file)):
        if first <= location.line <= last:
            return name
    raise SpecFieldError(
        f"{kind} must be assigned to a module-level name, e.g. `x_dtype_config = {kind}(...)`; "
        "that name becomes its constant in the generated module",
        location,
    )
