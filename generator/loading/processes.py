"""Each spec file's load runs in a process of its own: nothing a spec does reaches the command or another load.

The command asks the load server (generator/loading/load_server.py: a fresh interpreter with a
fixed hash seed) for loads; `load` is that request, and the rest of this module is the
server's own side. Where the platform has os.fork, the server forks one child per spec file
from its untouched state (one per core at a time, the largest files first); elsewhere a
server is started for each spec file, and runs it itself. Each load starts in the project
root (the working folder), with the command's environment and import path, and no other
load's modules: a spec that mutates the generator's tables, the standard library's state
(decimal's context), sys.modules, sys.path, os.environ, an import hook or builtins changes
its own process only. Before forking a request's loads the server reads what they share
(the project's configuration, the spec folder's helper modules: loader.prepare); it never
runs spec code.

The child sends back the loaded module (plain values: the model's own classes, unpickled
by plain_values.unpickled, which makes nothing else), what the load read (`ModuleSpec.read`)
and what its Python code printed (written to the command's standard error), or its one
located error. Whatever else the child does ends with it: a child that exits (os._exit,
exec, a signal, an atexit hook, a thread that exits), or sends nothing whole, is an error
at its spec file (exit 2), never a silent exit 0; a child that has sent its result is
killed, so threads it left running neither hold the command nor print into its output;
and its standard output is the command's standard error.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import signal
import sys
from pathlib import Path

from generator import heap, process, project
from generator.errors import GeneratorError, ProcessEndedError, SpecExecutionError
from generator.loading import load_server, plain_values
from generator.model import ModuleSpec, SourceLocation

_exit = os._exit  # the real one, whatever spec code does to os._exit


def load(root: Path, paths: list[Path]) -> list[ModuleSpec]:
    """Load each spec file in a process of its own; raise the first error, in the order of `paths`."""
    return start(root, paths).modules()


def start(root: Path, paths: list[Path]) -> Running:
    """The loads of `paths` begun, each in a process of its own; `.modules()` takes their outcomes."""
    return Running(root, [str(path.relative_to(root)) for path in paths])


class Running:
    """Loads under way in the load server's children (or, without os.fork, to be run by `modules`)."""

    def __init__(self, root: Path, relatives: list[str]):
        self.root, self.relatives, self.server = root, relatives, None
        if relatives and load_server.FORK:
            self.server = load_server.take()
            try:
                self.server.send(root, relatives)
            except load_server.Gone:
                self._gone(relatives)
            except BaseException:
                self.server.close()
                raise

    def modules(self) -> list[ModuleSpec]:
        """Each file's module, in order; raise the first error, in the order of the files. What a load
        printed reaches standard error in that order too, whichever load ended first."""
        relatives, outcomes = self.relatives, {}
        if self.server is not None:
            try:
                for relative, payload in self.server.answers_to(relatives):
                    outcomes[relative] = _outcome(relative, payload)  # as each comes: the others still run
            except load_server.Gone:
                self._gone([relative for relative in relatives if relative not in outcomes])
            except load_server.Refused as refused:
                self.server.close()
                raise process.limit_error(OSError(*refused.args[0])) from None
            except BaseException:
                self.server.close()
                raise
            load_server.give_back(self.server)
        else:
            outcomes = {relative: _outcome(relative, _load_once(self.root, relative)) for relative in relatives}
        return [_result(outcomes[relative]) for relative in relatives]

    def _gone(self, unanswered: list[str]):
        """The server ended with these loads under way, or could not even start (a limit on files, processes or
        memory). Spec code cannot signal it (_refuse_signals_to_the_server): something outside the command
        ended it."""
        how = self.server.ended()
        self.server.close()
        if how is None:
            raise process.limit_error(OSError(0, "the process that loads spec files could not start"))
        raise ProcessEndedError(
            f"the process that loads spec files was {how} before {', '.join(unanswered)} had loaded, from outside "
            "the command (a memory limit, the out-of-memory killer, another process); run the command again"
        ) from None


def _load_once(root: Path, relative: str) -> tuple:
    server = load_server.Server(fork=False)
    try:
        return server.ask(root, [relative])[0]
    except load_server.Gone:
        return ("died", "its process ended without a result")
    finally:
        server.close()


def _outcome(relative: str, outcome: tuple) -> tuple:
    """What a child sent (bytes), or what the server saw of it: ("loaded", module, printed) or
    ("raised", error, printed), the error made here."""
    if outcome[0] == "died":
        message = f"loading {relative}: {outcome[1]} (spec code must not end its process: raise an Exception instead)"
        return ("raised", SpecExecutionError(message, SourceLocation(relative, 1)), "")
    try:
        kind, *value, printed = plain_values.unpickled(outcome[1])
    except Exception:  # noqa: BLE001 - cut short or forged: no result
        message = f"loading {relative}: its process sent no whole result"
        return ("raised", SpecExecutionError(message, SourceLocation(relative, 1)), "")
    printed = printed if isinstance(printed, str) else ""
    if kind == "loaded" and type(value[0]) is ModuleSpec and value[0].spec_file == relative:
        return ("loaded", value[0], printed)
    if kind == "interrupted":
        return ("raised", KeyboardInterrupt(), printed)
    if kind == "raised":
        name, message, file, line = value
        import generator.errors

        error_class = getattr(generator.errors, str(name), None)
        if not (isinstance(error_class, type) and issubclass(error_class, GeneratorError)):
            error_class = SpecExecutionError
        where = SourceLocation(file, line) if isinstance(file, str) and type(line) is int else None
        return ("raised", error_class(str(message), where), printed)
    error = SpecExecutionError(f"loading {relative}: its process sent no whole result", SourceLocation(relative, 1))
    return ("raised", error, printed)


def _result(outcome: tuple) -> ModuleSpec:
    return process.delivered(*outcome)


# ---------------------------------------------------------------------------
# The server, and each load's child
# ---------------------------------------------------------------------------


def serve(result: int, fork: bool, load_here, prepare) -> None:
    """The load server's life: one request after another on standard input, until it closes;
    `load_here(root, path)` is a load (loader.load_here, imported once here: every child starts with it)."""
    toml = "tomllib" if sys.version_info >= (3, 11) else "tomli"  # project.toml_reader's, on Python 3.10
    for name in ("ast", "datetime", "string", toml):  # what every load imports: once, here
        with contextlib.suppress(ImportError):  # a missing tomli is said where the table is read
            __import__(name)
    heap.collect_rarely()
    heap.freeze_for_good()  # what the children share stays out of their collections (no copy-on-write)
    base_path = list(sys.path)
    try:
        _serve(result, fork, load_here, prepare, base_path)
    except OSError as error:  # the system refused a file or a process (or the command is gone: nobody reads)
        _refused(result, error)
    except BaseException:  # noqa: BLE001 - the command gone (a broken pipe): the server ends without a word
        _exit(0)


def _serve(result: int, fork: bool, load_here, prepare, base_path: list[str]) -> None:
    while True:
        frame = load_server.read_frame(0)
        if frame is None:
            _exit(0)
        request = pickle.loads(frame)  # from the command that started this process
        root, files = request["root"], request["files"]
        with contextlib.suppress(Exception):  # reading files only: a load says what is wrong with one
            project.config(Path(root))
            prepare(Path(root))
        if not files:
            continue  # only what the loads to come will share: read while the command plans them
        path = [root, *base_path, *(p for p in request["path"] if p and p not in base_path and p != root)]
        if not fork:
            outcome = _run_load(load_here, root, files[0], request["environ"], path)
            load_server.write_frame(result, pickle.dumps((files[0], ("sent", outcome))))
            _exit(0)
        _fork_loads(load_here, result, root, files, request["environ"], path)


def _fork_loads(load_here, result: int, root: str, files: list[str], environ: dict, path: list[str]) -> None:
    import selectors

    waiting = sorted(files, key=lambda relative: -_size(os.path.join(root, relative)))  # the longest loads first
    running: dict[int, tuple[str, int, bytearray, int]] = {}  # result's read end -> (file, pid, bytes, output's)
    outputs: set[int] = set()  # the read ends of the loads' standard output and error, passed on to the command's
    limit = max(1, min(os.cpu_count() or 1, 4))
    with selectors.DefaultSelector() as selector, _ending(running):
        selector.register(0, selectors.EVENT_READ)  # the command gone (end of input): so are its loads
        while waiting or running:
            while waiting and len(running) < limit:
                relative = waiting[0]
                try:
                    read, write, printed, prints, pid = _forked_load()
                except OSError as error:  # a limit on files or processes: fewer loads at once, else said
                    if not running:
                        _refused(result, error)
                    limit = len(running)
                    break
                waiting.pop(0)
                if pid == 0:
                    os.close(read)
                    os.close(printed)
                    selector.close()
                    _only_its_own_pipes(write, prints)
                    me = os.getpid()
                    outcome = _run_load(load_here, root, relative, environ, path)
                    if os.getpid() == me:  # not a process the spec forked, which returned from it too
                        _send(write, outcome)
                    _exit(0)
                os.close(write)
                os.close(prints)
                running[read] = (relative, pid, bytearray(), printed)
                outputs.add(printed)
                selector.register(read, selectors.EVENT_READ)
                selector.register(printed, selectors.EVENT_READ)
            for key, _ in selector.select():
                if key.fd == 0:
                    for _, pid, _, _ in running.values():
                        _kill(pid)
                    _exit(0)
                if key.fd in outputs:
                    if not _pass_on(key.fd):
                        _stop_passing_on(selector, outputs, key.fd)
                    continue
                if key.fd not in running:
                    continue  # a pipe closed by an earlier event of this round
                relative, pid, data, printed = running[key.fd]
                chunk = os.read(key.fd, 1 << 16)
                data += chunk
                payload = load_server.whole_frame(data)
                if chunk and payload is None:
                    continue
                selector.unregister(key.fd)
                os.close(key.fd)
                del running[key.fd]
                if payload is not None:
                    _kill(pid)  # sent: what it still does (threads, atexit) ends here
                    outcome = ("sent", payload)
                else:
                    outcome = ("died", _how_it_ended(pid))
                # What it printed up to now goes on; a process it left behind prints into a closed pipe.
                if printed in outputs:
                    os.set_blocking(printed, False)
                    for _ in range(64):  # at most 4 MiB more: a process it left may print on and on
                        if not _pass_on(printed):
                            break
                    _stop_passing_on(selector, outputs, printed)
                load_server.write_frame(result, pickle.dumps((relative, outcome)))


def _forked_load() -> tuple[int, int, int, int, int]:
    """The pipes of a load (its result's, its printing's) and its process, forked: (read, write, printed,
    prints, pid); nothing left open if the system refuses one (OSError)."""
    opened = []
    try:
        opened.extend(os.pipe())
        opened.extend(os.pipe())
        return (*opened, os.fork())
    except OSError:
        for fd in opened:
            os.close(fd)
        raise


def _refused(result: int, error: OSError) -> None:
    """Tell the command the system refused what a load needs (not a load's fault), and end."""
    with contextlib.suppress(OSError):
        load_server.write_frame(result, pickle.dumps((None, (error.errno, error.strerror))))
    _exit(4)


def _pass_on(printed: int) -> bool:
    """Pass what a load printed at the descriptor level (os.write, a subprocess) on to the command's standard
    error; False once there is no more (for now)."""
    try:
        chunk = os.read(printed, 1 << 16)
    except OSError:  # BlockingIOError too: nothing more for now
        return False
    if chunk:
        with contextlib.suppress(OSError):
            os.write(2, chunk)
    return bool(chunk)


def _stop_passing_on(selector, outputs: set[int], printed: int) -> None:
    if printed in outputs:
        outputs.discard(printed)
        selector.unregister(printed)
        os.close(printed)


def _only_its_own_pipes(write: int, prints: int) -> None:
    """In a load's process: its standard output and error are `prints` (a pipe the server passes on to the
    command's standard error, and stops reading once the load is done: a process the spec leaves behind holds
    no stream of the command's); every other file but its own pipe (`write`) is closed, so that spec code can
    neither answer for another spec file nor take a request; standard input reads nothing."""
    os.dup2(prints, 1)
    os.dup2(prints, 2)
    os.close(prints)
    os.closerange(3, write)
    os.closerange(write + 1, _open_limit())
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)


def _open_limit() -> int:
    try:
        return min(os.sysconf("SC_OPEN_MAX"), 1 << 20)
    except (OSError, ValueError):
        return 1 << 16


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


@contextlib.contextmanager
def _ending(running: dict):
    """Whatever ends the server's work on a request (the command gone), the loads under way end too."""
    try:
        yield
    except BaseException:
        for _, pid, _, _ in list(running.values()):
            _kill(pid)
        raise


def _refuse_signals_to_the_server() -> None:
    """In a load's process: spec code that signals the server (its parent), its group or every process
    (os.kill, os.killpg) is refused at its line, before the signal is sent."""
    server, group = os.getppid(), os.getpgrp()

    def hook(event: str, args: tuple) -> None:
        if event == "os.kill" and args[0] in (server, 0, -1, -group) or event == "os.killpg" and args[0] in (0, group):
            raise PermissionError("spec code must not signal the process that loads spec files, nor its group")

    sys.addaudithook(hook)


def _run_load(load_here, root: str, relative: str, environ: dict, path: list[str]) -> bytes:
    """In the load's own process: load the spec file, and the pickled outcome."""
    printed = io.StringIO()
    try:
        _refuse_signals_to_the_server()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(root)
        os.environ.clear()
        os.environ.update(environ)
        sys.path[:] = path
        sys.stdout = sys.stderr = printed
        try:
            outcome = ("loaded", load_here(Path(root), Path(root) / relative))
        except GeneratorError as error:
            where = error.location
            file, line = (where.file, where.line) if isinstance(where, SourceLocation) else (None, None)
            outcome = ("raised", type(error).__name__, str(error.message), file, line)
        except KeyboardInterrupt:
            outcome = ("interrupted",)
        return pickle.dumps((*outcome, printed.getvalue()), protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException:  # noqa: BLE001 - whatever escaped (a value's __str__ raising SystemExit): one line
        message = f"loading {relative} failed in a way that cannot be told"
        outcome = ("raised", "SpecExecutionError", message, relative, 1)
        try:
            return pickle.dumps((*outcome, ""))
        except BaseException:  # noqa: BLE001
            _exit(3)


def _send(write: int, data: bytes) -> None:
    with contextlib.suppress(OSError):
        load_server.write_frame(write, data)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _how_it_ended(pid: int) -> str:
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return "its process ended without a result"
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"its process was ended by {name} without a result"
    if os.WIFEXITED(status):
        return f"its process exited with status {os.WEXITSTATUS(status)} without a result"
    return "its process ended without a result"
