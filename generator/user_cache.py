"""This user's cache folder, outside every project: what the generator keeps for a user rather than a project.

It holds the secret the project caches are sealed with (generator/cache.py) and, where Python
may not write .pyc files (PYTHONDONTWRITEBYTECODE), the generator's own compiled modules, so
that a run does not compile the generator from source every time. Only the standard library
is imported here: a run installs this before it imports the rest of the generator.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import marshal
import os
import stat
import sys

APPLICATION = "backend-config-generator"
_GENERATOR_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_kept = False


def folder() -> str | None:
    """`$XDG_CACHE_HOME/backend-config-generator` (when XDG_CACHE_HOME is an absolute path), else
    `~/.cache/...` (`%LOCALAPPDATA%` on Windows); None when the user has no home folder, or when another user
    could put a file there (see only_mine): what is kept there is trusted as the user's own."""
    where = _folder()
    return where if where is not None and only_mine(where) else None


def only_mine(path: str) -> bool:
    """Whether no other user can write in the folder `path` (where it is there) nor replace it: it and each
    folder above it are this user's or the system's (root's), and none but a folder with the sticky bit (/tmp)
    lets another user write in it; the folder itself (and what is in it) lets no one else write at all."""
    if os.name == "nt":
        return True  # permissions are ACLs there: the user's local application folder
    me, current, own = os.getuid(), os.path.realpath(path), True
    while True:
        try:
            status = os.stat(current)
        except FileNotFoundError:
            status = None  # made by this user (mode 0o700) on first use
        except OSError:
            return False
        if status is not None:
            writable_by_others = status.st_mode & 0o022
            if not stat.S_ISDIR(status.st_mode) or status.st_uid not in (me, 0):
                return False
            if writable_by_others and (own or not status.st_mode & stat.S_ISVTX):
                return False
            own = False  # the folders above: a sticky folder's entries are replaced by their owner alone
        parent = os.path.dirname(current)
        if parent == current:
            return True
        current = parent


def read_own_file(path: str, limit: int | None = None, private: bool = False) -> bytes | None:
    """The bytes of `path` if it is a regular file of this user's, not a link (at most `limit` bytes: more is
    None), that no one else can read or write when `private`; None for anything else (a FIFO is never waited
    on, a device never read)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError:
        return None
    try:
        with os.fdopen(descriptor, "rb", buffering=0) as stream:
            status = os.fstat(descriptor)
            if not stat.S_ISREG(status.st_mode):
                return None
            if os.name != "nt" and (status.st_uid != os.getuid() or private and status.st_mode & 0o077):
                return None
            data = stream.read() if limit is None else stream.read(limit + 1)
    except OSError:
        return None
    return data if limit is None or len(data) <= limit else None


def _folder() -> str | None:
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.environ.get("LOCALAPPDATA", "") if os.name == "nt" else ""
    if not os.path.isabs(base):
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, APPLICATION)


def keep_own_bytecode() -> None:
    """Where Python writes no .pyc, keep the generator's own modules' code in this user's folder, found by a
    digest of the Python, the module's path and its source: an edited module is compiled again. Spec code
    and everything else compile as Python decides (spec code has its project's cache)."""
    global _kept
    base = folder()
    if _kept or not sys.dont_write_bytecode or base is None:
        return
    kept_in = os.path.join(base, "bytecode")
    loader = importlib.machinery.SourceFileLoader
    compile_source = loader.source_to_code
    private = []  # once the folder is found to be the user's alone (folder() checked the folders above it)

    def own_folder() -> bool:
        if not private:
            try:
                status = os.lstat(kept_in)
            except OSError:
                return False
            if stat.S_ISDIR(status.st_mode) and status.st_uid in (os.getuid(), 0) and not status.st_mode & 0o022:
                private.append(True)
        return bool(private)

    def source_to_code(self, data, path, *args, **kwargs):
        if not str(path).startswith(_GENERATOR_DIR) or args or kwargs:
            return compile_source(self, data, path, *args, **kwargs)
        how = f"{sys.version}\0{sys.flags.optimize}\0{path}\0".encode()
        entry = os.path.join(kept_in, hashlib.sha256(how + bytes(data)).hexdigest())
        kept = read_own_file(entry, _LARGEST) if own_folder() else None
        if kept is not None:
            try:
                return marshal.loads(kept)
            except (ValueError, EOFError, TypeError):
                pass
        code = compile_source(self, data, path)
        try:
            os.makedirs(base, mode=0o700, exist_ok=True)  # the user's alone, as the secret needs it (cache.py)
            os.makedirs(kept_in, mode=0o700, exist_ok=True)
            if not own_folder():
                return code
            temporary = f"{entry}.{os.getpid()}.tmp"
            with open(temporary, "wb") as stream:
                stream.write(marshal.dumps(code))
            os.replace(temporary, entry)
            prune(kept_in)
        except OSError:
            pass  # an unwritable folder: compiled again next time
        return code

    loader.source_to_code = source_to_code
    _kept = True


_LARGEST = 1 << 24  # bytes: the code of the generator's largest module is a small fraction of it
KEPT = 4096  # entries: a few copies of the generator (each of its modules, for each Python and each checkout)


def prune(kept_in: str) -> None:
    """Keep the folder from growing without end (a generator installed at many paths, one Python after another):
    past KEPT entries, the older half goes. A miss compiles again; nothing else depends on an entry."""
    names = os.listdir(kept_in)
    if len(names) <= KEPT:
        return
    entries = []
    for name in names:
        path = os.path.join(kept_in, name)
        try:
            entries.append((os.stat(path).st_mtime_ns, path))
        except OSError:
            continue
    for _, path in sorted(entries)[: len(entries) // 2]:
        try:
            os.remove(path)
        except OSError:
            pass
