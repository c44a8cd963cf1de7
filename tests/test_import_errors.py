"""`import` errors say what is wrong and what to do, in one line, exit 2, nothing written.

A misspelt module or function is said before "spec/x.py exists" (with the close name); `--force`
over a spec that declares differences from its reference builder (added/removed/changed) refuses
rather than drop them; a builder that cannot come under a spec names what to move where.
"""

import re

import pytest

from tests.support.cli_runs import run

TENSORRT = "torch.ao.quantization.backend_config.tensorrt"


def snapshot(project):
    return {str(p.relative_to(project)): p.read_bytes() for p in sorted(project.rglob("*.py")) if p.is_file()}


@pytest.mark.parametrize(
    "given, options, message",
    [
        (  # spec/tensorrt.py exists: the misspelt module is said first
            f"{TENSORRT}t:get_tensorrt_backend_config",
            [],
            f"error: cannot import {TENSORRT}t: ModuleNotFoundError: No module named '{TENSORRT}t' "
            f"(did you mean {TENSORRT}?)",
        ),
        (
            "tests.support.user_buildr:get_user_backend_config",
            ["--name", "fbgemm"],
            "error: cannot import tests.support.user_buildr: ModuleNotFoundError: No module named "
            "'tests.support.user_buildr' (did you mean tests.support.user_builder?)",
        ),
        (
            "tests.suport.user_builder:get_user_backend_config",
            ["--name", "fbgemm"],
            "error: cannot import tests.suport.user_builder: ModuleNotFoundError: No module named 'tests.suport' "
            "(did you mean tests.support.user_builder?)",
        ),
        (
            f"{TENSORRT}:get_tensorrt_backend_confg",
            ["--name", "tensorrt"],
            f"error: {TENSORRT} has no function 'get_tensorrt_backend_confg' "
            "(did you mean 'get_tensorrt_backend_config'?)",
        ),
        (  # nothing close: no guess
            "no_such_module_at_all:get_x",
            ["--name", "fbgemm"],
            "error: cannot import no_such_module_at_all: ModuleNotFoundError: No module named 'no_such_module_at_all'",
        ),
    ],
    ids=["module, default name", "module", "package", "function", "nothing close"],
)
@pytest.mark.parametrize("force", [[], ["--force"]], ids=["", "force"])
def test_a_missing_or_misspelt_module_or_function_is_said_before_the_spec_exists(
    fresh_project, capsys, given, options, message, force
):
    before = snapshot(fresh_project)
    code, out = run(capsys, "--root", str(fresh_project), "import", given, *options, *force)
    assert (code, out) == (2, message + "\n")
    assert snapshot(fresh_project) == before


def test_the_right_target_over_an_existing_spec_still_asks_for_force(fresh_project, capsys):
    code, out = run(capsys, "--root", str(fresh_project), "import", f"{TENSORRT}:get_tensorrt_backend_config")
    assert (code, out) == (2, "error: spec/tensorrt.py exists; give --force to overwrite it or --name\n")


DECLARED = """
                config(added(nn.SiLU, "our TensorRT build quantizes SiLU"), non_weighted),
                removed(torch.cat, "we keep torch.cat in float"),
"""


def test_force_over_a_spec_that_declares_differences_refuses_to_drop_them(fresh_project, capsys):
    spec = fresh_project / "spec" / "tensorrt.py"
    source = spec.read_text()
    source = source.replace("from generator.dsl import Backend, DTypeConfig, Module, config, torch",
                            "from generator.dsl import Backend, DTypeConfig, Module, added, config, nn, removed, torch")
    cat = '                config(torch.cat, non_weighted, observation_type=SHARE_OBSERVER, section="cat"),\n'
    source = source.replace(cat, DECLARED)
    assert source.count("added(") == 1 and source.count("removed(") == 1
    spec.write_text(source)
    code, out = run(capsys, "--root", str(fresh_project), "regenerate")
    assert code == 0, out
    before = snapshot(fresh_project)
    given = f"{TENSORRT}:get_tensorrt_backend_config"
    code, out = run(capsys, "--root", str(fresh_project), "import", given, "--force")
    assert code == 2
    assert re.fullmatch(
        r"error: spec/tensorrt\.py declares differences from its reference builder that import does not write: "
        r"added nn\.SiLU \(spec/tensorrt\.py:\d+\), removed torch\.cat \(spec/tensorrt\.py:\d+\); import into a new "
        r"file \(--name tensorrt_imported\) and carry them over by hand, or delete them from spec/tensorrt\.py first\n",
        out,
    ), out
    assert snapshot(fresh_project) == before
    # what the message proposes works: into a new file, under a project name of its own
    code, out = run(capsys, "--root", str(fresh_project), "import", given, "--name", "tensorrt_imported")
    assert code == 0, out
    assert 'label="tensorrt_imported",' in (fresh_project / "spec" / "tensorrt_imported.py").read_text()
    assert snapshot(fresh_project)["spec/tensorrt.py"] == before["spec/tensorrt.py"]


@pytest.mark.parametrize(
    "given, message",
    [
        (
            "tests.support.user_builder:make_backend_config",
            "error: tests.support.user_builder:make_backend_config() raised TypeError: make_backend_config() missing 1 "
            "required positional argument: 'name'; import calls make_backend_config() with no arguments: define a "
            "function that calls it with them at module level of tests/support/user_builder.py, and import that",
        ),
        (
            "tests.support.user_builder:get_raising_backend_config",
            "error: tests.support.user_builder:get_raising_backend_config() raised RuntimeError: this backend needs a "
            "license server (at tests/support/user_builder.py:94); import calls it with no arguments from the project "
            "root: make it return its BackendConfig there",
        ),
        (
            "tests.support.user_builder:get_unnamed_closure_backend_config",
            "error: pattern (nn.Conv2d, nn.ReLU): cannot name fuser_method "
            "tests.support.user_builder.get_unnamed_closure_backend_config.<locals>.fuse_reversed: it is local to "
            "get_unnamed_closure_backend_config(), which returns a BackendConfig, not a callable; define it, or the "
            "factory that makes it and each argument it is given, at module level of tests/support/user_builder.py",
        ),
        (
            "tests.support.named_builders:get_lambda_fuser_backend_config",
            "error: pattern (nn.Conv2d, nn.ReLU): cannot name fuser_method "
            "tests.support.named_builders.get_lambda_fuser_backend_config.<locals>.<lambda>: it is local to "
            "get_lambda_fuser_backend_config(), which returns a BackendConfig, not a callable; define it with def, or "
            "the factory that makes it and each argument it is given, at module level of "
            "tests/support/named_builders.py",
        ),
    ],
    ids=["builder needs arguments", "builder raises", "closure made in the builder", "lambda made in the builder"],
)
def test_a_builder_that_cannot_come_under_a_spec_is_told_what_to_move_where(fresh_project, capsys, given, message):
    before = snapshot(fresh_project)
    code, out = run(capsys, "--root", str(fresh_project), "import", given, "--name", "moved")
    assert (code, out) == (2, message + "\n")
    assert snapshot(fresh_project) == before
