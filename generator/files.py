"""Stage 5: write generated files atomically, and only when their content changes.

A file is written to a temporary file in the same folder and renamed over the
target, so a reader (or a killed run) sees either the old or the new file, never
a torn one. A rewritten file keeps its mode; a new one gets the umask's default,
as if written by any editor. A failure is one line naming the file.

Temporary files carry the writing process's id, so a run removes only its own and
those of runs that no longer exist, never another live run's (or anyone else's
`.*.tmp`). Runs that write a project's outputs take its lock (`project_lock`)
and check that every folder they write can take a new file (`ensure_writable`)
before they change any.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import re
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from generator.errors import WriteError

_LONGEST_NAME_KEPT = 200  # bytes of a target's name a temporary's keeps: with its suffix, within 255
NEW_FILE_MODE = 0o666  # before the umask, like open(path, "w")
# .NAME.PID-TOKEN.tmp: the process that wrote it, and a token that tells two of its files apart.
_TEMPORARY = re.compile(r"\..+\.(?P<pid>[0-9]+)-[0-9a-f]{8}\.tmp")


def write_if_changed(path: Path, text: str) -> bool:
    """Write `text` to `path` unless it is already there; True when written."""
    data = text.encode()
    try:
        if path.exists() and path.read_bytes() == data:
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        _replace(path, data)
    except OSError as error:
        raise WriteError(f"cannot write {path}: {_reason(path, error)}") from None
    return True


def remove(path: Path) -> None:
    """Remove a generated file; a failure is one line naming it."""
    try:
        path.unlink(missing_ok=True)
    except OSError as error:
        raise WriteError(f"cannot remove {path}: {_reason(path, error)}") from None


def _reason(path: Path, error: OSError) -> str:
    blocking = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    return f"{blocking} is a file, not a folder" if blocking else str(error.strerror or error)


def _temporary(path: Path) -> Path:
    name = path.name
    if len(os.fsencode(name)) > _LONGEST_NAME_KEPT:  # the file system's limit (255 bytes) holds the target, not more
        shortened = os.fsencode(name)[:_LONGEST_NAME_KEPT // 2].decode(errors="ignore")
        name = f"{shortened}-{hashlib.sha256(os.fsencode(name)).hexdigest()[:16]}"
    return path.parent / f".{name}.{os.getpid()}-{secrets.token_hex(4)}.tmp"


def _replace(path: Path, data: bytes) -> None:
    temporary = _temporary(path)
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


def keep_cache_file(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Write a cache file, whose bytes `write(stream)` writes, whole or not at all, best effort: a cache
    that cannot be written (a read-only checkout, a folder in its place) only costs time on the next run,
    and leaves no temporary behind. Whatever else `write` raises is raised, and nothing is written."""
    temporary = _temporary(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with temporary.open("wb") as stream:
            write(stream)
        os.replace(temporary, path)  # whatever runs at the same time reads the old file or the new one
    except BaseException as error:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        if not isinstance(error, OSError):
            raise


def remove_stale_temporaries(folder: Path) -> None:
    """Temporary files left by a killed run are never real output; a live run's are its own."""
    for leftover in folder.glob(".*.tmp"):
        match = _TEMPORARY.fullmatch(leftover.name)
        if match and not _is_running(int(match["pid"])):
            leftover.unlink(missing_ok=True)


def _is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # someone else's process (or no pid at all): leave its file alone
    return True


def ensure_writable(paths: list[Path]) -> None:
    """Raise WriteError, naming the first path, unless each path's folder can take a new file.

    Run before anything is written, so that an unwritable target changes no file.
    A folder that does not exist yet is made (it holds nothing, so nothing changes).
    """
    for path in paths:  # first, without making a folder: a file standing where a folder must go
        for folder in reversed(path.parents):
            if folder.exists() and not folder.is_dir():
                raise WriteError(f"cannot write {path}: {folder} is a file, not a folder")
    checked = set()
    for path in paths:
        try:
            if path.is_dir():
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
            if path.parent in checked:
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            probe = _temporary(path)
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, NEW_FILE_MODE))
            probe.unlink()
            checked.add(path.parent)
        except OSError as error:
            raise WriteError(f"cannot write {path}: {_reason(path, error)}") from None


@contextlib.contextmanager
def project_lock(lock_file: Path, waiting):
    """Hold a project's write lock, `lock_file` (cache.lock_file), while the body runs; `waiting()` is
    called if another run holds it.

    A project whose cache folder cannot be made (a read-only checkout) gets no lock:
    nothing can be written there anyway, and ensure_writable says so.
    """
    try:
        lock_file.parent.mkdir(parents=True, exist_ok=True)
        handle = os.open(lock_file, os.O_RDWR | os.O_CREAT, NEW_FILE_MODE)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            waiting()
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)  # releases the lock

