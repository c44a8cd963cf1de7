"""Stage 5: write generated files atomically, and only when their content changes.

A file is written to a temporary file in the same folder and renamed over the
target, so a reader (or a killed run) sees either the old or the new file, never
a torn one. A rewritten file keeps its mode; a new one gets the umask's default,
as if written by any editor. A failure is one line naming the file.
"""

from __future__ import annotations

import os
import secrets
import stat
import sys
import time
from pathlib import Path

from generator.errors import WriteError

NEW_FILE_MODE = 0o666  # before the umask, like open(path, "w")

# Test-only pause point (tests/test_interruption.py): with this variable set to
# N, a run stops for good after writing its N-th file and says so on stderr, so
# that a test's SIGKILL lands inside the write phase, between two files.  Unset
# in every normal run, where it does nothing.
PAUSE_AFTER_WRITES = "GENERATOR_TEST_PAUSE_AFTER_WRITES"


def write_if_changed(path: Path, text: str) -> bool:
    """Write `text` to `path` unless it is already there; True when written."""
    data = text.encode()
    try:
        if path.exists() and path.read_bytes() == data:
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        _replace(path, data)
    except OSError as error:
        blocking = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
        reason = f"{blocking} is a file, not a folder" if blocking else error.strerror or error
        raise WriteError(f"cannot write {path}: {reason}") from None
    return True


def _replace(path: Path, data: bytes) -> None:
    temporary = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
    # os.open applies the umask to NEW_FILE_MODE; mkstemp would make every file 0600.
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, NEW_FILE_MODE)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            if path.exists():
                os.fchmod(stream.fileno(), stat.S_IMODE(path.stat().st_mode))
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


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
