"""Compiled Jinja2 templates kept between runs, so a run does not compile every template again.

Jinja2 turns a template into Python code (parse, generate, compile) on every
run: a tenth of the CPU of a one-line spec edit. This cache keeps that code in
.cache/generator/templates/, one file per template. A file is used only when
it was made from the same template text, by the same Jinja2 and Python, with
the same environment settings, and when its own checksum holds: an edited
template is compiled again, and a truncated or corrupt file is ignored and
replaced. Like the interpreter's __pycache__, a file written on purpose to hold
other code is not detected; the cache is a build directory, not an input.

A file is named after the template's name in templates/, not its absolute path
(Jinja2's default key): a project moved or copied elsewhere keeps its compiled
templates. The code's file name, which Jinja2 reports template errors by, is
set to where the template is now as the code is loaded.
"""

from __future__ import annotations

import hashlib
import marshal
import sys
from pathlib import Path
from types import CodeType

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

    def get_cache_key(self, name: str, filename: str | None = None) -> str:
        """The template's name alone (module.py.j2, functions/x.py.j2): one cache folder serves one templates/."""
        return hashlib.sha256(name.encode()).hexdigest()

    def get_bucket(self, environment: jinja2.Environment, name: str, filename: str | None, source: str) -> Bucket:
        bucket = super().get_bucket(environment, name, filename, source)
        if bucket.code is not None and filename is not None and bucket.code.co_filename != filename:
            bucket.code = _located_at(bucket.code, filename)  # compiled where the project was before
        return bucket

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


def _located_at(code: CodeType, filename: str) -> CodeType:
    """The same code, with its functions', as compiled from `filename`."""
    consts = tuple(_located_at(c, filename) if isinstance(c, CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)
