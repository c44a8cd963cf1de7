"""A generated module never binds one name twice: objects that share a name are imported under aliases.

A builder that uses torch's `fuse_conv_bn` and its own `fuse_conv_bn` once gave a module importing both
under one name: the later import won, and patterns silently got the wrong fuser. Here:
- the static check (output_check.check_bindings), which the generator runs on every module it renders,
  so every module any test makes is checked, refuses each way of binding a name twice, and passes
  every committed generated module;
- `import` of such a builder regenerates a module that imports each object under a name of its own
  and builds a BackendConfig equal to the original, field by field, each fuser the very object;
- a hand-written spec naming objects of one name from several modules, and objects named like names
  the module binds anyway (a module alias, a dtype config of the spec), renders distinct, module-qualified
  aliases, the same whatever the order of the patterns, and a pattern more changes only its own lines.
"""

import ast
import difflib
import importlib.util
import textwrap
from pathlib import Path

import pytest

from generator.building.output_check import check_bindings, check_imports
from generator.errors import OutputCheckError
from generator.review.equality import compare_backend_configs
from tests.support.cli_runs import run
from tests.support.projects import ROOT


def load_generated(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_package(site: Path, package: str, modules: dict[str, str]) -> None:
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text("")
    for name, source in modules.items():
        (site / package / f"{name}.py").write_text(textwrap.dedent(source))


def imports_of(text: str) -> list[str]:
    """The module's import statements, one line each."""
    return [ast.unparse(node) for node in ast.parse(text).body if isinstance(node, (ast.Import, ast.ImportFrom))]


# ---------------------------------------------------------------- the static check


@pytest.mark.parametrize("path", sorted((ROOT / "generated").glob("*.py")), ids=lambda p: p.name)
def test_every_committed_generated_module_binds_each_name_once(path):
    check_bindings(path.read_text(), f"generated/{path.name}")


def test_the_committed_modules_are_all_there():
    """The test above must not pass by finding nothing: each spec module's generated module is there."""
    specs = {p.stem for p in (ROOT / "spec").glob("*.py") if not p.name.startswith("_")}
    assert len(specs) >= 8
    assert specs <= {p.stem for p in (ROOT / "generated").glob("*.py")}


@pytest.mark.parametrize(
    "text, line, name, first",
    [
        ("from a import fuse_conv_bn\nfrom b import fuse_conv_bn\n", 2, "fuse_conv_bn", 1),
        ("from a import f, g as f\n", 1, "f", 1),
        ("import torch\nimport torch.nn as torch\n", 2, "torch", 1),
        ("import torch.nn as nn\nimport nn\n", 2, "nn", 1),
        ("from a import x\nx = 1\n", 2, "x", 1),
        ("x = 1\n\n\ndef x():\n    pass\n", 4, "x", 1),
        ("class C:\n    pass\n\n\nC: int = 1\n", 5, "C", 1),
        ("__all__ = []\n__all__ += ['f']\n", 2, "__all__", 1),
        ("import a\nif a:\n    from b import a\n", 3, "a", 1),
        ("try:\n    pass\nexcept ValueError as e:\n    e = 1\n", 4, "e", 3),
        ("for i in ():\n    pass\nelse:\n    i = 0\n", 4, "i", 1),
        ("with open('f') as f:\n    pass\nf = 2\n", 3, "f", 1),
        ("if (y := 1):\n    pass\ny = 2\n", 3, "y", 1),
        ("x = 1; x = 2\n", 1, "x", 1),
        ("a, (b, a) = 1, (2, 3)\n", 1, "a", 1),
    ],
)
def test_the_check_refuses_a_name_bound_twice(text, line, name, first):
    with pytest.raises(OutputCheckError) as refused:
        check_bindings(text, "generated/x.py")
    assert str(refused.value) == (
        f"generated/x.py:{line}: the generator bound {name!r} a second time (first at line {first}), so one "
        "object silently replaces the other: a bug of the generator's templates or naming; please report it"
    )


@pytest.mark.parametrize(
    "text",
    [
        # Plain imports of one package bind the package itself, once: every generated module has these.
        "import torch\nimport torch.nn\nimport torch.ao.quantization.backend_config.utils\n",
        # Names bound in a function's or a class's own scope are not the module's.
        "x = 1\n\n\ndef f(x):\n    x = 2\n    return x\n\n\nclass C:\n    x = 3\n",
        "from a import fuse_conv_bn\nfrom b import fuse_conv_bn as b_fuse_conv_bn\n",
        "x: int\nx = 1\n",  # an annotation alone binds nothing
    ],
)
def test_the_check_passes_names_bound_once(text):
    check_bindings(text, "generated/x.py")


def test_rendering_refuses_import_lines_that_bind_a_name_twice():
    """render_module checks its import lines, whoever renders (import's validation too)."""
    lines = ["from a import fuse_conv_bn", "from b import fuse_conv_bn"]
    with pytest.raises(OutputCheckError) as refused:
        check_imports(lines, "generated/x.py")
    assert str(refused.value) == (
        "generated/x.py: the generator imports two objects as 'fuse_conv_bn' (`from a import fuse_conv_bn` and "
        "`from b import fuse_conv_bn`), so one silently replaces the other: a bug of the generator's naming; "
        "please report it"
    )
    check_imports(["import torch", "import torch.nn as nn", "from b import fuse_conv_bn as b_fuse_conv_bn",
                   "from torch.ao.quantization.fuser_method_mappings import fuse_conv_bn"], "generated/x.py")


# ---------------------------------------------------------------- import of a builder with torch's names

VENDOR = """
    import torch
    import torch.ao.nn.intrinsic as nni
    import torch.nn as nn
    from torch.ao.quantization import fuser_method_mappings
    from torch.ao.quantization.backend_config import BackendConfig, BackendPatternConfig, DTypeConfig

    int8 = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8)


    def fuse_conv_bn(is_qat, conv, bn):
        \"\"\"This team's own conv + bn fuser, named like torch's.\"\"\"
        return nn.Sequential(conv, bn)


    def fuse_conv_bn_relu(is_qat, conv, bn, relu):
        \"\"\"This team's own conv + bn + relu fuser, named like torch's.\"\"\"
        return nn.Sequential(conv, bn, relu)


    def _pattern(pattern, fuser, fused):
        return BackendPatternConfig(pattern).set_dtype_configs([int8]).set_fuser_method(fuser).set_fused_module(fused)


    def get_config():
        return BackendConfig("dup").set_backend_pattern_configs([
            _pattern((nn.Conv2d, nn.BatchNorm2d), fuser_method_mappings.fuse_conv_bn, nni.ConvBn2d),
            _pattern((nn.Conv1d, nn.BatchNorm1d), fuse_conv_bn, nni.ConvBn1d),
            _pattern((nn.Conv2d, nn.BatchNorm2d, nn.ReLU), fuser_method_mappings.fuse_conv_bn_relu, nni.ConvBnReLU2d),
            _pattern((nn.Conv1d, nn.BatchNorm1d, nn.ReLU), fuse_conv_bn_relu, nni.ConvBnReLU1d),
        ])
"""


def test_import_of_a_builder_with_its_own_fuse_conv_bn_regenerates_it_equal(fresh_project, capsys, monkeypatch):
    site = fresh_project.parent / "site"  # an installed package: on sys.path wherever a generated module runs
    write_package(site, "names_vendor_dup", {"backend": VENDOR})
    monkeypatch.syspath_prepend(str(site))
    code, out = run(capsys, "--root", str(fresh_project), "import", "names_vendor_dup.backend:get_config")
    assert code == 0, out
    code, out = run(capsys, "--root", str(fresh_project), "regenerate")
    assert code == 0, out
    path = fresh_project / "generated" / "config.py"
    from names_vendor_dup.backend import get_config

    ours, theirs = load_generated(path, "names_generated_dup").get_config(), get_config()
    assert compare_backend_configs("dup", ours, theirs) == []
    assert all(a.fuser_method is b.fuser_method for a, b in zip(ours.configs, theirs.configs, strict=True))
    imports = imports_of(path.read_text())
    assert "from torch.ao.quantization.fuser_method_mappings import fuse_conv_bn, fuse_conv_bn_relu" in imports
    assert ("from names_vendor_dup.backend import fuse_conv_bn as names_vendor_dup_backend_fuse_conv_bn, "
            "fuse_conv_bn_relu as names_vendor_dup_backend_fuse_conv_bn_relu") in imports


# ---------------------------------------------------------------- a hand-written spec

TWINS = {
    "first": """
        import torch.nn as nn


        def fuse_conv_bn(is_qat, conv, bn):
            return nn.Sequential(conv, bn)


        def F(is_qat, linear, relu):  # named like the module alias of torch.nn.functional
            return nn.Sequential(linear, relu)


        def fuse_linear_relu(is_qat, linear, relu):
            return nn.Sequential(linear, relu)
    """,
    "second": """
        import torch.nn as nn


        def fuse_conv_bn(is_qat, conv, bn):
            return nn.Sequential(conv, bn)


        def int8(is_qat, linear, bn):  # named like the spec's dtype config
            return nn.Sequential(linear, bn)


        def fuse_linear_relu(is_qat, linear, relu):
            return nn.Sequential(linear, relu)
    """,
}

PATTERNS = [
    'config((nn.Conv2d, nn.BatchNorm2d), [int8], fuser_method=fusers.fuse_conv_bn)',
    'config((nn.Conv1d, nn.BatchNorm1d), [int8], fuser_method=importable("names_twins.first.fuse_conv_bn"))',
    'config((nn.Conv3d, nn.BatchNorm3d), [int8], fuser_method=importable("names_twins.second.fuse_conv_bn"))',
    'config((nn.Linear, nn.ReLU), [int8], fuser_method=importable("names_twins.first.F"))',
    'config((nn.Linear, nn.BatchNorm1d), [int8], fuser_method=importable("names_twins.second.int8"))',
    'config(F.relu, [int8])',
    'config((nn.Linear, nn.ReLU6), [int8], fuser_method=importable("names_twins.first.fuse_linear_relu"))',
    'config((nn.Linear, nn.LeakyReLU), [int8], fuser_method=importable("names_twins.second.fuse_linear_relu"))',
]


def spec_text(patterns: list[str]) -> str:
    configs = "".join(f"\n                {p}," for p in patterns)
    return textwrap.dedent(f'''\
        """Objects of one name from several modules."""

        from generator.dsl import Backend, DTypeConfig, F, Module, config, fusers, importable, nn, torch

        int8 = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8)

        MODULE = Module(
            doc="Twins.",
            backends=[
                Backend(name="twins", builder="get_twins_backend_config", doc="Twins.", configs=[{configs}
                ]),
            ],
        )
    ''')


@pytest.fixture
def twins(fresh_project, monkeypatch):
    site = fresh_project.parent / "site"
    write_package(site, "names_twins", TWINS)
    monkeypatch.syspath_prepend(str(site))
    return fresh_project


def regenerated(capsys, project: Path, patterns: list[str]) -> str:
    (project / "spec" / "twins.py").write_text(spec_text(patterns))
    code, out = run(capsys, "--root", str(project), "regenerate")
    assert code == 0, out
    return (project / "generated" / "twins.py").read_text()


def test_objects_of_one_name_get_distinct_module_qualified_aliases(twins, capsys):
    text = regenerated(capsys, twins, PATTERNS)
    assert imports_of(text) == [
        "import torch",
        "import torch.nn as nn",
        "import torch.nn.functional as F",
        "from names_twins.first import F as names_twins_first_F, fuse_conv_bn as names_twins_first_fuse_conv_bn, "
        "fuse_linear_relu as names_twins_first_fuse_linear_relu",
        "from names_twins.second import fuse_conv_bn as names_twins_second_fuse_conv_bn, "
        "fuse_linear_relu as names_twins_second_fuse_linear_relu, int8 as names_twins_second_int8",
        "from torch.ao.quantization.backend_config import BackendConfig, BackendPatternConfig, DTypeConfig",
        "from torch.ao.quantization.fuser_method_mappings import fuse_conv_bn",
        "import torch.ao.quantization.backend_config.utils",
    ]
    import names_twins.first as first
    import names_twins.second as second
    import torch.ao.quantization.fuser_method_mappings as torch_fusers
    import torch.nn.functional

    generated = load_generated(twins / "generated" / "twins.py", "names_generated_twins")
    configs = generated.get_twins_backend_config().configs
    assert [c.fuser_method for c in configs] == [
        torch_fusers.fuse_conv_bn, first.fuse_conv_bn, second.fuse_conv_bn, first.F, second.int8, None,
        first.fuse_linear_relu, second.fuse_linear_relu,
    ]
    assert configs[5].pattern is torch.nn.functional.relu
    assert configs[0].dtype_configs[0] is generated.int8


def test_aliases_do_not_depend_on_the_order_of_the_patterns(twins, capsys):
    forward = regenerated(capsys, twins, PATTERNS)
    backward = regenerated(capsys, twins, PATTERNS[::-1])
    assert imports_of(backward) == imports_of(forward)
    assert sorted(forward.splitlines()) == sorted(backward.splitlines())  # the same entries, in another order


def test_a_pattern_more_changes_its_own_lines_only(twins, capsys):
    """A pattern that uses an object already aliased adds its entry, first or last; nothing else in the module
    changes (no alias depends on which pattern uses an object first)."""
    before = regenerated(capsys, twins, PATTERNS).splitlines()
    extra = 'config((nn.Conv3d, nn.ReLU), [int8], fuser_method=importable("names_twins.second.fuse_linear_relu"))'
    for patterns in ([extra, *PATTERNS], [*PATTERNS, extra]):
        after = regenerated(capsys, twins, patterns).splitlines()
        diff = list(difflib.unified_diff(before, after, lineterm="", n=0))[2:]  # past the ---/+++ lines
        assert [line for line in diff if line.startswith("@@")] == [diff[0]], diff  # one hunk
        assert all(line.startswith("+") for line in diff[1:]), diff  # that only adds lines
        assert "+            .set_fuser_method(names_twins_second_fuse_linear_relu)," in diff
