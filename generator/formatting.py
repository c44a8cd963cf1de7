"""Stage 4: format rendered source with black, in-process, with black's default style.

black needs about 2.5 ms per pattern config, most of a full regenerate, so a
module is cut into blocks that black formats independently and in parallel:
the templates mark each builder function with BLOCK_MARKER. Top-level
functions are separated by exactly two blank lines in black's style, so joining
the formatted blocks that way gives what black gives for the whole module (a
test checks that every generated module is black-stable).
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable

from generator.errors import FormattingError

BLOCK_MARKER = "# generator: format-block\n"
BLOCK_SEPARATOR = "\n\n"  # after a formatted block's own newline: two blank lines


def format_source(source: str, output: str) -> str:
    """The whole module formatted in this process."""
    return BLOCK_SEPARATOR.join(format_block(block, output) for block in split_blocks(source))


def split_blocks(source: str) -> list[str]:
    return source.split(BLOCK_MARKER)


def format_block(block: str, output: str) -> str:
    import black  # imported here so that `check`'s fast path never loads it

    try:
        return black.format_str(block, mode=black.Mode())
    except black.parsing.InvalidInput as error:
        raise FormattingError(f"{output}: the templates rendered invalid Python: {error}") from None


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

    threading.Thread(target=watch, daemon=True).start()


class Formatter:
    """Formats modules' blocks in forked worker processes, or inline for one job.

    Submit the largest modules first: on two cores a large block started last
    leaves the other core idle.
    """

    def __init__(self, jobs: int):
        self.jobs = jobs
        self.pool: concurrent.futures.ProcessPoolExecutor | None = None

    def __enter__(self) -> Formatter:
        if self.jobs > 1:
            import black  # noqa: F401  -- imported once, before forking, so the workers inherit it

            context = multiprocessing.get_context("fork")
            self.pool = concurrent.futures.ProcessPoolExecutor(
                self.jobs, mp_context=context, initializer=_exit_with_parent, initargs=(os.getpid(),)
            )
            self.pool.submit(os.getpid).result()  # with fork, the first task starts every worker now
        return self

    def submit(self, source: str, output: str) -> Callable[[], str]:
        """Start formatting `source`; the returned callable waits for and returns the result."""
        blocks = split_blocks(source)
        if self.pool is None:
            return lambda: format_source(source, output)
        futures = [self.pool.submit(format_block, block, output) for block in blocks]
        return lambda: BLOCK_SEPARATOR.join(future.result() for future in futures)

    def __exit__(self, *exc_info) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
