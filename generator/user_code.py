"""Running user code: spec files, builders, reference builders, other revisions' generated modules.

User code is arbitrary Python, and nothing it does may end or bend a run. While
it runs, what it prints goes to standard error (standard output carries only the
command's own output, so `diff --format json` stays JSON), and whatever it
raises (SystemExit, even with code 0, GeneratorExit, a KeyboardInterrupt of its
own or any other exception) becomes one error located at the user's line. A real
Ctrl-C still interrupts the run: the CLI reports it with exit 130.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import threading
from pathlib import Path

from generator import process
from generator.errors import GeneratorError
from generator.model import SourceLocation

_GENERATOR_DIR = str(Path(__file__).resolve().parent) + os.sep


@contextlib.contextmanager
def running(error_class: type[GeneratorError], what: str, root: Path | None = None, location=None, exceptions=True):
    """Run the block's user code; anything it raises becomes `error_class`, located at the user's line.

    `what` names the code in the message ("spec/x86.py", "builder m:get_config").
    A GeneratorError raised inside passes through: it is already one located line.
    With `exceptions` False, an Exception passes through too: the block mixes the
    generator's code with calls of user code that handle Exceptions themselves
    (comparing callables records what they raise), and a bug must stay a bug; but
    one raised by the project's own code (a module `__getattr__` that raises when
    the generator looks a name up) is the user's, and becomes `error_class` too.
    """
    with _stdout_to_stderr(), _RealInterrupts() as interrupts, _kept_cwd(), _no_hard_exit():
        try:
            yield
        except GeneratorError:
            raise
        except BaseException as error:  # noqa: B036 - user code may raise anything; it must not end the run
            if isinstance(error, KeyboardInterrupt) and interrupts.real:
                raise  # the user's Ctrl-C, not the code's
            if isinstance(error, Exception) and not exceptions and not raised_by_the_project(error, root):
                raise
            where = user_line(error, root) or location
            raise error_class(f"{what} raised {describe(error)}{_advice(error)}", where) from None


def describe(error: BaseException) -> str:
    """`SystemExit(0)`, `GeneratorExit`, `ValueError: bad`: what was raised, in one phrase."""
    name = type(error).__name__
    if isinstance(error, HardExit):
        return f"os._exit({error.code!r})"
    if isinstance(error, SystemExit):
        return f"SystemExit({error.code!r})"
    text = str(error)
    return f"{name}: {text}" if text else name


class HardExit(SystemExit):
    """What `os._exit(n)` raises while user code runs: the process must not end without a word.

    Left alone, `os._exit(0)` in a spec would end `check` with exit 0 on a stale tree.
    """


@contextlib.contextmanager
def _no_hard_exit():
    saved, pid = os._exit, os.getpid()

    def refused(code):
        if os.getpid() != pid:  # a process forked meanwhile (a worker) ends as it means to
            saved(code)
        raise HardExit(code)

    os._exit = refused
    try:
        yield
    finally:
        os._exit = saved


def _advice(error: BaseException) -> str:
    if isinstance(error, HardExit):
        return " (user code must not exit: remove the os._exit() or raise an Exception instead)"
    if isinstance(error, SystemExit):
        return " (user code must not exit: remove the sys.exit() or raise an Exception instead)"
    if not isinstance(error, Exception):
        return " (user code must raise an Exception, not a BaseException)"
    return ""


def user_line(error: BaseException, root: Path | None) -> SourceLocation | None:
    """The innermost traceback frame in the project (else outside the generator), relative to `root`."""
    inside = str(root.resolve()) + os.sep if root is not None else None
    found = local = None
    tb = error.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not filename.startswith((_GENERATOR_DIR, "<")):
            found = SourceLocation(shown(filename, root), tb.tb_lineno or 1)
            if inside is not None and filename.startswith(inside):
                local = found
        tb = tb.tb_next
    return local or found


def raised_by_the_project(error: BaseException, root: Path | None) -> bool:
    """Whether the innermost frame of `error`'s traceback, where it was raised, is a project file (not the
    generator's own)."""
    tb = error.__traceback__
    if tb is None or root is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    filename = tb.tb_frame.f_code.co_filename
    return filename.startswith(str(root.resolve()) + os.sep) and not filename.startswith(_GENERATOR_DIR)


def shown(filename: str | None, root: Path | None) -> str:
    """A file as errors name it: relative to the project root when inside it, else as given."""
    if root is not None and isinstance(filename, str) and os.path.isabs(filename):
        try:
            return str(Path(filename).resolve().relative_to(root.resolve()))
        except ValueError:
            pass
    return str(filename)


@contextlib.contextmanager
def _stdout_to_stderr():
    """Standard output, Python's and the file descriptor's, goes to standard error meanwhile."""
    saved_out, saved_err = sys.stdout, sys.stderr
    _flush(saved_out)
    saved_fd = None
    with contextlib.suppress(OSError, ValueError):
        saved_fd = os.dup(1)
        os.dup2(2, 1)
    sys.stdout = saved_err if saved_err is not None else io.StringIO()
    try:
        yield
    finally:
        _flush(sys.stdout)
        _flush(sys.stderr)
        if saved_fd is not None:
            os.dup2(saved_fd, 1)
            os.close(saved_fd)
        sys.stdout, sys.stderr = saved_out, saved_err


def _flush(stream) -> None:
    with contextlib.suppress(Exception):
        stream.flush()


class _RealInterrupts:
    """Tells a real Ctrl-C (SIGINT) from a KeyboardInterrupt that user code raises itself.

    `real` is True once SIGINT arrived, and also when it cannot be told apart
    (not the main thread, or someone else's handler): then every
    KeyboardInterrupt counts as the user's Ctrl-C.
    """

    def __init__(self):
        self.real = False
        self._saved = None
        self._outer = None

    def __enter__(self):
        if threading.current_thread() is not threading.main_thread():
            self.real = True
            return self
        self._saved = signal.getsignal(signal.SIGINT)
        self._outer = getattr(self._saved, "__self__", None)  # user code run within user code
        # process.forward_interrupt is Python's default handler that also passes Ctrl-C on to forked children.
        if self._saved in (signal.default_int_handler, process.forward_interrupt) or isinstance(
            self._outer, _RealInterrupts
        ):
            signal.signal(signal.SIGINT, self._interrupted)
        elif self._saved is not signal.SIG_IGN:
            self.real = True  # a handler of someone else's: trust every KeyboardInterrupt
        return self

    def _interrupted(self, signum, frame):
        process.interrupt_children()
        self.real = True
        if isinstance(self._outer, _RealInterrupts):
            self._outer.real = True
        raise KeyboardInterrupt

    def __exit__(self, *exc):
        if self._saved is not None:
            signal.signal(signal.SIGINT, self._saved)  # user code may have changed it, too
        return False


@contextlib.contextmanager
def _kept_cwd():
    """User code that changes the working folder does not move the rest of the run."""
    try:
        saved = os.getcwd()
    except OSError:
        saved = None
    try:
        yield
    finally:
        if saved is not None:
            with contextlib.suppress(OSError):
                os.chdir(saved)


def path_with_project(root: Path, path: list[str]) -> list[str]:
    """sys.path `path` with the project root put where user code finds its modules: before installed
    packages (a project's module stands in for one, as when `python -m` runs from the root), but after
    the standard library, so that a project's numbers.py, copy.py or platform.py never stands in for the
    standard library's in the generator, torch or anything else a run imports later."""
    stdlib = os.path.dirname(os.__file__)  # lib/python3.X; lib-dynload is in it, and lib/python3X.zip beside it
    zipped = os.path.join(os.path.dirname(stdlib), f"python{sys.version_info[0]}{sys.version_info[1]}.zip")
    position = 0
    for index, entry in enumerate(path):
        if entry in (stdlib, zipped) or os.path.dirname(entry) == stdlib:
            position = index + 1
    return [*path[:position], str(root), *path[position:]]
