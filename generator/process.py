"""Work done in a forked child process while this one goes on: seconds of torch import overlap the rest.

`Forked(function, *args)` forks at once; the child runs `function(*args)` and
sends back what it returned, pickled, or the GeneratorError it raised (with its
spec location: the same one line). `result()` waits for it, and raises that
error here.

The outcome is always the one a call in this process gives. Whatever else
happens in the child (an exception that is not a GeneratorError, a bug, a result
that does not pickle, the child killed) sends nothing, and `result()` then calls
the function here: its exception, a bug's traceback included, comes from this
process, as it did before. With `fork=False`, or without os.fork (Windows), the
call is made here too. A call that runs user code which must never run here (a
spec's op groups, under import) gives `when_lost` instead: what `result()` returns
then, in place of calling it here.

Ctrl-C reaches the child too (a terminal sends it to the whole job), which then
sends back only that it was interrupted, and `result()` raises KeyboardInterrupt
here: so Ctrl-C is not lost when this process missed it (torch's import can
swallow a KeyboardInterrupt), and the parent never waits for a child whose user
code it should have stopped. The parent ends the child on leaving the `with`,
and the child ends with its parent: a parent killed outright leaves no child
importing torch for nobody. What Python code prints in the child (user code run
there) comes out on the parent's standard error when the result is taken, never
on standard output.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Callable

from generator.errors import GeneratorError

_exit = os._exit  # user code run in the child may replace os._exit (user_code refuses it); this one ends it


_CALL_HERE = object()


class Forked:
    """A call of `function(*args)` under way in a child process (or due here); use it as a context manager."""

    def __init__(self, function: Callable, *args, fork: bool = True, when_lost=_CALL_HERE):
        self.function, self.args, self.when_lost = function, args, when_lost
        self.pid: int | None = None
        self.pipe: int | None = None
        if not (fork and hasattr(os, "fork")):
            return
        for stream in (sys.stdout, sys.stderr):  # a buffer copied into the child would be written twice
            with contextlib.suppress(Exception):
                stream.flush()
        read, write = os.pipe()
        try:
            pid = os.fork()
        except OSError:  # no process to spare: the call is made here, on result()
            os.close(read)
            os.close(write)
            return
        if pid == 0:
            os.close(read)
            _run_child(write, function, args)
        os.close(write)
        self.pid, self.pipe = pid, read

    def result(self):
        """What the function returned; what it raised, raised here."""
        outcome = self._receive()
        if outcome is None:
            return self.function(*self.args) if self.when_lost is _CALL_HERE else self.when_lost
        return delivered(*outcome)

    def _receive(self):
        if self.pid is None:
            return None
        chunks = []
        try:
            while chunk := os.read(self.pipe, 1 << 16):
                chunks.append(chunk)
        finally:
            self.close()
        try:
            return pickle.loads(b"".join(chunks)) if chunks else None
        except Exception:  # noqa: BLE001 - cut short (the child was killed): the call is made here
            return None

    def close(self) -> None:
        """End the child (done or not) and collect it."""
        if self.pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        os.close(self.pipe)
        self.pid = self.pipe = None

    def __enter__(self) -> Forked:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def isolated(function: Callable, *args, lost: Callable[[], GeneratorError]):
    """`function(*args)` in a child process of its own, for user code that must not reach this one (a builder
    that exits, forks or kills itself ends with that process): what it returned, or what it raised (a
    GeneratorError); if the child ends without an answer, the error `lost()` makes. Without os.fork the
    call is made here."""
    if not hasattr(os, "fork"):
        return function(*args)
    with Forked(function, *args, when_lost=_LOST) as child:
        found = child.result()
    if found is _LOST:
        raise lost()
    return found


def isolated_each(function: Callable, items: list, lost: Callable[[object], GeneratorError]) -> list:
    """[function(item) for item in items], user code run in one child process for them all (isolated): if
    it ends without an answer, each item is run again in a child of its own, so that the error, `lost(item)`,
    names the one whose user code ended it."""
    if not items or not hasattr(os, "fork"):
        return [function(item) for item in items]
    with Forked(_each, function, items, when_lost=_LOST) as child:
        found = child.result()
    if found is not _LOST:
        return found
    return [isolated(function, item, lost=functools.partial(lost, item)) for item in items]


def _each(function: Callable, items: list) -> list:
    return [function(item) for item in items]


_LOST = object()


def delivered(kind: str, value, printed: str):
    """What a call made in a child process came to, here: what it printed goes to standard error, then
    what it raised is raised ("raised", "interrupted": KeyboardInterrupt), or what it returned is returned."""
    if printed:
        sys.stderr.write(printed)
        sys.stderr.flush()
    if kind == "raised":
        raise value
    if kind == "interrupted":
        raise KeyboardInterrupt
    return value


def _run_child(write: int, function: Callable, args: tuple) -> None:
    """In the child: run the call, send its outcome, exit without running any of the parent's clean-up."""
    code = 1
    try:
        _exit_with_parent(os.getppid())
        # What Python code prints is sent with the outcome, and the parent writes it to its standard
        # error: the child's streams may be the parent's in-memory ones (a test's), written to no file.
        printed = sys.stdout = sys.stderr = io.StringIO()
        try:
            outcome = ("returned", function(*args))
        except GeneratorError as error:
            outcome = ("raised", error)
        except KeyboardInterrupt:  # Ctrl-C (SIGINT keeps the parent's handler, or SIG_IGN in a background job)
            outcome = ("interrupted", None)
        data = memoryview(pickle.dumps((*outcome, printed.getvalue())))
        while data:
            data = data[os.write(write, data) :]
        code = 0
    finally:
        _exit(code)


def _exit_with_parent(parent: int) -> None:
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        _exit(1)

    threading.Thread(target=watch, daemon=True).start()
