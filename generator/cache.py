"""The cache: what a run keeps in a project for the next run, in one store with one entry format.

A run works out things the next run would work out again from the same inputs: the
loads of spec files, compiled code, compiled templates, formatted pieces, ... Each
kind below keeps them in the project's cache folder, `.cache/generator/KIND/NAME`,
one file per entry:

    key (32 bytes) | checksum (32 bytes) | payload

- The key is a digest of everything the payload depends on (`key`: this store's
  format, the kind, and the parts the kind names). A kind looks an entry up under
  the key of its inputs now, so an entry made from other inputs, by another
  generator or Python, or for another kind is not used.
- The checksum is SHA-256 of key and payload: a truncated, corrupt or hand-edited
  entry is not used. It tells a damaged entry from a sound one, not an honest one
  from a forged one: a kind whose payload could change what a run writes checks what
  it takes as well (see each).
- An entry is written whole or not at all (generator/files.py), best effort: a cache
  folder that cannot be written costs the next run time, never this one its result.
- NAME is the key itself (an entry found by its content: a kind whose entries serve
  contents that come back, pruned to a number of entries), or the thing the entry
  was made for (a spec file, a template, an output), so that the folder holds one
  entry per thing, replaced when the thing changes.

So a cache can make a run faster, never different: an entry that is missing, damaged
or not of the inputs now is worked out again, as if there were no cache, and replaced.
The kinds are listed below, each with the code that keeps it and what names its entries.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from generator import files

FOLDER = Path(".cache") / "generator"  # in a project: the only place its name is spelt

MODELS = "models"  # spec files' loads (loading/model_cache.py), by spec file
CODE = "code"  # compiled spec and generated code (loading/compiled.py), by file
TEMPLATES = "templates"  # compiled Jinja2 templates (building/template_cache.py), by template
CHECKS = "checks"  # texts that passed the static checks (building/check_memo.py), by generated module
FORMAT = "format"  # black's formatted pieces (building/formatting.py), by output
TORCH_NAMES = "torch-names"  # what torch names are (building/resolution.py), by torch version
MODULE_NAMES = "module-names"  # spec files' generated module names (freshness/planning.py), by content
LINT = "lint"  # the spec lint's findings (freshness/planning.py), one entry

_FORMAT = b"generator cache 1"
_KEY_SIZE = _CHECKSUM_SIZE = 32
_HEAD = _KEY_SIZE + _CHECKSUM_SIZE
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


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
        """Entry `name` if its checksum holds (and its key is `key`, when given), else None."""
        try:
            data = self.path(name).read_bytes()
        except OSError:
            return None
        if len(data) < _HEAD or (key is not None and data[:_KEY_SIZE] != key):
            return None
        view = memoryview(data)
        checksum = hashlib.sha256(view[:_KEY_SIZE])
        checksum.update(view[_HEAD:])
        if checksum.digest() != data[_KEY_SIZE:_HEAD]:
            return None
        return Entry(data[:_KEY_SIZE], data[_HEAD:])

    def put(self, key: bytes, payload: bytes, name: str | None = None) -> None:
        """Keep `payload` under `key`, as entry `name` or under the key itself; best effort."""
        checksum = hashlib.sha256(key)
        checksum.update(payload)

        def whole(stream: BinaryIO) -> None:
            stream.write(key)
            stream.write(checksum.digest())
            stream.write(payload)

        files.keep_cache_file(self.path(key.hex() if name is None else name), whole)

    def put_written(self, key: bytes, write: Callable[[BinaryIO], object], name: str) -> None:
        """Keep as entry `name` the payload `write(stream)` writes, never whole in memory: a large spec's
        model pickles to tens of megabytes. Whatever `write` raises but OSError is raised, nothing kept."""

        def whole(stream: BinaryIO) -> None:
            stream.write(key + bytes(_CHECKSUM_SIZE))
            payload = _Checksummed(stream, hashlib.sha256(key))
            write(payload)
            stream.seek(_KEY_SIZE)
            stream.write(payload.digest.digest())  # the checksum comes first, and is known last

        files.keep_cache_file(self.path(name), whole)

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


class _Checksummed:
    """A binary stream that also adds everything written to it to a checksum."""

    def __init__(self, stream: BinaryIO, digest):
        self.stream = stream
        self.digest = digest

    def write(self, data) -> int:
        self.digest.update(data)
        return self.stream.write(data)
