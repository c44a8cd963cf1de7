"""Broken specs and templates give one located error line, exit 2 and change no file; odd strings survive.

Each folder in tests/bad_specs/ is laid over a copy of the project (its files
replace or add to spec/ and templates/), and `expected.txt` holds the one error
line the generator must print for it. The faulty line itself is marked `<- error`,
so the reported location is checked against the case's own source.
"""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from generator import cache, cli
from generator.building import pipeline
from generator.loading import loader
from generator.model import Backend
from tests.support.projects import ROOT, fresh_copy, restored_in_place_fixture
from tests.support.shared_builds import built_once
from tests.test_matrix import parse_matrix

CASES = sorted(p for p in (ROOT / "tests" / "bad_specs").iterdir() if p.is_dir())


# The cases replace or add to qnnpack_pt2e.py (most), x86.py and fbgemm.py, or clash with their names and
# outputs; the other spec files are valid and would only be loaded again in each case. A fresh project per
# test, restored in place (see there), reduced to those three.
SPEC_FILES = ("fbgemm", "qnnpack_pt2e", "x86")
restored_project = restored_in_place_fixture("bad_input", *SPEC_FILES)


def committed_models(factory) -> Path:
    """The model cache of the project the cases are laid over (every spec file's load, kept), built once per run."""

    def build(folder: Path) -> None:
        loader.load_modules(fresh_copy(folder / "project", *SPEC_FILES, factory=factory), keep=True)

    return cache.Cache(built_once(factory, "bad-input-models", build) / "project", cache.MODELS).folder


def overlay(case: Path, project: Path) -> None:
    for source in case.rglob("*"):
        if source.is_file() and source.name != "expected.txt":
            target = project / source.relative_to(case)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)


def marked_location(case: Path) -> str:
    """`file:line` of the line the case marks `<- error`: where the error must point, written by hand."""
    marked = [
        f"{source.relative_to(case)}:{number}"
        for source in sorted(case.rglob("*"))
        if source.is_file() and source.name != "expected.txt"
        # Bytes, decoded leniently: a case may hold bytes that are not UTF-8 on purpose.
        for number, line in enumerate(source.read_bytes().decode(errors="replace").splitlines(), start=1)
        if "<- error" in line
    ]
    assert len(marked) == 1, marked
    return marked[0]


def snapshot(project: Path) -> dict[str, bytes]:
    """Every file regenerate could write, temporary files included."""
    files = [*(project / "generated").iterdir(), *(project / "docs").iterdir()]
    return {str(p.relative_to(project)): p.read_bytes() for p in files if p.is_file()}


@pytest.mark.parametrize("command", ["regenerate", "check"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_broken_input_gives_one_located_error_and_changes_nothing(
    case, command, restored_project, capsys, tmp_path_factory
):
    if command == "check":
        # check executes every spec file for its lint, whatever the cache holds; a build that then finds the
        # error takes the unchanged files' loads from the model cache, as in a user's tree after an edit.
        # regenerate runs without one: its load executes every spec file, as on a new checkout.
        shutil.copytree(committed_models(tmp_path_factory), cache.Cache(restored_project, cache.MODELS).folder)
    overlay(case, restored_project)
    before = snapshot(restored_project)
    code = cli.main(["--root", str(restored_project), command])
    err = capsys.readouterr().err
    assert code == 2
    errors = [line for line in err.splitlines() if not line.startswith("warning: ")]
    assert errors == [(case / "expected.txt").read_text().strip()]
    assert errors[0].startswith(f"error: {marked_location(case)}: ")
    assert snapshot(restored_project) == before


def test_the_process_exits_2(restored_project):
    case = ROOT / "tests" / "bad_specs" / "syntax_error"
    overlay(case, restored_project)
    command = [sys.executable, "-m", "generator", "--root", str(restored_project), "regenerate"]
    run = subprocess.run(command, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True)
    assert run.returncode == 2
    assert run.stderr.splitlines() == [(case / "expected.txt").read_text().strip()]


ODD_STRINGS = ["it's", 'say "hi"', "back\\slash", "new\nline", 'tri"""ple', "pipe|and`tick"]

ODD_SPEC = '''
"""A spec with strings that need escaping."""

from generator.dsl import Backend, DTypeConfig, Module, config, importable, torch

weighted_op_quint8_dtype_config = DTypeConfig(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)

MODULE = Module(
    doc={doc!r},
    backends=[
        Backend(
            name={name!r},
            builder="get_qnnpack_pt2e_backend_config",
            doc={doc!r},
            # Strings that no Tensor method has: attribute names of getattr patterns.
            configs=[
                config(
                    pattern_complex_format=(importable("builtins.getattr"), attribute),
                    dtype_configs=[weighted_op_quint8_dtype_config],
                )
                for attribute in {patterns!r}
            ],
        )
    ],
)
'''


def test_odd_strings_are_emitted_as_code_that_equals_them(restored_project, capsys):
    doc = 'Doc with """quotes""", a \\ backslash\nand a second line.'
    name = "q'n\"n\\pack"
    spec = ODD_SPEC.format(doc=doc, name=name, patterns=ODD_STRINGS)
    (restored_project / "spec" / "qnnpack_pt2e.py").write_text(spec)
    assert cli.main(["--root", str(restored_project), "regenerate"]) == 0
    module_spec = importlib.util.spec_from_file_location("odd", restored_project / "generated" / "qnnpack_pt2e.py")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    config = module.get_qnnpack_pt2e_backend_config()
    assert config.name == name
    assert [c._pattern_complex_format for c in config.configs] == [(getattr, s) for s in ODD_STRINGS]
    assert module.__doc__ == doc
    assert module.get_qnnpack_pt2e_backend_config.__doc__ == doc
    matrix, _, _ = parse_matrix((restored_project / "docs" / "support-matrix.md").read_text())
    label = Backend(name, "get_qnnpack_pt2e_backend_config", "", ()).label  # the matrix names backends by label
    assert len(matrix[label]) == len(ODD_STRINGS)


@pytest.mark.parametrize(
    ("template", "old", "new", "problem"),
    [
        # A misspelt name: black accepts it, and the module imports; only a builder call would fail.
        ("functions/sequential.py.j2", "(m1, m2)", "(m1, m3)", "a use of 'm3', which the module neither defines"),
        # black accepts a `return` outside a function; Python does not compile it.
        ("module.py.j2", "__all__ = [", "return\n__all__ = [", "code that does not compile: 'return' outside function"),
    ],
    ids=["undefined name", "does not compile"],
)
def test_a_rendered_module_that_is_broken_is_never_written(restored_project, capsys, template, old, new, problem):
    path = restored_project / "templates" / template
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new))
    before = snapshot(restored_project)
    assert cli.main(["--root", str(restored_project), "regenerate", "--jobs", "1"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and re.fullmatch(r"error: generated/\w+\.py:\d+: the templates rendered .*", err[0]), err
    assert problem in err[0]
    assert snapshot(restored_project) == before
    # The line named is the broken one: the committed module has its unbroken version there.
    module, line = re.match(r"error: (generated/\w+\.py):(\d+):", err[0]).groups()
    unbroken = (restored_project / module).read_text().splitlines()[int(line) - 1]
    assert ("(m1, m2)" if "m3" in problem else "__all__ = [") in unbroken


SHARED_OPS_BACKEND = '''"""A backend without a reference builder that uses torch's shared op list."""

from generator.dsl import Backend, DTypeConfig, Module, config, importable, torch
from spec._common import DEFAULT_OPS

quint8_dtype_config = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)

MODULE = Module(
    doc="Shares DEFAULT_OPS.",
    backends=[
        Backend(
            name="my_backend",
            builder="get_my_backend_config",
            doc="Shares DEFAULT_OPS.",
            configs=[config(op, [quint8_dtype_config]) for op in DEFAULT_OPS],
        )
    ],
)
'''


def test_a_shared_declaration_binds_the_backends_with_a_reference_and_others_ignore_it(restored_project):
    common = restored_project / "spec" / "_common.py"
    assert "\nDEFAULT_OPS = [\n" in common.read_text()
    declared = '\nDEFAULT_OPS = [\n    added(nn.Softsign, "Softsign is quantized like ELU"),\n'
    text = common.read_text().replace("\nDEFAULT_OPS = [\n", declared)
    common.write_text("from generator.dsl import added\n" + text)
    (restored_project / "spec" / "my_backend.py").write_text(SHARED_OPS_BACKEND)
    backends = [b for m in pipeline.load(restored_project, validate=False) for b in m.backends]  # no error
    mine = next(b for b in backends if b.backend.label == "my_backend")
    assert "torch.nn.Softsign" in {c.key.path for c in mine.backend.configs if hasattr(c.key, "path")}
    assert mine.declarations == ()
    held = [b for b in backends if b.backend.reference is not None and b.declarations]
    assert held and all("nn.Softsign" in [d.pattern for d in b.declarations] for b in held)
