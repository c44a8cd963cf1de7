"""Regenerate's write phase, SIGKILLed at a chosen step, in forked children of a small process.

The interruption test kills the real writing code (generator.freshness.manifest.write_outputs) at every step
of the write phase. Forking pytest's worker for each kill copies the page tables of a
process that holds torch and pays copy-on-write faults for most of its heap, dozens of
times; this module instead runs as a fresh interpreter that imports only the generator
(no torch), reads the targets and texts once, and forks one child per kill point on
request: each child is still a real process SIGKILLed inside the writing code.

Protocol (one line each way): the test writes a kill point; this process answers
"killed" when its child died of SIGKILL, "finished" when it wrote everything first.

Run with --pause-after N instead (`paused_regenerate`), it is a real `python -m generator`
whose write phase stops for good after writing its N-th file and says so on stderr, so
that the test's SIGKILL lands inside the write phase, between two files.
"""

import os
import pickle
import runpy
import signal
import subprocess
import sys
import time
from pathlib import Path

from generator import files
from generator.freshness import manifest

PAUSE_AFTER = "--pause-after"


class KillAt:
    """Wraps the calls regenerate's writer makes, and SIGKILLs this process at call number `point`."""

    def __init__(self, point: int):
        self.point = point
        self.calls = 0

    def step(self) -> None:
        if self.calls == self.point:
            os.kill(os.getpid(), signal.SIGKILL)
        self.calls += 1

    def install(self) -> None:
        real_open, real_fdopen = files.os.open, files.os.fdopen
        real_fsync, real_replace = files.os.fsync, files.os.replace

        def open_(*args, **kwargs):
            handle = real_open(*args, **kwargs)
            self.step()  # an empty temporary file exists
            return handle

        def fdopen(*args, **kwargs):
            return HalfWriteThenStep(real_fdopen(*args, **kwargs), self)

        def fsync(fd):
            self.step()
            real_fsync(fd)
            self.step()

        def replace(source, target):
            self.step()
            real_replace(source, target)
            self.step()

        files.os.open, files.os.fdopen = open_, fdopen
        files.os.fsync, files.os.replace = fsync, replace


class HalfWriteThenStep:
    def __init__(self, stream, killer: KillAt):
        self.stream, self.killer = stream, killer

    def write(self, data: bytes) -> int:
        half = len(data) // 2
        self.stream.write(data[:half])
        self.stream.flush()
        self.killer.step()  # the temporary file is half written
        return half + self.stream.write(data[half:])

    def __getattr__(self, name):
        return getattr(self.stream, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return self.stream.__exit__(*exc_info)


def write_phase_killed_at(project: Path, targets, texts, point: int) -> bool:
    """Run regenerate's write phase in a child killed at `point`; False when it finished first."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller
        try:
            KillAt(point).install()
            manifest.write_outputs(project, targets, texts)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


class Killer:
    """The test's side: starts this module on the pickled (project, targets, texts) and asks for kills."""

    def __init__(self, job: Path, project: Path, targets, texts, env: dict):
        job.write_bytes(pickle.dumps((project, targets, texts)))
        command = [sys.executable, "-m", "tests.support.killed_writer", str(job)]
        self.process = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def killed_at(self, point: int) -> bool:
        self.process.stdin.write(f"{point}\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        assert answer in ("killed\n", "finished\n"), answer
        return answer == "killed\n"

    def close(self) -> None:
        self.process.stdin.close()
        self.process.stdout.close()
        assert self.process.wait(timeout=60) == 0


def main(job: str) -> None:
    project, targets, texts = pickle.loads(Path(job).read_bytes())
    for line in sys.stdin:
        killed = write_phase_killed_at(project, targets, texts, int(line))
        print("killed" if killed else "finished", flush=True)


def paused_regenerate(project: Path, files_written: int) -> list[str]:
    """A real `python -m generator --root PROJECT regenerate` that pauses for good after writing `files_written`
    generated files (the manifest not counted), saying "paused after writing N files" on stderr."""
    return [sys.executable, "-m", __name__, PAUSE_AFTER, str(files_written), "--root", str(project), "regenerate"]


def pause_after_writing(files_written: int) -> None:
    """Make the write phase (manifest.write_outputs) stop after writing its `files_written`-th generated file."""
    real_write_outputs, real_write_if_changed = manifest.write_outputs, files.write_if_changed

    def write_outputs(root: Path, *args, **kwargs):
        written = 0

        def write_if_changed(path: Path, text: str) -> bool:
            nonlocal written
            changed = real_write_if_changed(path, text)
            if changed and path != root / manifest.PATH:
                written += 1
                if written == files_written:
                    sys.stderr.write(f"paused after writing {files_written} files\n")
                    sys.stderr.flush()
                    while True:  # until the test kills this process
                        time.sleep(60)
            return changed

        files.write_if_changed = write_if_changed
        try:
            return real_write_outputs(root, *args, **kwargs)
        finally:
            files.write_if_changed = real_write_if_changed

    manifest.write_outputs = write_outputs


if __name__ == "__main__":
    if sys.argv[1] == PAUSE_AFTER:
        pause_after_writing(int(sys.argv[2]))
        sys.argv[1:] = sys.argv[3:]
        runpy.run_module("generator", run_name="__main__", alter_sys=True)  # as `python -m generator` runs it
    else:
        main(sys.argv[1])
