"""How `diff` prints its per-backend results: text for a terminal, Markdown for a pull request, JSON for tools.

Every format lists every change: added and removed backends with all their
patterns, dtype configs changed under the same name (once, by field), and each
pattern's spec line where the expansion knows it. The JSON schema is documented
in docs/reviewing.md ("JSON"). `github` prints one GitHub Actions workflow command per
finding, at its spec line where known: a change between revisions is a notice; against a
reference builder, undeclared drift is an error and a declared difference a notice.

When the newer side's generated/ is not what its spec says, `stale` prints that
instead, in the same format, so that a tool reading JSON never gets prose.
"""

from __future__ import annotations

import json

from generator.annotations import workflow_command
from generator.review.results import BackendDiff, FieldChange, PatternChange
from generator.review.sides import WORKING_TREE

FORMATS = ("text", "markdown", "json", "github")


def render(
    fmt: str, results: list[BackendDiff], old: str, new: str, uncompared: list[str] = (), drift: bool = False
) -> str:
    """`uncompared`: backends with no reference builder, named by `diff --against-torch`; `drift`: the changes
    are a generated builder's undeclared differences from its reference (github: errors, not notices)."""
    if fmt == "github":
        return github(results, old, new, "error" if drift else "notice")
    renderer = {"text": text, "markdown": markdown, "json": as_json}[fmt]
    return renderer(results, old, new, list(uncompared))


STATES = {"missing": "missing", "stale": "stale", "edited": "edited by hand"}


def stale(fmt: str, files: list, old: str, new: str, fix: str) -> str:
    """The stale notice: `files` are `sides.StaleFile`s of side `new`; `fix` is the command that fixes them."""
    where = "generated/ is out of date with spec/" + ("" if new == WORKING_TREE else f" at {new}")
    if fmt == "json":
        listed = [{"file": f.file, "state": f.state, "reasons": list(f.reasons)} for f in files]
        document = {"old": old, "new": new, "different": True, "stale": listed, "fix": fix}
        return json.dumps(document, indent=1) + "\n"
    if fmt == "github":
        return "".join(
            workflow_command("error", f"{f.file}: {_state(f)}; {where}: fix: {fix}", file=f.cause or f.file,
                             title=f"diff: {f.file} {STATES[f.state]}")
            + "\n"
            for f in files
        )
    if fmt == "markdown":
        lines = [f"## Backend config diff: `{old}` → `{new}`", "", f"**{where}**: not compared, regenerate first.", ""]
        lines += [f"- `{f.file}`: {_state(f)}" for f in files]
        return "\n".join([*lines, "", f"Fix: `{fix}`", ""])
    lines = [f"{where}; diff compares generated modules, so regenerate first:"]
    lines += [f"  {f.file}: {_state(f)}" for f in files]
    return "\n".join([*lines, f"fix: {fix}", ""])


def _state(file) -> str:
    return STATES[file.state] + (": " + "; ".join(file.reasons) if file.reasons else "")


def text(results: list[BackendDiff], old: str, new: str, uncompared: list[str]) -> str:
    lines = [line for result in results for line in result.lines(old, new)]
    if not lines and results:
        lines = [f"no {_undeclared(results)}differences in {_backends(len(results))} ({old} -> {new})"]
    declared = [f"{r.backend}: {change}" for r in results for change in r.declared]
    if declared:
        lines += ["declared differences (deliberate, see the spec):", *(f"  {line}" for line in declared)]
    if uncompared:
        lines.append(f"not compared (no reference builder): {', '.join(uncompared)}")
    return "\n".join(lines) + "\n"


def _undeclared(results: list[BackendDiff]) -> str:
    """'undeclared ' where the spec declares differences: those are not 'no differences'."""
    return "undeclared " if any(r.declared for r in results) else ""


def count_line(result: BackendDiff) -> str:
    """`+2 patterns, -0, 1 changed` (moves count as changes), then changed dtype configs if any."""
    added = result.count("added")
    line = f"+{added} pattern{'' if added == 1 else 's'}, -{result.count('removed')}, "
    line += f"{result.count('changed', 'moved')} changed"
    if result.dtype_configs:
        line += f", {len(result.dtype_configs)} dtype config{'' if len(result.dtype_configs) == 1 else 's'} changed"
    return line


def markdown(results: list[BackendDiff], old: str, new: str, uncompared: list[str]) -> str:
    different = [r for r in results if r.status != "same"]
    lines = [f"## Backend config diff: `{old}` → `{new}`", ""]
    if uncompared:
        lines += [f"Not compared (no reference builder): {', '.join(f'`{u}`' for u in uncompared)}.", ""]
    lines += _markdown_declared(results)
    if not different:
        return "\n".join([*lines, f"No {_undeclared(results)}differences in {_backends(len(results))}.", ""])
    lines += [f"{len(different)} of {_backends(len(results))} changed.", ""]
    for result in different:
        status = {"added": f" (new: not in `{old}`)", "removed": f" (removed: not in `{new}`)"}.get(result.status, "")
        lines += [f"### {result.backend}{status}", "", count_line(result), ""]
        if result.name is not None:
            lines.append(f"- name: `{result.name.old}` → `{result.name.new}`")
        for dtype_config in result.dtype_configs:
            lines += _markdown_dtype_config(dtype_config)
        lines += [_markdown_pattern(change) for change in result.patterns]
        lines += [f"- {problem}" for problem in result.unexplained]
        lines.append("")
    return "\n".join(lines)


def _markdown_dtype_config(change) -> list[str]:
    """The dtype config's changed fields, then the patterns that use it (folded when there are many)."""
    users = change.patterns
    used = ", ".join(f"`{p}`" for p in users)
    if len(users) <= FOLDED:
        head = f"- dtype config `{change.name}`" + (f" (used by {used}):" if users else ":")
        return [head, *(f"  - {_markdown_field(f)}" for f in change.fields)]
    head = f"- dtype config `{change.name}` (used by {len(users)} patterns):"
    folded = f"  - <details><summary>the {len(users)} patterns that use it</summary>{used}</details>"
    return [head, *(f"  - {_markdown_field(f)}" for f in change.fields), folded]


FOLDED = 8  # a dtype config used by more patterns lists them folded in Markdown


def _markdown_declared(results: list[BackendDiff]) -> list[str]:
    declared = [(r.backend, change) for r in results for change in r.declared]
    if not declared:
        return []
    lines = ["Declared differences (deliberate, see the spec):", ""]
    for backend, change in declared:
        at = f" (`{change.location}`)" if change.location else ""
        fields = "".join(f"; {_markdown_field(f)}" for f in change.fields)
        lines.append(f"- {backend}: {change.kind} `{change.pattern}`{at}: {change.reason}{fields}")
    return [*lines, ""]


def _markdown_pattern(change: PatternChange) -> str:
    at = f" (`{change.location}`)" if change.location else ""
    head = f"- {change.change} `{change.pattern}`"
    if change.change in ("added", "removed"):
        dtype_configs = ", ".join(f"`{name}`" for name in change.dtype_configs)
        return f"{head}{at}" + (f": dtype configs {dtype_configs}" if dtype_configs else "")
    return f"{head}{at}: " + "; ".join(_markdown_field(f) for f in change.fields)


def _markdown_field(change: FieldChange) -> str:
    if change.field == "dtype_configs":
        return f"dtype_configs: − `{change.old}`" if change.old else f"dtype_configs: + `{change.new}`"
    if change.field == "position":
        return f"moved from position {change.old} to {change.new}"
    at = f" (`{change.location}`)" if change.location else ""
    return f"{change.where}: `{change.old}` → `{change.new}`{at}"


def as_json(results: list[BackendDiff], old: str, new: str, uncompared: list[str]) -> str:
    document = {
        "old": old,
        "new": new,
        "different": any(r.status != "same" for r in results),
        "backends": [_backend_json(r) for r in results],
        "not_compared": uncompared,
    }
    return json.dumps(document, indent=1) + "\n"


def _backend_json(result: BackendDiff) -> dict:
    return {
        "backend": result.backend,
        "status": result.status,
        "counts": {
            "added": result.count("added"),
            "removed": result.count("removed"),
            "changed": result.count("changed", "moved"),
            "dtype_configs_changed": len(result.dtype_configs),
        },
        "name": _field_json(result.name) if result.name else None,
        "dtype_configs": [
            {"name": d.name, "fields": [_field_json(f) for f in d.fields], "patterns": list(d.patterns)}
            for d in result.dtype_configs
        ],
        "patterns": [
            {
                "change": p.change,
                "pattern": p.pattern,
                "position": p.position,
                "location": p.location,
                "dtype_configs": list(p.dtype_configs),
                "fields": [_field_json(f) for f in p.fields],
            }
            for p in result.patterns
        ],
        "declared": [
            {
                "kind": d.kind,
                "pattern": d.pattern,
                "reason": d.reason,
                "location": d.location,
                "fields": [_field_json(f) for f in d.fields],
            }
            for d in result.declared
        ],
        "unexplained": list(result.unexplained),
    }


def _field_json(change: FieldChange) -> dict:
    return {
        "field": change.field,
        "old": change.old or None,
        "new": change.new or None,
        "constraint": change.constraint or None,
        "location": change.location,
    }


def _backends(count: int) -> str:
    return f"{count} backend{'' if count == 1 else 's'}"


def github(results: list[BackendDiff], old: str, new: str, level: str) -> str:
    """One workflow command per finding (generator/annotations.py) at its spec line, each change at `level`."""
    commands = []

    def say(level: str, message: str, location: str | None, backend: str) -> None:
        file, line = _file_and_line(location)
        commands.append(workflow_command(level, message, file=file, line=line, title=f"diff {old} -> {new}: {backend}"))

    for result in results:
        prefix = f"{result.backend}: "
        if result.status in ("added", "removed"):
            side = old if result.status == "added" else new
            sign = "+" if result.status == "added" else "-"
            say(level, f"{prefix}{sign} backend (not in {side}), {len(result.patterns)} patterns", None, result.backend)
        if result.name is not None:
            say(level, f"{prefix}name: {result.name.old} -> {result.name.new}", None, result.backend)
        for dtype_config in result.dtype_configs:
            used = f" (used by {', '.join(dtype_config.patterns)})" if dtype_config.patterns else ""
            for field in dtype_config.fields:
                say(level, f"{prefix}dtype config {dtype_config.name}: {field}{used}", field.location, result.backend)
        for problem in result.unexplained:
            say("error", f"{prefix}{problem}", None, result.backend)
        for change in result.patterns:
            for line in _pattern_lines(result, change):
                say(level, line, change.location, result.backend)
        for change in result.declared:
            say("notice", f"{result.backend}: {change}", change.location, result.backend)
    return "".join(command + "\n" for command in commands)


def _pattern_lines(result: BackendDiff, change: PatternChange) -> list[str]:
    prefix = f"{result.backend}: "
    if change.change in ("added", "removed"):
        sign = "+" if change.change == "added" else "-"
        configs = f" ({', '.join(change.dtype_configs)})" if change.dtype_configs else ""
        return [f"{prefix}{sign} pattern {change.pattern}{configs}"]
    return [f"{prefix}{change.pattern}: {f}" for f in change.fields]


def _file_and_line(location: str | None) -> tuple[str | None, int | None]:
    """`spec/x.py:12` -> ("spec/x.py", 12)."""
    if not location:
        return None, None
    file, _, line = location.rpartition(":")
    return (file, int(line)) if file and line.isdigit() else (location, None)
