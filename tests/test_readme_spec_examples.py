"""The spec reference (docs/spec.md) and the README's quick start: every example runs, and every DSL word has one.

Blocks fenced as ```python spec-example are fragments of a spec file: each is laid
between docs/spec.md's `spec-prologue` and `spec-epilogue` blocks (the epilogue left out
when the example writes its own MODULE) as a spec file of its own in one small project,
with its `project-file PATH` blocks beside it. One regenerate writes them all;
each generated builder must then equal its example's expansion field by field, keep the
example's number spellings, and carry the differences the example declares.
"""

import ast
import contextlib
import io
import re
import shutil
import sys

import pytest

from generator import cli, dsl
from tests.support import backend_checks as checks
from tests.support.builders import discover
from tests.support.projects import ROOT

FENCE = re.compile(r"^```python ([\w-]+)( \S+)?\n(.*?)^```", re.S | re.M)
BLOCKS = FENCE.findall((ROOT / "docs" / "spec.md").read_text())  # the spec reference
REFERENCE_EXAMPLES = [code for tag, _, code in BLOCKS if tag == "spec-example"]
# ... and the README's quick start, a whole spec file between the same prologue and no epilogue
EXAMPLES = REFERENCE_EXAMPLES + [code for tag, _, code in FENCE.findall((ROOT / "README.md").read_text())
                                 if tag == "spec-example"]  # fmt: skip
PROLOGUE = next(code for tag, _, code in BLOCKS if tag == "spec-prologue")
EPILOGUE = next(code for tag, _, code in BLOCKS if tag == "spec-epilogue")
PROJECT_FILES = {path.strip(): code for tag, path, code in BLOCKS if tag == "project-file"}


def spec_file(index: int, example: str) -> str:
    """The example as a whole spec file; its backend gets a name no other example's has."""
    defines_module = any(
        isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "MODULE" for t in node.targets)
        for node in ast.parse(example).body
    )
    text = "\n".join([PROLOGUE, example, "" if defines_module else EPILOGUE])
    return text.replace('"my_backend"', f'"example_{index}"')


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    """(project root, {example index: builder}) after one regenerate of every example."""
    project = tmp_path_factory.mktemp("readme") / "project"
    (project / "spec").mkdir(parents=True)
    (project / "spec" / "__init__.py").write_text("")
    shutil.copytree(ROOT / "templates", project / "templates")
    for path, code in PROJECT_FILES.items():
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        (project / path).write_text(code)
    for index, example in enumerate(EXAMPLES):
        (project / "spec" / f"example_{index}.py").write_text(spec_file(index, example))
    # importable() names a package of the project, installed as docs/spec.md says (here: on sys.path);
    # not one of the same name another test of this process imported from its own project
    for name in [m for m in sys.modules if m == "npu_ext" or m.startswith("npu_ext.")]:
        del sys.modules[name]
    sys.path.insert(0, str(project))
    try:
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = cli.main(["--root", str(project), "regenerate", "--jobs", "1"])
        assert code == 0, err.getvalue()
        yield project, {int(b.module.removeprefix("example_")): b for b in discover(project)}
    finally:
        sys.path.remove(str(project))
        for name in [m for m in sys.modules if m == "npu_ext" or m.startswith("npu_ext.")]:
            del sys.modules[name]


def test_the_readme_has_a_prologue_an_epilogue_and_examples():
    assert len(REFERENCE_EXAMPLES) >= 10 and "MODULE = Module(" in EPILOGUE and "from generator.dsl import" in PROLOGUE
    assert len(EXAMPLES) == len(REFERENCE_EXAMPLES) + 1  # the README's quick start


@pytest.mark.parametrize("index", range(len(EXAMPLES)))
def test_each_example_regenerates_to_a_builder_equal_to_its_expansion(examples, index):
    project, builders = examples
    builder = builders[index]
    assert builder.expanded.backend.configs, EXAMPLES[index]
    assert not checks.expansion_differences(builder), EXAMPLES[index]
    built = builder.ours()()
    assert len(built.configs) == len(builder.expanded.backend.configs)
    generated = (project / "generated" / f"{builder.module}.py").read_text()
    assert spelt_numbers(EXAMPLES[index]) <= spelt_numbers(generated)


def spelt_numbers(source: str) -> set[str]:
    """Number expressions in keyword arguments (`2**-12`, `1.0 / 256.0`), normalised."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.keyword) and isinstance(node.value, ast.BinOp):
            text = ast.unparse(node.value)
            if re.fullmatch(r"[\d.eE+\-*/() ]+", text):
                found.add(text)
    return found


def test_the_declaring_example_declares_what_it_says(examples):
    _, builders = examples
    declared = [b for b in builders.values() if b.declarations]
    assert len(declared) == 1
    kinds = {(d.kind, d.pattern) for d in declared[0].declarations}
    assert kinds == {
        ("added", "nn.Mish"),
        ("changed", "nn.Hardswish"),
        ("removed", "F.dropout"),
        ("changed", "dtype config elu_dtype_config"),
    }


def test_the_importable_fuser_is_imported_not_copied(examples):
    project, builders = examples
    texts = {b.module: (project / "generated" / f"{b.module}.py").read_text() for b in builders.values()}
    [generated] = [text for text in texts.values() if "fuse_linear_relu" in text]
    assert "from npu_ext.fusers import fuse_linear_relu" in generated
    assert "def fuse_linear_relu" not in generated


def dsl_words_used(code: str) -> set[str]:
    """The DSL's exported names a block uses (as a name, or an attribute chain's root)."""
    return {node.id for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Name)} & set(dsl.__all__)


def test_every_dsl_word_has_a_readme_example():
    used = set().union(*(dsl_words_used(code) for code in [*REFERENCE_EXAMPLES, EPILOGUE]))
    missing = sorted(set(dsl.__all__) - used)
    assert not missing, f"docs/spec.md has no example for: {', '.join(missing)}"


def test_every_config_field_has_a_readme_example():
    """config()'s keywords too: torch's field names and overrides=."""
    used = {
        node.arg
        for code in REFERENCE_EXAMPLES
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.keyword)
    }
    missing = sorted(set(dsl.CONFIG_FIELDS) - used)
    assert not missing, f"docs/spec.md has no example for config(..., {', '.join(missing)}=)"
