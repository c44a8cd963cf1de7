"""GitHub Actions workflow commands: one finding as one `::error file=...,line=N::message` line.

`--format github` on `check`, `diff` and `verify` prints each finding through `workflow_command`,
so a pull request shows it as an annotation at the spec line that causes it (buf's
`--error-format github-actions`). The escaping is GitHub's own: a message keeps `%`, CR and LF
as `%25`, `%0D` and `%0A`; a property value also keeps `:` and `,` escaped.
"""

from __future__ import annotations

LEVELS = ("error", "warning", "notice")


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(
    level: str, message: str, *, file: str | None = None, line: int | None = None, title: str | None = None
) -> str:
    """One workflow command line (no newline): `level` is "error", "warning" or "notice".

    `file` is a path from the repository's root with `/` separators; `line` is 1-based.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    properties = []
    if file is not None:
        properties.append(f"file={_escape_property(file)}")
        if line is not None:
            properties.append(f"line={int(line)}")
    if title is not None:
        properties.append(f"title={_escape_property(title)}")
    head = f"::{level} {','.join(properties)}" if properties else f"::{level}"
    return f"{head}::{_escape_data(message)}"
