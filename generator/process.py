"""Work done in a forked child process while this one goes on: seconds of torch import overlap the rest.

`Forked(function, *args)` forks at once; the child runs `function(*args)` and
sends back what it returned, pickled, or the GeneratorError it raised (with its
spec location: the same one line). `result()` waits for it, and raises that
error here. Another exception (a bug, an OSError) is sent too, for a call that
must not be made here (below), which raises it here.

The outcome is always the one a call in this process gives. Whatever else
happens in the child (an exception that is not a GeneratorError, a bug, a result
that does not pickle, the child killed) sends nothing, and `result()` then calls
the function here: its exception, a bug's traceback included, comes from this
process, as it did before. With `fork=False`, or without os.fork (Windows), the
call is made here too. A call that runs user code which must never run here (a
spec's op groups, under import) gives `when_lost` instead: what `result()` returns
then, in place of calling it here.

The child leads a process group of its own, and what it starts (a daemon
`multiprocessing.Process` of a builder's, a process a fork left running) is in it:
the parent reads the child's answer by its length, not to the end of the pipe
(which such a process may hold open for ever), and ends the whole group as soon as
the answer is in, on leaving the `with`, or when it gives up on the child; a child
whose parent is killed outright ends its group too. Only the child answers: a
process its user code forked, which returns from that code too, never sends. Its
standard output is the command's standard error, so nothing it starts writes to
standard output, and its standard input is empty (out of the terminal's foreground
group, reading the terminal would stop it).

Ctrl-C, which a terminal sends to the command's job, is passed on to every child's
group by this process's SIGINT handler (installed while it is Python's default), even
when this process then misses it (torch's import can swallow a KeyboardInterrupt):
the child sends back only that it was interrupted, and `result()` raises
KeyboardInterrupt here, so the parent never waits for a child whose user code it
should have stopped. A job that ignores Ctrl-C passes nothing on. What Python code
prints in the child (user code run there) comes out on the parent's standard error
when the result is taken, never on standard output.

A fork the system refuses (a process limit, `ulimit -u`) leaves the call to this
process; a call whose user code must never run here raises ProcessLimitError then,
naming the limit: it is no fault of the user's code.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import io
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Callable

from generator.errors import GeneratorError, ProcessLimitError

_exit = os._exit  # user code run in the child may replace os._exit (user_code refuses it); this one ends it


_CALL_HERE = object()
_LENGTH = 8  # the answer's length, in bytes, before its pickle
_groups: set[int] = set()  # the process groups of this process's children under way: Ctrl-C is passed on to them


def forward_interrupt(signum, frame) -> None:
    """This process's SIGINT handler while it has children: Ctrl-C passed on to their groups, then raised here."""
    interrupt_children()
    signal.default_int_handler(signum, frame)


def interrupt_children() -> None:
    for group in list(_groups):
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGINT)


def _pass_interrupts_on() -> None:
    if threading.current_thread() is threading.main_thread():
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                signal.signal(signal.SIGINT, forward_interrupt)


class Forked:
    """A call of `function(*args)` under way in a child process (or due here); use it as a context manager."""

    def __init__(self, function: Callable, *args, fork: bool = True, when_lost=_CALL_HERE):
        self.function, self.args, self.when_lost = function, args, when_lost
        self.pid: int | None = None
        self.pipe: int | None = None
        self.refused: OSError | None = None  # the system refused the child: a limit
        if not (fork and hasattr(os, "fork")):
            return
        for stream in (sys.stdout, sys.stderr):  # a buffer copied into the child would be written twice
            with contextlib.suppress(Exception):
                stream.flush()
        try:
            read, write = os.pipe()
        except OSError as error:  # no file to spare (ulimit -n): the call is made here, on result()
            self.refused = error
            return
        _pass_interrupts_on()
        try:
            pid = os.fork()
        except OSError as error:  # no process to spare (ulimit -u): the call is made here, on result()
            os.close(read)
            os.close(write)
            self.refused = error
            return
        if pid == 0:
            os.close(read)
            _run_child(write, function, args)
        os.close(write)
        with contextlib.suppress(OSError):  # the child does this too: whichever runs first
            os.setpgid(pid, pid)
        _groups.add(pid)
        self.pid, self.pipe = pid, read

    def result(self):
        """What the function returned; what it raised, raised here."""
        outcome = self._receive()
        if outcome is not None and outcome[0] == "failed" and self.when_lost is _CALL_HERE:
            if refused_by_a_limit(outcome[1]):  # made here again, it would fail the same, or worse
                raise limit_error(outcome[1] if isinstance(outcome[1], OSError) else OSError(errno.ENOMEM, "no memory"))
            outcome = None  # made here again: a bug's traceback comes from this process
        if outcome is None:
            if self.when_lost is _CALL_HERE:
                return self.function(*self.args)
            if self.refused is not None:
                raise limit_error(self.refused)
            return self.when_lost
        return delivered(*outcome)

    def _receive(self):
        if self.pid is None:
            return None
        try:
            head = _read_exactly(self.pipe, _LENGTH)
            data = _read_exactly(self.pipe, int.from_bytes(head, "big")) if head is not None else None
        finally:
            self.close()
        try:
            return pickle.loads(data) if data is not None else None
        except Exception:  # noqa: BLE001 - not a whole answer: the call is made here
            return None

    def close(self) -> None:
        """End the child (done or not) and collect it."""
        if self.pid is None:
            return
        _groups.discard(self.pid)
        with contextlib.suppress(OSError):
            os.killpg(self.pid, signal.SIGKILL)  # the child and whatever it left running
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)  # in case it had not joined its group yet
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
    GeneratorError); if the child ends without an answer, the error `lost()` makes; if the system refuses
    the child, ProcessLimitError. Without os.fork the call is made here."""
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


def limit_error(error: BaseException) -> ProcessLimitError:
    """The one line for a file or a process the system refused (EMFILE, EAGAIN, ENOMEM): which limit, what to do."""
    number = getattr(error, "errno", None) if isinstance(error, OSError) else errno.ENOMEM
    if number in (errno.EMFILE, errno.ENFILE):
        limit = "open files (ulimit -n)"
    elif number == errno.ENOMEM:
        limit = "memory (ulimit -v)"
    else:
        limit = "processes (ulimit -u)"
    what = {"open files (ulimit -n)": "file", "memory (ulimit -v)": "memory"}.get(limit, "process")
    reason = (error.strerror if isinstance(error, OSError) else None) or error or type(error).__name__
    return ProcessLimitError(
        f"the system refused the command {'a ' if what != 'memory' else ''}{what} ({reason}): "
        f"the limit on {limit} is too low for this command; raise it and run the command again"
    )


def _each(function: Callable, items: list) -> list:
    return [function(item) for item in items]


_LOST = object()


def delivered(kind: str, value, printed: str):
    """What a call made in a child process came to, here: what it printed goes to standard error, then
    what it raised is raised ("raised", "interrupted": KeyboardInterrupt), or what it returned is returned."""
    if printed:
        sys.stderr.write(printed)
        sys.stderr.flush()
    if kind in ("raised", "failed"):
        raise value
    if kind == "interrupted":
        raise KeyboardInterrupt
    return value


def _run_child(write: int, function: Callable, args: tuple) -> None:
    """In the child: run the call, send its outcome, exit without running any of the parent's clean-up."""
    code = 1
    try:
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)  # a group of its own: what user code starts here ends with it
        me = os.getpid()
        _groups.clear()  # its parent's other children are not its own to interrupt
        with contextlib.suppress(OSError):
            os.dup2(2, 1)  # what it or a process it starts writes to standard output goes to standard error
            null = os.open(os.devnull, os.O_RDONLY)  # out of the terminal's foreground group: reading it would stop
            os.dup2(null, 0)
            os.close(null)
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
        except Exception as error:  # noqa: BLE001 - a bug, or the system's refusal (OSError): raised there as here
            outcome = ("failed", error)
        if os.getpid() != me:  # a process the user code forked, returning from it too: the child answers alone
            _exit(0)
        try:
            answer = pickle.dumps((*outcome, printed.getvalue()))
        except Exception:  # noqa: BLE001 - what it returned or raised does not pickle
            if outcome[0] != "failed":
                raise
            described = RuntimeError(f"{type(outcome[1]).__name__}: {outcome[1]}")
            answer = pickle.dumps(("failed", described, printed.getvalue()))
        data = memoryview(len(answer).to_bytes(_LENGTH, "big") + answer)
        while data:
            data = data[os.write(write, data) :]
        code = 0
    finally:
        _exit(code)


def _exit_with_parent(parent: int) -> None:
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        with contextlib.suppress(OSError):
            os.killpg(os.getpid(), signal.SIGKILL)  # what its user code left running, and itself
        _exit(1)

    with contextlib.suppress(RuntimeError):  # no thread to spare (ulimit -u): its parent ends it on leaving
        threading.Thread(target=watch, daemon=True).start()


def _read_exactly(fd: int, size: int) -> bytes | None:
    """`size` bytes from `fd`, or None if it ends first."""
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def refused_by_a_limit(error: BaseException) -> bool:
    """Whether the system refused a file, a process or memory (ulimit -n, -u, -v): no fault of a spec's. A shared
    library that cannot be mapped (torch's, under a memory limit) is an ImportError that says so."""
    if isinstance(error, OSError):
        return error.errno in (errno.EMFILE, errno.ENFILE, errno.EAGAIN, errno.ENOMEM)
    if isinstance(error, ImportError):
        text = str(error).lower()
        return "failed to map segment" in text or "cannot allocate memory" in text
    return isinstance(error, MemoryError)
