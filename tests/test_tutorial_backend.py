"""The backend of PyTorch's BackendConfig tutorial, added as one spec file, works with every command and test.

tests/custom_backends/tutorial/ is laid over a copy of the project (as
tests/bad_specs/ cases are): one spec file, spec/my_backend.py, with no reference
builder. Every command must handle it, the generic checks must pass on it, and its
FX flows must give the same graphs and bit-identical outputs as a BackendConfig
written here by hand in torch's own API, as the tutorial writes it.
"""

import inspect
import json
import os
import re
import subprocess
import sys

import pytest
import torch
from torch.ao.quantization.backend_config import (
    BackendConfig,
    BackendPatternConfig,
    DTypeConfig,
    DTypeWithConstraints,
    ObservationType,
)

from generator import cli
from generator.review.equality import compare_backend_configs
from tests.support import backend_checks as checks
from tests.support import projects
from tests.support.builders import discover, reference_side
from tests.support.projects import ROOT, commit_all, lay_tutorial_over
from tests.support.shared_builds import built_once


@pytest.fixture
def project_with_two_backends(tmp_path_factory, tmp_path):
    """For the tests that lay the tutorial over a project and give it a reference builder: a fresh copy of
    the project with two of its spec files (tests/support/projects.py), so that backends of torch's are there
    beside it, as in the full project, with less to load, build and compare in each command; two, so that
    the reports that count backends count more than one. (The shared `tutorial` project, which
    tests/test_import.py also round-trips, keeps every spec file.)"""
    return projects.fresh_copy(tmp_path / "project", "native", "x86", factory=tmp_path_factory)


def run(capsys, project, *args):
    code = cli.main(["--root", str(project), *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.fixture(scope="module")
def tutorial(tmp_path_factory):
    """(project root, regenerate's output) for a copy of the project with the tutorial's backend added."""
    project = tmp_path_factory.mktemp("tutorial") / "project"
    return project, projects.tutorial(tmp_path_factory, project)


@pytest.fixture(scope="module")
def my_backend(tutorial):
    found = [b for b in discover(tutorial[0]) if b.module == "my_backend"]
    assert len(found) == 1 and found[0].reference is None
    return found[0]


def test_regenerate_writes_the_new_module_and_the_matrix_only(tutorial):
    _, out = tutorial
    written = sorted(line.split()[1] for line in out.splitlines() if line.startswith("written"))
    assert written == ["docs/support-matrix.md", "generated/manifest.json", "generated/my_backend.py"]


def test_check_matrix_and_diff_handle_a_backend_without_a_reference(tutorial, capsys):
    project, _ = tutorial
    code, out = run(capsys, project, "check")
    files = len(list((project / "spec").glob("[!_]*.py"))) + 1  # each module and the matrix
    assert code == 0 and out.startswith(f"{files} generated files are up to date\n"), out
    code, out = run(capsys, project, "matrix", "--stdout")
    assert code == 0
    assert "| `my_backend` | `get_my_backend_config` | `generated/my_backend.py` | 3 |" in out
    assert out == (project / "docs" / "support-matrix.md").read_text()
    # Backends of the user's own may be in spec/ besides my_backend, with a reference or without.
    builders = discover(project)
    referenced = [b for b in builders if b.reference]
    unreferenced = ", ".join(sorted(b.id for b in builders if not b.reference))
    assert "my_backend" in unreferenced
    for wanted in ([], ["my_backend"]):
        code, out = run(capsys, project, "diff", "--against-torch", *wanted)
        assert code == 0, out
        if wanted:  # nothing to compare at all: only the backend left out is named
            assert out == "not compared (no reference builder): my_backend\n"
        else:
            # "no undeclared differences" where the spec declares some (see "Adding an op"); the reference
            # side is "torch" while every reference is torch's, else a user's one builder or "reference"
            first = re.fullmatch(rf"no (undeclared )?differences in {len(referenced)} backends? "
                                 rf"\({re.escape(reference_side(referenced))} -> generated\)", out.splitlines()[0])
            assert first and out.splitlines()[-1] == f"not compared (no reference builder): {unreferenced}", out


def test_diff_against_torch_from_the_command_line_exits_0_without_a_traceback(tutorial):
    """...and without importing torch: the backend asked for has no reference builder to build."""
    project, _ = tutorial
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "generator", "--root", str(project), "diff", "--against-torch",
         "my_backend"],
        cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "not compared (no reference builder): my_backend\n"
    assert "Traceback" not in done.stderr
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]
    assert "generator.review.diff" in imported and "torch" not in imported


def test_diff_rev_shows_a_change_to_the_new_backend(tmp_path, tmp_path_factory, capsys):
    project = tmp_path / "project"
    projects.tutorial(tmp_path_factory, project)  # the tutorial's backend added and regenerated
    commit_all(project)
    spec = project / "spec" / "my_backend.py"
    spec.write_text(spec.read_text().replace("nn.Linear, weighted,", "nn.Linear, [],"))
    assert run(capsys, project, "regenerate", "--jobs", "1")[0] == 0
    code, out = run(capsys, project, "diff", "--rev", "HEAD", "my_backend")
    assert code == 1
    # the config(...) call that holds the pattern: the line before the pattern's
    line = next(n for n, text in enumerate(spec.read_text().splitlines(), 1) if "nn.Linear, []," in text) - 1
    assert out == f"my_backend: nn.Linear: dtype_configs: - weighted_int8_dtype_config  (spec/my_backend.py:{line})\n"


def readme_usage_snippet() -> str:
    page = (ROOT / "docs" / "adding-a-backend.md").read_text()
    return next(block for block in re.findall(r"```python\n(.*?)```", page, re.S)
                if "from generated.my_backend import" in block)


# What the snippet leaves behind must be the reference model the tutorial shows.
LEFT_BEHIND_CHECK = (
    "\nkinds = {type(m).__name__ for m in reference_model.modules()}"
    "\nassert {'ConvReLU2d', 'Conv2d', 'Linear'} <= kinds and 'ReLU' in kinds, kinds"
    "\nassert 'quantized.reference' in type(reference_model.get_submodule('1.0')).__module__\n"
)


@pytest.fixture(scope="module")
def readme_snippet_run(tmp_path_factory):
    """(exit status, standard error) of docs/adding-a-backend.md's usage snippet, followed by LEFT_BEHIND_CHECK,
    run once per test run in a copy of the tutorial's project as a user runs it: a fresh
    interpreter in the project, default warning filters (no PYTHONWARNINGS, not pytest's)."""

    def run_snippet(folder):
        project = folder / "project"
        projects.tutorial(tmp_path_factory, project)
        environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONWARNINGS")}
        done = subprocess.run([sys.executable, "-c", readme_usage_snippet() + LEFT_BEHIND_CHECK], cwd=project,
                              env=dict(environment, PYTHONPATH=str(project)), capture_output=True, text=True)
        (folder / "returncode").write_text(str(done.returncode))
        (folder / "stderr").write_text(done.stderr)

    folder = built_once(tmp_path_factory, "readme-snippet", run_snippet)
    return int((folder / "returncode").read_text()), (folder / "stderr").read_text()


def test_the_readme_s_usage_snippet_runs_as_written(readme_snippet_run):
    """docs/adding-a-backend.md, "Using it": the prepare_fx snippet runs in the project as it stands there."""
    returncode, stderr = readme_snippet_run
    assert returncode == 0, stderr


def test_the_readme_s_usage_snippet_prints_no_warning(readme_snippet_run):
    """Run as a user runs it (default warning filters, not pytest's): standard error stays empty.

    torch warns "Failed to initialize NumPy" on import when NumPy is missing; the
    project depends on numpy (pyproject.toml) so that an installed project does not.
    """
    returncode, stderr = readme_snippet_run
    assert returncode == 0, stderr
    assert stderr == ""


def test_generic_checks_pass_on_the_tutorial_backend(my_backend):
    assert not checks.expansion_differences(my_backend)
    assert not checks.shared_objects(my_backend)
    assert not checks.fresh_interpreter_failures([my_backend])
    assert not checks.flow_problems(my_backend)


def tutorial_backend_config() -> BackendConfig:
    """The tutorial's BackendConfig, written as the tutorial writes it."""
    quint8_with_constraints = DTypeWithConstraints(
        dtype=torch.quint8,
        quant_min_lower_bound=0,
        quant_max_upper_bound=255,
        scale_min_lower_bound=2**-12,
    )
    weighted_int8_dtype_config = DTypeConfig(
        input_dtype=quint8_with_constraints,
        output_dtype=quint8_with_constraints,
        weight_dtype=torch.qint8,
        bias_dtype=torch.float,
    )

    def fuse_conv2d_relu(is_qat, conv, relu):
        return torch.ao.nn.intrinsic.ConvReLU2d(conv, relu)

    linear_config = (
        BackendPatternConfig(torch.nn.Linear)
        .set_observation_type(ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT)
        .add_dtype_config(weighted_int8_dtype_config)
        .set_root_module(torch.nn.Linear)
        .set_qat_module(torch.ao.nn.qat.Linear)
        .set_reference_quantized_module(torch.ao.nn.quantized.reference.Linear)
    )
    conv_relu_config = (
        BackendPatternConfig((torch.nn.Conv2d, torch.nn.ReLU))
        .set_observation_type(ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT)
        .add_dtype_config(weighted_int8_dtype_config)
        .set_fused_module(torch.ao.nn.intrinsic.ConvReLU2d)
        .set_fuser_method(fuse_conv2d_relu)
    )
    fused_conv_relu_config = (
        BackendPatternConfig(torch.ao.nn.intrinsic.ConvReLU2d)
        .set_observation_type(ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT)
        .add_dtype_config(weighted_int8_dtype_config)
        .set_root_module(torch.nn.Conv2d)
        .set_qat_module(torch.ao.nn.intrinsic.qat.ConvReLU2d)
        .set_reference_quantized_module(torch.ao.nn.quantized.reference.Conv2d)
    )
    return (
        BackendConfig("my_backend")
        .set_backend_pattern_config(linear_config)
        .set_backend_pattern_config(conv_relu_config)
        .set_backend_pattern_config(fused_conv_relu_config)
    )


def test_generated_config_equals_the_hand_written_one_field_by_field(my_backend):
    differences = compare_backend_configs("my_backend", my_backend.ours()(), tutorial_backend_config())
    assert not differences, "\n".join(map(str, differences))


def test_fx_flows_match_the_hand_written_config_bit_for_bit(my_backend):
    ours, theirs = my_backend.ours()(), tutorial_backend_config()
    found = checks.branches(ours)
    assert found == checks.branches(theirs) and len(found) == 2  # Linear, and Conv2d + ReLU
    for flow in ("ptq", "qat", "fuse"):
        result, expected = checks.record_flow(flow, found, ours, None), checks.record_flow(flow, found, theirs, None)
        assert result.raised is None and list(result.steps) == list(expected.steps), flow
        assert checks.same(result, expected), flow


def add_reference(project, reference: str) -> int:
    """Give the tutorial's backend a reference builder; the line number of its `reference=` line."""
    spec = project / "spec" / "my_backend.py"
    argument = f"            reference={reference!r},\n"
    text = spec.read_text().replace("        Backend(\n", "        Backend(\n" + argument, 1)
    spec.write_text(text)
    return text.splitlines().index(argument.rstrip("\n")) + 1


def test_a_user_s_own_reference_builder_is_compared_like_torch_s(project_with_two_backends, capsys):
    """The hand-written config above, as a module in the project root, becomes the backend's reference."""
    lay_tutorial_over(project_with_two_backends)
    header = "import torch\nfrom torch.ao.quantization.backend_config import *  # noqa: F403\n\n\n"
    source = header + inspect.getsource(tutorial_backend_config)
    (project_with_two_backends / "my_reference.py").write_text(source)
    add_reference(project_with_two_backends, "my_reference.tutorial_backend_config")
    (project_with_two_backends / "my_drifted_reference.py").write_text(
        source.replace("        .set_backend_pattern_config(linear_config)\n", "")
    )
    try:
        assert run(capsys, project_with_two_backends, "regenerate", "--jobs", "1")[0] == 0
        builder = next(b for b in discover(project_with_two_backends) if b.module == "my_backend")
        assert builder.reference == "my_reference.tutorial_backend_config"
        assert not compare_backend_configs("my_backend", builder.ours()(), builder.theirs()())
        # The reference is named as the spec names it: it is not torch's.
        no_differences = "no differences in 1 backend (my_reference.tutorial_backend_config -> generated)\n"
        assert run(capsys, project_with_two_backends, "diff", "--against-torch", "my_backend") == (0, no_differences)
        code, out = run(capsys, project_with_two_backends, "diff", "--against-torch", "--format", "json", "my_backend")
        assert (code, json.loads(out)["old"]) == (0, "my_reference.tutorial_backend_config")
        # torch's and the user's: "reference"
        code, out = run(capsys, project_with_two_backends, "diff", "--against-torch")
        assert code == 0 and out.startswith("no differences in ") and "backends (reference -> generated)" in out
        assert "torch" not in out
        spec = project_with_two_backends / "spec" / "my_backend.py"
        spec.write_text(spec.read_text().replace("my_reference.", "my_drifted_reference."))
        assert run(capsys, project_with_two_backends, "regenerate", "--jobs", "1")[0] == 0
        code, out = run(capsys, project_with_two_backends, "diff", "--against-torch", "my_backend")
        assert (code, out[: out.index("  (")]) == (1, "my_backend: + pattern nn.Linear")
    finally:
        for name in ("my_reference", "my_drifted_reference"):
            sys.modules.pop(name, None)


def test_a_missing_reference_builder_is_a_one_line_error(project_with_two_backends, capsys):
    lay_tutorial_over(project_with_two_backends)
    line = add_reference(project_with_two_backends, "no_such_module.get_config")
    before = (project_with_two_backends / "docs" / "support-matrix.md").read_bytes()
    code, out = run(capsys, project_with_two_backends, "regenerate", "--jobs", "1")
    assert code == 2
    missing = "unknown name no_such_module.get_config: no module no_such_module"
    assert out == f"error: spec/my_backend.py:{line}: {missing}\n"
    assert not (project_with_two_backends / "generated" / "my_backend.py").exists()
    assert (project_with_two_backends / "docs" / "support-matrix.md").read_bytes() == before


def test_diff_failures_are_one_line_errors(project_with_two_backends, capsys):
    """A missing generated module, or a reference builder that raises: exit 2, one line, no traceback."""
    reference = next(b for b in discover(project_with_two_backends) if b.reference)
    (project_with_two_backends / "generated" / f"{reference.module}.py").unlink()
    code, out = run(capsys, project_with_two_backends, "diff", "--against-torch", reference.id)
    missing = f"nothing to compare: generated/{reference.module}.py is missing; fix: python -m generator regenerate"
    assert (code, out) == (2, f"error: {missing}\n")
    lay_tutorial_over(project_with_two_backends)
    broken = project_with_two_backends / "broken_reference.py"
    broken.write_text("def get_config():\n    raise RuntimeError('no hardware')\n")
    line = add_reference(project_with_two_backends, "broken_reference.get_config")
    assert run(capsys, project_with_two_backends, "regenerate", "--jobs", "1")[0] == 0
    try:
        code, out = run(capsys, project_with_two_backends, "diff", "--against-torch", "my_backend")
    finally:
        sys.modules.pop("broken_reference", None)
    assert code == 2
    assert out == (
        f"error: spec/my_backend.py:{line}: reference builder broken_reference.get_config raised "
        "RuntimeError: no hardware\n"
    )
