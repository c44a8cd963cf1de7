"""A GitHub Actions log read as GitHub's runner reads it: each `::level props::message` line a finding."""

from __future__ import annotations

import re
import urllib.parse

# GitHub's runner: `::NAME key=value,key=value::message`, properties and message percent-escaped.
COMMAND = re.compile(r"^::(?P<level>\w+)(?: (?P<props>[^:]*))?::(?P<message>.*)$")


def parsed(line: str) -> tuple[str, dict, str]:
    """(level, {property: value}, message) of one workflow command line; fails on any other line."""
    assert "\n" not in line and "\r" not in line
    match = COMMAND.match(line)
    assert match, line
    props = {}
    for item in filter(None, (match["props"] or "").split(",")):
        key, _, value = item.partition("=")
        props[key] = urllib.parse.unquote(value)
    return match["level"], props, urllib.parse.unquote(match["message"])


def findings(stdout: str) -> list[tuple[str, dict, str]]:
    """Every line of a `--format github` standard output, parsed: each one must be a workflow command."""
    return [parsed(line) for line in stdout.splitlines()]
