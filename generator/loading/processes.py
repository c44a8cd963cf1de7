"""Each spec file's load runs in a process of its own: nothing a spec does reaches the command or another load.

A command that must execute spec files starts one fresh interpreter for its loads, the
*load server*, with a fixed hash seed (PYTHONHASHSEED=0: a set of strings iterates in the
same order whatever the user's shell says), which imports the generator's loading code
and runs no spec code itself. Where the platform has os.fork, the server forks one child
per spec file from that untouched state (several at once, one per core); elsewhere a
server is started for each spec file, and runs it itself. Each load starts in the project
root (the working folder), with the command's environment and import path, and no other
load's modules: a spec that mutates the generator's tables, the standard library's state
(decimal's context), sys.modules, sys.path, os.environ, an import hook or builtins changes
its own process only.

The child sends back the loaded module (plain values: the model's own classes, unpickled
by a restricted Unpickler that makes nothing else), what the load read (`ModuleSpec.read`)
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

from generator import model
from generator.errors import GeneratorError, SpecExecutionError
from generator.model import ModuleSpec, SourceLocation

HASH_SEED = "0"
FORK = hasattr(os, "fork")  # a test may set it False: a server per spec file, as without os.fork
_LENGTH = 8
_GENERATOR_PARENT = str(Path(__file__).resolve().parent.parent.parent)
# The server's own imports (the generator's loading code) compile from source where no .pyc is written
# (PYTHONDONTWRITEBYTECODE): their code is kept in the project's cache, by the digest of all it is made of.
_BOOT = (
    "import hashlib, importlib.machinery as m, marshal, os, sys\n"
    "result = os.dup(1)\n"
    "os.dup2(2, 1)\n"  # what the server and its children print is the command's standard error
    "del sys.path[0]\n"  # -c's working folder: a load's path is the command's, sent with each request
    "sys.path.append(sys.argv[1])\n"
    "compile_source = m.SourceFileLoader.source_to_code\n"
    "def source_to_code(self, data, path, *args, **kwargs):\n"
    "    if not str(path).startswith(sys.argv[1] + os.sep + 'generator' + os.sep):\n"
    "        return compile_source(self, data, path, *args, **kwargs)\n"
    "    how = repr((sys.version, sys.flags.optimize, str(path), args, sorted(kwargs.items()))).encode()\n"
    "    kept = os.path.join(sys.argv[3], 'interpreter-' + hashlib.sha256(how + b'\\0' + bytes(data)).hexdigest())\n"
    "    try:\n"
    "        with open(kept, 'rb') as stream:\n"
    "            return marshal.loads(stream.read())\n"
    "    except Exception:\n"
    "        code = compile_source(self, data, path, *args, **kwargs)\n"
    "    try:\n"
    "        os.makedirs(sys.argv[3], exist_ok=True)\n"
    "        with open(kept + '.%d' % os.getpid(), 'wb') as stream:\n"
    "            stream.write(marshal.dumps(code))\n"
    "        os.replace(kept + '.%d' % os.getpid(), kept)\n"
    "    except OSError:\n"
    "        pass\n"
    "    return code\n"
    "m.SourceFileLoader.source_to_code = source_to_code\n"
    "from generator.loading import loader, processes\n"
    "m.SourceFileLoader.source_to_code = compile_source\n"
    "sys.path.remove(sys.argv[1])\n"  # a load finds its project's modules (its spec/), never the generator's
    "processes.serve(result, sys.argv[2] == 'fork', loader.load_here)\n"
)
_exit = os._exit  # the real one, whatever spec code does to os._exit

_server: _Server | None = None


class _Server:
    """A load server, started now; `load` asks it for loads."""

    def __init__(self, root: Path, fork: bool):
        import subprocess

        environment = dict(os.environ, PYTHONHASHSEED=HASH_SEED)
        flags = ["-O"] * sys.flags.optimize + (["-X", "utf8"] if sys.flags.utf8_mode else [])
        try:
            stderr = sys.stderr.fileno()
        except (AttributeError, OSError, ValueError):
            stderr = None  # an in-memory stream (a test's): the process's own
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        self.process = subprocess.Popen(
            [sys.executable, *flags, "-c", _BOOT, _GENERATOR_PARENT, "fork" if fork else "once", _code_folder(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=str(root),
            env=environment,
        )
        self.fork = fork
        self.stderr = _identity(2 if stderr is None else stderr)

    def load(self, root: Path, relatives: list[str]) -> list[tuple]:
        """The outcome of each spec file's load, in order; the server is gone if it failed."""
        request = {"root": str(root), "files": relatives, "environ": dict(os.environ), "path": list(sys.path)}
        _write_frame(self.process.stdin.fileno(), pickle.dumps(request))
        outcomes: dict[str, tuple] = {}
        while len(outcomes) < len(relatives):
            frame = _read_frame(self.process.stdout.fileno())
            if frame is None:
                raise _ServerGone
            relative, payload = pickle.loads(frame)  # the server's own frame: a name and a child's bytes
            outcomes[relative] = payload
        return [outcomes[relative] for relative in relatives]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        with contextlib.suppress(ProcessLookupError, OSError):
            self.process.kill()
        with contextlib.suppress(Exception):
            self.process.wait()
        with contextlib.suppress(OSError):
            self.process.stdout.close()


def _code_folder(root: Path) -> str:
    from generator import cache

    return str(cache.folder(root) / cache.CODE)


def _stderr():
    """What the command's standard error is now: a server started for another one (a test's) is not used."""
    try:
        return _identity(sys.stderr.fileno())
    except (AttributeError, OSError, ValueError):
        return _identity(2)


def _identity(fd: int):
    try:
        status = os.fstat(fd)
    except OSError:
        return None
    return (status.st_dev, status.st_ino)


class _ServerGone(Exception):
    pass


def prestart(root: Path) -> None:
    """Start the load server now, so that it is ready when the loads come (a command that will load)."""
    global _server
    if _server is None or _server.fork != FORK or _server.process.poll() is not None or _server.stderr != _stderr():
        if _server is not None:
            _server.close()
        _server = _Server(root, FORK)


def load(root: Path, paths: list[Path]) -> list[ModuleSpec]:
    """Load each spec file in a process of its own; raise the first error, in the order of `paths`."""
    global _server
    relatives = [str(path.relative_to(root)) for path in paths]
    if not relatives:
        return []
    if FORK:
        prestart(root)
        server, _server = _server, None  # taken while in use: an interrupted request leaves no server behind
        try:
            outcomes = server.load(root, relatives)
        except _ServerGone:
            server.close()
            message = f"loading {relatives[0]}: the process that loads spec files ended early"
            raise SpecExecutionError(message, SourceLocation(relatives[0], 1)) from None
        except BaseException:
            server.close()
            raise
        _server = server
    else:
        outcomes = [_load_once(root, relative) for relative in relatives]
    return [_result(relative, outcome) for relative, outcome in zip(relatives, outcomes)]


def _load_once(root: Path, relative: str) -> tuple:
    server = _Server(root, fork=False)
    try:
        return server.load(root, [relative])[0]
    except _ServerGone:
        return ("died", "its process ended without a result")
    finally:
        server.close()


def _result(relative: str, outcome: tuple) -> ModuleSpec:
    """What a child sent (bytes), or what the server saw of it: the module, or the error raised here."""
    if outcome[0] == "died":
        message = f"loading {relative}: {outcome[1]} (spec code must not end its process: raise an Exception instead)"
        raise SpecExecutionError(message, SourceLocation(relative, 1))
    try:
        kind, *value, printed = _ModelUnpickler(io.BytesIO(outcome[1])).load()
    except Exception:  # noqa: BLE001 - cut short or forged: no result
        message = f"loading {relative}: its process sent no whole result"
        raise SpecExecutionError(message, SourceLocation(relative, 1)) from None
    if isinstance(printed, str) and printed:
        sys.stderr.write(printed)
        sys.stderr.flush()
    if kind == "loaded" and type(value[0]) is ModuleSpec and value[0].spec_file == relative:
        return value[0]
    if kind == "interrupted":
        raise KeyboardInterrupt
    if kind == "raised":
        name, message, file, line = value
        import generator.errors

        error_class = getattr(generator.errors, str(name), None)
        if not (isinstance(error_class, type) and issubclass(error_class, GeneratorError)):
            error_class = SpecExecutionError
        where = SourceLocation(file, line) if isinstance(file, str) and type(line) is int else None
        raise error_class(str(message), where)
    raise SpecExecutionError(f"loading {relative}: its process sent no whole result", SourceLocation(relative, 1))


class _ModelUnpickler(pickle.Unpickler):
    """Makes nothing but the model's own classes (and the built-in containers pickle spells by opcode)."""

    def find_class(self, module_name: str, name: str):
        found = getattr(model, name, None) if module_name == model.__name__ else None
        if isinstance(found, type) and found.__module__ == model.__name__ and hasattr(found, "__dataclass_fields__"):
            return found
        raise pickle.UnpicklingError(f"{module_name}.{name} is not a class of the model")


# ---------------------------------------------------------------------------
# The server, and each load's child
# ---------------------------------------------------------------------------


def serve(result: int, fork: bool, load_here) -> None:
    """The load server's life: one request after another on standard input, until it closes;
    `load_here(root, path)` is a load (loader.load_here, imported once here: every child starts with it)."""
    for name in ("ast", "datetime", "string", "tomllib"):  # what every load imports: once, here
        __import__(name)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the loads under way and the command
    base_path = list(sys.path)
    try:
        _serve(result, fork, load_here, base_path)
    except BaseException:  # noqa: BLE001 - the command gone (a broken pipe): the server ends without a word
        _exit(0)


def _serve(result: int, fork: bool, load_here, base_path: list[str]) -> None:
    while True:
        frame = _read_frame(0)
        if frame is None:
            _exit(0)
        request = pickle.loads(frame)  # from the command that started this process
        root, files = request["root"], request["files"]
        path = [root, *base_path, *(p for p in request["path"] if p and p not in base_path and p != root)]
        if not fork:
            outcome = _run_load(load_here, root, files[0], request["environ"], path)
            _write_frame(result, pickle.dumps((files[0], ("sent", outcome))))
            _exit(0)
        _fork_loads(load_here, result, root, files, request["environ"], path)


def _fork_loads(load_here, result: int, root: str, files: list[str], environ: dict, path: list[str]) -> None:
    import selectors

    waiting = list(files)
    running: dict[int, tuple[str, int, bytearray]] = {}  # read end -> (file, pid, bytes so far)
    limit = max(1, min(os.cpu_count() or 1, 4))
    with selectors.DefaultSelector() as selector, _ending(running):
        selector.register(0, selectors.EVENT_READ)  # the command gone (end of input): so are its loads
        while waiting or running:
            while waiting and len(running) < limit:
                relative = waiting.pop(0)
                read, write = os.pipe()
                pid = os.fork()
                if pid == 0:
                    os.close(read)
                    selector.close()
                    me = os.getpid()
                    outcome = _run_load(load_here, root, relative, environ, path)
                    if os.getpid() == me:  # not a process the spec forked, which returned from it too
                        _send(write, outcome)
                    _exit(0)
                os.close(write)
                running[read] = (relative, pid, bytearray())
                selector.register(read, selectors.EVENT_READ)
            for key, _ in selector.select():
                if key.fd == 0:
                    for _, pid, _ in running.values():
                        _kill(pid)
                    _exit(0)
                relative, pid, data = running[key.fd]
                chunk = os.read(key.fd, 1 << 16)
                data += chunk
                done = len(data) >= _LENGTH and len(data) >= _LENGTH + int.from_bytes(data[:_LENGTH], "big")
                if chunk and not done:
                    continue
                selector.unregister(key.fd)
                os.close(key.fd)
                del running[key.fd]
                if done:
                    _kill(pid)  # sent: what it still does (threads, atexit) ends here
                    outcome = ("sent", bytes(data[_LENGTH : _LENGTH + int.from_bytes(data[:_LENGTH], "big")]))
                else:
                    outcome = ("died", _how_it_ended(pid))
                _write_frame(result, pickle.dumps((relative, outcome)))


@contextlib.contextmanager
def _ending(running: dict):
    """Whatever ends the server's work on a request (the command gone), the loads under way end too."""
    try:
        yield
    except BaseException:
        for _, pid, _ in list(running.values()):
            _kill(pid)
        raise


def _run_load(load_here, root: str, relative: str, environ: dict, path: list[str]) -> bytes:
    """In the load's own process: load the spec file, and the pickled outcome."""
    printed = io.StringIO()
    try:
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
        _write_frame(write, data)


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


def _write_frame(fd: int, data: bytes) -> None:
    view = memoryview(len(data).to_bytes(_LENGTH, "big") + data)
    while view:
        view = view[os.write(fd, view) :]


def _read_frame(fd: int) -> bytes | None:
    head = _read_exactly(fd, _LENGTH)
    if head is None:
        return None
    return _read_exactly(fd, int.from_bytes(head, "big"))


def _read_exactly(fd: int, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
