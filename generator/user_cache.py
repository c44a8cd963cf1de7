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
import sys

APPLICATION = "backend-config-generator"
_GENERATOR_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_kept = False


def folder() -> str | None:
    """`$XDG_CACHE_HOME/backend-config-generator` (when XDG_CACHE_HOME is an absolute path), else
    `~/.cache/...` (`%LOCALAPPDATA%` on Windows); None when the user has no home folder."""
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

    def source_to_code(self, data, path, *args, **kwargs):
        if not str(path).startswith(_GENERATOR_DIR) or args or kwargs:
            return compile_source(self, data, path, *args, **kwargs)
        how = f"{sys.version}\0{sys.flags.optimize}\0{path}\0".encode()
        entry = os.path.join(kept_in, hashlib.sha256(how + bytes(data)).hexdigest())
        try:
            with open(entry, "rb") as stream:
                return marshal.loads(stream.read())
        except (OSError, ValueError, EOFError, TypeError):
            pass
        code = compile_source(self, data, path)
        try:
            os.makedirs(base, mode=0o700, exist_ok=True)  # the user's alone, as the secret needs it (cache.py)
            os.makedirs(kept_in, mode=0o700, exist_ok=True)
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
