"""This repository's suite stays green with backends of the user's own in spec/, before and after a change
that declares differences from their reference builder.

A user adopts the generator in a checkout of this repository: they import a builder from a package of their
own (listed in pyproject.toml's packages, as `import` asks), add a plain backend of their own with no
reference, regenerate, commit; later a pull request declares differences from the reference builder. The
suite must pass at every step: its tests build their projects from what the manifest tracks (the user's
package included), and assume neither the set of backends, nor their references, nor which torch ops no spec
uses yet.

Here both steps happen in a copy of the repository, and the tests that once took one of those assumptions
run there, with pytest in a fresh interpreter. Each is named below with the assumption it embodies; a
regression in any of them fails this test with the inner run's report.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.builders import BUILDERS, unused_backend_name
from tests.support.projects import ROOT

INHOUSE = ROOT / "tests" / "support" / "inhouse" / "acme_npu" / "backend.py"  # ConvReLU62d, its classmethod fuser
# The user's own package, at the repository's root, and the backend imported from it: names the repository does
# not use yet (it may be a user's repository already, with an acme_quant and an acme_npu of its own).
PACKAGE = next(f"acme_quant{n}" for n in ("", *range(2, 100)) if not (ROOT / f"acme_quant{n}").exists())
NAME = unused_backend_name("acme_npu")
TARGET = f"{PACKAGE}.backend:get_acme_npu_backend_config"
PLAIN = ROOT / "tests" / "custom_backends" / "tutorial" / "spec" / "my_backend.py"  # docs' tutorial, no reference

# The package also offers the FX entry point its users call: importing it imports torch's backend_config.utils,
# so its builder runs in any interpreter (unlike torch's, which the fresh-interpreter test takes as its control).
INIT = '''"""ACME's quantization backends, and the FX entry point their users call."""

from torch.ao.quantization.quantize_fx import prepare_fx  # noqa: F401
'''

# The tests run in the copy, each with what it assumed (and the change that would break it).
SELECTED = [
    # copies of the project held only spec/ templates/ generated/ docs/: the user's package was missing
    "tests/test_commands.py::test_check_passes_on_a_clean_tree",
    "tests/test_where_users_work.py::test_every_folder_of_the_project_finds_its_root",
    "tests/test_bad_input.py::test_the_process_exits_2",  # a project restored in place between tests
    "tests/test_bad_input.py::test_odd_strings_are_emitted_as_code_that_equals_them",
    # the first reference builder was taken as torch's, to show that a fresh interpreter is fresh
    "tests/test_generated_code.py::test_each_module_builds_in_a_fresh_interpreter",
    # "(torch -> generated)" whatever the references; a matrix row named as describe_pattern names objects;
    # a backend's label as its BackendConfig's name tells it
    "tests/test_tutorial_backend.py::test_check_matrix_and_diff_handle_a_backend_without_a_reference",
    "tests/test_matrix.py::test_every_cell_is_what_the_generated_builder_registers",
    # a fuser that is a classmethod (`ConvReLU62d.fuser_method`) is read anew each time: equal, not identical
    "tests/test_custom_backends.py::test_built_config_equals_the_spec_s_own_expansion",
    # nn.SiLU used by no spec file; every module made from spec/_common.py
    "tests/test_forked.py::test_a_new_torch_name_is_looked_up_beside_the_build_with_the_same_result",
    "tests/test_formatting.py::test_torch_names_are_validated_once_black_has_the_new_pieces",
    # the name acme_npu free in the project, for a builder imported into a copy
    "tests/test_import_forms.py::test_the_inhouse_builders_classmethod_fuser_is_imported_by_its_path",
    "tests/test_import_compaction.py::test_no_compact_writes_every_pattern_in_its_family",
    # FX flows run with torch's config, where the spec declares otherwise
    f"tests/test_fx_flows.py::test_flow_matches_torch[{NAME}-conv_bn_relu-fuse]",
    f"tests/test_fx_flows.py::test_flow_matches_torch[{NAME}-conv_bn_relu-ptq@x86]",
    f"tests/test_equivalence.py::test_generated_builder_equals_its_reference_plus_declared_changes[{NAME}]",
]

# The pull request: the fusion of conv + bn + relu changed (a flow that differs from the reference's), an op
# no spec used (nn.SiLU) and the user's own fused module added as patterns.
DECLARED = '''
from generator.dsl import DTypeConfig, added, changed, config, importable, nn, torch  # noqa: E402

pr_dtype_config = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)
configs = [
    configs,
    config(changed((nn.Conv2d, nn.BatchNorm2d, nn.ReLU), "our NPU folds batch norm itself"), [pr_dtype_config],
           overrides="the pull request's change"),
    config(added(nn.SiLU, "our NPU quantizes SiLU"), [pr_dtype_config]),
    config(added(importable("PACKAGE.backend.ConvReLU62d"), "the fused block quantized as one"), [pr_dtype_config]),
]

'''


def repository_copy(destination: Path) -> Path:
    """The repository's files (tracked or not, but none it ignores) at `destination`."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, text=True, check=True).stdout.split("\0")  # fmt: skip
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():  # not a file deleted in the working tree
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


def environment(copy: Path) -> dict[str, str]:
    """The copy first on the path (its generator, its tests, the user's package), no xdist worker's identity."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(copy), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def command(copy: Path, *args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "generator", *args], cwd=copy, env=environment(copy),
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, f"python -m generator {' '.join(args)}:\n{done.stdout}{done.stderr}"


def adopt(copy: Path) -> None:
    """A backend imported from the user's package, and a plain one of their own, regenerated."""
    package = copy / PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text(INIT)
    shutil.copy(INHOUSE, package / "backend.py")
    pyproject = copy / "pyproject.toml"  # the package listed, as import asks (nothing is installed here)
    packages = "[tool.setuptools]\n"
    text = pyproject.read_text()
    assert packages in text and "\npackages = [\n" in text, "pyproject.toml lists its packages otherwise"
    head, _, tail = text.partition(packages)
    pyproject.write_text(head + packages + tail.replace("\npackages = [\n", f'\npackages = [\n    "{PACKAGE}",\n', 1))
    command(copy, "import", TARGET, "--name", NAME)
    if PLAIN.stem not in {b.id for b in BUILDERS} and not (copy / "spec" / PLAIN.name).exists():
        shutil.copy(PLAIN, copy / "spec" / PLAIN.name)  # (a repository that has the tutorial's backend keeps it)
    command(copy, "regenerate")


def declare_differences(copy: Path) -> None:
    spec = copy / "spec" / f"{NAME}.py"
    text = spec.read_text()
    assert text.count("\nMODULE = Module(") == 1 and "configs=configs" in text, "import writes its spec otherwise"
    declared = DECLARED.replace("PACKAGE", PACKAGE)
    spec.write_text(text.replace("\nMODULE = Module(", declared + "\nMODULE = Module(", 1))
    command(copy, "regenerate")


def suite(copy: Path, step: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "no:cacheprovider", "-q", "-p", "no:randomly",
         "--basetemp", str(copy.parent / step), *SELECTED],
        cwd=copy, env=environment(copy), capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, f"{step}: the suite fails in a copy with the user's backends:\n{done.stdout[-8000:]}"
    summary = done.stdout.splitlines()[-1]
    assert " passed" in summary and "skipped" not in summary, done.stdout  # each test selected ran, none skipped


def test_the_suite_passes_with_user_backends_before_and_after_declared_differences(tmp_path):
    copy = repository_copy(tmp_path / "repository")
    adopt(copy)
    suite(copy, "adopted")
    declare_differences(copy)
    suite(copy, "declared")
