"""Under a limit on open files (`ulimit -n`), every command either works (loading fewer spec files at once) or says
in one line which limit stopped it: never a traceback, never blaming the spec. A load server killed from outside
the command is said as that, and leaves no load running; spec code cannot signal the server itself."""

import os
import resource
import shutil
import signal
import subprocess
import sys
import time

import pytest

from generator import cache
from tests.support.lingering import ended
from tests.support.projects import fresh_copy


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return fresh_copy(tmp_path_factory.mktemp("limits") / "project", "x86", factory=tmp_path_factory)


def under_limit(limit: int, value: int):
    def apply() -> None:
        resource.setrlimit(limit, (value, resource.getrlimit(limit)[1]))

    return apply


def run_limited(project, limit: int, value: int, *args):
    return subprocess.run([sys.executable, "-m", "generator", "--root", str(project), *args], cwd=project,
                          capture_output=True, text=True, timeout=300, start_new_session=True,
                          preexec_fn=under_limit(limit, value))  # fmt: skip


def works_or_names_the_limit(done, limit_words: str) -> None:
    if done.returncode == 0:
        return
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: the system refused the command") and limit_words in line, line
    assert "spec" not in line, line


@pytest.mark.parametrize("files", [6, 8, 10, 16])
@pytest.mark.parametrize("command", [["regenerate", "--force"], ["check", "--full"]], ids=["regenerate", "check"])
def test_few_open_files_work_or_name_the_limit(project, files, command):
    works_or_names_the_limit(run_limited(project, resource.RLIMIT_NOFILE, files, *command), "(ulimit -n)")


def test_ten_open_files_are_enough_to_load_spec_files_one_at_a_time(tmp_path):
    project = fresh_copy(tmp_path / "project")  # every spec file: more loads than files to open at once
    done = run_limited(project, resource.RLIMIT_NOFILE, 10, "regenerate", "--force")
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)


def test_a_load_server_killed_from_outside_is_said_so_and_leaves_no_load_running(tmp_path, tmp_path_factory):
    project = fresh_copy(tmp_path / "project", "x86", factory=tmp_path_factory)
    pid_file = tmp_path / "load.pid"
    spec = project / "spec" / "x86.py"
    spec.write_text(spec.read_text() + f"\nimport os, time\n\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
                    "time.sleep(600)\n")  # fmt: skip
    arguments = [sys.executable, "-m", "generator", "--root", str(project), "regenerate", "--force"]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    command = subprocess.Popen(arguments, text=True, start_new_session=True, **pipes)
    try:
        deadline = time.monotonic() + 120
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        load = int(pid_file.read_text())
        server = int(open(f"/proc/{load}/stat").read().rpartition(")")[2].split()[1])  # the load's parent
        os.kill(server, signal.SIGKILL)  # another process's doing
        out, err = command.communicate(timeout=120)
    finally:
        if command.poll() is None:
            os.killpg(command.pid, signal.SIGKILL)
            command.communicate()
        gone = ended(pid_file)
    assert command.returncode == 2, (command.returncode, out, err)
    (line,) = err.splitlines()
    assert line.startswith("error: the process that loads spec files was killed by SIGKILL before spec/x86.py"), line
    assert "from outside the command" in line, line
    assert gone, "the load outlived the command"


def test_spec_code_that_signals_the_load_server_is_refused_at_its_line(tmp_path, tmp_path_factory):
    project = fresh_copy(tmp_path / "project", "x86", factory=tmp_path_factory)
    spec = project / "spec" / "x86.py"
    text = spec.read_text() + "\nimport os\nimport signal\n\nos.kill(os.getppid(), signal.SIGKILL)\n"
    spec.write_text(text)
    done = subprocess.run([sys.executable, "-m", "generator", "--root", str(project), "regenerate", "--force"],
                          capture_output=True, text=True, timeout=300, start_new_session=True)  # fmt: skip
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"error: spec/x86.py:{len(text.splitlines())}: "), line
    assert "must not signal the process that loads spec files" in line, line


@pytest.mark.parametrize("megabytes", [300, 450])
def test_a_memory_limit_too_low_for_torch_is_named(tmp_path, tmp_path_factory, megabytes):
    project = fresh_copy(tmp_path / "project", "x86", factory=tmp_path_factory)
    shutil.rmtree(cache.Cache(project, cache.TORCH_NAMES).folder, ignore_errors=True)  # torch must be imported
    done = run_limited(project, resource.RLIMIT_AS, megabytes << 20, "regenerate", "--force")
    works_or_names_the_limit(done, "(ulimit -v)")
