"""`check --format github` and `diff --format github`: every line a GitHub Actions workflow command, one per
finding, at the spec line that causes it, read back with a workflow-command parser
(tests/support/workflow_commands.py); and machine-readable output stays whole when the command fails."""

import json
import shutil

import pytest

from tests.support import two_chips
from tests.support.projects import commit_all, git
from tests.support.workflow_commands import findings


@pytest.fixture(scope="module")
def committed(tmp_path_factory):
    root = two_chips.write(tmp_path_factory.mktemp("chips") / "chips")
    assert two_chips.generator(root, "regenerate")[0] == 0
    return commit_all(root)


@pytest.fixture
def chips(committed, tmp_path):
    return shutil.copytree(committed, tmp_path / "chips", symlinks=True)


def test_a_fresh_tree_has_no_findings(chips):
    code, out, err = two_chips.generator(chips, "check", "--format", "github")
    assert (code, out) == (0, "")
    assert "up to date" in err


def test_a_stale_file_is_an_error_at_the_spec_file_that_changed(chips):
    two_chips.edit(chips, "scale_min_lower_bound=2**-14", "scale_min_lower_bound=2**-12", "spec/_chips.py")
    code, out, _ = two_chips.generator(chips, "check", "--format", "github")
    assert code == 1
    found = findings(out)
    stale = sorted(message.split(":")[0] for _, _, message in found)
    assert stale == ["docs/support-matrix.md", "generated/dsp.py", "generated/npu.py"]
    assert all(level == "error" and props["file"] == "spec/_chips.py" for level, props, _ in found)
    assert all("python -m generator regenerate" in message for _, _, message in found)


def test_a_hand_edit_is_an_error_at_the_generated_line_edited(chips):
    module = chips / "generated" / "npu.py"
    lines = module.read_text().splitlines(keepends=True)
    edited = next(i for i, line in enumerate(lines) if "scale_min_lower_bound" in line)
    lines[edited] = lines[edited].replace("2**-14", "2**-13")
    module.write_text("".join(lines))
    code, out, _ = two_chips.generator(chips, "check", "--format", "github")
    assert code == 1
    title = "check: generated/npu.py edited by hand"
    assert findings(out) == [
        ("error", {"file": "generated/npu.py", "line": str(edited + 1), "title": title},
         "generated/npu.py: edited by hand: its content is not what regenerate wrote; "
         "fix: python -m generator regenerate"),
    ]  # fmt: skip


def test_a_spec_error_is_one_error_at_its_line_and_nothing_else(chips):
    spec = chips / "spec" / "npu.py"
    spec.write_text(spec.read_text() + "\nbroken = (\n")
    line = len(spec.read_text().splitlines())
    code, out, err = two_chips.generator(chips, "check", "--format", "github")
    assert code == 2
    [(level, props, message)] = findings(out)
    assert (level, props["file"], props["line"]) == ("error", "spec/npu.py", str(line))
    assert "never closed" in message
    assert err.startswith("error: spec/npu.py:")


def test_a_lint_finding_is_a_warning_at_its_spec_line(chips):
    twice = 'config(nn.Hardtanh, [_DSP_U8], section="activations"),'
    two_chips.edit(chips, twice, twice + "\n                config(nn.Hardtanh, [_ACT_S8]),", "spec/dsp.py")
    assert two_chips.generator(chips, "regenerate")[0] == 0
    code, out, _ = two_chips.generator(chips, "check", "--format", "github")
    assert code == 0
    [(level, props, message)] = findings(out)
    assert level == "warning"
    assert props["file"] == "spec/dsp.py"
    assert props["line"] == str(two_chips.line_of(chips, "spec/dsp.py", "config(nn.Hardtanh, [_ACT_S8])"))
    assert "nn.Hardtanh" in message


def test_diff_gives_each_change_at_its_spec_line(chips):
    two_chips.edit(chips, "nn.Linear, nn.ReLU]", "nn.Linear, nn.ReLU, nn.Conv1d]", "spec/_chips.py")
    assert two_chips.generator(chips, "regenerate")[0] == 0
    code, out, _ = two_chips.generator(chips, "diff", "--format", "github")
    assert code == 1
    found = findings(out)
    line = str(two_chips.line_of(chips, "spec/_chips.py", "nn.Conv1d"))
    assert sorted(message for _, _, message in found) == [
        "dsp: + pattern nn.Conv1d (_ACT_S8)", "npu: + pattern nn.Conv1d (_ACT_S8)"
    ]
    assert all(props["file"] == "spec/_chips.py" and props["line"] == line for _, props, _ in found)
    assert {level for level, _, _ in found} == {"notice"}


def test_diff_of_a_stale_tree_is_an_error_per_file_at_its_cause(chips):
    two_chips.edit(chips, "nn.Linear, nn.ReLU]", "nn.Linear, nn.ReLU, nn.Conv1d]", "spec/_chips.py")
    code, out, _ = two_chips.generator(chips, "diff", "--format", "github")
    assert code == 1
    found = findings(out)
    assert len(found) == 3 and all(level == "error" and p["file"] == "spec/_chips.py" for level, p, _ in found)


@pytest.mark.parametrize("fmt", ["json", "github"])
def test_a_failing_diff_still_writes_its_format_and_nothing_else(chips, fmt):
    code, out, err = two_chips.generator(chips, "diff", "--rev", "mian", "--format", fmt)
    assert code == 2
    assert err.count("\n") == 1 and "mian is not a revision" in err
    if fmt == "json":
        document = json.loads(out)
        assert document["error"] == err.removeprefix("error: ").strip() and document["exit_code"] == 2
    else:
        [(level, _, message)] = findings(out)
        assert level == "error" and "mian is not a revision" in message


def test_the_revision_range_is_in_each_title(chips):
    two_chips.edit(chips, 'section="activations"', 'section="clamps"', "spec/dsp.py")
    assert two_chips.generator(chips, "regenerate")[0] == 0
    git(chips, "commit", "-qam", "move")
    code, out, _ = two_chips.generator(chips, "diff", "--rev", "HEAD~1..HEAD", "--format", "github")
    assert (code, out) == (0, "")  # a section move changes no BackendConfig


def test_a_spec_edit_that_changes_no_module_is_no_finding(chips):
    """A comment in a spec changes no generated byte: nothing to commit, so nothing to annotate."""
    spec = chips / "spec" / "npu.py"
    spec.write_text(spec.read_text() + "# a comment\n")
    code, out, err = two_chips.generator(chips, "diff", "--format", "github")
    assert (code, findings(out)) == (0, []), err
