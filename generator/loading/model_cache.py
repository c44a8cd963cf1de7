"""Loaded spec modules kept between runs, so that an edit to one spec file executes that file alone.

`regenerate` needs every spec module (the support matrix is made from all of
them), yet after an edit to spec/x86.py the other spec files read exactly what
they read last time. Each successful load is kept in
.cache/generator/models/, with the project files it read and their digests
(`ModuleSpec.read`, what the manifest records for its output). An entry is used
only when every one of those files has the same digest now, when it was written
by this very generator (the digest of every file in generator/) under this
Python, and when its checksum holds; anything else (an edit, another generator,
a truncated or corrupt file, one that holds anything but the model's own
classes) is ignored, the spec file executed and the entry replaced.

This trusts the same records that let `regenerate` skip a fresh target: what a
spec load makes depends only on the project files it reads. Commands that must
not trust them (`regenerate --force`, `check --full`) execute every spec file, and so
does `matrix`, which shows what every spec file prints.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import re
import sys
from pathlib import Path

from generator import digests, model
from generator.model import ModuleSpec

_FORMAT = b"model-cache 1"
_CHECKSUM_SIZE = 32


class ModelCache:
    """The kept loads of one project; `files`, where the spec files to look up are (the project's own by
    default; a revision's, extracted elsewhere, for `diff --rev`): an entry serves them when every file
    its load read has the same digest there."""

    def __init__(self, root: Path, files: Path | None = None):
        self.root = root
        self.files = root if files is None else files
        self.folder = root / ".cache" / "generator" / "models"
        self._setup: bytes | None = None

    def lookup(self, relative: str) -> ModuleSpec | None:
        """The kept load of spec file `relative` ("spec/x86.py") if it is valid now, else None."""
        try:
            data = self._path(relative).read_bytes()
        except OSError:
            return None
        stored, body = data[:_CHECKSUM_SIZE], data[_CHECKSUM_SIZE:]
        if stored != self._checksum(body):
            return None
        try:
            size = int.from_bytes(body[:4], "big")
            kept_relative, read = json.loads(body[4 : 4 + size])
            # The reads first: most entries a run looks at after an edit are stale, and unpickling costs.
            if kept_relative != relative or relative not in dict(read):
                return None
            if not all(self._digest(name) == digest for name, digest in read):
                return None
            module = _ModelUnpickler(io.BytesIO(body[4 + size :])).load()
        except Exception:  # noqa: BLE001 - whatever a damaged entry raises, the spec file is executed instead
            return None
        if not isinstance(module, ModuleSpec) or module.spec_file != relative:
            return None
        return module if [list(pair) for pair in module.read] == read else None

    def keep(self, module: ModuleSpec) -> None:
        """Keep a load that just ran; a cache that cannot be written only costs time on the next run."""
        assert self.files == self.root, "only the project's own loads are kept"
        temporary = None
        try:
            header = json.dumps([module.spec_file, [list(pair) for pair in module.read]]).encode()
            path = self._path(module.spec_file)
            self.folder.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            with temporary.open("wb") as stream:
                # The pickle goes to the file frame by frame, never whole in memory (a large spec's model
                # pickles to tens of megabytes); the checksum, which comes first, is written last.
                stream.write(bytes(_CHECKSUM_SIZE))
                body = _Checksummed(stream, self._checksum_start())
                body.write(len(header).to_bytes(4, "big") + header)
                pickle.dump(module, body, protocol=pickle.HIGHEST_PROTOCOL)
                stream.seek(0)
                stream.write(body.digest.digest())
            os.replace(temporary, path)  # whole or not at all, whatever runs at the same time
        except (OSError, pickle.PicklingError, TypeError, AttributeError, RecursionError, ValueError):
            if temporary is not None:
                temporary.unlink(missing_ok=True)

    def _path(self, relative: str) -> Path:
        return self.folder / (re.sub(r"[^A-Za-z0-9_.-]", "_", relative) + ".pickle")

    def _digest(self, name: str) -> str:
        return digests.input_digest(self.files, name)  # as spec_reads records what a load read

    def _checksum(self, body: bytes) -> bytes:
        digest = self._checksum_start()
        digest.update(body)
        return digest.digest()

    def _checksum_start(self):
        """The checksum of an entry before its body: it covers this generator and Python, then the body."""
        if self._setup is None:
            self._setup = _setup()
        return hashlib.sha256(self._setup)


class _Checksummed:
    """A binary stream that also adds everything written to it to a checksum."""

    def __init__(self, stream, digest):
        self.stream = stream
        self.digest = digest

    def write(self, data) -> int:
        self.digest.update(data)
        return self.stream.write(data)


def _setup() -> bytes:
    """What, besides the files a load reads, decides what it makes: this generator's code and Python."""
    return hashlib.sha256(_FORMAT + b"\0" + sys.version.encode() + b"\0" + digests.generator_code()).digest()


class _ModelUnpickler(pickle.Unpickler):
    """Makes nothing but the model's own classes: a kept entry is data, never code to run."""

    def find_class(self, module_name: str, name: str):
        found = getattr(model, name, None) if module_name == model.__name__ else None
        if isinstance(found, type) and found.__module__ == model.__name__ and hasattr(found, "__dataclass_fields__"):
            return found
        raise pickle.UnpicklingError(f"{module_name}.{name} is not a class of the model")
