"""Loaded spec modules kept between runs, so that an edit to one spec file executes that file alone.

`regenerate` needs every spec module (the support matrix is made from all of
them), yet after an edit to spec/x86.py the other spec files read exactly what
they read last time. Each successful load is kept in the cache
(cache.MODELS), with the project files it read and their digests
(`ModuleSpec.read`, what the manifest records for its output). An entry is used
only when every one of those files has the same digest now, when it was written
by this very generator (the digest of every file in generator/) under this
Python (all three make its key), and when its seal holds; anything else (an edit, another generator,
a truncated or corrupt file, one that holds anything but the model's own
classes) is ignored, the spec file executed and the entry replaced.

This trusts the same records that let `regenerate` skip a fresh target: what a
spec load makes depends only on the project files it reads. Commands that must
not trust them (`regenerate --force`, `check --full`) execute every spec file, and so
does `matrix`, which shows what every spec file prints.
"""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

from generator import cache, digests
from generator.loading import plain_values
from generator.model import ModuleSpec


class ModelCache:
    """The kept loads of one project; `files`, where the spec files to look up are (the project's own by
    default; a revision's, extracted elsewhere, for `diff --rev`): an entry serves them when every file
    its load read has the same digest there."""

    def __init__(self, root: Path, files: Path | None = None):
        self.root = root
        self.files = root if files is None else files
        self.entries = cache.Cache(root, cache.MODELS)

    def lookup(self, relative: str) -> ModuleSpec | None:
        """The kept load of spec file `relative` ("spec/x86.py") if it is valid now, else None."""
        entry = self.entries.read(relative)
        if entry is None:
            return None
        try:
            size = int.from_bytes(entry.payload[:4], "big")
            kept_relative, read = json.loads(entry.payload[4 : 4 + size])
            # The reads first: most entries a run looks at after an edit are stale, and unpickling costs.
            if kept_relative != relative or relative not in dict(read):
                return None
            if not all(self._digest(name) == digest for name, digest in read):
                return None
            if entry.key != self._key(relative, read):
                return None  # made by another generator or Python, or for other reads
            module = plain_values.unpickled(entry.payload[4 + size :])
        except Exception:  # noqa: BLE001 - whatever a damaged entry raises, the spec file is executed instead
            return None
        if not isinstance(module, ModuleSpec) or module.spec_file != relative:
            return None
        return module if [list(pair) for pair in module.read] == read else None

    def keep(self, module: ModuleSpec) -> None:
        """Keep a load that just ran; a cache that cannot be written only costs time on the next run."""
        assert self.files == self.root, "only the project's own loads are kept"
        read = [list(pair) for pair in module.read]
        header = json.dumps([module.spec_file, read]).encode()

        def write(stream) -> None:
            # The pickle goes to the file frame by frame, never whole in memory (a large spec's model
            # pickles to tens of megabytes).
            stream.write(len(header).to_bytes(4, "big") + header)
            pickle.dump(module, stream, protocol=pickle.HIGHEST_PROTOCOL)

        try:
            self.entries.put_written(self._key(module.spec_file, read), write, module.spec_file)
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError, ValueError):
            pass  # a model that does not pickle is executed again next time

    def _digest(self, name: str) -> str:
        return digests.input_digest(self.files, name)  # as loading/reads.py records what a load read

    def _key(self, relative: str, read: list) -> bytes:
        """What, with the files a load reads, decides what it makes: this generator's code and Python."""
        return self.entries.key(sys.version, digests.generator_code(), relative, json.dumps(read))
