"""The commands work where users stand: any folder of the project, a project inside a bigger git
repository, an interpreter without the dependencies, a terminal or a pipe, a spec/ with backends of
the user's own.
"""

import os
import pty
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from generator import cli, digests
from generator.building import resolution
from generator.freshness import planning
from generator.loading import loader
from tests.support.builders import discover
from tests.support.projects import ROOT, at_one_path, at_one_path_fixture, commit_all, committed, fresh_copy, git

ACCELERATOR = ROOT / "tests" / "custom_backends" / "accelerator" / "spec" / "edge_npu.py"
ENV = dict(os.environ, PYTHONPATH=str(ROOT))
one_path_project = at_one_path_fixture("where_users_work")  # a fresh copy per test, at one path (see there)


@pytest.fixture
def project_with_two_backends(tmp_path_factory) -> Path:
    """A fresh copy of the project holding two committed spec files, fbgemm's and x86's (tests/support/projects.py),
    at one path, as `one_path_project` is: for tests about a backend of the user's own, or about how a command runs,
    whose runs would otherwise load and build every spec file."""
    return at_one_path(tmp_path_factory, "where_users_work-fewer", "fbgemm", "x86")


def add_user_backend(project: Path, name: str, file: str | None = None) -> Path:
    """The two-op accelerator backend as spec/<file>.py, renamed so that it clashes with no backend in spec/."""
    spec = project / "spec" / f"{file or name}.py"
    assert not spec.exists()
    spec.write_text(ACCELERATOR.read_text().replace("edge_npu", name))
    return spec


def run(capsys, *args) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def generator_process(cwd: Path, *args: str, python_flags=(), env=None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *python_flags, "-m", "generator", *args],
        cwd=cwd, env=env or ENV, capture_output=True, text=True, **kwargs,
    )  # fmt: skip


# ---------------------------------------------------------------------------
# Root discovery
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["spec", "generated", "docs/deep/sub/folder", "."])
def test_every_folder_of_the_project_finds_its_root(where, one_path_project, monkeypatch, capsys):
    (one_path_project / where).mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(one_path_project / where)
    outputs = len(planning.plan(one_path_project))
    assert run(capsys, "check") == (0, f"{outputs} generated files are up to date\n", "")
    code, out, err = run(capsys, "matrix")
    assert (code, err) == (0, "") and out == f"unchanged {planning.MATRIX_OUTPUT.as_posix()}\n"


def test_regenerate_from_spec_is_not_misled_by_a_spec_file_named_like_a_package(project_with_two_backends):
    """`python -m` puts the current folder on sys.path: spec/black.py must not stand in for black."""
    project = project_with_two_backends
    add_user_backend(project, "black_box_npu", file="black")
    done = generator_process(project / "spec", "regenerate", "--jobs", "1")
    assert done.returncode == 0, done.stderr
    assert "written   generated/black.py" in done.stdout.splitlines()
    assert generator_process(project / "generated", "check").returncode == 0


def test_outside_any_project_the_error_names_every_folder_looked_in(tmp_path, monkeypatch, capsys):
    here = tmp_path / "a" / "b"
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    code, out, err = run(capsys, "check")
    looked = ", ".join(str(folder) for folder in (here, *here.parents))
    assert (code, out) == (2, "")
    assert err == (
        f"error: no project here: none of {looked} has a spec/ folder; "
        "run inside a project (any folder below the one holding spec/) or pass --root DIR\n"
    )
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["a", "a/b"]


def test_a_non_ascii_folder_under_the_c_locale_is_named_as_it_is_spelt(tmp_path):
    folder = tmp_path / "nö"
    folder.mkdir()
    c_locale = dict(ENV, LC_ALL="C", PYTHONCOERCECLOCALE="0", PYTHONUTF8="0")
    done = subprocess.run([sys.executable, "-m", "generator", "check"], cwd=folder, env=c_locale, capture_output=True)
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: no project here: none of {folder}, ".encode())  # not n\udcc3\udcb6


def test_root_wins_over_the_folder_the_command_runs_in(one_path_project, tmp_path, monkeypatch, capsys):
    other = fresh_copy(tmp_path / "other")
    add_user_backend(other, "other_npu")
    monkeypatch.chdir(one_path_project / "spec")
    code, out, err = run(capsys, "check", "--root", str(other))
    assert code == 1 and "generated/other_npu.py: missing" in out  # the other project was checked
    assert run(capsys, "check")[0] == 0  # and this one is fine


# ---------------------------------------------------------------------------
# A project in a subfolder of a bigger git repository
# ---------------------------------------------------------------------------


@pytest.fixture
def monorepo(tmp_path_factory) -> Path:
    """A git repository whose project lives at vendor/backend-configs/, next to other code.

    A fresh one per test, at one path (as projects.at_one_path does for `one_path_project`), its one commit made once
    per run.
    The project holds the spec files the tests edit, qnnpack's and x86's (tests/support/projects.py): every
    diff and check there loads and builds its spec/, and the tests are about where the project is.
    """
    repo = tmp_path_factory.getbasetemp() / "one-path-monorepo" / "repo"
    shutil.rmtree(repo, ignore_errors=True)
    project = fresh_copy(repo / "vendor" / "backend-configs", "qnnpack", "x86", factory=tmp_path_factory)
    (repo / "README.md").write_text("the rest of the monorepo\n")
    (repo / "generated").mkdir()  # the top level has a generated/ of its own, which is not ours
    (repo / "generated" / "other.py").write_text("x = 1\n")
    committed(repo, tmp_path_factory, "monorepo")
    return project


def test_diff_and_check_work_in_a_project_below_the_repository_top(monorepo, monkeypatch, capsys):
    monkeypatch.chdir(monorepo / "spec")
    spec = monorepo / "spec" / "qnnpack.py"
    assert "linear=weighted + dynamic," in spec.read_text()
    spec.write_text(spec.read_text().replace("linear=weighted + dynamic,", "linear=weighted,"))
    assert run(capsys, "regenerate", "--jobs", "1")[0] == 0
    code, out, err = run(capsys, "diff", "qnnpack")
    assert (code, err) == (1, ""), err
    # spec lines relative to the project, not to the repository's top level
    assert out.startswith("qnnpack: nn.Linear: dtype_configs: - qnnpack_default_dynamic_int8_dtype_config  (spec/"), out
    assert run(capsys, "check") == (0, f"{len(planning.plan(monorepo))} generated files are up to date\n", "")
    git(monorepo, "add", "-A")
    git(monorepo, "commit", "-qm", "qnnpack: no dynamic linear")
    assert run(capsys, "diff", "--rev", "HEAD~1..HEAD", "qnnpack") == (1, out, "")
    code, out, err = run(capsys, "diff", "--rev", "HEAD~1", "qnnpack")
    assert (code, err) == (1, "") and out.startswith("qnnpack: nn.Linear: "), out
    # a revision's generated/ is judged against that revision's spec, read from the project's folder
    spec.write_text(spec.read_text().replace("linear=weighted,", "linear=weighted + dynamic,"))
    git(monorepo, "commit", "-qam", "spec only")
    code, out, err = run(capsys, "diff", "--rev", "HEAD~1..HEAD")
    assert code == 1 and "generated/qnnpack.py: stale: spec/qnnpack.py changed" in out, out


def test_diff_after_a_spec_edit_that_changes_no_generated_text_compares_and_says_so(monorepo, monkeypatch, capsys):
    monkeypatch.chdir(monorepo / "generated")
    spec = monorepo / "spec" / "x86.py"
    spec.write_text(spec.read_text() + "# a comment reaches no generated text\n")
    backends = len(discover(monorepo))
    assert run(capsys, "diff") == (0, f"no differences in {backends} backends (HEAD -> working tree)\n", "")
    code, out, err = run(capsys, "check")
    assert code == 0, out
    # a spec edit that does change a module is still refused, not diffed
    old = "default = [x86_default_op_quint8_dtype_config]"
    spec.write_text(spec.read_text().replace(old, old[:-1] + ", x86_weight_only_quint8_dtype_config]"))
    code, out, err = run(capsys, "diff")
    assert code == 1 and "generated/x86.py: stale: spec/x86.py changed" in out, out


# ---------------------------------------------------------------------------
# An interpreter without the dependencies
# ---------------------------------------------------------------------------


def metadata_only(folder: Path, **versions: str) -> Path:
    """A folder that holds only the packages' metadata (dist-info), not the packages."""
    for package, version in versions.items():
        info = folder / f"{package}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
    return folder


def bare_interpreter(*folders: Path) -> dict:
    """For `python -S`: no site-packages, so no torch, Jinja2 or black; only the project and `folders`."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(map(str, [ROOT, *folders])))


def test_check_imports_neither_torch_nor_jinja2_nor_black(one_path_project, tmp_path):
    """Their versions are all check reads of them once this environment proved the files (freshness/proofs.py);
    a cold lint cache too."""
    assert generator_process(one_path_project, "check").returncode == 0  # proves them, if not yet
    for kind in (one_path_project / ".cache" / "generator").iterdir():
        if kind.name != "proofs":
            shutil.rmtree(kind)
    env = bare_interpreter(metadata_only(tmp_path / "site", **_installed_versions()))
    done = generator_process(one_path_project / "spec", "check", python_flags=["-S"], env=env)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout == f"{len(planning.plan(one_path_project))} generated files are up to date\n"


def _installed_versions() -> dict[str, str]:
    return {name: digests.installed_version(name) for name in digests.VERSIONED_PACKAGES}


@pytest.mark.parametrize(
    ("command", "missing"), [(["check"], "black"), (["regenerate"], "black"), (["diff", "--against-torch"], "torch")]
)
def test_a_missing_dependency_is_one_line_saying_how_to_install_it(command, missing, one_path_project, tmp_path):
    versions = {name: v for name, v in _installed_versions().items() if name != missing}
    env = bare_interpreter(metadata_only(tmp_path / "site", **versions))
    done = generator_process(one_path_project, *command, python_flags=["-S"], env=env)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"error: {missing} is not installed for {sys.executable}; activate the environment the project is "
        f"installed in, or install the project with its dependencies: pip install -e . (in {ROOT})\n"
    )


@pytest.mark.parametrize(
    ("missing", "said"),
    [
        ("numpy.core", "error: numpy is not installed for "),  # any package the generator needs
        ("generator.gone", "error: internal error: ModuleNotFoundError: "),  # one of its own: a bug
    ],
)
def test_which_missing_module_is_a_missing_dependency(missing, said, one_path_project, monkeypatch, capsys):
    def needs(root, recorded=None):
        raise ModuleNotFoundError(f"No module named {missing!r}", name=missing)

    monkeypatch.setattr(planning, "plan", needs)
    code, out, err = run(capsys, "--root", str(one_path_project), "check")
    assert (code, out) == (2, "") and len(err.splitlines()) == 1 and err.startswith(said), err


def test_check_renders_again_under_another_black(one_path_project, tmp_path):
    jinja2 = _installed_versions()["jinja2"]
    env = bare_interpreter(metadata_only(tmp_path / "site", black="0.0.1", jinja2=jinja2))
    done = generator_process(one_path_project, "check", python_flags=["-S"], env=env)
    # this environment never proved what black 0.0.1 writes: check renders every module to know, which needs
    # the packages themselves, and it names them instead of calling the tree up to date
    assert (done.returncode, done.stdout) == (2, "") and " is not installed for " in done.stderr, done.stderr


# ---------------------------------------------------------------------------
# The progress line
# ---------------------------------------------------------------------------


def run_with_terminal_stderr(cwd: Path, *args: str) -> tuple[int, str, bytes]:
    """Run the generator with standard error on a pseudo-terminal; (exit code, stdout, what the terminal got)."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "generator", *args], cwd=cwd, env=ENV,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=terminal,
    )  # fmt: skip
    os.close(terminal)
    shown = b""
    while True:
        ready, _, _ = select.select([controller], [], [], 0.2)
        if ready:
            try:
                data = os.read(controller, 4096)
            except OSError:  # the other end closed
                data = b""
            if not data:
                break
            shown += data
        elif process.poll() is not None:
            break
    os.close(controller)
    out = process.stdout.read().decode()
    process.stdout.close()
    return process.wait(), out, shown


def test_a_long_command_shows_a_progress_line_on_a_terminal_only(project_with_two_backends, capfd):
    project = project_with_two_backends
    code, out, shown = run_with_terminal_stderr(project, "regenerate", "--force", "--jobs", "1")
    assert code == 0, shown
    outputs = len(planning.plan(project))
    assert b"\r\x1b[Kregenerate: loading spec/ to build" in shown
    assert b"regenerate: built generated/x86.py (" in shown
    assert f"({outputs}/{outputs})".encode() in shown
    assert shown.endswith(b"\r\x1b[K")  # erased: what stays on the screen is the command's output
    assert "\x1b" not in out and "built" not in out
    capfd.readouterr()
    code = cli.main(["--root", str(project), "regenerate", "--force", "--jobs", "1"])  # stderr not a terminal
    piped_out, piped_err = capfd.readouterr()
    assert (code, piped_err) == (0, "")
    assert piped_out == out


# ---------------------------------------------------------------------------
# Backends of the user's own
# ---------------------------------------------------------------------------


def test_commands_that_enumerate_backends_take_a_user_s_own_backend(project_with_two_backends, monkeypatch, capsys):
    project = project_with_two_backends
    spec = add_user_backend(project, "user_npu")
    monkeypatch.chdir(project)
    code, out, err = run(capsys, "regenerate", "--jobs", "1")
    assert code == 0 and "written   generated/user_npu.py" in out.splitlines(), err
    assert run(capsys, "check") == (0, f"{len(planning.plan(project))} generated files are up to date\n", "")
    builders = discover(project)
    unreferenced = sorted(b.id for b in builders if not b.reference)
    assert "user_npu" in unreferenced
    code, out, err = run(capsys, "diff", "--against-torch")
    assert (code, err) == (0, ""), out
    assert out.splitlines()[-1] == f"not compared (no reference builder): {', '.join(unreferenced)}"
    assert f" in {sum(1 for b in builders if b.reference)} backends (torch -> generated)" in out.splitlines()[0]
    code, out, err = run(capsys, "matrix", "--stdout")
    assert code == 0 and "| `user_npu` | `get_user_npu_backend_config` | `generated/user_npu.py` | 2 |" in out
    commit_all(project)
    spec.write_text(spec.read_text().replace("nn.Conv2d, [user_npu_int8_dtype_config]", "nn.Conv2d, []"))
    assert run(capsys, "regenerate", "--jobs", "1")[0] == 0
    code, out, err = run(capsys, "diff")
    assert (code, err) == (1, "") and out.startswith("user_npu: nn.Conv2d: dtype_configs: - user_npu_int8_dtype_config")


# ---------------------------------------------------------------------------
# importable() names that only the project root provides
# ---------------------------------------------------------------------------

NPU_FUSERS = '''
from torch.ao.nn import intrinsic as nni


def fuse_linear_relu(is_qat, linear, relu):
    return nni.LinearReLU(linear, relu)
'''
FUSED_LINEAR = '''                config(
                    (nn.Linear, nn.ReLU), [npu_fused_int8_dtype_config], fused_module=nni.LinearReLU,
                    fuser_method=importable("npu_fused_ext.fusers.fuse_linear_relu"), section="linear",
                ),
'''


def learn_the_new_torch_names(project: Path) -> None:
    """The project's torch-names cache learns the spec's new names here, where torch is imported already.

    The runs of the test then read them from the cache, as every run after a user's first does, instead
    of importing torch (seconds) to look them up; which folders the name imports from is checked anew on
    every run, cache or not. The lookup imports the user's package (with the root on sys.path): it is
    dropped again, so that nothing of this project stays in the worker.
    """
    before = set(sys.modules)
    try:
        resolution.validate(loader.load_modules(project), project)
    finally:
        for name in set(sys.modules) - before:
            if name.partition(".")[0] == "npu_fused_ext":
                del sys.modules[name]


def test_an_importable_only_the_project_root_provides_is_refused_at_its_spec_line(project_with_two_backends, tmp_path):
    project = project_with_two_backends
    package = project / "npu_fused_ext"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "fusers.py").write_text(NPU_FUSERS)
    spec = add_user_backend(project, "npu_fused")
    text = spec.read_text().replace("import Backend,", "import Backend, importable, nni,")
    end_of_configs = "            ],\n        )\n    ],"
    assert end_of_configs in text
    spec.write_text(text.replace(end_of_configs, FUSED_LINEAR + end_of_configs))
    line = next(n for n, text in enumerate(spec.read_text().splitlines(), 1) if "fuser_method=importable" in text)
    learn_the_new_torch_names(project)
    before = sorted(p.relative_to(project) for p in project.rglob("*") if ".cache" not in p.parts)
    done = generator_process(project, "regenerate", "--jobs", "1")  # run in the root: it is on sys.path
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"error: spec/npu_fused.py:{line}: npu_fused_ext.fusers.fuse_linear_relu is importable only from the "
        "project root (npu_fused_ext is a folder there, not an installed package), so generated/npu_fused.py would "
        "fail to import from any other folder; list 'npu_fused_ext' in pyproject.toml's [tool.setuptools] packages "
        "and run pip install -e ., or move it into a package that is installed\n"
    )
    assert sorted(p.relative_to(project) for p in project.rglob("*") if ".cache" not in p.parts) == before
    # Installed (here: on the path of every interpreter of this environment), it works, from any folder.
    site = tmp_path / "site"
    site.mkdir()
    package.rename(site / package.name)
    installed = dict(os.environ, PYTHONPATH=os.pathsep.join(map(str, [ROOT, site])))
    done = generator_process(project / "spec", "regenerate", "--jobs", "1", env=installed)
    assert done.returncode == 0, done.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = "from generated.npu_fused import get_npu_fused_backend_config as get; print(len(get().configs))"
    user = dict(os.environ, PYTHONPATH=os.pathsep.join(map(str, [project, site])))  # `generated` as installed
    done = subprocess.run([sys.executable, "-c", script], cwd=elsewhere, env=user, capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "3\n"), done.stderr
