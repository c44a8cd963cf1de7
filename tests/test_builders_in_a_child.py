"""`import`'s builder, and everything that runs its code (reading, compaction, the proof), runs in a child process
of its own: a builder that ends its process (posix._exit, which no guard can refuse) is one located line, exit 2,
nothing written; an atexit hook that exits cannot turn a refused import into exit 0; a thread it leaves running
does not hold the command; one that forks writes and says "written" once. `diff --rev` builds other revisions'
generated modules in a child process too: one that ends its process, exits in an atexit hook, forks or leaves a
thread is one located line, the difference (exit 1), one report, and no hang."""

import json
import subprocess
import sys

import pytest

from tests.support.projects import commit_all, fresh_copy

TINY = '''
import torch
from torch.ao.quantization.backend_config import BackendConfig, BackendPatternConfig, DTypeConfig

int8 = DTypeConfig(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)


def tiny():
    linear = BackendPatternConfig(torch.nn.Linear).add_dtype_config(int8)
    return BackendConfig("tiny").set_backend_pattern_config(linear)
'''
ENDS = "\n\ndef get_tiny_backend_config():\n    import posix\n\n    posix._exit(0)\n"
EXITS_AT_EXIT = (
    "\n\ndef get_tiny_backend_config():\n    import atexit, posix\n\n    atexit.register(posix._exit, 0)\n"
    "    raise ValueError('refused')\n"
)
THREAD = (
    "\n\ndef get_tiny_backend_config():\n    import threading, time\n\n"
    "    threading.Thread(target=time.sleep, args=(600,)).start()  # not a daemon: it would hold the exit\n"
    "    return tiny()\n"
)
FORKS = "\n\ndef get_tiny_backend_config():\n    import os\n\n    os.fork()\n    return tiny()\n"


@pytest.fixture
def project(tmp_path_factory, tmp_path):
    return fresh_copy(tmp_path / "project", "x86", factory=tmp_path_factory)


def run(project, *args, timeout=180):
    return subprocess.run([sys.executable, "-m", "generator", "--root", str(project), *args], cwd=project,
                          capture_output=True, text=True, timeout=timeout, start_new_session=True)  # fmt: skip


def imported(project, source: str):
    (project / "acme_tiny.py").write_text(TINY + source)
    return run(project, "import", "acme_tiny:get_tiny_backend_config")


def test_a_builder_that_ends_its_process_is_one_located_line(project):
    done = imported(project, ENDS)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    def_line = (TINY + ENDS).splitlines().index("def get_tiny_backend_config():") + 1
    assert line.startswith(f"error: acme_tiny.py:{def_line}: importing acme_tiny:get_tiny_backend_config: its "
                           "process ended without a result"), line  # fmt: skip
    assert not (project / "spec" / "tiny.py").exists()


def test_an_atexit_hook_that_exits_cannot_make_a_refused_import_succeed(project):
    done = imported(project, EXITS_AT_EXIT)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    (line,) = done.stderr.splitlines()
    assert "raised ValueError: refused" in line, line
    assert not (project / "spec" / "tiny.py").exists()


def test_a_thread_the_builder_leaves_running_does_not_hold_the_command(project):
    done = imported(project, THREAD)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    assert done.stdout.startswith("written   spec/tiny.py: 1 pattern\n"), done.stdout
    assert "nn.Linear" in (project / "spec" / "tiny.py").read_text()


def test_a_builder_that_forks_writes_once(project):
    done = imported(project, FORKS)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    assert done.stdout.count("written") == 1, done.stdout
    assert (project / "spec" / "tiny.py").exists()


# ---------------------------------------------------------------------------
# diff --rev: another revision's generated modules run in a child process of their own
# ---------------------------------------------------------------------------

ENDS_AT_IMPORT = "\nimport posix\n\nposix._exit(0)\n"
ONE_PATTERN_LESS = (  # a real difference from the working tree: the diff must exit 1
    "\n_built = get_x86_backend_config\n\n\ndef get_x86_backend_config():\n    config = _built()\n"
    "    config._pattern_complex_format_to_config.popitem()\n    return config\n"
)
EXITS_0_AT_EXIT = "\nimport atexit\nimport posix\n\natexit.register(posix._exit, 0)\n"
FORKS_AT_IMPORT = "\nimport os\n\nos.fork()\n"
THREAD_AT_IMPORT = "\nimport threading\nimport time\n\nthreading.Thread(target=time.sleep, args=(600,)).start()\n"


def with_old_module(project, added: str):
    """The project committed with its generated/x86.py ending in `added`, and the working tree as regenerate
    writes it: `diff --rev HEAD` builds the committed module."""
    module = project / "generated" / "x86.py"
    real = module.read_text()
    module.write_text(real + added)
    commit_all(project)
    module.write_text(real)


def test_an_old_module_that_ends_its_process_is_one_located_line(project):
    with_old_module(project, ENDS_AT_IMPORT)
    done = run(project, "diff", "--rev", "HEAD")
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: generated/x86.py:1: generated/x86.py at HEAD: its process ended without a "
                           "result"), line  # fmt: skip


def test_an_old_module_s_atexit_hook_cannot_turn_a_difference_into_exit_0(project):
    with_old_module(project, ONE_PATTERN_LESS + EXITS_0_AT_EXIT)
    done = run(project, "diff", "--rev", "HEAD")
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "x86" in done.stdout, done.stdout


def test_an_old_module_that_forks_gives_one_report(project):
    with_old_module(project, FORKS_AT_IMPORT)
    done = run(project, "diff", "--rev", "HEAD", "--format", "json")
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    report = json.loads(done.stdout)  # one JSON document, not two
    assert [backend["status"] for backend in report["backends"]] == ["same"], report


def test_a_thread_an_old_module_leaves_running_does_not_hold_diff(project):
    with_old_module(project, THREAD_AT_IMPORT)
    done = run(project, "diff", "--rev", "HEAD")
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
