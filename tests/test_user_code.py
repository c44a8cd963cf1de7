"""Spec files and builders are arbitrary Python, and nothing they do can make a command lie.

Through the real CLI, on a copy of the project:
- the inputs recorded for a generated file are every project file its spec load
  read (a relative import, a helper module in the project, a data file it opens),
  so `check` sees an edit to any of them and `regenerate` rewrites the file;
- one spec file cannot change what another produces, whatever it mutates;
- whatever user code raises (SystemExit 0 included) is one located line, exit 2,
  nothing written, and what it prints never reaches standard output;
- code a spec file defines (a module __getattr__, a property, a finalizer) runs in the
  guard too, whenever the generator comes to run it.
How each load is isolated from the others in one process: tests/test_spec_isolation.py.
"""

import functools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from generator import cache, cli
from tests.support.projects import ROOT, commit_all, git, reduced_keeping_its_caches
from tests.support.spec_code import run

ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def generator(project: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "generator", *args], cwd=project, env=env or ENV, capture_output=True, text=True,
        timeout=300,
    )


def snapshot(project: Path) -> dict[str, bytes]:
    """Every file regenerate could write."""
    files = [*(project / "generated").iterdir(), *(project / "docs").iterdir()]
    return {str(p.relative_to(project)): p.read_bytes() for p in files if p.is_file()}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, (path, old)
    path.write_text(text.replace(old, new))


def written(done: subprocess.CompletedProcess) -> set[str]:
    return {line.split()[1] for line in done.stdout.splitlines() if line.startswith("written ")}


def stale(done: subprocess.CompletedProcess) -> set[str]:
    return {line.split(":")[0] for line in done.stdout.splitlines() if ": stale" in line}


def in_process(capfd, project: Path, *args: str) -> subprocess.CompletedProcess:
    """A command run by cli.main in this process, where torch and the generator are imported already.

    capfd sees what reaches file descriptors 1 and 2, as a subprocess's pipes would.
    """
    capfd.readouterr()
    code = cli.main(["--root", str(project), *args])
    out, err = capfd.readouterr()
    return subprocess.CompletedProcess(args, code, out, err)


@pytest.fixture(scope="module")
def keep_only(tmp_path_factory):
    """keep_only(project, *names): the project replaced by the project reduced to some spec files (and what they
    import), regenerated with the caches that run left, so that each run renders less
    (projects.reduced_keeping_its_caches: each reduction is regenerated once per test run, then copied)."""
    return lambda project, *names: reduced_keeping_its_caches(tmp_path_factory, project, *names)


def here(capfd, project: Path) -> Callable[..., subprocess.CompletedProcess]:
    """run(*args): the command on project by cli.main in this process (in_process)."""
    return functools.partial(in_process, capfd, project)


def regenerated_cleanly(run: Callable[..., subprocess.CompletedProcess]) -> subprocess.CompletedProcess:
    done = run("regenerate")
    assert done.returncode == 0, done.stderr
    return done


def assert_fresh(run: Callable[..., subprocess.CompletedProcess]) -> None:
    for command in (["check"], ["check", "--full"]):
        done = run(*command)
        assert done.returncode == 0, (command, done.stdout, done.stderr)


# ---------------------------------------------------------------------------
# Inputs are what the load really read
# ---------------------------------------------------------------------------

DROPPED_OP = "nn.Dropout, "  # in spec/_common.py's DEFAULT_OPS, which fbgemm's default ops use


def test_an_edit_to_a_relatively_imported_module_makes_its_importer_stale(fresh_project, keep_only, capfd):
    run = here(capfd, keep_only(fresh_project, "fbgemm", "x86"))
    edit(fresh_project / "spec" / "fbgemm.py", "from spec._common import (", "from ._common import (")
    regenerated_cleanly(run)
    edit(fresh_project / "spec" / "_common.py", DROPPED_OP, "")
    before = run("check")
    assert before.returncode == 1
    assert "generated/fbgemm.py" in stale(before)
    assert "generated/fbgemm.py: stale: spec/_common.py changed" in before.stdout
    assert "generated/fbgemm.py" in written(regenerated_cleanly(run))
    assert "nn.Dropout" not in (fresh_project / "generated" / "fbgemm.py").read_text()
    assert_fresh(run)


HELPER = '''\
"""A helper module of the user's own, in the project root: it reads a data file too."""

from pathlib import Path

DOC = "FBGEMM, as the helper describes it."
NOTE = (Path(__file__).parent / "data" / "note.txt").read_text().strip()
'''


def test_an_edit_to_a_helper_module_or_a_file_it_reads_makes_the_spec_stale(fresh_project, keep_only, capfd):
    run = here(capfd, keep_only(fresh_project, "fbgemm"))
    (fresh_project / "myops.py").write_text(HELPER)
    (fresh_project / "data").mkdir()
    (fresh_project / "data" / "note.txt").write_text("first note\n")
    spec = fresh_project / "spec" / "fbgemm.py"
    edit(spec, "from generator.dsl import", "from myops import DOC, NOTE\nfrom generator.dsl import")
    edit(spec, 'doc="BackendConfig for PyTorch\'s native FBGEMM backend."', 'doc=DOC + " " + NOTE')
    regenerated_cleanly(run)
    module = fresh_project / "generated" / "fbgemm.py"
    assert "FBGEMM, as the helper describes it. first note" in module.read_text()

    for path, old, new, shown in (
        (
            fresh_project / "myops.py",
            "as the helper describes it",
            "as the edited helper says",
            "as the edited helper says",
        ),
        (fresh_project / "data" / "note.txt", "first note", "second note", "second note"),
    ):
        edit(path, old, new)
        before = run("check")
        assert before.returncode == 1, before.stdout
        relative = path.relative_to(fresh_project).as_posix()
        assert f"generated/fbgemm.py: stale: {relative} changed" in before.stdout
        assert "generated/fbgemm.py" in written(regenerated_cleanly(run))
        assert shown in module.read_text()
    assert_fresh(run)


FUSERS = '''\
"""The backend's own fuser, which the generated module imports by name."""

import torch


def fuse_conv_relu(is_qat, conv, relu):
    return torch.ao.nn.intrinsic.ConvReLU2d(conv, relu)
'''


def test_an_edit_to_the_project_module_an_importable_name_points_to_makes_its_user_stale(fresh_project, keep_only):
    keep_only(fresh_project, "fbgemm")
    (fresh_project / "my_pkg").mkdir()
    (fresh_project / "my_pkg" / "__init__.py").write_text("")
    (fresh_project / "my_pkg" / "fusers.py").write_text(FUSERS)
    spec = fresh_project / "spec" / "my_backend.py"  # the spec itself never imports my_pkg
    spec.write_text((ROOT / "tests" / "custom_backends" / "tutorial" / "spec" / "my_backend.py").read_text())
    edit(spec, "    config,\n", "    config,\n    importable,\n")
    edit(spec, "fuser_method=sequential(nni.ConvReLU2d)", 'fuser_method=importable("my_pkg.fusers.fuse_conv_relu")')
    # my_pkg importable from anywhere
    installed = dict(ENV, PYTHONPATH=os.pathsep.join([str(ROOT), str(fresh_project)]))
    run = functools.partial(generator, fresh_project, env=installed)  # a real process: the environment installs my_pkg
    regenerated_cleanly(run)
    assert "from my_pkg.fusers import fuse_conv_relu" in (fresh_project / "generated" / "my_backend.py").read_text()
    fusers = fresh_project / "my_pkg" / "fusers.py"
    edit(fusers, "    return", "    # an edit that may change what the name is\n    return")
    manifest = (fresh_project / "generated" / "manifest.json").read_bytes()
    # The module only imports the name, so its text stays: check renders it once to know, and passes.
    assert_fresh(run)
    regenerated_cleanly(run)
    assert (fresh_project / "generated" / "manifest.json").read_bytes() == manifest  # nothing to commit


def test_diff_judges_a_revision_by_the_helper_files_its_spec_read(fresh_project, keep_only, capfd):
    run = here(capfd, keep_only(fresh_project, "fbgemm"))
    (fresh_project / "myops.py").write_text('DOC = "FBGEMM, as the helper describes it."\n')
    spec = fresh_project / "spec" / "fbgemm.py"
    edit(spec, "from generator.dsl import", "from myops import DOC\nfrom generator.dsl import")
    edit(spec, 'doc="BackendConfig for PyTorch\'s native FBGEMM backend."', "doc=DOC")
    regenerated_cleanly(run)
    commit_all(fresh_project)
    (fresh_project / "NOTES.md").write_text("a commit that changes no input\n")
    git(fresh_project, "add", "-A")
    git(fresh_project, "commit", "-qm", "notes")
    done = run("diff", "--rev", "HEAD~1..HEAD")
    assert done.returncode == 0, (done.stdout, done.stderr)  # not "out of date": myops.py is read at HEAD too
    assert "out of date" not in done.stdout


# ---------------------------------------------------------------------------
# Spec files cannot affect each other
# ---------------------------------------------------------------------------

MUTATION = """
# Mutates the op list every other backend's spec imports, and the vocabulary, after this module is made.
import spec._common
spec._common.DEFAULT_OPS.pop()
spec._common.DEFAULT_OPS.append(spec._common.DEFAULT_OPS[0])
import generator.dsl
generator.dsl.config = None
import generator.loading.spec_values
generator.loading.spec_values.spec_location = None
"""


def test_one_spec_file_mutating_a_shared_list_changes_no_other_output(fresh_project, keep_only):
    keep_only(fresh_project, "executorch", "qnnpack", "fbgemm")
    before = snapshot(fresh_project)
    spec = fresh_project / "spec" / "executorch.py"  # loaded first: every other load would see the mutation
    spec.write_text(spec.read_text() + MUTATION)
    # a fresh interpreter: the spec mutates the generator's own modules
    run = functools.partial(generator, fresh_project)
    regenerated_cleanly(run)
    after = snapshot(fresh_project)
    changed = sorted(name for name in before if before[name] != after[name])
    assert changed == []  # no output changes, so neither does the manifest: nothing to commit
    assert_fresh(run)


# ---------------------------------------------------------------------------
# User code cannot end or bend a run
# ---------------------------------------------------------------------------

ENDINGS = {
    "exit 0": "import sys; sys.exit(0)",
    "exit 3": "import sys; sys.exit(3)",
    "GeneratorExit": "raise GeneratorExit",
    "BaseException": "raise BaseException('boom')",
    "KeyboardInterrupt": "raise KeyboardInterrupt",
}
RAISED = {
    "exit 0": "SystemExit(0)",
    "exit 3": "SystemExit(3)",
    "GeneratorExit": "GeneratorExit",
    "BaseException": "BaseException: boom",
    "KeyboardInterrupt": "KeyboardInterrupt",
}


@pytest.mark.parametrize("command", [["regenerate"], ["check"], ["check", "--full"]], ids=" ".join)
@pytest.mark.parametrize("ending", ENDINGS)
def test_a_spec_that_exits_or_raises_a_base_exception_is_one_located_line(
    ending, command, fresh_project, keep_only, capfd
):
    keep_only(fresh_project, "x86")  # the other spec files would run first, for nothing
    spec = fresh_project / "spec" / "x86.py"
    spec.write_text(spec.read_text() + ENDINGS[ending] + "\n")
    line = len(spec.read_text().splitlines())
    before = snapshot(fresh_project)
    done = in_process(capfd, fresh_project, *command)  # an exit that escaped would end cli.main, and fail the test
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"error: spec/x86.py:{line}: loading spec/x86.py raised {RAISED[ending]}")
    assert snapshot(fresh_project) == before


def test_os_exit_in_a_spec_cannot_make_check_pass_a_stale_tree(fresh_project, keep_only):
    # A real process: os._exit ends it without unwinding, so only the exit code can tell.
    keep_only(fresh_project, "x86")  # the other spec files would run first, for nothing
    spec = fresh_project / "spec" / "x86.py"
    spec.write_text(spec.read_text() + "import os; os._exit(0)\n")
    line = len(spec.read_text().splitlines())
    shutil.rmtree(fresh_project / ".cache", ignore_errors=True)  # a cold lint cache: check runs the spec
    before = snapshot(fresh_project)
    for command in (["check"], ["regenerate"]):
        done = generator(fresh_project, *command)
        assert (done.returncode, done.stdout) == (2, ""), (command, done.stdout, done.stderr)
        assert done.stderr == (
            f"error: spec/x86.py:{line}: loading spec/x86.py raised os._exit(0) "
            "(user code must not exit: remove the os._exit() or raise an Exception instead)\n"
        )
    assert snapshot(fresh_project) == before


PRINTS = """
import os as _os, sys as _sys
print("printed by the spec")
_sys.stdout.write("written by the spec\\n")
_os.write(1, b"written to fd 1 by the spec\\n")
"""


def test_what_a_spec_prints_never_reaches_standard_output(fresh_project, keep_only, capfd):
    run = here(capfd, keep_only(fresh_project, "x86"))  # capfd: what reaches file descriptors 1 and 2
    spec = fresh_project / "spec" / "x86.py"
    commit_all(fresh_project)
    # A real change, so that diff builds x86 and loads its spec (for its lines); and the prints.
    edit(spec, "weighted = [x86_weighted_op_int8_dtype_config]", "weighted = [x86_default_op_quint8_dtype_config]")
    spec.write_text(spec.read_text() + PRINTS)
    regenerated_cleanly(run)
    matrix = run("matrix", "--stdout")
    assert matrix.returncode == 0, matrix.stderr
    assert matrix.stdout == (fresh_project / "docs" / "support-matrix.md").read_text()
    assert "printed by the spec" in matrix.stderr and "written to fd 1 by the spec" in matrix.stderr
    shutil.rmtree(cache.Cache(fresh_project, cache.MODELS).folder)  # diff would take the load regenerate kept
    diff = run("diff", "--format", "json")  # HEAD against the working tree
    assert "printed by the spec" in diff.stderr  # the spec was loaded (for its lines) ...
    document = json.loads(diff.stdout)  # ... and standard output is JSON only
    assert isinstance(document, dict)


EXITING_BUILDER = '''\
def get_quitter_backend_config():
    print("leaving")
    raise SystemExit(0)
'''


def test_import_of_a_builder_that_exits_is_one_located_line_and_writes_nothing(fresh_project, capfd):
    (fresh_project / "quitter.py").write_text(EXITING_BUILDER)
    done = in_process(capfd, fresh_project, "import", "quitter:get_quitter_backend_config")  # torch imported already
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert done.stderr.splitlines()[-1].startswith(
        "error: quitter.py:3: quitter:get_quitter_backend_config() raised SystemExit(0)"
    )
    assert not (fresh_project / "spec" / "quitter.py").exists()


def test_diff_of_a_revision_whose_generated_module_exits_is_one_located_line(fresh_project, keep_only, capfd):
    keep_only(fresh_project, "fbgemm")  # the other modules would be compared for nothing
    commit_all(fresh_project)
    module = fresh_project / "generated" / "fbgemm.py"
    good = module.read_text()
    module.write_text(good.replace("\nimport ", "\nraise SystemExit(0)\nimport ", 1))
    line = module.read_text().splitlines().index("raise SystemExit(0)") + 1
    git(fresh_project, "commit", "-qam", "a generated module that exits")
    module.write_text(good)
    git(fresh_project, "commit", "-qam", "repaired")
    # an escaped exit fails
    done = in_process(capfd, fresh_project, "diff", "--rev", "HEAD~1..HEAD", "--format", "json")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr == f"error: generated/fbgemm.py at HEAD~1:{line}: generated/fbgemm.py at HEAD~1 raised " \
        "SystemExit(0) (user code must not exit: remove the sys.exit() or raise an Exception instead)\n"
    assert json.loads(done.stdout)["error"] == done.stderr.removeprefix("error: ").strip()  # stdout stays JSON


EXITING_REFERENCE = '''\
def get_reference_config():
    raise SystemExit(0)
'''


def test_diff_against_a_reference_builder_that_exits_is_one_located_line(fresh_project, keep_only, capfd):
    keep_only(fresh_project, "x86")
    (fresh_project / "myref.py").write_text(EXITING_REFERENCE)
    edit(fresh_project / "spec" / "x86.py", "torch.ao.quantization.backend_config.x86.get_x86_backend_config",
         "myref.get_reference_config")  # fmt: skip
    regenerated_cleanly(here(capfd, fresh_project))
    done = in_process(capfd, fresh_project, "diff", "--against-torch", "--format", "json")  # torch imported already
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert len(done.stderr.splitlines()) == 1, done.stderr
    expected = "error: myref.py:2: reference builder myref.get_reference_config raised SystemExit(0)"
    assert done.stderr.startswith(expected)
    error = json.loads(done.stdout)  # stdout stays JSON: the error, at its line
    assert (error["file"], error["line"], error["exit_code"]) == ("myref.py", 2, 2)


# ---------------------------------------------------------------------------

# Code a spec file defines runs in the guard, however the generator comes to run it


# ---------------------------------------------------------------------------

# A spec module whose __getattr__ (PEP 562) is asked for the MODULE it lacks.
_MODULE_GETATTR = """
def __getattr__(name):
    print("spec code, running outside the guard:", name)
    raise AttributeError(name)
"""


# A MODULE that pretends, through a __class__ property, to be what Module(...) returns.
_FAKE_MODULE = """
from generator import dsl


class Fake:
    @property
    def __class__(self):
        print("spec code, running outside the guard: __class__")
        return dsl.ModuleValue

    @property
    def name(self):
        print("spec code, running outside the guard: name")
        return "extra"

    doc, backends, exports, dtype_configs = "x", (), (), ()


MODULE = Fake()
"""


@pytest.mark.parametrize("source", [_MODULE_GETATTR, _FAKE_MODULE], ids=["module_getattr", "class_property"])
def test_reading_a_spec_files_module_runs_its_code_in_the_guard(project_with_only, source):
    project = project_with_only("qnnpack_pt2e")
    (project / "spec" / "extra.py").write_text(source)
    done = run(project, "check")
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith("error: spec/extra.py:"), done.stderr
    assert "not a Module(...)" not in errors[0]  # the fake's __class__ fools isinstance, not the check
    assert "Traceback" not in done.stderr


_FINALIZER = """

class _Noisy:
    def __del__(self):
        print("spec code, running outside the guard: __del__")
        {raise_}


_kept = _Noisy()
"""


@pytest.mark.parametrize("raise_", ["", "raise ValueError('late')"], ids=["prints", "raises"])
def test_a_spec_objects_finalizer_runs_in_the_guard(project_with_only, raise_):
    """A spec module's namespace dies with its load, mostly as a reference cycle that the garbage
    collector frees whenever it next runs: any later stage, where __del__ would write to stdout."""
    project = project_with_only("x86")
    spec = project / "spec" / "x86.py"
    spec.write_text(spec.read_text() + _FINALIZER.format(raise_=raise_))
    for command in (["regenerate", "--force"], ["check", "--full"]):
        done = run(project, *command)
        assert "__del__" not in done.stdout, command
        assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, command
        if raise_:
            errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
            assert done.returncode == 2 and len(errors) == 1, done.stderr
            assert errors[0].startswith("error: spec/x86.py:") and "ValueError: late" in errors[0]
