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
from pathlib import Path

from generator.errors import WriteError

NEW_FILE_MODE = 0o666  # before the umask, like open(path, "w")


def write_if_changed(path: Path, text: str) -> bool:
    """Write `text` to `path` unless it is already there; True when written."""
    data = text.encode()
    try:
        if path.exists() and path.read_bytes() == data:
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        _replace(path, data)
    except OSError as error:
        raise WriteError(f"cannot write {path}: {error.strerror or error}") from None
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
