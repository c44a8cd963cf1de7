"""Promises of the commands that a careless change could break while every other test passed.

- A spec file deleted: `check` names its orphaned module, `regenerate` removes it.
- `check --full` re-renders and compares bytes, so it finds a generated file whose
  digests are consistent but whose content is not what the generator makes.
- Every generator module that shapes output is an input of the files it shapes: editing it makes
  `check` (the pre-commit hook) render those files once to prove their bytes, and fail when they change.

All through the command line, not through planning or digest internals.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from generator import cli
from generator.building import pipeline
from tests.support.projects import ROOT, at_one_path_fixture, fresh_copy
from tests.support.shared_builds import worker_copy

one_path_project = at_one_path_fixture("promises")  # a fresh copy per test, at one path (see there)

SUPPORT = Path(__file__).parent / "support"  # the scripts some tests run as files
MATRIX = "docs/support-matrix.md"


def run(capsys, project: Path, *args: str) -> tuple[int, str]:
    code = cli.main(["--root", str(project), *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def spec_modules(project: Path) -> list[str]:
    """The generated modules the spec describes, found the way a user sees them."""
    return sorted(p.stem for p in (project / "spec").glob("*.py") if not p.name.startswith("_"))


def named_files(out: str) -> set[str]:
    """Files the check output names as wrong ("path: reason" lines)."""
    return {line.split(":")[0] for line in out.splitlines() if line.startswith(("generated/", "docs/"))}


def test_a_deleted_spec_file_orphans_its_module_and_regenerate_removes_it(one_path_project, capsys):
    name = spec_modules(one_path_project)[0]
    (one_path_project / "spec" / f"{name}.py").unlink()
    code, out = run(capsys, one_path_project, "check")
    assert code == 1
    assert f"generated/{name}.py" in named_files(out)
    code, out = run(capsys, one_path_project, "regenerate")
    assert code == 0
    assert f"removed   generated/{name}.py" in out.splitlines()
    assert not (one_path_project / "generated" / f"{name}.py").exists()
    assert run(capsys, one_path_project, "check")[0] == 0
    assert run(capsys, one_path_project, "check", "--full")[0] == 0


def test_check_full_finds_content_the_generator_would_not_make(one_path_project, capsys, monkeypatch):
    """The fast path trusts digests; --full re-renders and compares the bytes."""
    name = spec_modules(one_path_project)[0]
    spec = one_path_project / "spec" / f"{name}.py"
    spec.write_text(spec.read_text() + "# touched so that regenerate renders this module\n")
    real_render = pipeline.render_module

    def render_with_an_extra_line(module, templates):
        text = real_render(module, templates)
        return text + "\n# not what the generator makes\n" if module.spec.name == name else text

    # A generator whose output differs from the committed one while every digest
    # it writes is consistent, as after a change no digest covers.
    monkeypatch.setattr(pipeline, "render_module", render_with_an_extra_line)
    assert run(capsys, one_path_project, "regenerate")[0] == 0
    monkeypatch.undo()
    assert "# not what the generator makes" in (one_path_project / "generated" / f"{name}.py").read_text()
    code, out = run(capsys, one_path_project, "check", "--full")
    assert code == 1
    assert named_files(out) == {f"generated/{name}.py"}
    assert run(capsys, one_path_project, "regenerate", "--force")[0] == 0
    assert run(capsys, one_path_project, "check", "--full")[0] == 0


# Imported by the pipeline but unable to change a byte of output: error classes,
# name validation (torch names, method names; the names a spec chooses), which only
# accepts or rejects a spec, the static check that refuses a broken module before it is
# written (and check_memo, its memo of texts that passed), the runner of user code, which only
# sends its prints to stderr and turns what it raises into an error, heap, which returns
# freed memory to the system, and plain_values, which only refuses a spec value of a subclass
# of a built-in type.
CANNOT_SHAPE_OUTPUT = {
    "errors", "building.resolution", "process", "building.method_names", "building.naming", "building.output_check",
    "building.check_memo", "user_code", "heap", "loading.plain_values", "building.dtype_roles",
    "user_cache",  # where the generator keeps its own compiled code: the same code
}
# The support matrix's own stage shapes the matrix only.
MATRIX_ONLY = {"building.matrix"}


def small_project(destination: Path) -> tuple[Path, dict]:
    """A copy of the project, generator included, reduced to its smallest spec module."""
    project = fresh_copy(destination)
    shutil.copytree(ROOT / "generator", project / "generator", ignore=shutil.ignore_patterns("__pycache__"))
    smallest = min(spec_modules(project), key=lambda n: (project / "spec" / f"{n}.py").stat().st_size)
    for name in spec_modules(project):
        if name != smallest:
            (project / "spec" / f"{name}.py").unlink()
    env = dict(os.environ, PYTHONPATH=str(project))
    for code, _, err in commands_in_one_interpreter(project, env, ["regenerate"], ["check"]):
        assert code == 0, err
    return project, env


def commands_in_one_interpreter(project: Path, env: dict, *commands: list[str]) -> list[tuple[int, str, str]]:
    """[exit code, stdout, stderr] of each command, run in turn in one fresh interpreter in the project copy,
    importing its own generator (tests/support/commands_in_one_interpreter.py)."""
    script = [sys.executable, str(SUPPORT / "commands_in_one_interpreter.py"), json.dumps(commands)]
    done = subprocess.run(script, cwd=project, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def regenerated_small_project(tmp_path_factory) -> Path:
    """small_project made once per run; each test gets its own copy (fixture small)."""
    return worker_copy(tmp_path_factory, "promises-small", small_project)


@pytest.fixture
def small(regenerated_small_project, tmp_path) -> tuple[Path, dict]:
    project = tmp_path / "project"
    shutil.copytree(regenerated_small_project, project, symlinks=True)
    return project, dict(os.environ, PYTHONPATH=str(project))


def test_editing_any_output_shaping_generator_module_makes_check_render_the_files_it_shapes(small):
    """Each edit gets its own `check` run, all in one fresh interpreter importing the copy's generator
    (tests/support/check_each_edit.py): check digests the generator's files from disk, as the hook does. An edit
    (a comment) changes no byte, so check passes, having rendered exactly the files the module shapes."""
    project, env = small
    script = [sys.executable, str(SUPPORT / "check_each_edit.py")]
    with subprocess.Popen(script, cwd=project, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as runner:  # fmt: skip
        # Every generator module a regenerate imports: the candidates for shaping output.
        modules = [m for m in json.loads(runner.stdout.readline()) if m not in CANNOT_SHAPE_OUTPUT]
        assert {"building.pipeline", "building.rendering", "building.expansion", "building.formatting"} <= set(modules)
        out, err = runner.communicate(json.dumps(modules) + "\n")
    assert runner.returncode == 0, err
    results = json.loads(out)
    outputs = {str(p.relative_to(project)) for p in (project / "generated").glob("*.py") if p.name != "__init__.py"}
    outputs.add(MATRIX)
    unnoticed = {}
    for module in modules:
        code, stdout, rendered = results["edited"][module]
        expected = {MATRIX} if module in MATRIX_ONLY else outputs
        if code != 0 or set(rendered) != expected:
            unnoticed[module] = (code, stdout, rendered)
    assert unnoticed == {}
    assert results["unedited"][0] == 0, results["unedited"][1]


def test_a_real_change_to_the_generator_changes_output_and_check_sees_it(small):
    """black's line length, an output-shaping setting in formatting.py, changed in a copy. check, regenerate,
    check: one after another in one fresh interpreter importing the copy's generator
    (tests/support/commands_in_one_interpreter.py)."""
    project, env = small
    formatting = project / "generator" / "building" / "formatting.py"
    assert "black.Mode()" in formatting.read_text()
    formatting.write_text(formatting.read_text().replace("black.Mode()", "black.Mode(line_length=60)"))
    module = next(p for p in (project / "generated").glob("*.py") if p.name != "__init__.py")
    before = module.read_text()
    check, regenerate, check_again = commands_in_one_interpreter(project, env, ["check"], ["regenerate"], ["check"])
    assert check[0] == 1
    assert f"generated/{module.name}" in named_files(check[1])
    assert regenerate[0] == 0, regenerate
    assert module.read_text() != before  # the edit really shaped output
    assert check_again[0] == 0, check_again


LINT_SPEC = '''"""Two backends sharing configs that register patterns twice."""

from generator.dsl import Backend, DTypeConfig, Module, config, nn, torch

quint8_config = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)
float16_config = DTypeConfig(input_dtype=torch.float16, output_dtype=torch.float16)
shared = [
    config(nn.Conv2d, [quint8_config]),
    config(nn.Conv1d, [quint8_config]),
    config(nn.Conv2d, [quint8_config]),
    config(nn.Conv1d, [float16_config]),
]

MODULE = Module(
    doc="Lint test.",
    backends=[
        Backend(name="second", builder="get_second_backend_config", doc="Second.", configs=shared),
        Backend(name="first", builder="get_first_backend_config", doc="First.", configs=shared),
    ],
)
'''


def regenerate_with_only(project, capsys, spec_text: str) -> None:
    """The project's spec files replaced by one, spec/lint_case.py, and regenerated."""
    for spec in (project / "spec").glob("*.py"):
        if not spec.name.startswith("_"):
            spec.unlink()
    (project / "spec" / "lint_case.py").write_text(spec_text)
    assert run(capsys, project, "regenerate")[0] == 0


def test_lint_says_whether_content_differs_and_names_every_backend(one_path_project, capsys):
    regenerate_with_only(one_path_project, capsys, LINT_SPEC)
    code, out = run(capsys, one_path_project, "check")
    warnings = [line for line in out.splitlines() if line.startswith("warning")]
    assert code == 0, out
    assert sorted(warnings) == sorted([
        "warning: spec/lint_case.py:10: pattern nn.Conv2d is registered again, overriding the one registered at "
        "spec/lint_case.py:8 (same content); torch keeps the first position with this content. "
        "Backends: first, second. If intended, say why: config(..., overrides=\"reason\")",
        "warning: spec/lint_case.py:11: pattern nn.Conv1d is registered again, overriding the one registered at "
        "spec/lint_case.py:9 (content differs); torch keeps the first position with this content. "
        "Backends: first, second. If intended, say why: config(..., overrides=\"reason\")",
    ])


STALE_MARK_SPEC = '''"""Marked overrides: one overrides in one of the backends that share it, one overrides nowhere."""

from generator.dsl import Backend, DTypeConfig, Module, config, nn, torch

quint8_config = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)
shared = [
    config(nn.Conv2d, [quint8_config], overrides="replaces first's own nn.Conv2d"),
    config(nn.Conv1d, [quint8_config], overrides="it once replaced an nn.Conv1d"),
]

MODULE = Module(
    doc="Lint test.",
    backends=[
        Backend(
            name="first", builder="get_first_backend_config", doc="First.",
            configs=[config(nn.Conv2d, [quint8_config]), shared],
        ),
        Backend(name="second", builder="get_second_backend_config", doc="Second.", configs=shared),
    ],
)
'''


def test_a_mark_that_overrides_nothing_in_every_backend_reaching_it_warns_and_fails_strict(one_path_project, capsys):
    regenerate_with_only(one_path_project, capsys, STALE_MARK_SPEC)
    code, out = run(capsys, one_path_project, "check")
    assert code == 0, out
    # Line 7 overrides in "first" only: that is enough. Line 8 overrides nothing anywhere.
    assert [line for line in out.splitlines() if line.startswith("warning")] == [
        "warning: spec/lint_case.py:8: overrides= says this config replaces an earlier one on purpose, but no "
        "earlier config registers pattern nn.Conv1d in any backend that reaches this line (Backends: first, "
        "second); remove overrides=, or restore the registration it replaced"
    ]
    code, out = run(capsys, one_path_project, "check", "--strict")
    assert code == 2 and out.startswith("error: spec/lint_case.py:8: overrides= says")
