"""Stage 5: write generated files atomically, and only when their content changes.

A file is written to a temporary file in the same folder and renamed over the
target, so a reader (or a killed run) sees either the old or the new file, never
a torn one.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

# Test-only pause point (tests/test_interruption.py): with this variable set to
# N, a run stops for good after writing its N-th file and says so on stderr, so
# that a test's SIGKILL lands inside the write phase, between two files.  Unset
# in every normal run, where it does nothing.
PAUSE_AFTER_WRITES = "GENERATOR_TEST_PAUSE_AFTER_WRITES"


def write_if_changed(path: Path, text: str) -> bool:
    """Write `text` to `path` unless it is already there; True when written."""
    data = text.encode()
    if path.exists() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return True


def remove_stale_temporaries(folder: Path) -> None:
    """Temporary files left by a killed run are never real output."""
    for leftover in folder.glob(".*.tmp"):
        leftover.unlink(missing_ok=True)


def pause_if_asked(files_written: int) -> None:
    """The test-only pause point; see PAUSE_AFTER_WRITES."""
    if os.environ.get(PAUSE_AFTER_WRITES) != str(files_written):
        return
    sys.stderr.write(f"paused after writing {files_written} files\n")
    sys.stderr.flush()
    while True:  # until the test kills this process
        time.sleep(60)
