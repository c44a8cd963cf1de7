"""`import` of an in-house builder written with op lists and loops: the spec it writes loops
over op lists too (no longer than the builder), regenerates equal to the builder in the
builder's order, and puts each pattern in the family torch's backends give it, so the
matrix shows the backend's `nn.Linear` in torch's `nn.Linear` row and `nn.ReLU6` under
"share qparams ops".
"""

import importlib.util
import re
from pathlib import Path

import pytest

from generator import model
from generator.importer import op_lists, sections
from generator.review.equality import compare_backend_configs
from tests.support.builders import unused_backend_name
from tests.support.cli_runs import run
from tests.support.projects import ROOT

BUILDER_FILE = ROOT / "tests" / "support" / "inhouse" / "acme_npu" / "loops.py"
TARGET = "tests.support.inhouse.acme_npu.loops:get_acme_npu_loops_backend_config"
SHARE = "OUTPUT_SHARE_OBSERVER_WITH_INPUT"


NAME = unused_backend_name("acme_npu")  # the imported backend's spec file, module and matrix column


def builder():
    from tests.support.inhouse.acme_npu.loops import get_acme_npu_loops_backend_config

    return get_acme_npu_loops_backend_config()


@pytest.fixture
def imported(fresh_project, capsys):
    """The project with the in-house builder imported as spec/NAME.py and regenerated."""
    code, out = run(capsys, "--root", str(fresh_project), "import", TARGET, "--name", NAME)
    assert code == 0, out
    code, out = run(capsys, "--root", str(fresh_project), "regenerate")
    assert code == 0, out
    return fresh_project


def generated_builder(project: Path):
    path = project / "generated" / f"{NAME}.py"
    spec = importlib.util.spec_from_file_location("imported_acme_npu_loops", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.get_acme_npu_loops_backend_config


def test_the_spec_loops_over_op_lists_and_is_no_longer_than_the_builder(imported):
    spec = (imported / "spec" / f"{NAME}.py").read_text()
    assert len(spec.splitlines()) <= len(BUILDER_FILE.read_text().splitlines()), spec
    # the builder's op lists, named once, and loops over them
    assert "share_qparams_ops = [nn.ReLU, F.relu, nn.ReLU6, F.relu6, nn.MaxPool2d, torch.flatten]\n" in spec
    assert "binary_ops = [operator.add, torch.add, operator.mul, torch.mul]\n" in spec
    assert "for op in share_qparams_ops" in spec and "for op in binary_ops" in spec
    assert re.search(r"for conv, batchnorm, section in \(\s*\(nn\.Conv1d, nn\.BatchNorm1d, \"conv1d\"\)", spec), spec
    # 22 patterns, each written once in a loop body or on its own: far fewer config(...) calls
    assert len(builder().configs) == 22
    assert spec.count("config(") == 7, spec


def test_the_looped_spec_regenerates_equal_to_the_builder_in_its_order(imported):
    ours, theirs = generated_builder(imported)(), builder()
    assert compare_backend_configs(NAME, ours, theirs) == []
    assert [c.pattern for c in ours.configs] == [c.pattern for c in theirs.configs]


def matrix_rows(project: Path) -> dict[tuple[str, str], dict[str, str]]:
    """(family, pattern) -> {backend: cell} of docs/support-matrix.md."""
    rows, family, columns = {}, None, []
    for line in (project / "docs" / "support-matrix.md").read_text().splitlines():
        if line.startswith("### "):
            family = line[4:]
        elif line.startswith("| pattern |"):
            columns = [c.strip() for c in line.strip("|").split("|")][1:]
        elif family and line.startswith("| ") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[(family, cells[0].lstrip("◐ ").strip("`"))] = dict(zip(columns, cells[1:]))
    return rows


def test_the_matrix_shows_the_imported_patterns_in_torchs_rows(imported):
    rows = matrix_rows(imported)
    linear = rows[("linear", "nn.Linear")]
    assert linear[NAME] == "`weighted`" and linear["fbgemm"] != "·"
    relu6 = rows[("share qparams ops", "nn.ReLU6")]
    assert relu6[NAME] == "`activation`" and relu6["fbgemm"] != "·"
    # its own fusions sit in the family of the op they start with
    assert rows[("conv2d", "(nn.Conv2d, nn.ReLU6)")][NAME] == "`weighted_relu`"
    assert rows[("binary ops", "torch.mul")][NAME] == "`activation`"
    assert not [key for key, cells in rows.items() if key[0] == "other" and cells[NAME] != "·"]
    # one row per pattern: no family has the backend's nn.Linear twice
    assert [key for key in rows if key[1] == "nn.Linear"] == [("linear", "nn.Linear")]


def test_no_compact_writes_every_pattern_in_its_family(fresh_project, capsys):
    code, out = run(capsys, "--root", str(fresh_project), "import", TARGET, "--name", NAME, "--no-compact")
    assert code == 0, out
    spec = (fresh_project / "spec" / f"{NAME}.py").read_text()
    assert spec.count("config(") == 22 and " for " not in spec
    assert spec.count('section="share qparams ops"') == 6 and spec.count('section="linear"') == 2


# ---------------------------------------------------------------------------
# The parts, on model values
# ---------------------------------------------------------------------------


def ref(path):
    return model.TorchRef(path)


def dtype_config(name):
    return model.DTypeConfig(name=name, input_dtype=ref("torch.quint8"), output_dtype=ref("torch.quint8"))


A, B = (dtype_config("a"),), (dtype_config("b"),)


def share(op, dtype_configs=A, section=""):
    return model.PatternConfig(pattern=ref(op), dtype_configs=dtype_configs, observation_type=SHARE, section=section)


def test_a_loop_stands_for_patterns_that_differ_only_in_their_ops_and_keeps_their_order():
    ops = ["torch.nn.ReLU", "torch.nn.functional.relu", "torch.flatten", "torch.nn.Hardtanh"]
    configs = [share(op) for op in ops]
    (loop,) = op_lists.recover(configs, set())
    assert isinstance(loop, op_lists.Loop) and loop.expanded() == tuple(configs)
    assert loop.op_list == tuple(ref(op) for op in ops) and [v.name for v in loop.variables] == ["op"]


def test_patterns_with_other_settings_break_the_loop():
    ops = ["torch.nn.ReLU", "torch.nn.functional.relu", "torch.flatten", "torch.nn.Hardtanh", "torch.nn.ReLU6"]
    configs = [share(op, B if index == 2 else A) for index, op in enumerate(ops)]
    entries = op_lists.recover(configs, set())
    # the third differs in its dtype configs: nothing loops over it, and the rest keep their order
    assert configs[2] in entries
    flat = [c for e in entries for c in (e.expanded() if isinstance(e, op_lists.Loop) else (e,))]
    assert flat == configs


def test_loop_variables_never_hide_a_name_the_spec_uses():
    configs = [share(op) for op in ("torch.nn.Conv1d", "torch.nn.Conv2d", "torch.nn.Conv3d")]
    (loop,) = op_lists.recover(configs, {"conv"})
    assert [v.name for v in loop.variables] == ["conv_b"]
    (loop,) = op_lists.recover(configs, set())
    assert [v.name for v in loop.variables] == ["conv"]


def test_sections_follow_torchs_families():
    known = [
        share("torch.nn.ReLU6", section="share qparams ops"),
        model.PatternConfig(pattern=ref("torch.nn.Linear"), dtype_configs=A, section="linear"),
        model.PatternConfig(pattern=(ref("torch.nn.Conv2d"), ref("torch.nn.ReLU")), dtype_configs=A, section="conv2d"),
        model.PatternConfig(pattern=ref("torch.nn.ELU"), dtype_configs=A, section="default ops"),
        model.PatternConfig(pattern=ref("torch.nn.ELU"), dtype_configs=A, section="default ops"),
        share("torch.nn.ELU", section="share qparams ops"),
    ]
    families = sections.Families(known)
    assert families.section(share("torch.nn.ReLU6")) == "share qparams ops"
    assert families.section(model.PatternConfig(pattern=ref("torch.nn.Linear"), dtype_configs=B)) == "linear"
    fusion = model.PatternConfig(pattern=(ref("torch.nn.Conv2d"), ref("torch.nn.ReLU6")), dtype_configs=A)
    assert families.section(fusion) == "conv2d"
    # the same op, placed as the backends that observe it the same way place it
    assert families.section(share("torch.nn.ELU")) == "share qparams ops"
    assert families.section(model.PatternConfig(pattern=ref("torch.nn.ELU"), dtype_configs=A)) == "default ops"
    # an op no family holds: by what it does, else "other"
    assert families.section(share("acme.ops.Swish")) == "share qparams ops"
    assert families.section(model.PatternConfig(pattern=ref("acme.ops.Swish"), dtype_configs=A)) == ""
