"""The in-house builder of issue 30, end to end: `import` of tests/support/inhouse/acme_npu/backend.py
(a dict of op lists, loops, `functools.partial`, `copy.deepcopy`, a closure made by a factory, its own
fused module with a classmethod fuser, its own `fuse_conv_bn` named like torch's) writes a spec a reviewer
reads as hand-written, and a generated module proven equal to the builder.

The other import tests take each of these properties apart on builders of their own; this one holds them
together on the builder the issue was found with.
"""

import ast
import importlib.util
import shutil
import sys

import pytest

from generator import cli
from generator.review.equality import compare_backend_configs
from tests.support.builders import unused_backend_name
from tests.support.projects import ROOT

PACKAGE = ROOT / "tests" / "support" / "inhouse" / "acme_npu"
TARGET = "acme_npu.backend:get_acme_npu_backend_config"
NAME = unused_backend_name("acme_npu")  # its spec file and module: the project may have an acme_npu of its own


@pytest.fixture
def imported(fresh_project, capsys, monkeypatch):
    """(project, import's stdout): the package installed as a site folder outside the project, imported and
    regenerated."""
    site = fresh_project.parent / "site"
    shutil.copytree(PACKAGE, site / "acme_npu", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "acme_npu", raising=False)
    monkeypatch.delitem(sys.modules, "acme_npu.backend", raising=False)
    code = cli.main(["--root", str(fresh_project), "import", TARGET, "--name", NAME])
    out = capsys.readouterr()
    assert code == 0, out
    assert cli.main(["--root", str(fresh_project), "regenerate"]) == 0
    capsys.readouterr()
    return fresh_project, out.out


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_builder_equals_the_in_house_builder(imported):
    project, _ = imported
    ours = load(project / "generated" / f"{NAME}.py", "inhouse_generated").get_acme_npu_backend_config()
    from acme_npu.backend import get_acme_npu_backend_config

    theirs = get_acme_npu_backend_config()
    assert compare_backend_configs("acme_npu", ours, theirs) == []
    # the builder's own conv + bn fusers, not torch's functions of the same names
    import acme_npu.backend as legacy

    fusers = {c.pattern: c.fuser_method for c in ours.configs}
    import torch.nn as nn

    assert fusers[(nn.Conv2d, nn.BatchNorm2d)] is legacy.fuse_conv_bn
    assert fusers[(nn.Conv1d, nn.BatchNorm1d, nn.ReLU)] is legacy.fuse_conv_bn_relu


def test_the_spec_reads_as_written_by_hand(imported):
    project, _ = imported
    spec = (project / "spec" / f"{NAME}.py").read_text()
    builder = (PACKAGE / "backend.py").read_text()
    assert len(spec.splitlines()) <= len(builder.splitlines())
    # the builder's names for its constants, numbers as it spells them, no numbered names
    assert "ACT = DTypeWithConstraints(dtype=torch.quint8, scale_min_lower_bound=2**-12)" in spec
    assert "0.000244140625" not in spec
    names = [t.id for node in ast.parse(spec).body if isinstance(node, ast.Assign) for t in node.targets]
    assert not [name for name in names if name[-2:-1] == "_" and name[-1].isdigit()], names
    # op lists and loops, not one config(...) per op
    assert "for op in share_qparams_ops" in spec
    assert spec.count("config(") < 22 / 2


def test_the_generated_module_binds_each_name_once(imported):
    project, _ = imported
    tree = ast.parse((project / "generated" / f"{NAME}.py").read_text())
    bound = [
        alias.asname or alias.name.split(".")[0]
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    ]
    bound += [node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
    assigned = (t for node in tree.body if isinstance(node, ast.Assign) for t in node.targets)
    bound += [target.id for target in assigned if isinstance(target, ast.Name)]
    repeated = {name for name in bound if bound.count(name) > 1 and name != "torch"}
    assert not repeated, repeated


def test_import_says_what_the_generated_module_still_needs_of_the_old_code(imported):
    _, out = imported
    lines = [line for line in out.splitlines() if line.startswith("depends on")]
    assert len(lines) == 1, out
    line = lines[0]
    assert line.startswith("depends on acme_npu.backend: ")
    for name in ("ConvReLU62d", "fuse_conv_bn", "fuse_conv_bn_relu", "_fuse_with", "_make_relu6_fuser"):
        assert name in line
    assert "private" in line and "acme_npu/backend.py" in line
