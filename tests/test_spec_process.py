"""Each spec file loads in a process of its own (generator/loading/processes.py): issue 32's reproducers.

Nothing a spec does reaches another load or the command: the generator's own tables, the
standard library's state, the working folder and the hash seed are each load's own, and a
spec that exits, execs, kills itself or leaves threads ends its own process only; the
command reports one located line (exit 2), never a silent exit 0, a hang, or output on stdout.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.projects import fresh_copy


def run(project: Path, *args: str, cwd: Path | None = None, seed: str | None = None):
    environment = dict(os.environ)
    if seed is not None:
        environment["PYTHONHASHSEED"] = seed
    return subprocess.run(
        [sys.executable, "-m", "generator", "--root", str(project), *args],
        cwd=cwd or project,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


def append(path: Path, code: str) -> None:
    path.write_text(path.read_text() + "\n" + code + "\n")


@pytest.fixture
def project(tmp_path_factory, tmp_path) -> Path:
    return fresh_copy(tmp_path / "project", "native", "x86", factory=tmp_path_factory)


def one_line_error(done, *words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_a1_a_spec_that_changes_the_generator_s_tables_changes_no_other_module(project):
    before = (project / "generated" / "x86.py").read_text()
    append(project / "spec" / "native.py", 'import generator.spelling as _s\n_s.MODULE_ALIASES["torch.nn"] = "nnx"')
    assert run(project, "regenerate").returncode == 0
    append(project / "spec" / "x86.py", "# an edit: x86 loads again")
    done = run(project, "regenerate")
    assert done.returncode == 0, done.stderr
    assert (project / "generated" / "x86.py").read_text() == before  # no `nnx.` anywhere
    assert run(project, "check", "--full").returncode == 0


def test_a2_the_decimal_context_one_spec_sets_is_not_another_s(project):
    append(project / "spec" / "native.py", "import decimal as _d\n_d.getcontext().prec = 6")
    append(project / "spec" / "x86.py", "import decimal as _d\nassert _d.getcontext().prec == 28, 'leaked'")
    done = run(project, "regenerate", "--force")
    assert done.returncode == 0, done.stderr


def test_a3_a_spec_that_globs_relative_paths_loads_alike_from_any_folder(project):
    append(project / "spec" / "x86.py", "import glob as _g\nassert _g.glob('spec/*.py'), 'run from elsewhere'")
    for folder in (project, project / "spec", project / "generated"):
        done = run(project, "regenerate", "--force", cwd=folder)
        assert done.returncode == 0, (folder, done.stderr)


def test_a4_a_spec_iterating_a_set_of_strings_loads_alike_whatever_the_hash_seed(project, tmp_path):
    order = tmp_path / "order.txt"
    append(
        project / "spec" / "x86.py",
        "import os as _o\n"
        "with open(_o.environ['ACME_ORDER'], 'a') as _f:\n"
        "    _f.write(','.join({'conv', 'linear', 'relu', 'add', 'mul', 'cat', 'bmm', 'gelu'}) + '\\n')",
    )
    os.environ["ACME_ORDER"] = str(order)
    try:
        for seed in ("1", "2", "random"):
            assert run(project, "regenerate", "--force", seed=seed).returncode == 0
    finally:
        del os.environ["ACME_ORDER"]
    lines = order.read_text().splitlines()
    assert len(lines) == 3 and len(set(lines)) == 1, lines


ENDINGS = {
    "atexit": "import atexit as _a, os as _o\n_a.register(lambda: _o._exit(0))",
    "execv": "import os as _o\n_o.execv('/bin/true', ['true'])",
    "ctypes": "import ctypes as _c\n_c.CDLL(None)._exit(0)",
    "thread after the load": (
        "import os as _o, threading as _t, time as _tm\n"
        "_real = _o._exit\n"
        "_t.Thread(target=lambda: (_tm.sleep(0.05), _real(0))).start()"
    ),
    "audit hook": "import os as _o, sys as _s\n_real = _o._exit\n_s.addaudithook(lambda *a: _real(0))",
}


@pytest.mark.parametrize("ending", ENDINGS)
def test_b9_a_spec_that_ends_its_process_never_makes_check_pass_a_stale_tree(project, ending):
    (project / "generated" / "x86.py").write_text("# stale\n")
    append(project / "spec" / "x86.py", ENDINGS[ending])
    done = run(project, "check", "--full")
    assert done.returncode != 0, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    forced = run(project, "regenerate", "--force")
    if forced.returncode == 0:  # the ending never came within the load (atexit, a late thread): the output is whole
        assert (project / "generated" / "x86.py").read_text() != "# stale\n"
        assert run(project, "check", "--full").returncode == 0
    else:
        one_line_error(forced, "spec/x86.py")


def test_b10_an_exception_whose_str_raises_system_exit_is_one_located_line(project):
    append(
        project / "spec" / "x86.py",
        "class _E(Exception):\n    def __str__(self):\n        raise SystemExit(0)\nraise _E()",
    )
    for command in (["regenerate", "--force"], ["check", "--full"]):
        one_line_error(run(project, *command), "spec/x86.py")


def test_b11_a_thread_that_never_ends_holds_no_command_and_prints_nothing_on_stdout(project):
    append(
        project / "spec" / "x86.py",
        "import threading as _t, time as _tm\n"
        "def _forever():\n    while True:\n        _tm.sleep(0.01)\n        print('late line')\n"
        "_t.Thread(target=_forever).start()",
    )
    done = run(project, "regenerate", "--force")  # run's timeout fails a command that hangs
    assert done.returncode == 0, done.stderr
    matrix = run(project, "matrix", "--stdout")
    assert matrix.returncode == 0, matrix.stderr
    assert "late line" not in matrix.stdout
    assert matrix.stdout == (project / "docs" / "support-matrix.md").read_text()


def test_b12_a_spec_that_signals_itself_is_one_located_line(project):
    append(project / "spec" / "x86.py", "import os as _o, signal as _s\n_o.kill(_o.getpid(), _s.SIGTERM)")
    one_line_error(run(project, "regenerate", "--force"), "spec/x86.py", "SIGTERM")
    assert run(project, "check", "--full").returncode != 0


def test_without_os_fork_each_load_has_an_interpreter_of_its_own(project, monkeypatch):
    """Where the platform has no os.fork, a load server is started for each spec file."""
    from generator.loading import load_server, loader

    monkeypatch.setattr(load_server, "FORK", False)
    append(project / "spec" / "native.py", 'import generator.spelling as _s\n_s.MODULE_ALIASES["torch.nn"] = "nnx"')
    modules = loader.load_modules(project)
    assert [m.spec_file for m in modules] == ["spec/native.py", "spec/x86.py"]
    append(project / "spec" / "x86.py", "import os as _o, signal as _s\n_o.kill(_o.getpid(), _s.SIGTERM)")
    with pytest.raises(Exception, match="spec/x86.py:1: .*without a result"):
        loader.load_modules(project)


_PIPES = """import os as _os
def _pipe(fd):
    try:
        return "pipe:" in _os.readlink(f"/proc/self/fd/{fd}") and not _os.path.sameopenfile(fd, 2)
    except OSError:  # the listing's own descriptor, closed by now
        return False
_pipes = [fd for fd in map(int, _os.listdir("/proc/self/fd")) if fd > 2 and _pipe(fd)]
if len(_pipes) != 1:  # its own, to answer through; not the server's answers, nor another load's pipe
    raise RuntimeError(f"this load holds {len(_pipes)} pipes besides standard error")
if _os.read(0, 1 << 16) or not _os.path.samefile("/proc/self/fd/0", _os.devnull):
    raise RuntimeError("standard input is not empty")
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="/proc lists a process's files on Linux only")
def test_a_spec_can_neither_answer_for_another_nor_take_a_request(project):
    """A load's process holds one pipe, its own: not the one the server answers the command through,
    nor another load's, so spec code cannot answer for another spec file; and its standard input is
    empty, not the server's requests."""
    append(project / "spec" / "native.py", _PIPES)
    append(project / "spec" / "x86.py", _PIPES)
    done = run(project, "regenerate", "--force")
    assert done.returncode == 0, done.stderr
    assert run(project, "check", "--full").returncode == 0


@pytest.mark.parametrize("closed", [0, 2], ids=["stdin", "stderr"])
def test_loads_work_with_a_standard_stream_closed(project, closed):
    """A command started with standard input or error closed (a background job, `2>&-`) still loads: the
    server's pipes never take a standard stream's number."""
    before = (project / "generated" / "x86.py").read_text()
    append(project / "spec" / "x86.py", "# an edit: x86 loads again")
    done = subprocess.run(
        [sys.executable, "-m", "generator", "--root", str(project), "regenerate"],
        cwd=project, capture_output=closed != 2, text=True, timeout=300,
        stdout=subprocess.PIPE if closed == 2 else None,
        preexec_fn=lambda: os.close(closed),
    )  # fmt: skip
    assert done.returncode == 0, done
    assert (project / "generated" / "x86.py").read_text() == before
    assert run(project, "check", "--full").returncode == 0


def test_a_spec_that_signals_its_process_group_ends_no_more_than_the_loads(project):
    """The load server has a session of its own, and a spec's os.killpg(0, SIGTERM) is refused at its line before
    the signal is sent: the command says so in one line (exit 2) instead of being killed with the loads."""
    append(project / "spec" / "x86.py", "import os as _o, signal as _s\n_o.killpg(0, _s.SIGTERM)")
    done = subprocess.run([sys.executable, "-m", "generator", "--root", str(project), "regenerate", "--force"],
                          capture_output=True, text=True, timeout=300, start_new_session=True)  # fmt: skip
    one_line_error(done, "must not signal the process that loads spec files", "spec/x86.py")


def test_a_project_under_a_folder_named_like_a_package_folder_records_its_reads(tmp_path_factory, tmp_path):
    """The folders above a project are no business of its: in /srv/dist-packages/acme its spec files are inputs
    like any project's, so check passes after regenerate and sees an edit."""
    project = fresh_copy(tmp_path / "x-dist-packages" / "project", "x86", factory=tmp_path_factory)
    assert run(project, "regenerate", "--force").returncode == 0
    assert run(project, "check").returncode == 0
    spec = project / "spec" / "x86.py"
    spec.write_text(spec.read_text().replace('doc="', 'doc="Edited. ', 1))  # an edit that reaches the module
    done = run(project, "check")
    assert done.returncode == 1 and "spec/x86.py changed" in done.stdout, done.stdout


_LEFT_BEHIND = """import os as _o, time as _t
_o.write(2, b"said while loading\\\\n")
if _o.fork() == 0:  # a process the spec leaves behind, printing late
    _t.sleep(30)
    _o.write(2, b"said too late\\\\n")
    _o._exit(0)
"""


def test_a_process_a_spec_leaves_behind_holds_no_stream_of_the_command_s(project):
    """What a load writes to its standard error reaches the command's; a process the spec leaves behind holds
    none of the command's streams, so a reader of the command's output (`2>&1 | cat`) is not kept waiting."""
    append(project / "spec" / "x86.py", _LEFT_BEHIND)
    started = time.monotonic()
    done = subprocess.run(f"{sys.executable} -m generator --root {project} regenerate --force 2>&1 | cat",
                          shell=True, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert time.monotonic() - started < 20, done.stdout
    assert "said while loading" in done.stdout and "said too late" not in done.stdout, done.stdout
    assert "written" in done.stdout or "unchanged" in done.stdout, done.stdout
