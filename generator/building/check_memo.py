"""A memo of the static checks that rendered module texts passed (see pipeline._passes_checks).

Compiling, walking and parsing each rendered module takes about a tenth of a second a run, and
`regenerate --force` or `check --full` with nothing new checks the very texts it checked last
time. Both checks are functions of the text, the output name, the names the spec chooses, the
Python running them and their own code, so a text that passed with all of those unchanged passes again. Only
passes are kept (in the cache: cache.CHECKS, one entry per generated module, under the key of all of
those), so a refused text is always checked again and refused with the same message; an entry that is
missing, corrupt or of another text is checked again.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from importlib.util import MAGIC_NUMBER
from pathlib import Path

from generator import cache

# The code of the checks themselves: a stricter check after an upgrade must see every text again. The names
# check reads the text without its entries, as formatting.without_entries cuts them.
_CHECKING_MODULES = ("output_check.py", "naming.py", "pipeline.py", "check_memo.py", "formatting.py")


def key(text: str, output: str, names: list[str]) -> bytes:
    """What a pass depends on: the Python, the checks' code, the output name, the spec's names (in order)
    and the text."""
    return cache.key(cache.CHECKS, sys.version, MAGIC_NUMBER.hex(), _checks_digest(), output, json.dumps(names), text)


@functools.cache
def _checks_digest() -> str:
    folder = Path(__file__).resolve().parent
    return hashlib.sha256(b"".join((folder / name).read_bytes() for name in _CHECKING_MODULES)).hexdigest()


def passed(root: Path, module: str, digest: bytes) -> bool:
    """Whether generated module `module`'s text of key `digest` passed the checks (in the project at `root`)."""
    return cache.Cache(root, cache.CHECKS).get(digest, module) is not None


def remember(root: Path, module: str, digest: bytes) -> None:
    cache.Cache(root, cache.CHECKS).put(digest, b"", module)
