"""Giving memory the generator has freed back to the operating system.

Compiling or parsing a spec of thousands of patterns allocates a few hundred
megabytes of small C blocks and frees them at once; glibc keeps such freed
blocks in its heap, where Python's own object arenas (mapped apart) never reuse
them, so the process would carry them to its end, and every formatting worker
forked from it would start that large. Returning them after such a step keeps
the largest process near what it really holds.
"""

from __future__ import annotations

import ctypes
import sys


def release_freed_memory() -> None:
    """Return freed heap memory to the system where the C library can (glibc's malloc_trim); else nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # another C library (musl): nothing to return
        return
    trim(0)
