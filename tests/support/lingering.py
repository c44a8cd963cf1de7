"""Processes that user code leaves running: each writes its pid to a file, so that a test can tell whether the
command ended it, and end it itself if not (a test leaves no process behind)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

# User code that starts a daemon multiprocessing.Process living for ten minutes, and waits until it has
# written its pid to PID_FILE (a placeholder a test replaces with the file's path).
STARTS_A_DAEMON = '''
import multiprocessing as _multiprocessing
import os as _os
import time as _time


def _linger(path):
    with open(path + ".tmp", "w") as file:
        file.write(str(_os.getpid()))
    _os.rename(path + ".tmp", path)
    _time.sleep(600)


def _start_a_daemon():
    process = _multiprocessing.get_context("fork").Process(target=_linger, args=(PID_FILE,), daemon=True)
    process.start()
    while not _os.path.exists(PID_FILE):
        _time.sleep(0.01)
'''


def daemon_source(pid_file: Path) -> str:
    return STARTS_A_DAEMON.replace("PID_FILE", repr(str(pid_file)))


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie waiting for its parent to collect it does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def ended(pid_file: Path, wait: float = 10.0) -> bool:
    """Whether the process that wrote `pid_file` has ended (given `wait` seconds to, as SIGKILL is delivered);
    if it has not, it is killed here."""
    if not pid_file.exists():
        return True  # no process was started
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + wait
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if not alive(pid):
        return True
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    return False
