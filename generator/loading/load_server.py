"""The load server, as a command sees it: the fresh interpreter its spec loads are forked from.

A command that loads spec files starts one fresh interpreter, the *load server*, with a
fixed hash seed (PYTHONHASHSEED=0: a set of strings iterates in the same order whatever the
user's shell says). It imports the generator's loading code and runs no spec code itself;
each request names spec files, and each is loaded in a child forked from that untouched
state (generator/loading/processes.py, which also holds the server's own side).

This module imports nothing but the standard library, so that a command can start the
server first thing (start_early), letting it boot while the command imports its own
modules; a command that loads without that head start starts it when it loads (prestart).
Requests and answers are frames (an 8-byte length, then a pickle) on the server's standard
input and output; what the server and its children print goes to the command's standard error.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

HASH_SEED = "0"
FORK = hasattr(os, "fork")  # a test may set it False: a server per spec file, as without os.fork
_LENGTH = 8
_GENERATOR_PARENT = str(Path(__file__).resolve().parent.parent.parent)
_BOOT = (
    "import os, signal, sys\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"  # Ctrl-C is the command's and the loads' (processes.py)
    "result = os.dup(1)\n"
    "os.dup2(2, 1)\n"  # what the server and its children print is the command's standard error
    "del sys.path[0]\n"  # -c's working folder: a load's path is the command's, sent with each request
    "sys.path.append(sys.argv[1])\n"
    "try:\n"
    "    from generator import user_cache\n"
    "    user_cache.keep_own_bytecode()\n"  # where PYTHONDONTWRITEBYTECODE leaves no .pyc
    "    from generator.loading import loader, processes\n"
    "except BaseException:\n"  # no traceback: the command says its loads' process could not start (BOOT_FAILED)
    "    os._exit(3)\n"
    "sys.path.remove(sys.argv[1])\n"  # a load finds its project's modules (its spec/), never the generator's
    "processes.serve(result, sys.argv[2] == 'fork', loader.load_here, loader.prepare)\n"
)
# The commands whose runs load spec files whenever their inputs changed (check only with --full).
_LOADING_COMMANDS = frozenset(("regenerate", "matrix", "diff", "verify"))
_GRACE = 2.0  # seconds a server with loads under way has to end them when its requests end

_server: Server | None = None


class Gone(Exception):
    """The server ended before it answered a request."""


class Refused(Exception):
    """The system refused the server a file or a process it needed (a limit: ulimit -n, -u): `str()` says which."""


BOOT_FAILED = 3  # the server's exit status when it could not import the loading code (no file or memory to spare)


class Server:
    """A load server, started now."""

    def __init__(self, fork: bool):
        environment = dict(os.environ, PYTHONHASHSEED=HASH_SEED)
        flags = ["-O"] * sys.flags.optimize + (["-X", "utf8"] if sys.flags.utf8_mode else [])
        arguments = [sys.executable, *flags, "-c", _BOOT, _GENERATOR_PARENT, "fork" if fork else "once"]
        try:
            stderr = sys.stderr.fileno()
        except (AttributeError, OSError, ValueError):
            stderr = None  # an in-memory stream (a test's): the process's own
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        self.process, self.requests, self.answers = _spawn(arguments, environment, stderr)
        self.fork = fork
        self.stderr = _identity(2 if stderr is None else stderr)
        self.loading = False  # a request is under way: the server has loads' processes to end
        self.leader: int | None = None  # the session the server led, once it is collected

    def tell(self, root: Path) -> None:
        """Send a request that names no spec file: the project the next ones are of."""
        import pickle

        write_frame(self.requests, pickle.dumps({"root": str(root), "files": []}))

    def send(self, root: Path, relatives: list[str]) -> None:
        """Ask for the loads of `relatives`; raises Gone if the server ended."""
        import pickle  # here: a run with nothing to load (a no-op regenerate) never imports it

        request = {"root": str(root), "files": relatives, "environ": dict(os.environ), "path": list(sys.path)}
        self.loading = True
        try:
            write_frame(self.requests, pickle.dumps(request))
        except OSError:  # BrokenPipeError: it ended (it is no closed output of the command's)
            raise Gone from None

    def answers_to(self, relatives: list[str]):
        """(file, what the server says of its load) for each of `relatives`, as each load ends; raises Gone
        if the server ends first."""
        import pickle

        left = set(relatives)
        while left:
            frame = read_frame(self.answers)
            if frame is None:
                raise Gone
            relative, payload = pickle.loads(frame)  # the server's own frame: a name and a child's bytes
            if relative is None:  # the system refused the server a file or a process: no load's fault
                raise Refused(payload)
            if relative in left:
                left.discard(relative)
                yield relative, payload
        self.loading = False

    def ask(self, root: Path, relatives: list[str]) -> list[tuple]:
        """What the server says of each spec file's load, in order; raises Gone if it ended first."""
        self.send(root, relatives)
        outcomes = dict(self.answers_to(relatives))
        return [outcomes[relative] for relative in relatives]

    def usable(self) -> bool:
        """Whether this server can serve the command now: as it would be started, running, and printing
        to the command's standard error (one started for another command, a test's, is not)."""
        return self.fork == FORK and self.running() and self.stderr == _stderr()

    def ended(self) -> str | None:
        """How the server, gone, ended ("killed by SIGKILL", "ended"); None if it could not even import the
        loading code (BOOT_FAILED: a limit on files or memory)."""
        process = self.process
        if not isinstance(process, int):
            code = process.wait() if process is not None else 0
            return None if code == BOOT_FAILED else "ended"
        try:
            _, status = os.waitpid(process, 0)
        except OSError:
            return "ended"
        self.process = None  # collected; its session is ended on close
        self.leader = process
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == BOOT_FAILED:
            return None
        if os.WIFSIGNALED(status):
            import signal

            try:
                return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
            except ValueError:
                return f"killed by signal {os.WTERMSIG(status)}"
        return "ended"

    def running(self) -> bool:
        process = self.process
        if isinstance(process, int):
            try:
                return os.waitpid(process, os.WNOHANG)[0] == 0
            except OSError:
                return False
        return process is not None and process.poll() is None

    def close(self) -> None:
        """End the server. One with loads under way sees its requests end, ends and collects its loads'
        processes, and exits (a server killed outright would leave them to whoever adopts them); one that
        has none, or does not exit at once, is killed."""
        _in_use.discard(self)
        if self.leader is not None:  # collected already (ended): what is left of its session ends
            _end_session(self.leader)
            self.leader = None
        for fd in (self.requests, self.answers):
            with contextlib.suppress(OSError):
                os.close(fd)
        process, self.process = self.process, None
        if self.loading and isinstance(process, int):
            import time

            deadline = time.monotonic() + _GRACE
            with contextlib.suppress(OSError):
                while os.waitpid(process, os.WNOHANG)[0] == 0:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.001)
                else:
                    _end_session(process)  # loads of a server that was killed (by another process) end too
                    return
        if isinstance(process, int):
            import signal

            _end_session(process)  # it leads a session of its own: its loads end with it
            with contextlib.suppress(OSError):
                os.kill(process, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(process, 0)
        elif process is not None:
            with contextlib.suppress(Exception):
                process.kill()
                process.wait()


def _end_session(leader: int) -> None:
    import signal

    with contextlib.suppress(OSError):
        os.killpg(leader, signal.SIGKILL)


def _spawn(arguments: list[str], environment: dict, stderr: int | None) -> tuple:
    """Start the server: its process id (a Popen where there is no posix_spawn), and the ends of the pipes
    to its standard input and from its standard output."""
    for fd in (0, 1, 2):  # a closed standard stream: the pipes must not take its number (cli does this too)
        try:
            os.fstat(fd)
        except OSError:
            os.open(os.devnull, os.O_RDWR)  # the lowest free descriptor: this one
    to_server, requests = os.pipe()
    answers, from_server = os.pipe()
    try:
        if hasattr(os, "posix_spawn"):  # a vfork: no import of subprocess, no copy of this process
            actions = [(os.POSIX_SPAWN_DUP2, to_server, 0), (os.POSIX_SPAWN_DUP2, from_server, 1)]
            if stderr is not None and stderr != 2:
                actions.append((os.POSIX_SPAWN_DUP2, stderr, 2))
            # A session of its own: a spec's os.killpg(0, ...) reaches the server and the loads, not the command.
            process = os.posix_spawn(arguments[0], arguments, environment, file_actions=actions, setsid=True)
        else:
            import subprocess

            process = subprocess.Popen(
                arguments, stdin=to_server, stdout=from_server, stderr=stderr, env=environment, start_new_session=True
            )
    except BaseException:
        for fd in (requests, answers):
            os.close(fd)
        raise
    finally:
        os.close(to_server)
        os.close(from_server)
    return process, requests, answers


def start_early(arguments: list[str]) -> None:
    """Start the load server as a command starts, when its arguments name one that loads spec files:
    it then boots while the command imports its own modules. Only a head start, never needed: one the
    system refuses (a limit on files or processes) is started, or refused in one line, when loads come."""
    if FORK and (_LOADING_COMMANDS.intersection(arguments) or {"check", "--full"} <= set(arguments)):
        with contextlib.suppress(OSError):
            prestart()


def prestart() -> None:
    """Start the load server now, unless one that can serve is running: loads are coming."""
    global _server
    if _server is None or not _server.usable():
        if _server is not None:
            _server.close()
        _server = Server(FORK)


def expect(root: Path) -> None:
    """Tell the running server (if any) which project the loads to come are of: it reads what they
    share while the command plans them."""
    if _server is not None:
        with contextlib.suppress(Exception):  # a server gone is started again when the loads come
            _server.tell(root)


def take() -> Server:
    """The running server (started now if there is none), taken while in use: a request cut short
    (Ctrl-C) leaves no server behind whose answers would be out of step; give_back it when done."""
    global _server
    prestart()
    server, _server = _server, None
    _in_use.add(server)
    return server


def give_back(server: Server) -> None:
    global _server
    _in_use.discard(server)
    if _server is not None:
        _server.close()
    _server = server


def stop() -> None:
    """End the load servers, running or in use: a command's last step. A server still booting would
    otherwise hold the command's standard error open after it exits, and a reader waiting for its end."""
    global _server
    for server in [_server, *_in_use]:
        if server is not None:
            server.close()
    _server = None
    _in_use.clear()


_in_use: set[Server] = set()  # taken, not given back yet


def _stderr():
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


def write_frame(fd: int, data: bytes) -> None:
    view = memoryview(len(data).to_bytes(_LENGTH, "big") + data)
    while view:
        view = view[os.write(fd, view) :]


def whole_frame(data: bytes | bytearray) -> bytes | None:
    """The payload of the frame `data` starts with, once all of it is there; else None."""
    if len(data) < _LENGTH or len(data) < _LENGTH + int.from_bytes(data[:_LENGTH], "big"):
        return None
    return bytes(data[_LENGTH : _LENGTH + int.from_bytes(data[:_LENGTH], "big")])


def read_frame(fd: int) -> bytes | None:
    """The next frame's bytes, or None if the stream ends before a whole frame."""
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
