"""`--help` for every command: a one-line description, each option's default, the exit codes; and a misspelt
revision or backend gets the closest names (tests/support/two_chips.py)."""

import re

import pytest

from generator import cli
from tests.support import two_chips
from tests.support.projects import commit_all, git

COMMANDS = ["init", "regenerate", "check", "matrix", "diff", "verify", "import"]


def help_of(capsys, *args) -> str:
    with pytest.raises(SystemExit) as done:
        cli.main([*args, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


def test_the_top_level_help_lists_every_command_and_the_exit_codes(capsys):
    text = help_of(capsys)
    assert set(re.findall(r"^    (\w+)\b", text, re.MULTILINE)) == set(COMMANDS)
    assert "exit codes: 0 fine, 1 differs" in text


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_s_help_has_a_description_its_defaults_and_its_exit_codes(capsys, command):
    text = help_of(capsys, command)
    description = text.split("\n\n")[1]
    assert description.endswith(".") and "\n" not in description.strip(), description  # one line
    codes = text.split("exit codes:\n")[1]
    assert re.findall(r"^  (\d+) ", codes, re.MULTILINE)[0] == "0"
    assert "  2    an error: one line on standard error, no file changed" in codes
    # Every option that takes a value says its default.
    for option in re.findall(r"^  (--[\w-]+) [A-Z{]", text, re.MULTILINE):
        entry = text.split(f"\n  {option} ", 1)[1].split("\n  -", 1)[0]
        assert "default" in entry, (command, option)


def test_the_defaults_that_matter_are_said(capsys):
    assert "(default: the number of CPUs)" in help_of(capsys, "check")
    assert re.search(r"\(default:\s+text\)", help_of(capsys, "diff"))
    diff_codes = help_of(capsys, "diff").split("exit codes:\n")[1]
    assert "1    a difference" in diff_codes and "|| true" in diff_codes
    assert re.search(r"\(default:\s+60\)", help_of(capsys, "verify"))


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    root = two_chips.write(tmp_path_factory.mktemp("help") / "chips")
    assert two_chips.generator(root, "regenerate")[0] == 0
    commit_all(root)
    git(root, "branch", "-M", "main")
    git(root, "tag", "v1.0")
    return root


@pytest.mark.parametrize(("given", "meant"), [("mian", "main"), ("v1.O", "v1.0"), ("HEAD..mian", "main")])
def test_a_misspelt_revision_is_one_line_naming_the_closest(repository, given, meant):
    code, out, err = two_chips.generator(repository, "diff", "--rev", given)
    assert (code, out) == (2, "")
    assert err.endswith(f"is not a revision of the git repository at {repository}; did you mean {meant}?\n")
    assert err.count("\n") == 1


@pytest.mark.parametrize("command", ["diff", "verify"])
def test_a_misspelt_backend_is_one_line_naming_the_closest(repository, command):
    code, out, err = two_chips.generator(repository, command, "nup")
    assert (code, out) == (2, "")
    assert err == "error: unknown backend(s) nup; did you mean npu? choose from dsp, npu\n"
