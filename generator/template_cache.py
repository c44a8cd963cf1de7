"""Compiled Jinja2 templates kept between runs, so a run does not compile every template again.

Jinja2 turns a template into Python code (parse, generate, compile) on every
run: a tenth of the CPU of a one-line spec edit. This cache keeps that code in
.cache/generator/templates/, one file per template. A file is used only when
it was made from the same template text, by the same Jinja2 and Python, with
the same environment settings, and when its own checksum holds: an edited
template is compiled again, and a truncated or corrupt file is ignored and
replaced. Like the interpreter's __pycache__, a file written on purpose to hold
other code is not detected; the cache is a build directory, not an input.
"""

from __future__ import annotations

import hashlib
import marshal
import sys
from pathlib import Path

import jinja2
from jinja2.bccache import Bucket

from generator import writing

# Environment settings that change the code a template compiles to.
_SETTINGS = (
    "block_start_string",
    "block_end_string",
    "variable_start_string",
    "variable_end_string",
    "comment_start_string",
    "comment_end_string",
    "line_statement_prefix",
    "line_comment_prefix",
    "trim_blocks",
    "lstrip_blocks",
    "newline_sequence",
    "keep_trailing_newline",
    "optimized",
    "autoescape",
    "is_async",
)
_CHECKSUM_SIZE = 32


class TemplateBytecodeCache(jinja2.BytecodeCache):
    """Jinja2's bytecode cache, in `folder`, checked as the module docstring says."""

    def __init__(self, folder: Path):
        self.folder = folder

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            data = self._path(bucket).read_bytes()
        except OSError:
            return
        stored, code = data[:_CHECKSUM_SIZE], data[_CHECKSUM_SIZE:]
        if stored != self._checksum(bucket, code):
            return  # another template text or setup, or a damaged file: compiled again
        try:
            bucket.code = marshal.loads(code)
        except Exception:  # noqa: BLE001 - a file that passes its checksum yet does not load is compiled again
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        code = marshal.dumps(bucket.code)
        writing.keep_cache_file(self._path(bucket), self._checksum(bucket, code) + code)

    def _path(self, bucket: Bucket) -> Path:
        return self.folder / f"{bucket.key}.bin"

    def _checksum(self, bucket: Bucket, code: bytes) -> bytes:
        """Ties the code to the template's text (bucket.checksum), this Jinja2, Python and settings."""
        env = bucket.environment
        setup = repr(
            (
                jinja2.__version__,
                sys.implementation.cache_tag,
                sys.version,
                bucket.key,
                bucket.checksum,
                [repr(getattr(env, name, None)) for name in _SETTINGS],
                sorted(env.extensions),
            )
        )
        return hashlib.sha256(setup.encode() + b"\0" + code).digest()
