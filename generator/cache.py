"""The cache: what a run keeps in a project for the next run, in one store with one entry format.

A run works out things the next run would work out again from the same inputs: the
loads of spec files, compiled code, compiled templates, formatted pieces, ... Each
kind below keeps them in the project's cache folder, `.cache/generator/KIND/NAME`,
one file per entry:

    key (32 bytes) | seal (32 bytes) | payload

- The key is a digest of everything the payload depends on (`key`: this store's
  format, the kind, and the parts the kind names). A kind looks an entry up under
  the key of its inputs now, so an entry made from other inputs, by another
  generator or Python, or for another kind is not used.
- The seal is HMAC-SHA256, under this user's secret (`secret`), of the kind, the
  entry's file name, the key and the payload. The secret is kept outside every
  project, in the user's own cache folder (`secret_file`), readable by the user
  alone: so only this user's runs of the generator can make an entry that is used.
  A truncated, corrupt or hand-edited entry, one forged with any digest recomputed,
  one copied from another user's or machine's cache (a committed `.cache/`, a
  shared folder) or moved to another name, is not used: it is worked out again and
  replaced. Without a secret (no home folder that can be written, or a secret file
  that another user could read or write) no entry is read or written at all.
- An entry is written whole or not at all (generator/files.py), best effort: a cache
  folder that cannot be written costs the next run time, never this one its result.
- NAME is the key itself (an entry found by its content: a kind whose entries serve
  contents that come back, pruned to a number of entries), or the thing the entry
  was made for (a spec file, a template, an output), so that the folder holds one
  entry per thing, replaced when the thing changes.

So a cache can make a run faster, never different: an entry that is missing, damaged,
forged or not of the inputs now is worked out again, as if there were no cache, and
replaced. The kinds are listed below, each with the code that keeps it and what names
its entries.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from generator import files, user_cache

FOLDER = Path(".cache") / "generator"  # in a project: the only place its name is spelt

MODELS = "models"  # spec files' loads (loading/model_cache.py), by spec file
CODE = "code"  # compiled spec and generated code (loading/compiled.py), by file
TEMPLATES = "templates"  # compiled Jinja2 templates (building/template_cache.py), by template
CHECKS = "checks"  # texts that passed the static checks (building/check_memo.py), by generated module
FORMAT = "format"  # black's formatted pieces (building/formatting.py), by output
TORCH_NAMES = "torch-names"  # what torch names are (building/resolution.py), by torch version
MODULE_NAMES = "module-names"  # spec files' generated module names (freshness/planning.py), by content
LINT = "lint"  # the spec lint's findings (freshness/planning.py), one entry
PROOFS = "proofs"  # an environment writes a generated file's bytes (freshness/proofs.py), by its inputs

_FORMAT = b"generator cache 2"
_KEY_SIZE = _SEAL_SIZE = 32
_HEAD = _KEY_SIZE + _SEAL_SIZE
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_SECRET_SIZE = 32
_UNREAD = object()
_secret: object = _UNREAD  # this process's secret, read once (a forked child inherits it)


def folder(root: Path) -> Path:
    """The project's cache folder."""
    return root / FOLDER


def lock_file(root: Path) -> Path:
    """The lock that runs writing a project's outputs take (files.project_lock), beside its caches."""
    return folder(root) / "write.lock"


def key(kind: str, *parts: bytes | str) -> bytes:
    """The key of an entry of `kind` made from `parts`: each part counts by its bytes and its place."""
    digest = hashlib.sha256(_FORMAT)
    for part in (kind, *parts):
        data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.digest()


def secret_file() -> Path | None:
    """Where this user's cache secret is kept: in this user's cache folder (generator/user_cache.py), None
    when the user has no home folder."""
    base = user_cache.folder()
    return None if base is None else Path(base) / "key"


def secret() -> bytes | None:
    """This user's cache secret, made (readable by the user alone) on first use; None when there is none
    to be had, and then no entry is read or written: a cache that cannot be authenticated is not trusted."""
    global _secret
    if _secret is _UNREAD:
        path = secret_file()
        _secret = None if path is None else _read_secret(path) or _made_secret(path)
    return _secret  # type: ignore[return-value]


def forget_secret() -> None:
    """Read the secret again on next use (after XDG_CACHE_HOME changed, in tests)."""
    global _secret
    _secret = _UNREAD


def _read_secret(path: Path) -> bytes | None:
    """The secret in `path` if it is a regular file of the user's own that no one else can read or write (not a
    link, and a FIFO is never waited on)."""
    data = user_cache.read_own_file(str(path), _SECRET_SIZE, private=True)  # no one else could forge entries
    return data if data is not None and len(data) == _SECRET_SIZE else None


def _made_secret(path: Path) -> bytes | None:
    """A new secret in `path` (made whole, then linked in: of runs starting together, one secret wins and
    every run reads that one); None when the folder cannot be written."""
    temporary = path.with_name(f".key.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
        try:
            os.write(descriptor, os.urandom(_SECRET_SIZE))
        finally:
            os.close(descriptor)
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass  # another run made it first: its secret is the one
    except OSError:
        return None
    finally:
        try:
            temporary.unlink(missing_ok=True)
        except OSError:
            pass
    return _read_secret(path)


def _seal(secret: bytes, kind: str, file_name: str, key: bytes):
    """The running HMAC of an entry, given all but its payload."""
    seal = hmac.new(secret, _FORMAT, hashlib.sha256)
    for part in (kind.encode(), file_name.encode(), key):
        seal.update(len(part).to_bytes(8, "big"))
        seal.update(part)
    return seal


@dataclass(frozen=True)
class Entry:
    key: bytes
    payload: bytes


class Cache:
    """The entries of one kind in a project's cache folder."""

    def __init__(self, root: Path, kind: str):
        self.kind = kind
        self.folder = folder(root) / kind

    def key(self, *parts: bytes | str) -> bytes:
        return key(self.kind, *parts)

    def path(self, name: str) -> Path:
        """The file of entry `name`, spelt safely for any file system, and never as a hidden (temporary) file."""
        safe = _UNSAFE.sub("_", name)
        return self.folder / ("_" + safe[1:] if safe.startswith(".") else safe)

    def get(self, key: bytes, name: str | None = None) -> bytes | None:
        """The payload kept under `key` (as entry `name`, or found by the key itself), or None."""
        entry = self.read(key.hex() if name is None else name, key)
        return entry.payload if entry is not None else None

    def read(self, name: str, key: bytes | None = None) -> Entry | None:
        """Entry `name` if its seal holds (and its key is `key`, when given), else None."""
        secret_now = secret()
        if secret_now is None:
            return None
        path = self.path(name)
        data = user_cache.read_own_file(str(path))  # a regular file of this user's: a FIFO would hang the run
        if data is None or len(data) < _HEAD or (key is not None and data[:_KEY_SIZE] != key):
            return None
        view = memoryview(data)
        seal = _seal(secret_now, self.kind, path.name, data[:_KEY_SIZE])
        seal.update(view[_HEAD:])
        if not hmac.compare_digest(seal.digest(), data[_KEY_SIZE:_HEAD]):
            return None
        return Entry(data[:_KEY_SIZE], data[_HEAD:])

    def put(self, key: bytes, payload: bytes, name: str | None = None) -> None:
        """Keep `payload` under `key`, as entry `name` or under the key itself; best effort."""
        secret_now = secret()
        if secret_now is None:
            return
        path = self.path(key.hex() if name is None else name)
        seal = _seal(secret_now, self.kind, path.name, key)
        seal.update(payload)

        def whole(stream: BinaryIO) -> None:
            stream.write(key)
            stream.write(seal.digest())
            stream.write(payload)

        files.keep_cache_file(path, whole)

    def put_written(self, key: bytes, write: Callable[[BinaryIO], object], name: str) -> None:
        """Keep as entry `name` the payload `write(stream)` writes, never whole in memory: a large spec's
        model pickles to tens of megabytes. Whatever `write` raises but OSError is raised, nothing kept."""
        secret_now = secret()
        if secret_now is None:
            return
        path = self.path(name)

        def whole(stream: BinaryIO) -> None:
            stream.write(key + bytes(_SEAL_SIZE))
            payload = _Sealed(stream, _seal(secret_now, self.kind, path.name, key))
            write(payload)
            stream.seek(_KEY_SIZE)
            stream.write(payload.seal.digest())  # the seal comes first, and is known last

        files.keep_cache_file(path, whole)

    def names(self) -> list[str]:
        """The names of the entries kept (as their files spell them)."""
        try:
            return sorted(name for name in os.listdir(self.folder) if not name.startswith("."))
        except OSError:
            return []

    def prune(self, keep: int) -> None:
        """Above `keep` entries, remove the oldest down to half as many: a kind found by content would keep
        the entries of contents long gone. Best effort, like every write."""
        names = self.names()
        if len(names) <= keep:
            return
        entries = []
        for name in names:
            try:
                entries.append((self.path(name).stat().st_mtime_ns, name))
            except OSError:
                continue
        for _, name in sorted(entries)[: len(entries) - keep // 2]:
            try:
                self.path(name).unlink(missing_ok=True)
            except OSError:
                continue

    def copy_to(self, root: Path) -> None:
        """Copy every entry into `root`'s cache of the same kind (no key names a project's folder); best effort."""
        there = Cache(root, self.kind)
        for name in self.names():
            try:
                there.folder.mkdir(parents=True, exist_ok=True)
                shutil.copy2(self.path(name), there.path(name))
            except OSError:
                continue


class _Sealed:
    """A binary stream that also adds everything written to it to a seal."""

    def __init__(self, stream: BinaryIO, seal):
        self.stream = stream
        self.seal = seal

    def write(self, data) -> int:
        self.seal.update(data)
        return self.stream.write(data)
