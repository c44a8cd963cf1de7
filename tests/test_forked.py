"""What runs in a forked child gives the outcome a call in this process gives (generator/process.py Forked):
torch names never seen before are looked up beside the build, and diff runs the spec (once per side) while
torch imports. The same values and the same first error come back; a child that fails, dies or is stopped
by Ctrl-C leaves the call to this process or stops the run.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from generator import cache, cli, process
from generator.errors import UnknownTorchNameError
from generator.model import SourceLocation
from tests.support.builders import discover, unused_nn_op
from tests.support.projects import ROOT, commit_all, fresh_copy
from tests.support.shared_builds import worker_copy

# The tests below that run the generator on a project need only the spec files they are about (and the
# session's caches, which know every committed spec's torch names), project_with_only: the others would
# only be loaded, expanded and compared again in each run, in a fresh interpreter as in this one.


SAYS_WHERE = "\nimport os\nimport sys\n\nprint('spec/x86.py ran in', os.getpid(), file=sys.stderr)\n"
LAYOUT_END = "            ),\n        )\n    ],\n)\n"


def says_where(factory, project) -> None:
    """The project reduced to spec/x86.py, which says on standard error which process ran it, regenerated."""
    project.rmdir()  # worker_copy's empty folder: fresh_copy makes it
    fresh_copy(project, "x86", factory=factory)
    x86 = project / "spec" / "x86.py"
    x86.write_text("from generator.dsl import config, nn\n" + x86.read_text() + SAYS_WHERE)
    with contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(["--root", str(project), "regenerate"]) == 0


@pytest.fixture
def x86_says_where(tmp_path_factory):
    """A copy of its own of that project, built once per test run (three tests start from it)."""
    return worker_copy(tmp_path_factory, "x86-says-where", lambda folder: says_where(tmp_path_factory, folder))


def without_kept_loads(project):
    """The project with an empty model cache: every spec file must run again (else diff takes the loads
    regenerate kept, running nothing)."""
    shutil.rmtree(cache.Cache(project, cache.MODELS).folder, ignore_errors=True)
    return project


def test_diff_against_torch_runs_the_spec_once(x86_says_where, capsys) -> None:
    project = without_kept_loads(x86_says_where)
    assert cli.main(["--root", str(project), "diff", "--against-torch"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("no differences in ")
    assert err.count("spec/x86.py ran") == 1


# ---------------------------------------------------------------------------
# A torch name never seen before is looked up in a child process (generator.process)
# ---------------------------------------------------------------------------

TORCH_IN_PARENT = "torch imported by the generator's own process: "
# The CLI in a fresh interpreter, saying at exit whether its own process imported torch
# (a forked child ends with os._exit: no atexit of its own).
RUN_AND_TELL = (
    "import atexit, runpy, sys\n"
    f"atexit.register(lambda: print({TORCH_IN_PARENT!r} + str('torch' in sys.modules), file=sys.stderr))\n"
    "sys.argv = ['generator', *sys.argv[1:]]\n"
    "runpy.run_module('generator', run_name='__main__', alter_sys=True)\n"
)


def fresh_interpreter(project, *args: str):
    """`python -m generator --root PROJECT ARGS` in a new process: torch not imported yet."""
    command = [sys.executable, "-c", RUN_AND_TELL, "--root", str(project), *args]
    return subprocess.run(command, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True)


def outputs(project) -> dict[str, bytes]:
    files = [*(project / "generated").iterdir(), *(project / "docs").iterdir()]
    return {str(p.relative_to(project)): p.read_bytes() for p in files if p.is_file()}


def names_cache(project) -> dict:
    names = cache.Cache(project, cache.TORCH_NAMES)
    (entry,) = names.names()
    return json.loads(names.read(entry).payload)


# A torch name the project's spec files never use (nn.SiLU, unless a backend of the user's own quantizes it).
NEW_OP = unused_nn_op()


def with_new_op(project):
    common = project / "spec" / "_common.py"
    text = common.read_text()
    assert "    nn.ELU, nn.LeakyReLU," in text
    common.write_text(text.replace("    nn.ELU, nn.LeakyReLU,", f"    nn.ELU, nn.{NEW_OP}, nn.LeakyReLU,", 1))
    return project


def twin(project, tmp_path):
    """A second copy of the project fixture's copy (the session's caches included)."""
    return shutil.copytree(project, tmp_path / "twin")


def test_a_new_torch_name_is_looked_up_beside_the_build_with_the_same_result(project_with_only, tmp_path, capsys):
    project = project_with_only("x86")  # x86 uses DEFAULT_OPS (spec/_common.py), where the new name goes
    here = with_new_op(twin(project, tmp_path))
    forked = with_new_op(project)
    assert f"torch.nn.{NEW_OP}" not in names_cache(forked)
    run = fresh_interpreter(forked, "regenerate")
    assert run.returncode == 0, run.stderr
    # The parent never imported torch, yet the new name was looked up: by the child.
    assert run.stderr.splitlines()[-1] == TORCH_IN_PARENT + "False"
    assert names_cache(forked)[f"torch.nn.{NEW_OP}"]["kinds"] == ["module", "class", "callable"]
    assert cli.main(["--root", str(here), "regenerate"]) == 0  # torch imported: looked up in this process
    capsys.readouterr()
    assert outputs(forked) == outputs(here)
    assert names_cache(forked) == names_cache(here)


MINE = '''"""Two faults: which one is reported is the question."""

from generator.dsl import Backend, DTypeConfig, Module, config, nn, torch

wrong_kind = DTypeConfig(input_dtype=nn.Conv2d, output_dtype=torch.quint8)
right = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)

MODULE = Module(
    doc="Two faults.",
    backends=[
        Backend(
            name="mine",
            builder="get_mine_backend_config",
            doc="Two faults.",
            configs=[
                config(nn.Hardswish, [wrong_kind]),
                config(PATTERN, [right]),
            ],
        )
    ],
)
'''
KIND_ERROR = (
    "error: spec/mine.py:5: input_dtype must be a torch dtype such as torch.quint8, not nn.Conv2d (an nn.Module class)"
)
MISSING = "error: spec/mine.py:17: unknown torch name torch.nn.SiLUU: torch.nn has no 'SiLUU' (did you mean SiLU?)"


@pytest.mark.parametrize(
    "pattern, expected",
    [
        (f"nn.{NEW_OP}", KIND_ERROR),  # a new name that exists: the names' kinds are checked in the spec's order
        ("nn.SiLUU", MISSING),
        ('"veiw"', KIND_ERROR),  # a method name is looked up last
    ],
    ids=["new name, wrong kind", "missing name", "missing method name"],
)
def test_the_first_error_is_the_same_from_the_child_as_from_this_process(
    project_with_only, tmp_path, capsys, pattern, expected
) -> None:
    errors = []
    project = project_with_only("x86")
    (project / "spec" / "mine.py").write_text(MINE.replace("PATTERN", pattern))
    for name, copy in (("forked", project), ("here", twin(project, tmp_path))):
        before = outputs(copy)
        if name == "forked":
            run = fresh_interpreter(copy, "regenerate")
            code, err = run.returncode, run.stderr.splitlines()
            assert err.pop() == TORCH_IN_PARENT + "False"
        else:
            code, err = cli.main(["--root", str(copy), "regenerate"]), capsys.readouterr().err.splitlines()
        assert code == 2
        errors.append(err)
        assert outputs(copy) == before
    assert errors[0] == errors[1] == [expected]


# ---------------------------------------------------------------------------
# generator.process: the outcome is the one a call in this process gives
# ---------------------------------------------------------------------------


def _pid() -> int:
    return os.getpid()


def _located_error(line: int):
    raise UnknownTorchNameError("unknown torch name torch.nn.Nope", SourceLocation("spec/x.py", line))


def _bug_in_a_child_only(parent: int) -> str:
    if os.getpid() != parent:
        raise ValueError("a bug")
    return "made here"


def _unpicklable_in_a_child(parent: int):
    return (lambda: None) if os.getpid() != parent else "made here"


def _prints(text: str) -> str:
    print(text)
    return text


def test_a_forked_call_runs_in_a_child_and_returns_its_value() -> None:
    with process.Forked(_pid) as call:
        assert call.result() not in (None, os.getpid())


def test_a_generator_error_in_the_child_is_raised_here_with_its_location() -> None:
    with process.Forked(_located_error, 7) as call, pytest.raises(UnknownTorchNameError) as raised:
        call.result()
    assert str(raised.value) == "spec/x.py:7: unknown torch name torch.nn.Nope"


@pytest.mark.parametrize("function", [_bug_in_a_child_only, _unpicklable_in_a_child])
def test_anything_else_in_the_child_makes_the_call_here(function) -> None:
    with process.Forked(function, os.getpid()) as call:
        assert call.result() == "made here"


def _pid_after_a_while_in_a_child(parent: int) -> int:
    if os.getpid() != parent:
        time.sleep(30)
    return os.getpid()


def test_a_killed_child_makes_the_call_here() -> None:
    with process.Forked(_pid_after_a_while_in_a_child, os.getpid()) as call:
        os.kill(call.pid, signal.SIGKILL)
        assert call.result() == os.getpid()


def test_what_the_child_prints_goes_to_standard_error(capfd) -> None:
    with process.Forked(_prints, "said by the child") as call:
        assert call.result() == "said by the child"
    out, err = capfd.readouterr()
    assert (out, err) == ("", "said by the child\n")


# Ctrl-C reaches the whole job, and the parent passes it on to its children's groups: a child stopped by it
# says so, and the parent raises KeyboardInterrupt even when it missed the signal itself (torch's import can
# swallow a KeyboardInterrupt).
MISSED_CTRL_C = """
import os, pathlib, signal, sys, time
from generator import process

def slow_user_code():
    time.sleep(60)
    return "finished"

with process.Forked(slow_user_code) as call:
    pathlib.Path(sys.argv[2]).touch()
    try:
        time.sleep(60)  # as torch's import, which may swallow the KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    try:
        print(call.result())
    except KeyboardInterrupt:
        print("interrupted")
"""


@pytest.mark.parametrize("job", ["parent-misses-it", "ignored-by-the-job"])
def test_ctrl_c_stops_a_forked_call_unless_the_job_ignores_it(job, tmp_path) -> None:
    ready = tmp_path / "ready"
    ignored = job == "ignored-by-the-job"  # `trap '' INT; cmd &`: the whole job ignores Ctrl-C

    def as_a_job() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN if ignored else signal.default_int_handler)

    process = subprocess.Popen(
        [sys.executable, "-c", MISSED_CTRL_C, job, str(ready)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=as_a_job,
    )
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)  # the child is in its user code
    os.killpg(process.pid, signal.SIGINT)
    if ignored:
        with pytest.raises(subprocess.TimeoutExpired):
            process.communicate(timeout=1.5)
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return
    out, _ = process.communicate(timeout=20)
    assert out == "interrupted\n"


# ---------------------------------------------------------------------------
# diff between revisions: each side's spec lines are found in a child while torch imports
# ---------------------------------------------------------------------------


def test_diff_finds_each_side_s_spec_lines_in_a_child_process(x86_says_where, capsys) -> None:
    project = x86_says_where
    x86 = project / "spec" / "x86.py"
    commit_all(project)
    assert LAYOUT_END in x86.read_text()
    added = LAYOUT_END.replace("),", f") + [config(nn.{NEW_OP}, default)],")
    x86.write_text(x86.read_text().replace(LAYOUT_END, added, 1))
    assert cli.main(["--root", str(project), "regenerate"]) == 0
    capsys.readouterr()
    without_kept_loads(project)
    assert cli.main(["--root", str(project), "diff"]) == 1
    out, err = capsys.readouterr()
    assert re.fullmatch(rf"x86: \+ pattern nn\.{NEW_OP}  \(spec/x86\.py:\d+\)\n", out), out  # the spec line came back
    pids = [int(line.split()[-1]) for line in err.splitlines() if line.startswith("spec/x86.py ran in")]
    assert len(pids) == len(set(pids)) == 2 and os.getpid() not in pids  # HEAD's spec and the working tree's


# ---------------------------------------------------------------------------
# diff --against-torch: the spec runs in a child while torch imports
# ---------------------------------------------------------------------------


def fresh_process(project, *args: str) -> tuple[int, int, str, str]:
    """(pid, exit code, stdout, stderr) of `python -m generator --root PROJECT ARGS` in a new interpreter."""
    command = [sys.executable, "-c", RUN_AND_TELL, "--root", str(project), *args]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = process.communicate()
    return process.pid, process.returncode, out, err


def test_diff_against_torch_runs_the_spec_in_a_child_while_torch_imports(x86_says_where) -> None:
    project = without_kept_loads(x86_says_where)
    pid, code, out, err = fresh_process(project, "diff", "--against-torch")
    referenced = [b for b in discover(project) if b.reference is not None]  # no backend count written here
    backends = f"{len(referenced)} backend{'s' if len(referenced) != 1 else ''}"
    assert (code, out) == (0, f"no differences in {backends} (torch -> generated)\n"), err
    pids = [int(line.split()[-1]) for line in err.splitlines() if line.startswith("spec/x86.py ran in")]
    assert len(pids) == 1 and pids[0] != pid


def test_diff_against_torch_reports_a_spec_error_from_the_child_as_from_this_process(project_with_only, capsys):
    project = project_with_only("x86")
    x86 = project / "spec" / "x86.py"
    x86.write_text(x86.read_text() + "\nraise ValueError('broken on purpose')\n")
    _, code, out, err = fresh_process(project, "diff", "--against-torch")
    assert (code, out) == (2, "")
    assert err.splitlines()[:-1] == [line for line in [_in_process(capsys, project)] if line]
    assert err.splitlines()[-1] == TORCH_IN_PARENT + "False"  # the edit made generated/ stale: torch not needed


def _in_process(capsys, project) -> str:
    assert cli.main(["--root", str(project), "diff", "--against-torch"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    return err.rstrip("\n")
