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

from generator import cache, cli, files
from generator.freshness import manifest, planning
from generator.project import spec_files
from tests.support.projects import ROOT, at_one_path_fixture, committed, fresh_copy, git
from tests.support.shared_builds import built_once
from tests.test_bad_input import snapshot

COMMANDS = {
    "regenerate": ["regenerate"],
    "check": ["check"],
    "check --full": ["check", "--full"],
    "matrix": ["matrix"],
    "diff --against-torch": ["diff", "--against-torch"],
    "diff --rev": ["diff", "--rev", "HEAD"],
    "diff": ["diff"],
    "verify": ["verify", "x86"],
    "import": ["import", "env_builder:get_env_backend_config", "--name", "imported"],
}
# A fresh copy per test, at one path (see there), of the project with two spec files: x86, which the tests
# touch, and tensorrt, whose module the mode test removes. Each condition here is about the process, the
# options and the files around the run, not about what the other spec files make; each run loads less.
SPEC_FILES = ("tensorrt", "x86")
one_path_project = at_one_path_fixture("environment", *SPEC_FILES)
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
def repo(one_path_project, tmp_path_factory) -> Path:
    """The project copy as a git repository, so that `diff --rev HEAD` has a revision."""
    (one_path_project / "env_builder.py").write_text(ENV_BUILDER)  # what `import` reads
    return committed(one_path_project, tmp_path_factory, "environment")


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
    looked = ", ".join(str(folder) for folder in (tmp_path, *tmp_path.parents))
    assert err.splitlines() == [
        f"error: no project here: none of {looked} has a spec/ folder; "
        "run inside a project (any folder below the one holding spec/) or pass --root DIR"
    ]
    assert list(tmp_path.iterdir()) == []  # no cache, no output, nothing


def test_a_generated_folder_that_is_a_file_is_one_line_naming_it(one_path_project, capsys):
    shutil.rmtree(one_path_project / "generated")
    (one_path_project / "generated").write_text("not a folder\n")
    code, out, err = run(capsys, "--root", str(one_path_project), "regenerate", "--jobs", "1")
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.endswith(f"{one_path_project / 'generated'} is a file, not a folder\n"), err
    assert (one_path_project / "generated").read_text() == "not a folder\n"


@EVERY_COMMAND
def test_a_spec_folder_without_spec_files_is_one_line_and_deletes_nothing(command, repo, capsys):
    for spec in spec_files(repo):
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


def test_a_root_that_does_not_exist_is_said_to_be_no_folder(tmp_path, monkeypatch, capsys):
    missing = tmp_path / "missing"
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "--root", str(missing), "check")
    assert (code, out) == (2, "")
    assert err == f"error: {missing} is not a folder: pass --root the project's folder (the one holding spec/ or " \
        "its pyproject.toml)\n"
    assert not missing.exists()


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
    verified = last.startswith("verify: all ") and (last.endswith(" hold") or " hold; " in last)
    finished = ("up to date" in last, compared, last == matrix_unchanged, imported, verified)
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
def test_an_unwritable_folder_is_one_line_naming_the_file_and_files_stay_whole(
    command, one_path_project, capsys, monkeypatch
):
    spec = one_path_project / "spec" / "x86.py"
    spec.write_text(spec.read_text().replace('name="x86"', 'name="x86_edited"'))  # x86's module and the matrix change
    before = snapshot(one_path_project)
    real_open = os.open

    def unwritable(path, flags, *args):  # what a read-only folder does to anyone but root
        if flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(files.os, "open", unwritable)
    code, out, err = run(capsys, "--root", str(one_path_project), *command)
    assert code == 2
    assert len(err.splitlines()) == 1
    assert err.startswith(f"error: cannot write {one_path_project}/") and err.endswith(": Permission denied\n")
    named = Path(err.split("cannot write ")[1].split(": ")[0])
    # a generated file or the manifest that records them, not a temporary file
    assert named in {t.output for t in planning.plan(one_path_project)} | {one_path_project / manifest.PATH}
    assert snapshot(one_path_project) == before


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
        preexec_fn=as_a_foreground_job,
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


INTERRUPTED_AT_START = """
# Test only: Ctrl-C while the generator is still importing its modules (before its CLI runs).
import sys


class _Interrupting:
    def find_spec(self, name, path=None, target=None):
        if name == "generator.cli":
            raise KeyboardInterrupt
        return None


sys.meta_path.insert(0, _Interrupting())
"""


def test_ctrl_c_while_the_generator_starts_is_one_line_exit_130(one_path_project, tmp_path):
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(INTERRUPTED_AT_START)
    before = snapshot(one_path_project)
    env = dict(ENV, PYTHONPATH=os.pathsep.join([str(hook), ENV.get("PYTHONPATH", str(ROOT))]))
    done = subprocess.run([sys.executable, "-m", "generator", "--root", str(one_path_project), "regenerate"],
                          env=env, capture_output=True, text=True)  # fmt: skip
    assert (done.returncode, done.stdout) == (130, "")
    assert done.stderr == "error: interrupted; every file is its old or its new version\n"
    assert snapshot(one_path_project) == before


def as_a_foreground_job() -> None:
    """In the child, before exec: Ctrl-C reaches a foreground job, so SIGINT has its default action.

    A test run started as a background job (`pytest &`, nohup, some CI runners)
    inherits SIGINT ignored, and Python then never raises KeyboardInterrupt.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


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
def test_a_rewritten_file_keeps_its_mode_and_a_new_file_gets_the_umask_default(command, one_path_project, capsys):
    spec = one_path_project / "spec" / "x86.py"
    spec.write_text(spec.read_text().replace('doc="', 'doc="Touched: x86 is rewritten. ', 1))
    matrix = one_path_project / "templates" / "docs" / "support-matrix.md.j2"
    matrix.write_text(matrix.read_text() + "\nTouched: the matrix is rewritten.\n")
    rewritten = one_path_project / ("generated/x86.py" if command == ["regenerate"] else planning.MATRIX_OUTPUT)
    rewritten.chmod(0o604)  # unusual on purpose: neither a default nor mkstemp's 0600
    new = one_path_project / "generated" / "tensorrt.py"
    new.unlink()
    old_umask = os.umask(0o027)
    try:
        code, out, _ = run(capsys, "--root", str(one_path_project), *command)
    finally:
        os.umask(old_umask)
    assert code == 0 and f"written   {rewritten.relative_to(one_path_project)}" in out
    assert rewritten.stat().st_mode & 0o777 == 0o604
    if command == ["regenerate"]:
        assert new.stat().st_mode & 0o777 == 0o666 & ~0o027


BAD_OPTIONS = [["--jobs", "0"], ["--jobs", "-1"], ["--jobs", "two"], ["--root"], ["--no-such-option"]]


@pytest.fixture(scope="module")
def untouched_project(tmp_path_factory) -> Path:
    """One copy of the project for the tests whose command never starts (the options stop it first)."""
    return fresh_copy(tmp_path_factory.mktemp("untouched") / "project", *SPEC_FILES, factory=tmp_path_factory)


@EVERY_COMMAND
@pytest.mark.parametrize("bad", BAD_OPTIONS, ids=[" ".join(b) for b in BAD_OPTIONS])
def test_a_bad_option_value_is_a_usage_error(command, bad, untouched_project, capsys):
    project = untouched_project
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


def test_diff_without_a_revision_to_compare_says_why_in_one_line(repo, capsys, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(repo.parent))  # wherever the test's tmp folder is
    git_dir = repo / ".git"
    hidden = repo.parent / "hidden-git"
    git_dir.rename(hidden)  # the project in no git repository at all
    try:
        code, out, err = run(capsys, "--root", str(repo), "diff")
        assert (code, out) == (2, "")
        assert err == f"error: {repo} is in no git repository, so there is no HEAD; diff needs a git checkout\n"
        subprocess.run(["git", "init", "-q", str(repo)], check=True)  # a repository without a commit
        code, out, err = run(capsys, "--root", str(repo), "diff", "--rev", "HEAD~1..HEAD")
        assert (code, out) == (2, "")
        assert err == f"error: the git repository at {repo} has no commit yet, so there is no HEAD~1; commit first\n"
    finally:
        shutil.rmtree(git_dir, ignore_errors=True)
        hidden.rename(git_dir)
    for rev in ("HEAD...HEAD~1", "", "HEAD~1..HEAD..HEAD"):
        code, out, err = run(capsys, "--root", str(repo), "diff", "--rev", rev)
        assert (code, out, err) == (2, "", f"error: --rev takes a revision REV or a range A..B, not {rev!r}\n")


def test_a_bug_is_still_one_line(one_path_project, capsys, monkeypatch):
    def broken(root, recorded=None):
        raise ValueError("a bug in the generator")

    monkeypatch.setattr(planning, "plan", broken)
    code, out, err = run(capsys, "--root", str(one_path_project), "check")
    assert code == 2
    assert err.splitlines() == [
        "error: internal error: ValueError: a bug in the generator (GENERATOR_TRACEBACK=1 shows where; report it)"
    ]


# ---------------------------------------------------------------------------
# Locales, full and unencodable output, concurrent runs, unwritable folders
# ---------------------------------------------------------------------------

ASCII_LOCALE = {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}  # Python then reads ASCII


@pytest.fixture(scope="session")
def latin1_locale(tmp_path_factory) -> dict[str, str]:
    """An ISO-8859-1 locale, compiled into a private folder (few machines have one installed), once per run."""
    name = "en_US.ISO-8859-1"

    def compile_locale(folder: Path) -> None:
        folder.mkdir()
        done = subprocess.run(["localedef", "-i", "en_US", "-f", "ISO-8859-1", str(folder / name)], capture_output=True)
        (folder / "localedef.stderr").write_bytes(done.stderr if done.returncode not in (0, 1) else b"")  # 1: warnings

    folder = built_once(tmp_path_factory, "latin1-locale", compile_locale)
    failed = (folder / "localedef.stderr").read_bytes()
    if failed or not (folder / name).exists():
        pytest.skip(f"cannot compile the {name} locale here: {failed!r}")
    return {"LOCPATH": str(folder), "LC_ALL": name, "PYTHONUTF8": "0"}


@pytest.fixture(params=["ascii", "latin-1"])
def non_utf8_locale(request) -> dict[str, str]:
    return ASCII_LOCALE if request.param == "ascii" else request.getfixturevalue("latin1_locale")


def generator_run(project: Path, *args: str, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "generator", "--root", str(project), *args]
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **kwargs}
    return subprocess.run(command, env={**ENV, **(env or {})}, timeout=300, **streams)


def test_every_command_reads_and_writes_utf8_under_a_non_utf8_locale(non_utf8_locale, one_path_project):
    locale_encoding = subprocess.run(
        [sys.executable, "-c", "import locale, sys; print(locale.getpreferredencoding(), sys.stdout.encoding)"],
        env={**ENV, **non_utf8_locale}, capture_output=True, text=True,
    ).stdout  # fmt: skip
    assert "utf" not in locale_encoding.lower(), locale_encoding  # the locale really is not UTF-8
    # and it is the one asked for, not a fallback to ASCII for a locale that is not there
    assert locale_encoding.split()[-1] == ("iso8859-1" if "LOCPATH" in non_utf8_locale else "ascii"), locale_encoding
    assert generator_run(one_path_project, "check", env=non_utf8_locale).returncode == 0
    spec = one_path_project / "spec" / "x86.py"
    spec.write_text(spec.read_text(encoding="utf-8").replace('doc="', 'doc="Ünïcödé ◐ ', 1), encoding="utf-8")
    regenerate = generator_run(one_path_project, "regenerate", "--jobs", "1", env=non_utf8_locale)
    assert (regenerate.returncode, regenerate.stderr) == (0, b"")
    assert "Ünïcödé ◐".encode() in (one_path_project / "generated" / "x86.py").read_bytes()  # UTF-8 on disk
    for command in (["check"], ["check", "--full", "--jobs", "1"]):
        done = generator_run(one_path_project, *command, env=non_utf8_locale)
        assert (done.returncode, done.stderr) == (0, b""), command
        assert done.stdout.endswith(b"generated files are up to date\n")
    # A pipe that cannot carry the matrix's characters: escaped, not an error.
    matrix = generator_run(one_path_project, "matrix", "--stdout", env=non_utf8_locale)
    assert (matrix.returncode, matrix.stderr) == (0, b"")
    assert b"\\u25d0" in matrix.stdout and "◐".encode() not in matrix.stdout


def touch_x86(project: Path) -> None:
    """generated/x86.py and the matrix change."""
    spec = project / "spec" / "x86.py"
    spec.write_text(spec.read_text().replace('doc="', 'doc="Touched: x86 is rewritten. ', 1))
    matrix = project / "templates" / "docs" / "support-matrix.md.j2"
    matrix.write_text(matrix.read_text() + "\nTouched: the matrix is rewritten.\n")


@pytest.mark.parametrize("command", [["regenerate", "--jobs", "1"], ["matrix"], ["matrix", "--stdout"]])
def test_a_full_standard_output_is_one_line_naming_it_and_the_tree_stays_whole(command, one_path_project, capsys):
    touch_x86(one_path_project)
    with open("/dev/full", "w") as full:
        # Unbuffered, as in many CI runners: every line is written (and fails) at once.
        done = generator_run(one_path_project, *command, env={"PYTHONUNBUFFERED": "1"}, stdout=full)
    assert done.returncode == 2
    assert done.stderr == b"error: cannot write to standard output: No space left on device\n"
    code, out, err = run(capsys, "--root", str(one_path_project), "check")
    if command == ["matrix", "--stdout"]:
        assert code == 1  # it writes nothing: x86 and the matrix are still stale
    else:  # every file written, then the report failed: check accepts the tree
        assert code == (0 if command[0] == "regenerate" else 1), out
        assert "docs/support-matrix.md" not in out


@pytest.mark.parametrize("command", [["regenerate", "--jobs", "1"], ["check"], ["diff"]])
def test_a_stdout_the_shell_closed_is_one_line_naming_it_and_the_tree_stays_whole(command, repo, capsys):
    project = repo
    touch_x86(project)
    closed = ["sh", "-c", 'exec "$0" "$@" >&-', sys.executable, "-m", "generator", "--root", str(project), *command]
    done = subprocess.run(closed, env=ENV, stderr=subprocess.PIPE, timeout=300)
    assert (done.returncode, done.stderr) == (2, b"error: cannot write to standard output: it is closed\n")
    code, out, err = run(capsys, "--root", str(project), "check")
    assert code == (0 if command[0] == "regenerate" else 1), out  # regenerate wrote every file first


@pytest.mark.parametrize("command", [["--help"], ["check", "--help"]])
def test_help_that_cannot_reach_standard_output_is_one_line_not_a_silent_success(command, untouched_project):
    project = untouched_project
    with open("/dev/full", "w") as full:
        done = generator_run(project, *command, stdout=full)
    assert (done.returncode, done.stderr) == (2, b"error: cannot write to standard output: No space left on device\n")
    closed = ["sh", "-c", 'exec "$0" "$@" >&-', sys.executable, "-m", "generator", *command]
    done = subprocess.run(closed, env=ENV, stderr=subprocess.PIPE, timeout=60)
    assert (done.returncode, done.stderr) == (2, b"error: cannot write to standard output: it is closed\n")


def test_a_read_only_docs_folder_changes_no_file_at_all(one_path_project, capsys, monkeypatch):
    """The modules come before the matrix: without a check first, they were written, then the run failed."""
    touch_x86(one_path_project)
    before = snapshot(one_path_project)
    real_open = os.open

    def read_only_docs(path, flags, *args):
        if flags & os.O_CREAT and Path(path).parent == one_path_project / "docs":
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(files.os, "open", read_only_docs)
    code, out, err = run(capsys, "--root", str(one_path_project), "regenerate", "--jobs", "1")
    assert code == 2
    assert err == f"error: cannot write {one_path_project / planning.MATRIX_OUTPUT}: Permission denied\n"
    assert snapshot(one_path_project) == before


def test_a_regenerate_waits_for_one_already_running_and_both_leave_a_tree_check_accepts(one_path_project, capsys):
    touch_x86(one_path_project)
    before = snapshot(one_path_project)
    command = [sys.executable, "-m", "generator", "--root", str(one_path_project), "regenerate", "--jobs", "1"]
    lock = cache.lock_file(one_path_project)
    with files.project_lock(lock, waiting=lambda: None):  # as a running regenerate holds it
        process = subprocess.Popen(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        said = process.stderr.readline()
        assert said == "warning: another regenerate or matrix is running in this project; waiting for it to finish\n"
        time.sleep(0.5)
        assert process.poll() is None and snapshot(one_path_project) == before  # it waits, and writes nothing meanwhile
    out, err = process.communicate(timeout=300)
    assert (process.returncode, err) == (0, "")
    assert "written   generated/x86.py" in out
    assert run(capsys, "--root", str(one_path_project), "check")[0] == 0


def dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def test_two_regenerates_at_once_both_succeed_and_remove_no_temporary_file_of_anyone_else(one_path_project, capsys):
    touch_x86(one_path_project)
    others = [
        one_path_project / "docs" / ".notes.tmp",  # not the generator's at all
        one_path_project / "generated" / f".x86.py.{os.getpid()}-0123abcd.tmp",  # a live process's
    ]
    leftover = one_path_project / "generated" / f".x86.py.{dead_pid()}-0123abcd.tmp"  # a killed run's
    for path in [*others, leftover]:
        path.write_text("someone's\n")
    command = [sys.executable, "-m", "generator", "--root", str(one_path_project), "regenerate", "--jobs", "1"]
    runs = [subprocess.Popen(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    for process in runs:
        process.communicate(timeout=300)
        assert process.returncode == 0
    assert run(capsys, "--root", str(one_path_project), "check")[0] == 0
    assert all(path.read_text() == "someone's\n" for path in others)
    assert not leftover.exists()
    assert sorted(p.name for p in one_path_project.rglob(".*.tmp")) == sorted(p.name for p in others)
