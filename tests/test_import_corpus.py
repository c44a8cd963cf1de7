"""`import` on BackendConfig builders from the wild (tests/support/wild/: public third-party builders, each
adapted only as far as torch 2.13.0 needs; each module's docstring names its source).

Each builder is imported as its author would: `python -m generator import MODULE:FUNCTION --name NAME` in a
fresh interpreter inside a fresh project copy (the builder's package importable from any folder, as an
installed package is: PYTHONPATH), then `regenerate`. Its outcome is one of the two the issue accepts:

- IMPORTS: exit 0; the generated builder equals the builder field by field (the comparator the equivalence
  tests use, callables included); `check` exits 0.
- REFUSED: exit 2, exactly one line on stderr, nothing on stdout, no traceback and no "internal error",
  and not one file of the project changed; the line gives the reason its author can act on.

Each builder's expected outcome is listed in CORPUS below.
"""

import dataclasses
import importlib
import importlib.util
import os
import subprocess
import sys

import pytest

from generator.review.equality import compare_backend_configs
from tests.support.projects import ROOT

IMPORTS = "imports"
REFUSED = "refused"


@dataclasses.dataclass(frozen=True)
class Case:
    name: str  # --name: the spec file's name in the project
    target: str  # MODULE:FUNCTION below tests.support.wild
    outcome: str  # IMPORTS or REFUSED
    says: tuple[str, ...] = ()  # for REFUSED: what the one line must say
    never: tuple[str, ...] = ()  # for REFUSED: what it must not say


CORPUS = [
    # open-mmlab/mmrazor: torch 1.13's style (reversed nested patterns, reverse2/reverse3/reverse_sequential_
    # wrapper2 fusers), returned under torch's own names "native" and "tensorrt".
    Case("mmrazor_academic", "mmrazor_academic:get_academic_backend_config", IMPORTS),
    Case("mmrazor_tensorrt", "mmrazor_tensorrt:get_tensorrt_backend_config", IMPORTS),
    Case("mmrazor_native", "mmrazor_native:get_native_backend_config", IMPORTS),
    # automatedtomato/gml-lab: its own modules and fuser beside torch's fusers reached through a module alias.
    Case("gml_lab", "gml_lab:get_gml_backend_config", IMPORTS),
    # pytorch/tutorials: module-level configs, BackendPatternConfig().set_pattern(...), 2 ** -12.
    Case("pytorch_tutorial", "pytorch_tutorial:get_my_backend_config", IMPORTS),
    # A LiteRT backend on torch's private op-config helpers, with its own fixed-qparams constraints.
    Case("ai_edge_torch", "ai_edge_torch:get_ai_edge_torch_backend_config", IMPORTS),
    # pytorch/pytorch test_quantize_fx.py: BackendConfig() with complex-format patterns and node getters.
    Case("fx_multiple_inputs", "pytorch_fx_fusion:get_multiple_inputs_backend_config", IMPORTS),
    # The same test file with its fuser and getters defined inside the builder: nothing can import them.
    Case("fx_matchallnode", "pytorch_fx_fusion:get_matchallnode_backend_config", REFUSED,
         says=("tests.support.wild.pytorch_fx_fusion.get_matchallnode_backend_config.<locals>.",
               "local to get_matchallnode_backend_config()")),
    # pytorch/pytorch test_backend_config.py: its fuser, _sequential_wrapper2(nni.LinearReLU) kept as a class
    # attribute, read through self: a method bound to the test's instance, which nothing can import.
    Case("torch_test_bound", "pytorch_test_backend_config:get_test_backend_config", REFUSED,
         says=("fuser_method _sequential_wrapper2(torch.ao.nn.intrinsic.LinearReLU): it is bound as a method of "
               "the TestBackendConfig object", "register the function itself, read from the class "
               "(TestBackendConfig._fuser_method)")),
    # The same attribute read from the class: torch's closure itself, `sequential(nni.LinearReLU)`.
    Case("torch_test_class", "pytorch_test_backend_config:get_test_class_attribute_backend_config", IMPORTS),
    # A getter defined inside a test method that returns the BackendConfig: local to a method, not a factory's.
    Case("torch_test_local", "pytorch_test_backend_config:get_test_local_getter_backend_config", REFUSED,
         says=("it is local to TestBackendConfig.test_backend_config_with_local_getter(), which does not return "
               "it; define it at module level of tests.support.wild.pytorch_test_backend_config",),
         never=("factory",)),
]


def case_param(case: Case):
    return pytest.param(case, id=case.name)


def generator(project, *args):
    """`python -m generator --root project ARGS` in a fresh interpreter started in the project, the wild
    builders importable from any folder (PYTHONPATH, as an installed package is)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "generator", "--root", str(project), *args],
                          cwd=project, env=env, capture_output=True, text=True, timeout=300)  # fmt: skip


def snapshot(project):
    """Every file of the project but the generator's caches (.cache/)."""
    files = (p for p in sorted(project.rglob("*")) if p.is_file() and ".cache" not in p.relative_to(project).parts)
    return {p.relative_to(project): p.read_bytes() for p in files}


def builder(target: str):
    module, function = target.split(":")
    return getattr(importlib.import_module(f"tests.support.wild.{module}"), function)


def load_generated(path):
    spec = importlib.util.spec_from_file_location(f"corpus_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_no_crash(done):
    for text in (done.stdout, done.stderr):
        assert "Traceback" not in text and "internal error" not in text, done.stdout + done.stderr


def test_the_corpus_lists_every_builder_of_tests_support_wild_once():
    """A builder added to tests/support/wild/ gets an expected outcome here, or this fails."""
    listed = sorted(case.target for case in CORPUS)
    assert len(set(listed)) == len(listed) and len({case.name for case in CORPUS}) == len(CORPUS)
    found = []
    for path in sorted((ROOT / "tests" / "support" / "wild").glob("[!_]*.py")):
        module = importlib.import_module(f"tests.support.wild.{path.stem}")
        found += [f"{path.stem}:{name}" for name in vars(module)
                  if name.startswith("get_") and name.endswith("_backend_config")
                  and getattr(module, name).__module__ == module.__name__]  # fmt: skip
    assert sorted(found) == listed


@pytest.mark.parametrize("case", [case_param(case) for case in CORPUS])
def test_a_wild_builder_imports_equal_or_is_refused_in_one_line(fresh_project, case):
    target = f"tests.support.wild.{case.target}"
    before = snapshot(fresh_project)
    done = generator(fresh_project, "import", target, "--name", case.name)
    assert_no_crash(done)
    if case.outcome == REFUSED:
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stdout == "" and done.stderr.count("\n") == 1 and done.stderr.startswith("error: "), done.stderr
        for said in case.says:
            assert said in done.stderr, done.stderr
        for unsaid in case.never:
            assert unsaid not in done.stderr, done.stderr
        assert snapshot(fresh_project) == before
        return
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"written   spec/{case.name}.py" in done.stdout, done.stdout
    done = generator(fresh_project, "regenerate")
    assert_no_crash(done)
    assert done.returncode == 0, done.stdout + done.stderr
    generated = load_generated(fresh_project / "generated" / f"{case.name}.py")
    function = case.target.split(":")[1]
    assert compare_backend_configs(case.name, getattr(generated, function)(), builder(case.target)()) == []
    done = generator(fresh_project, "check")
    assert done.returncode == 0, done.stdout + done.stderr
