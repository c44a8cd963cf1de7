"""The generator's heap: collecting its garbage rarely, and giving freed memory back to the system.

A run is a short batch whose heap is mostly long-lived: torch's modules once it
is imported, the spec model, the templates. Python's cyclic collector, at its
default threshold, runs every 700 new container objects and re-examines that
heap each time: `import torch` alone triggers about 400 collections, a quarter
of a second that frees almost nothing. The generator collects young objects after
20,000 and the middle generation after 50 young collections (collect_rarely):
about 14 collections, 70 ms, for the same import.

Compiling or parsing a spec of thousands of patterns allocates a few hundred
megabytes of small C blocks and frees them at once; glibc keeps such freed
blocks in its heap, where Python's own object arenas (mapped apart) never reuse
them, so the process would carry them to its end, and every formatting worker
forked from it would start that large. Returning them after such a step keeps
the largest process near what it really holds.
"""

from __future__ import annotations

import ctypes
import gc
import sys

# New container objects between young collections (Python's default: 700), and young collections
# between middle ones (default: 10); the oldest generation keeps its default. 20,000 small objects
# are a few megabytes at most.
_THRESHOLDS = (20_000, 50)


def collect_rarely() -> None:
    """Let the cyclic garbage collector run far less often (see above); nothing else changes."""
    gc.set_threshold(*_THRESHOLDS, gc.get_threshold()[2])


# Whether the process froze what it held for good (freeze_for_good): spec loads then must not unfreeze.
frozen_for_good = False


def freeze_for_good() -> None:
    """Collect, then keep what the process holds now out of every later collection (a long-lived
    process that runs the generator many times: the test session). A spec load then collects only
    the young generations it made (loading/loader.py), instead of freezing and unfreezing around itself."""
    global frozen_for_good
    gc.collect()
    gc.freeze()
    frozen_for_good = True


def release_freed_memory() -> None:
    """Return freed heap memory to the system where the C library can (glibc's malloc_trim); else nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # another C library (musl): nothing to return
        return
    trim(0)
