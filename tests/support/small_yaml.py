"""Reads the small YAML of pre-commit's files (.pre-commit-hooks.yaml, .pre-commit-config.yaml) without PyYAML.

The subset they use: block mappings and sequences by indentation, `- key: value` items, plain, quoted and
boolean scalars, `>-`/`|` block scalars, `#` comments. Anything else is an error, so a file that outgrows the
subset fails its test rather than being misread.
"""

from __future__ import annotations

import re

_KEY = re.compile(r"(?P<key>[A-Za-z0-9_.-]+):(?: +(?P<value>.*))?$")


def load(text: str):
    lines = []
    for raw in text.splitlines():
        stripped = raw.split(" #")[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if stripped.strip():
            lines.append((len(stripped) - len(stripped.lstrip(" ")), stripped.strip()))
    value, end = _block(lines, 0, lines[0][0] if lines else 0)
    if end != len(lines):
        raise ValueError(f"unexpected indentation at {lines[end][1]!r}")
    return value


def _block(lines, start: int, indent: int):
    if lines[start][1].startswith("- "):
        return _sequence(lines, start, indent)
    return _mapping(lines, start, indent)


def _sequence(lines, index: int, indent: int):
    items = []
    while index < len(lines) and lines[index][0] == indent and lines[index][1].startswith("- "):
        # "- key: value" opens a mapping whose keys stand two columns further in
        lines[index] = (indent + 2, lines[index][1][2:])
        item, index = _block(lines, index, indent + 2)
        items.append(item)
    return items, index


def _mapping(lines, index: int, indent: int):
    found = {}
    while index < len(lines) and lines[index][0] == indent:
        match = _KEY.fullmatch(lines[index][1])
        if match is None:
            raise ValueError(f"not a key: {lines[index][1]!r}")
        key, value = match["key"], match["value"]
        index += 1
        if value in (">-", ">", "|", "|-"):
            body = []
            while index < len(lines) and lines[index][0] > indent:
                body.append(lines[index][1])
                index += 1
            found[key] = (" " if value.startswith(">") else "\n").join(body)
        elif value is None:
            if index < len(lines) and lines[index][0] > indent:
                found[key], index = _block(lines, index, lines[index][0])
            elif index < len(lines) and lines[index][0] == indent and lines[index][1].startswith("- "):
                found[key], index = _sequence(lines, index, indent)  # a sequence may stand at its key's indent
            else:
                found[key] = None
        else:
            found[key] = _scalar(value)
    return found, index


def _scalar(text: str):
    if text in ("true", "false"):
        return text == "true"
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text.startswith(("[", "{", "&", "*", "!")):
        raise ValueError(f"outside the subset this reader knows: {text!r}")
    return text
