"""Every command in a hostile environment: one line or a quiet exit, never a traceback, never a broken file.

Each condition is driven through every command (regenerate, check, check --full,
matrix, diff --against-torch, diff --rev): outside a project, a wrong --root,
--root after the command, an unwritable target, Ctrl-C (SIGINT to the process
group of a real run, at a point the test waits for), a closed stdout, bad option
values. File modes are checked on regenerate and matrix, the commands that write.
"""

import dataclasses
import errno
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from generator import cli, manifest, planning, writing
from tests.conftest import ROOT, commit_all, git
from tests.test_bad_input import snapshot

COMMANDS = {
    "regenerate": ["regenerate"],
    "check": ["check"],
    "check --full": ["check", "--full"],
    "matrix": ["matrix"],
    "diff --against-torch": ["diff", "--against-torch"],
    "diff --rev": ["diff", "--rev", "HEAD"],
    "diff": ["diff"],
    "import": ["import", "env_builder:get_env_backend_config", "--name", "imported"],
}
EVERY_COMMAND = pytest.mark.parametrize("command", list(COMMANDS.values()), ids=list(COMMANDS))
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


ENV_BUILDER = """
import os, pathlib, time

import torch
from torch.ao.quantization.backend_config import BackendConfig, BackendPatternConfig, DTypeConfig


def get_env_backend_config():
    if "READY_FILE" in os.environ:  # the Ctrl-C test: hold the run here until SIGINT
        pathlib.Path(os.environ["READY_FILE"]).touch()
        time.sleep(120)
    quint8 = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)
    relu = BackendPatternConfig(torch.nn.ReLU).set_dtype_configs([quint8])
    return BackendConfig("env").set_backend_pattern_config(relu)
"""


@pytest.fixture
def repo(project) -> Path:
    """The project copy as a git repository, so that `diff --rev HEAD` has a revision."""
    (project / "env_builder.py").write_text(ENV_BUILDER)  # what `import` reads
    return commit_all(project)


def run(capsys, *args) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@EVERY_COMMAND
def test_outside_a_project_one_line_suggests_root_and_writes_nothing(command, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *command)
    assert code == 2 and out == ""
    assert err.splitlines() == [
        f"error: {tmp_path} is not a project root: it has no spec/ folder; "
        "run in the project's folder or pass --root DIR"
    ]
    assert list(tmp_path.iterdir()) == []  # no cache, no output, nothing


def test_a_generated_folder_that_is_a_file_is_one_line_naming_it(project, capsys):
    shutil.rmtree(project / "generated")
    (project / "generated").write_text("not a folder\n")
    code, out, err = run(capsys, "--root", str(project), "regenerate", "--jobs", "1")
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.endswith(f"{project / 'generated'} is a file, not a folder\n"), err
    assert (project / "generated").read_text() == "not a folder\n"


@EVERY_COMMAND
def test_a_spec_folder_without_spec_files_is_one_line_and_deletes_nothing(command, repo, capsys):
    for spec in planning.spec_files(repo):
        spec.unlink()
    before = snapshot(repo)
    code, out, err = run(capsys, "--root", str(repo), *command)
    if command[0] == "import":  # the way to write the first spec file
        assert code == 0 and (repo / "spec" / "imported.py").exists(), err
        return
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "has no spec files" in err, err
    assert snapshot(repo) == before


@EVERY_COMMAND
@pytest.mark.parametrize("where", ["before", "after"])
def test_a_wrong_root_before_or_after_the_command_is_one_line(command, where, tmp_path, monkeypatch, capsys):
    wrong = tmp_path / "not-a-project"
    wrong.mkdir()
    monkeypatch.chdir(tmp_path)
    args = ["--root", str(wrong), *command] if where == "before" else [*command, "--root", str(wrong)]
    code, out, err = run(capsys, *args)
    assert code == 2 and len(err.splitlines()) == 1 and f"error: {wrong} is not a project root" in err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["not-a-project"]


@EVERY_COMMAND
def test_root_after_the_command_works_like_before_it(command, repo, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # not a project: only --root can point the command at one
    code, out, err = run(capsys, *command, "--root", str(repo))
    assert (code, err) == (0, "")  # every other test here gives --root before the command
    last = out.splitlines()[-1]
    matrix_unchanged = f"unchanged {planning.MATRIX_OUTPUT}"
    nothing_differs = ("no differences in ", "no undeclared differences in ")  # diff
    compared = any(line.startswith(nothing_differs) for line in out.splitlines())
    imported = last == "next: python -m generator regenerate"
    finished = ("up to date" in last, compared, last == matrix_unchanged, imported)
    assert any(finished), out


@EVERY_COMMAND
def test_a_target_that_cannot_be_written_or_read_is_one_line_naming_it(command, repo, capsys):
    # A folder where a generated file belongs cannot be read or replaced, even by root.
    blocked = repo / "generated" / "x86.py"
    blocked.unlink()
    blocked.mkdir()
    code, out, err = run(capsys, "--root", str(repo), *command)
    if command[0] in ("matrix", "import"):  # the spec only, or nothing of generated/
        assert code == 0 and err == ""
    else:
        assert code == 2 and len(err.splitlines()) == 1 and str(blocked.relative_to(repo)) in err, err


@pytest.mark.parametrize("command", [["regenerate"], ["matrix"]], ids=["regenerate", "matrix"])
def test_an_unwritable_folder_is_one_line_naming_the_file_and_files_stay_whole(command, project, capsys, monkeypatch):
    spec = project / "spec" / "x86.py"
    spec.write_text(spec.read_text() + "# touched: x86 and the matrix are out of date\n")
    before = snapshot(project)
    real_open = os.open

    def unwritable(path, flags, *args):  # what a read-only folder does to anyone but root
        if flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(writing.os, "open", unwritable)
    code, out, err = run(capsys, "--root", str(project), *command)
    assert code == 2
    assert len(err.splitlines()) == 1
    assert err.startswith(f"error: cannot write {project}/") and err.endswith(": Permission denied\n")
    named = Path(err.split("cannot write ")[1].split(": ")[0])
    # a generated file or the manifest that records them, not a temporary file
    assert named in {t.output for t in planning.plan(project)} | {project / manifest.PATH}
    assert snapshot(project) == before


SLOW_SPEC = """
# Test only: hold the run here, while the spec loads, until the test has sent SIGINT.
import os as _os, pathlib as _pathlib, time as _time
_pathlib.Path(_os.environ["READY_FILE"]).touch()
_time.sleep(120)
"""


@EVERY_COMMAND
def test_ctrl_c_is_one_line_exit_130_no_worker_left_and_no_file_changed(command, repo, tmp_path):
    spec = repo / "spec" / "x86.py"
    spec.write_text(spec.read_text() + SLOW_SPEC)
    if command[0] == "diff":  # diff refuses a stale tree before loading the spec: record the edit as made
        recorded = manifest.read(repo)
        digest = hashlib.sha256(spec.read_bytes()).hexdigest()
        inputs = {**recorded.inputs, "spec/x86.py": digest}
        (repo / manifest.PATH).write_text(dataclasses.replace(recorded, inputs=inputs).text())
        # diff builds only modules that differ between the sides, and only then loads the spec:
        # HEAD gets another generated/x86.py, so that diff builds it and loads the spec.
        module = repo / "generated" / "x86.py"
        current = module.read_bytes()
        module.write_bytes(current + b"# as committed\n")
        git(repo, "commit", "-qam", "x86 as committed")
        module.write_bytes(current)
    before = snapshot(repo)
    ready = tmp_path / "ready"
    jobs = ["--jobs", "2"] if command[0] in ("regenerate", "check") else []  # formatting workers exist
    process = subprocess.Popen(
        [sys.executable, "-m", "generator", "--root", str(repo), *command, *jobs],
        env=dict(ENV, READY_FILE=str(ready)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    deadline = time.monotonic() + 60
    while not ready.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ready.exists(), process.communicate()
    os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C does: every process of the job gets it
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130
    assert err == "error: interrupted; every file is its old or its new version\n"
    assert snapshot(repo) == before
    assert no_process_left(process.pid)


def no_process_left(group: int) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@EVERY_COMMAND
def test_a_closed_stdout_is_a_quiet_exit(command, repo):
    read_end, write_end = os.pipe()
    os.close(read_end)  # like `| head -1` after head has exited: every write fails
    try:
        done = subprocess.run(
            [sys.executable, "-m", "generator", "--root", str(repo), *command],
            env=ENV,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (cli.CLOSED_OUTPUT, "")


@pytest.mark.parametrize("command", [["regenerate"], ["matrix"]], ids=["regenerate", "matrix"])
def test_a_rewritten_file_keeps_its_mode_and_a_new_file_gets_the_umask_default(command, project, capsys):
    spec = project / "spec" / "x86.py"
    spec.write_text(spec.read_text().replace('doc="', 'doc="Touched: x86 is rewritten. ', 1))
    matrix = project / "templates" / "docs" / "support-matrix.md.j2"
    matrix.write_text(matrix.read_text() + "\nTouched: the matrix is rewritten.\n")
    rewritten = project / ("generated/x86.py" if command == ["regenerate"] else planning.MATRIX_OUTPUT)
    rewritten.chmod(0o604)  # unusual on purpose: neither a default nor mkstemp's 0600
    new = project / "generated" / "tensorrt.py"
    new.unlink()
    old_umask = os.umask(0o027)
    try:
        code, out, _ = run(capsys, "--root", str(project), *command)
    finally:
        os.umask(old_umask)
    assert code == 0 and f"written   {rewritten.relative_to(project)}" in out
    assert rewritten.stat().st_mode & 0o777 == 0o604
    if command == ["regenerate"]:
        assert new.stat().st_mode & 0o777 == 0o666 & ~0o027


BAD_OPTIONS = [["--jobs", "0"], ["--jobs", "-1"], ["--jobs", "two"], ["--root"], ["--no-such-option"]]


@EVERY_COMMAND
@pytest.mark.parametrize("bad", BAD_OPTIONS, ids=[" ".join(b) for b in BAD_OPTIONS])
def test_a_bad_option_value_is_a_usage_error(command, bad, project, capsys):
    if bad[0] == "--jobs" and command[0] not in ("regenerate", "check"):
        bad = ["--no-such-option"]  # only regenerate and check take --jobs
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--root", str(project), *command, *bad])
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2 and out == ""
    assert err.startswith("usage: ") and "Traceback" not in err
    assert f"error: argument {bad[0]}" in err or "unrecognized arguments" in err


def test_an_unknown_backend_for_diff_is_one_line(repo, capsys):
    for side in (["--against-torch"], ["--rev", "HEAD"]):
        code, out, err = run(capsys, "--root", str(repo), "diff", *side, "no_such_backend")
        assert code == 2 and len(err.splitlines()) == 1 and "unknown backend(s) no_such_backend" in err


def test_a_bug_is_still_one_line(project, capsys, monkeypatch):
    def broken(root):
        raise ValueError("a bug in the generator")

    monkeypatch.setattr(planning, "plan", broken)
    code, out, err = run(capsys, "--root", str(project), "check")
    assert code == 2
    assert err.splitlines() == [
        "error: internal error: ValueError: a bug in the generator (GENERATOR_TRACEBACK=1 shows where; report it)"
    ]
