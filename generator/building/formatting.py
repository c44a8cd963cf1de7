"""Stage 4: format rendered source with black, in-process, with black's default style.

black is most of the cost of a regenerate, so it formats only what is new:

- A module is cut into blocks that black formats independently (the templates
  mark each builder function with BLOCK_MARKER). Top-level functions are
  separated by exactly two blank lines in black's style, so joining the
  formatted blocks that way gives what black gives for the whole module.
- Inside a builder, each pattern entry is marked with ENTRY_MARKER. The list of
  entries ends in a trailing comma, so black always puts one entry per line and
  formats each one on its own at the same indentation: an entry is formatted in
  a small wrapper of that shape, and the builder around the entries (its
  skeleton) with one placeholder entry in their place.
- Most entries need no black at all: entry_layout lays out the shapes the
  template renders exactly as black does, and says so only when it is sure.
- Each formatted piece is kept in the project's cache (cache.FORMAT), by the
  digest of its unformatted text, black's version and mode,
  so a one-op edit formats one entry per builder, and a forced regenerate of an
  unchanged spec formats nothing.

A test checks that every generated module is black-stable as a whole, and that
a corrupt cache, or a piece forged to other code, cannot change what is written
(see FormatCache; a piece forged to differ only in what `_code` ignores can).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from generator import cache
from generator.building.entry_layout import laid_out
from generator.errors import FormattingError

if TYPE_CHECKING:
    import concurrent.futures

BLOCK_MARKER = "# generator: format-block\n"
BLOCK_SEPARATOR = "\n\n"  # after a formatted block's own newline: two blank lines
ENTRY_MARKER = "# generator: format-entry"  # a line of its own before each pattern entry and after the last

_ENTRY_LINE = ENTRY_MARKER + "\n"
# The template writes each marker as a line of its own; spec text (a section's comment) may hold its text indented.
_TEMPLATE_BLOCK_LINE = re.compile("^" + re.escape(BLOCK_MARKER), re.MULTILINE)
_TEMPLATE_ENTRY_LINE = re.compile("^" + re.escape(_ENTRY_LINE), re.MULTILINE)
_PLACEHOLDER = "_generator_pattern_entries_"
_ENTRY_INDENT = " " * 12  # where the builder template puts its pattern entries
# An entry formatted on its own, in the same place as in a builder: one element of an
# exploded list, three levels deep, followed by another (a list's only element is laid out otherwise).
_WRAP_HEAD = "def _():\n    return _(\n        [\n"
_WRAP_TAIL = "            _,\n        ]\n    )\n"
_FORMATTED_MARKER = _ENTRY_INDENT + _ENTRY_LINE
_LINE_LENGTH = 88  # black's default, which format_block uses
_FORMAT_DIRECTIVE = re.compile(r"#[^\n]*\b(?:fmt|yapf)\s*:", re.IGNORECASE)  # a comment that turns black off or on
_BATCH_CHARS = 20_000  # entries per worker task: few enough tasks to keep both cores busy, not one each


def split_blocks(source: str) -> list[str]:
    """The blocks, each without the blank lines that end it: black removes them at the end of a text
    (and BLOCK_SEPARATOR puts two back), so a block rendered in black's style comes back unchanged."""
    return [block.rstrip("\n") + "\n" for block in _TEMPLATE_BLOCK_LINE.split(source)]


def without_entries(source: str, entry_lines: int) -> str:
    """The rendered module without its pattern entries, for the check of module-level bindings: an entry
    is an expression in a builder's list, which binds no module-level name, and most of the text.

    `entry_lines` is how many ENTRY_MARKER lines the template wrote (one before each entry, one after
    each builder's last); a text holding any other (spec text may) is returned whole.
    """
    if len(_TEMPLATE_ENTRY_LINE.findall(source)) != entry_lines:
        return source
    kept = []
    for block in _TEMPLATE_BLOCK_LINE.split(source):
        parts = _TEMPLATE_ENTRY_LINE.split(block)
        kept.append(parts[0] + parts[-1] if len(parts) > 1 else block)
    return "".join(kept)


def format_block(block: str, output: str) -> str:
    import black  # imported here so that `check`'s fast path never loads it

    try:
        return black.format_str(block, mode=black.Mode())
    except black.parsing.InvalidInput as error:
        raise FormattingError(f"{output}: the templates rendered invalid Python: {error}") from None


def format_blocks(blocks: list[str], output: str) -> list[str]:
    """One worker task: several pieces formatted one after the other."""
    return [format_block(block, output) for block in blocks]


def _style_key() -> str:
    """What, besides the text, decides black's output: black's version, this file (black's mode and
    how pieces are cut and wrapped are written here) and entry_layout (its layout of an entry is taken
    for black's: a piece laid out by an older version must not outlive it). Read without importing
    black: a regenerate that finds every piece in the cache never loads it."""
    from generator.building import entry_layout
    from generator.digests import installed_version

    files = "\0".join(hashlib.sha256(Path(f).read_bytes()).hexdigest() for f in (__file__, entry_layout.__file__))
    return f"black {installed_version('black')}\0{files}\0"


# ---------------------------------------------------------------------------
# Cutting a block into pieces and joining the formatted pieces
# ---------------------------------------------------------------------------


class Piece:
    """One text black formats on its own; `formatted` is set from the cache or by black."""

    def __init__(self, text: str):
        self.text = text
        self.formatted: str | None = None
        self.cached = False


class Block:
    """A block of the module, whole or as a skeleton with its pattern entries cut out."""

    def __init__(self, block: str):
        parts = _TEMPLATE_ENTRY_LINE.split(block)
        self.whole = Piece(_TEMPLATE_ENTRY_LINE.sub("", block))
        # `# fmt: off` (a spec section may say it) reaches past its own entry: such a block is formatted whole.
        # So is a builder with one entry: black splits a list's only element, a chain of calls after a
        # comment, before each call even when it fits; entries are laid out as elements of longer lists.
        whole = _FORMAT_DIRECTIVE.search(block) or len(parts) < 4
        self.entries = [] if whole else [Piece(p) for p in parts[1:-1]]
        self.skeleton = Piece(parts[0] + _ENTRY_INDENT + _PLACEHOLDER + ",\n" + parts[-1]) if self.entries else None

    def pieces(self) -> list[Piece]:
        return [self.skeleton, *self.entries] if self.entries else [self.whole]

    def joined(self) -> str | None:
        """The formatted block, or None when a piece did not come out in the expected shape."""
        if not self.entries:
            return self.whole.formatted
        line = _ENTRY_INDENT + _PLACEHOLDER + ",\n"
        skeleton = self.skeleton.formatted
        if skeleton.count(line) != 1 or any(e.formatted is None for e in self.entries):
            return None
        # black splits the statement that holds the list at its last bracket, whatever the list
        # holds, only when the line that opens it fits: otherwise the two could differ.
        opening = skeleton[: skeleton.index(line)].splitlines()[-2:]
        fits = len(opening) == 2 and opening[0].endswith("(") and len(opening[0]) <= _LINE_LENGTH
        if not fits or opening[1] != "        [":
            return None
        return skeleton.replace(line, "".join(e.formatted for e in self.entries))


def _wrap(entries: list[Piece]) -> str:
    """The entries in one text for black, each after a marker line where black keeps it."""
    return _WRAP_HEAD + "".join(_ENTRY_LINE + e.text for e in entries) + _WRAP_TAIL


def _unwrap(formatted: str, entries: list[Piece]) -> None:
    """Give each entry its formatted text from a formatted wrapper; leave them None if its shape is unexpected."""
    if not (formatted.startswith(_WRAP_HEAD + _FORMATTED_MARKER) and formatted.endswith(_WRAP_TAIL)):
        return
    texts = formatted[len(_WRAP_HEAD + _FORMATTED_MARKER) : -len(_WRAP_TAIL)].split(_FORMATTED_MARKER)
    if len(texts) == len(entries) and all(texts):
        for entry, text in zip(entries, texts):
            entry.formatted = text


# ---------------------------------------------------------------------------
# The cache
# ---------------------------------------------------------------------------


_LAYOUT = re.compile(r"[\s,()\\]+")


def _code(text: str) -> str:
    """The text without what black may change in our pieces: layout, trailing commas, parentheses, quotes, case."""
    return _LAYOUT.sub("", text).replace("'", '"').lower()


class FormatCache:
    """Formatted pieces of one output file, by the digest of their unformatted text and black's style.

    Kept as one entry per output in the cache of the project at `root` (cache.FORMAT), under the key of
    black's style. A piece is used only when the entry's seal holds (a truncated, corrupt or forged entry is
    not) and when it is the same code as the unformatted text apart from what black changes; any other
    piece is formatted again, so the cache can make a regenerate faster, never different. The entry
    keeps only the pieces of the last build.
    """

    def __init__(self, root: Path | None, output: str):
        self.entries = cache.Cache(root, cache.FORMAT) if root is not None else None
        self.output = output
        self.style = _style_key()
        self.stored = self._read()
        self.used: dict[str, str] = {}
        self.changed = False  # a piece black formatted, or one the entry lacked or held corrupt

    def _read(self) -> dict:
        kept = self.entries.get(self.entries.key(self.style), self.output) if self.entries else None
        try:
            stored = json.loads(kept) if kept is not None else {}
        except ValueError:
            return {}
        return stored if isinstance(stored, dict) else {}

    def key(self, text: str) -> str:
        return hashlib.sha256((self.style + text).encode()).hexdigest()

    def lookup(self, piece: Piece) -> None:
        formatted = self.stored.get(self.key(piece.text))
        if isinstance(formatted, str) and _code(formatted) == _code(piece.text):
            piece.formatted = formatted
            piece.cached = True

    def keep(self, piece: Piece) -> None:
        self.used[self.key(piece.text)] = piece.formatted
        self.changed = self.changed or not piece.cached

    def save(self) -> None:
        if self.entries is None or not (self.changed or self.used.keys() != self.stored.keys()):
            return
        payload = json.dumps(self.used, sort_keys=True).encode("utf-8")
        self.entries.put(self.entries.key(self.style), payload, self.output)


# ---------------------------------------------------------------------------
# Workers
# ---------------------------------------------------------------------------


def _exit_with_parent(parent: int) -> None:
    """In a worker: exit once the parent is gone, e.g. killed with SIGKILL.

    A worker waits on a queue whose other end it also holds (fork), so it would
    otherwise wait forever after its parent died. Ctrl-C reaches the whole process
    group; only the parent handles it (one line, then it shuts the workers down),
    so a worker ignores it rather than print a traceback of its own.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(1)

    with contextlib.suppress(RuntimeError):  # no thread to spare (ulimit -u): the queue's end still ends it
        threading.Thread(target=watch, daemon=True).start()


class Formatter:
    """Formats modules' new pieces in forked worker processes, or inline for one job.

    Submit the largest modules first: on two cores a large block started last
    leaves the other core idle. With `cache_root`, formatted pieces are reused
    across runs (see FormatCache); the cache is written on leaving the context.
    """

    def __init__(self, jobs: int, cache_root: Path | None = None):
        self.jobs = jobs
        self.cache_root = cache_root
        self.pool: concurrent.futures.ProcessPoolExecutor | None = None
        self.caches: list[FormatCache] = []

    def __enter__(self) -> Formatter:
        return self

    def _workers(self) -> concurrent.futures.ProcessPoolExecutor | None:
        """The worker processes, started when there is first more than one text to format."""
        if self.pool is None and self.jobs > 1:
            # Imported only here: most runs format nothing, or take every entry from entry_layout.
            import concurrent.futures
            import multiprocessing

            import black  # noqa: F401  -- imported once, before forking, so the workers inherit it

            context = multiprocessing.get_context("fork")
            workers = min(self.jobs, os.cpu_count() or 1)  # more processes than cores format nothing sooner
            self.pool = concurrent.futures.ProcessPoolExecutor(
                workers, mp_context=context, initializer=_exit_with_parent, initargs=(os.getpid(),)
            )
        return self.pool

    def _inline(self) -> None:
        """No workers from now on: the system refused them (a limit on processes, files or memory)."""
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
        self.pool, self.jobs = None, 1

    def submit(self, source: str, output: str) -> Callable[[], str]:
        """Start formatting `source`; the returned callable waits for and returns the result."""
        pieces = FormatCache(self.cache_root, output)
        self.caches.append(pieces)
        blocks = [Block(b) for b in split_blocks(source)]
        for piece in (p for b in blocks for p in b.pieces()):
            pieces.lookup(piece)
        tasks = self._start(blocks, output)

        def result() -> str:
            for finish in tasks:
                finish()
            texts = [_joined(block, output) for block in blocks]
            for piece in (p for b in blocks for p in b.pieces()):
                if piece.formatted is not None:
                    pieces.keep(piece)
            return BLOCK_SEPARATOR.join(texts)

        return result

    def _start(self, blocks: list[Block], output: str) -> list[Callable[[], None]]:
        """Format the pieces the cache did not have: an entry laid out as black lays it out is taken as it
        is (see entry_layout), other entries in wrapped batches, whole pieces one by one."""
        jobs: list[Job] = []
        batch: list[Piece] = []
        size = 0
        for block in blocks:
            if block.entries:
                if block.skeleton.formatted is None:
                    jobs.append(Job([block.skeleton], block.skeleton.text, wrapped=False))
                for entry in block.entries:
                    if entry.formatted is None:
                        entry.formatted = laid_out(entry.text)
                    if entry.formatted is None:
                        batch.append(entry)
                        size += len(entry.text)
                        if size > _BATCH_CHARS:
                            jobs.append(Job(batch, _wrap(batch), wrapped=True))
                            batch, size = [], 0
            elif block.whole.formatted is None:
                jobs.append(Job([block.whole], block.whole.text, wrapped=False))
        if batch:
            jobs.append(Job(batch, _wrap(batch), wrapped=True))
        if not jobs:
            return []
        if len(jobs) == 1 or self._workers() is None:
            return [lambda: _finish(jobs, format_blocks([job.text for job in jobs], output))]
        # Spread the texts over the workers in a few tasks each, largest first.
        jobs.sort(key=lambda job: -len(job.text))
        shares = [jobs[i :: self.jobs * 2] for i in range(min(len(jobs), self.jobs * 2))]
        pool = self._workers()
        try:
            futures = [(share, pool.submit(format_blocks, [job.text for job in share], output)) for share in shares]
        except (OSError, RuntimeError):  # no process or thread to spare: formatted here, as with one job
            self._inline()
            return [lambda: _finish(jobs, format_blocks([job.text for job in jobs], output))]

        def finish(share: list[Job], future) -> None:
            try:
                formatted = future.result()
            except (OSError, RuntimeError):  # BrokenProcessPool: a worker the system ended or refused
                self._inline()
                formatted = format_blocks([job.text for job in share], output)
            _finish(share, formatted)

        return [functools.partial(finish, share, future) for share, future in futures]

    def __exit__(self, exc_type, *exc_info) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
        if exc_type is None:
            for pieces in self.caches:
                pieces.save()


class Job:
    """One text for black: a whole piece, or a batch of entries wrapped together."""

    def __init__(self, pieces: list[Piece], text: str, wrapped: bool):
        self.pieces, self.text, self.wrapped = pieces, text, wrapped


def _finish(jobs: list[Job], formatted: list[str]) -> None:
    for job, result in zip(jobs, formatted):
        if job.wrapped:
            _unwrap(result, job.pieces)
        else:
            job.pieces[0].formatted = result


def _joined(block: Block, output: str) -> str:
    """The formatted block; formatted whole, as black alone would, if its pieces did not fit back together."""
    joined = block.joined()
    if joined is None:
        for piece in block.pieces():
            piece.formatted = None  # not kept in the cache
        joined = format_block(block.whole.text, output)
    return joined
