"""`verify` and `diff --against-torch` run the generated modules and the reference builders, user code, in a child
process of their own: a reference builder that ends its process (posix._exit, which no guard can refuse) is one
line, exit 2, never a silent exit 0; one that forks does not print the report twice; one that leaves a process
running (a daemon multiprocessing.Process) neither holds the command nor outlives it."""

import subprocess
import sys

import pytest

from tests.support.lingering import daemon_source, ended
from tests.support.projects import fresh_copy

ENDING = "import posix\n\n\ndef get_x86_backend_config():\n    posix._exit(0)\n"
FORKING = (
    "import os\n\nfrom torch.ao.quantization.backend_config import x86\n\n\n"
    "def get_x86_backend_config():\n    os.fork()\n    return x86.get_x86_backend_config()\n"
)


@pytest.fixture
def project(tmp_path_factory, tmp_path):
    return fresh_copy(tmp_path / "project", "x86", factory=tmp_path_factory)


def with_reference(project, source: str):
    (project / "acme_reference.py").write_text(source)
    spec = project / "spec" / "x86.py"
    spec.write_text(spec.read_text().replace(
        'reference="torch.ao.quantization.backend_config.x86.get_x86_backend_config"',
        'reference="acme_reference.get_x86_backend_config"'))  # fmt: skip
    assert run(project, "regenerate").returncode == 0


def run(project, *args, timeout=600):
    return subprocess.run([sys.executable, "-m", "generator", "--root", str(project), *args],
                          capture_output=True, text=True, timeout=timeout, start_new_session=True)  # fmt: skip


@pytest.mark.parametrize("command", [["verify"], ["diff", "--against-torch"]], ids=["verify", "diff"])
def test_a_reference_builder_that_ends_its_process_is_one_line(project, command):
    with_reference(project, ENDING)
    done = run(project, *command)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: spec/x86.py:") and "its process ended without a result" in line, line


def test_a_reference_builder_that_forks_is_reported_once(project):
    with_reference(project, FORKING)
    done = run(project, "verify")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("verify: all 1 backend(s) hold") == 1, done.stdout


def test_a_process_a_reference_builder_leaves_running_ends_with_the_command(project):
    pid_file = project / "daemon.pid"
    with_reference(project, "from torch.ao.quantization.backend_config import x86\n" + daemon_source(pid_file)
                   + "\n\ndef get_x86_backend_config():\n    _start_a_daemon()\n"
                   "    return x86.get_x86_backend_config()\n")  # fmt: skip
    try:
        done = run(project, "diff", "--against-torch", timeout=300)  # the daemon lives ten minutes
    finally:
        gone = ended(pid_file)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    assert gone, "the daemon the reference builder started outlived the command"


def test_a_process_a_reference_module_starts_as_it_imports_ends_with_regenerate(project):
    """regenerate imports the reference builder's module (in a child) to check the name: a daemon it starts there
    neither holds regenerate nor outlives it."""
    pid_file = project / "daemon.pid"
    (project / "acme_reference.py").write_text(
        "from torch.ao.quantization.backend_config import x86\n" + daemon_source(pid_file)
        + "\n\n_start_a_daemon()\n\n\ndef get_x86_backend_config():\n    return x86.get_x86_backend_config()\n"
    )  # fmt: skip
    spec = project / "spec" / "x86.py"
    spec.write_text(spec.read_text().replace(
        'reference="torch.ao.quantization.backend_config.x86.get_x86_backend_config"',
        'reference="acme_reference.get_x86_backend_config"'))  # fmt: skip
    try:
        done = run(project, "regenerate", timeout=300)  # the daemon lives ten minutes
    finally:
        gone = ended(pid_file)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    assert pid_file.exists(), "the reference module was not imported: nothing was tried"
    assert gone, "the daemon the reference module started outlived regenerate"
