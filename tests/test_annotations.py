"""`--format github` findings are GitHub Actions workflow commands that GitHub's own parser reads back whole."""

from __future__ import annotations

import pytest

from generator.annotations import workflow_command
from tests.support.workflow_commands import parsed


def test_an_error_at_a_spec_line_reads_back_as_file_line_and_message():
    line = workflow_command("error", "pattern nn.Conv2d: no observer", file="spec/npu.py", line=12)
    assert line == "::error file=spec/npu.py,line=12::pattern nn.Conv2d: no observer"
    assert parsed(line) == ("error", {"file": "spec/npu.py", "line": "12"}, "pattern nn.Conv2d: no observer")


@pytest.mark.parametrize("text", ["50% off, a:b", "two\nlines\r\n", "::error::nested", "%0A literal"])
def test_messages_and_properties_with_separators_survive_the_round_trip(text):
    level, props, message = parsed(workflow_command("warning", text, file=f"spec/{text}.py", line=3, title=text))
    assert (level, props["file"], props["title"], message) == ("warning", f"spec/{text}.py", text, text)


def test_a_finding_without_a_file_has_no_properties_and_an_unknown_level_is_refused():
    assert workflow_command("notice", "9 backends verified") == "::notice::9 backends verified"
    with pytest.raises(ValueError):
        workflow_command("fatal", "x")
