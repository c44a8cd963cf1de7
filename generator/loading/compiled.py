"""Compiled code kept on disk between runs, under a digest of everything it was compiled from.

An entry is the key, a checksum of key and code, and the marshalled code. An entry of another
key (another text, file name or Python), or a corrupt one, is compiled again and replaced, so
the cache can make a run faster, never different.
"""

from __future__ import annotations

import hashlib
import marshal
import types
from collections.abc import Callable
from pathlib import Path

from generator import files


def cached(cache: Path, key: bytes, compile_it: Callable[[], types.CodeType]) -> types.CodeType:
    """The code `compile_it` makes, read from `cache` when that holds it under the 32-byte `key`."""
    try:
        stored = cache.read_bytes()
        if stored[:32] == key and hashlib.sha256(stored[:32] + stored[64:]).digest() == stored[32:64]:
            code = marshal.loads(stored[64:])
            if isinstance(code, types.CodeType):
                return code
    except (OSError, ValueError, EOFError, TypeError):
        pass  # missing or unreadable: compiled again
    code = compile_it()
    data = marshal.dumps(code)
    files.keep_cache_file(cache, key + hashlib.sha256(key + data).digest() + data)
    return code
