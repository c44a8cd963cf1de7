"""Compiled Jinja2 templates kept between runs, so a run does not compile every template again.

Jinja2 turns a template into Python code (parse, generate, compile) on every
run: a tenth of the CPU of a one-line spec edit. This cache keeps that code in
the project's cache (cache.TEMPLATES), one entry per template. An entry is used only when
it was made from the same template text, by the same Jinja2 and Python, with
the same environment settings (all of which make its key), and when its seal holds: an edited
template is compiled again, and a truncated or corrupt entry is ignored and
replaced. Filters and tests are part of that setup: compiled code
calls each as it takes arguments, and the compiler folds a filter given constants into its
result; they are the generator's code, so a file is used only by the generator that made it.
Like the interpreter's __pycache__, an entry written on purpose to hold
other code is not detected; the cache is a build directory, not an input.

An entry is named after the template's name in templates/, not its absolute path
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

from generator import cache, digests

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


class TemplateBytecodeCache(jinja2.BytecodeCache):
    """Jinja2's bytecode cache, in the cache of the project at `root`, checked as the module docstring says."""

    def __init__(self, root: Path):
        self.entries = cache.Cache(root, cache.TEMPLATES)

    def get_cache_key(self, name: str, filename: str | None = None) -> str:
        """The template's name alone (module.py.j2, functions/x.py.j2): one cache folder serves one templates/."""
        return hashlib.sha256(name.encode()).hexdigest()

    def get_bucket(self, environment: jinja2.Environment, name: str, filename: str | None, source: str) -> Bucket:
        bucket = super().get_bucket(environment, name, filename, source)
        if bucket.code is not None and filename is not None and bucket.code.co_filename != filename:
            bucket.code = _located_at(bucket.code, filename)  # compiled where the project was before
        return bucket

    def load_bytecode(self, bucket: Bucket) -> None:
        code = self.entries.get(self._key(bucket), bucket.key)
        if code is None:
            return  # another template text or setup, or a damaged entry: compiled again
        try:
            bucket.code = marshal.loads(code)
        except Exception:  # noqa: BLE001 - an entry that passes its seal yet does not load is compiled again
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        self.entries.put(self._key(bucket), marshal.dumps(bucket.code), bucket.key)

    def _key(self, bucket: Bucket) -> bytes:
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
                # The code calls filters and tests as they take arguments (the context first, if
                # @pass_context), and the compiler calls those given constants: `{{ "x" | py }}` is
                # compiled to py's result. Both are the generator's code.
                [(name, _described(f)) for name, f in sorted(env.filters.items())],
                [(name, _described(f)) for name, f in sorted(env.tests.items())],
                _described(env.finalize),
            )
        )
        return self.entries.key(setup, digests.generator_code())


def _described(function) -> tuple:
    """A filter or test as compiled code depends on it: which function, and what Jinja2 passes it first."""
    pass_arg = getattr(function, "jinja_pass_arg", None)
    return getattr(function, "__module__", None), getattr(function, "__qualname__", None), repr(pass_arg)


def _located_at(code: CodeType, filename: str) -> CodeType:
    """The same code, with its functions', as compiled from `filename`."""
    consts = tuple(_located_at(c, filename) if isinstance(c, CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)
