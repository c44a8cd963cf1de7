"""A week of typical changes to a user's two chips (tests/support/two_chips.py), each a commit, reviewed as a
pull request is: `diff --rev` in text, Markdown, JSON and GitHub form. Every expectation is written from the
edit itself (the spellings it types, the lines it touches), never from the generator's output."""

import json

import pytest

from tests.support import two_chips
from tests.support.projects import commit_all, git
from tests.support.workflow_commands import findings

# (commit message, file, old, new): one typical change a day.
WEEK = [
    ("constraint", "spec/_chips.py", "scale_min_lower_bound=2**-14", "scale_min_lower_bound=2**-12"),
    ("op in a shared group", "spec/_chips.py", "nn.Linear, nn.ReLU]", "nn.Linear, nn.ReLU, nn.Conv1d]"),
    ("dtype config", "spec/dsp.py", "output_dtype=torch.quint8)", "output_dtype=torch.quint8, is_dynamic=False)"),
    ("declared difference", "spec/dsp.py", 'section="activations"),',
     'section="activations"),\n                '
     'config(added(nn.Hardswish, "our DSP runs Hardswish in int8"), [_DSP_U8]),'),
    ("section move", "spec/dsp.py", 'section="activations"', 'section="clamps"'),
    ("reformatted", "spec/npu.py", "MODULE = Module(", "# The NPU's one backend.\n\n\nMODULE = Module("),
]  # fmt: skip
DAY = {message: index for index, (message, *_) in enumerate(WEEK)}


@pytest.fixture(scope="module")
def week(tmp_path_factory):
    root = two_chips.write(tmp_path_factory.mktemp("week") / "chips")
    assert two_chips.generator(root, "regenerate")[0] == 0
    commit_all(root)
    for message, file, old, new in WEEK:
        two_chips.edit(root, old, new, file)
        if message == "declared difference":
            two_chips.edit(root, "import Backend,", "import Backend, added,", file)
        assert two_chips.generator(root, "regenerate")[0] == 0
        git(root, "add", "-A")
        git(root, "commit", "-qm", message)
    return root


def review(root, day: str, fmt: str) -> tuple[int, str]:
    """`diff --rev` of one day's commit against the one before, in a format; its exit code and stdout."""
    back = len(WEEK) - DAY[day]
    code, out, err = two_chips.generator(root, "diff", "--rev", f"HEAD~{back}..HEAD~{back - 1}", "--format", fmt)
    assert code in (0, 1), err
    return code, out


def test_a_constraint_reads_as_the_spec_spells_it_under_its_name_with_its_users(week):
    line = f"spec/_chips.py:{two_chips.line_of(week, 'spec/_chips.py', '_W_S8 = ')}"
    code, text = review(week, "constraint", "text")
    assert code == 1
    for chip in ("dsp", "npu"):
        assert f"{chip}: dtype config _ACT_S8: weight_dtype.scale_min_lower_bound (_W_S8): 2**-14 -> 2**-12  ({line})" \
            in text.splitlines()
        assert f"{chip}: dtype config _ACT_S8: used by 3 patterns: nn.Conv2d, nn.Linear, nn.ReLU" in text.splitlines()
    assert "e-05" not in text and "0.000244" not in text
    _, markdown = review(week, "constraint", "markdown")
    assert "(_W_S8): `2**-14` → `2**-12`" in markdown and "(used by `nn.Conv2d`, `nn.Linear`, `nn.ReLU`)" in markdown
    _, out = review(week, "constraint", "json")
    for backend in json.loads(out)["backends"]:
        [dtype_config] = backend["dtype_configs"]
        assert dtype_config["patterns"] == ["nn.Conv2d", "nn.Linear", "nn.ReLU"]
        assert dtype_config["fields"] == [{"field": "weight_dtype.scale_min_lower_bound", "old": "2**-14",
                                           "new": "2**-12", "constraint": "_W_S8", "location": line}]  # fmt: skip
    _, github = review(week, "constraint", "github")
    found = findings(github)
    assert len(found) == 2 and all(f"{p['file']}:{p['line']}" == line for _, p, _ in found)
    assert all("2**-14 -> 2**-12" in message and "_W_S8" in message for _, _, message in found)


def test_an_op_added_to_a_shared_group_is_one_pattern_per_chip_at_the_op_s_line(week):
    line = f"spec/_chips.py:{two_chips.line_of(week, 'spec/_chips.py', 'nn.Conv1d')}"
    _, text = review(week, "op in a shared group", "text")
    assert sorted(text.splitlines()) == [f"dsp: + pattern nn.Conv1d  ({line})", f"npu: + pattern nn.Conv1d  ({line})"]


def test_a_changed_dtype_config_names_each_pattern_that_uses_it(week):
    _, out = review(week, "dtype config", "json")
    [dsp] = [b for b in json.loads(out)["backends"] if b["status"] != "same"]
    [dtype_config] = dsp["dtype_configs"]
    assert dtype_config["name"] == "_DSP_U8" and dtype_config["patterns"] == ["nn.Hardtanh"]
    assert [(f["field"], f["old"], f["new"]) for f in dtype_config["fields"]] == [("is_dynamic", "None", "False")]


def test_a_declared_difference_comes_with_its_reason_in_every_format(week):
    reason = "our DSP runs Hardswish in int8"
    line = f"spec/dsp.py:{two_chips.line_of(week, 'spec/dsp.py', 'added(nn.Hardswish')}"
    _, text = review(week, "declared difference", "text")
    assert f"  dsp: declared added nn.Hardswish ({line}): {reason}" in text.splitlines()
    _, markdown = review(week, "declared difference", "markdown")
    assert f"- dsp: added `nn.Hardswish` (`{line}`): {reason}" in markdown.splitlines()
    _, out = review(week, "declared difference", "json")
    [dsp] = [b for b in json.loads(out)["backends"] if b["backend"] == "dsp"]
    assert dsp["declared"] == [
        {"kind": "added", "pattern": "nn.Hardswish", "reason": reason, "location": line, "fields": []}
    ]
    _, github = review(week, "declared difference", "github")
    assert [(p["file"], p["line"]) for _, p, m in findings(github) if reason in m] == [tuple(line.split(":"))]


@pytest.mark.parametrize("day", ["section move", "reformatted"])
def test_a_change_of_layout_alone_is_no_difference(week, day):
    for fmt in ("text", "json", "github"):
        code, out = review(week, day, fmt)
        assert code == 0, (fmt, out)
        if fmt == "json":
            assert json.loads(out)["different"] is False
        if fmt == "github":
            assert out == ""


def test_against_its_reference_the_week_s_undeclared_drift_is_an_error_in_the_spec_s_words(week):
    line = f"spec/_chips.py:{two_chips.line_of(week, 'spec/_chips.py', '_W_S8 = ')}"
    code, out, _ = two_chips.generator(week, "diff", "--against-torch", "dsp")
    assert code == 1
    # The reference's 2**-14 (a float it never spells) reads as a power of two, ours as the spec spells it.
    assert f"dsp: dtype config _ACT_S8: weight_dtype.scale_min_lower_bound (_W_S8): 2**-14 -> 2**-12  ({line})" \
        in out.splitlines()
    assert "  dsp: declared added nn.Hardswish" in out  # its reason, apart from the drift
    code, out, _ = two_chips.generator(week, "diff", "--against-torch", "--format", "github", "dsp")
    levels = {(level, props.get("file")) for level, props, message in findings(out) if "_W_S8" in message}
    assert levels == {("error", "spec/_chips.py")}
