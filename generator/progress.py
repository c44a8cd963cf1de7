"""A progress line for the commands that take seconds (import, a forced regenerate, check --full, diff --against-torch).

One line on standard error, rewritten in place as the command moves on and
erased when it ends, so that what stays on the screen is the command's own
output. It is shown only when standard error is a terminal: a pipe, a file or
a CI log gets nothing (standard output never carries it).
"""

from __future__ import annotations

import sys
from typing import TextIO

ERASE_LINE = "\r\033[K"  # back to the line's start, then clear to its end


class Progress:
    """`step("formatting generated/x86.py (3/9)")` replaces the line; `done()` (or leaving the `with`) erases it."""

    def __init__(self, command: str, stream: TextIO | None = None):
        self.command = command
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _is_terminal(self.stream)
        self.shown = False

    def step(self, text: str) -> None:
        if not self.enabled:
            return
        self.stream.write(f"{ERASE_LINE}{self.command}: {text}")
        self.stream.flush()
        self.shown = True

    def counter(self, what: str, total: int):
        """A callable that reports `what NAME (i/total)` each time it is called with the next NAME."""
        count = 0

        def advance(name: str) -> None:
            nonlocal count
            count += 1
            self.step(f"{what} {name} ({count}/{total})")

        return advance

    def done(self) -> None:
        if self.shown:
            self.stream.write(ERASE_LINE)
            self.stream.flush()
            self.shown = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc_info) -> None:
        self.done()  # also on an error: its one line must start at the line's beginning


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False
