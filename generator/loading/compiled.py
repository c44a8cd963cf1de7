"""Compiled code kept between runs in the cache (cache.CODE), one entry per source file.

An entry is found by the file it was compiled from and used only under the key of what it is
compiled from now (the text, the file name, the Python): an edited file's entry, or a corrupt
one, is compiled again and replaced, so the cache can make a run faster, never different.
"""

from __future__ import annotations

import marshal
import types
from collections.abc import Callable
from pathlib import Path

from generator import cache


def cached(root: Path, name: str, parts: tuple, compile_it: Callable[[], types.CodeType]) -> types.CodeType:
    """The code `compile_it` makes, kept in `root`'s cache as entry `name`, under the key of `parts`:
    everything the code is compiled from."""
    entries = cache.Cache(root, cache.CODE)
    key = entries.key(*parts)
    kept = entries.get(key, name)
    if kept is not None:
        try:
            code = marshal.loads(kept)
            if isinstance(code, types.CodeType):
                return code
        except (ValueError, EOFError, TypeError):
            pass  # a sound seal around what does not load: compiled again
    code = compile_it()
    entries.put(key, marshal.dumps(code), name)
    return code
