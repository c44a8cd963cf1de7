"""The pre-commit hook runs `check` on every commit, whatever files it touches.

`check` tracks inputs outside any fixed set of folders (a project's own packages that its spec imports), so a
hook limited by `files:` would let a commit that changes only such a package pass, and HEAD would then fail
`check`. pre-commit itself need not be installed: its rule for whether a hook runs on a commit is applied here
to the hook as .pre-commit-hooks.yaml declares it (and as `init` writes it into a project's config).
"""

from __future__ import annotations

import re

import pytest

from generator import starting
from tests.support import small_yaml
from tests.support.projects import ROOT

HOOKS = small_yaml.load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
[HOOK] = [hook for hook in HOOKS if hook["id"] == starting.HOOK_ID]


def runs_on(hook: dict, changed: list[str]) -> bool:
    """pre-commit's choice (pre_commit/commands/run.py): a hook runs if `always_run`, or if a changed file matches
    its `files` and not its `exclude` (the defaults match every file and none); `types` default to any file."""
    if hook.get("always_run", False):
        return True
    included = re.compile(hook.get("files", ""))
    excluded = re.compile(hook.get("exclude", "^$"))
    return any(included.search(name) and not excluded.search(name) for name in changed)


def test_the_rule_applied_is_pre_commit_s():
    """The rule above skips a hook whose files a commit does not touch (as the hook once did)."""
    old = {**HOOK, "always_run": False, "files": "^(spec|templates|generator|generated|docs)/"}
    assert not runs_on(old, ["acme_quant/fusers.py"]) and runs_on(old, ["spec/x86.py"])


@pytest.mark.parametrize(
    "changed", [["acme_quant/fusers.py"], ["src/npu_ext/__init__.py", "README.md"], ["pyproject.toml"]]
)
def test_the_hook_runs_for_a_commit_that_touches_only_a_user_package(changed):
    assert runs_on(HOOK, changed)


def test_the_hook_runs_check_on_the_whole_project():
    assert HOOK["entry"] == "backend-config-generator check"  # the console script: nothing shadows it
    assert HOOK["language"] == "system"
    assert HOOK["pass_filenames"] is False  # check takes no file names: it checks the whole project
    assert "files" not in HOOK and "exclude" not in HOOK and "types" not in HOOK


def test_init_s_local_hook_is_the_repository_s_hook():
    """`init` writes the hook as a local one (no clone, no network); it must run as the published one does."""
    [repo] = small_yaml.load(starting.precommit_config(""))["repos"]
    [local] = repo["hooks"]
    assert repo["repo"] == "local"
    keys = ("id", "entry", "language", "pass_filenames", "always_run")
    assert {k: local.get(k) for k in keys} == {k: HOOK.get(k) for k in keys}
    assert runs_on(local, ["acme_quant/fusers.py"])


def test_init_s_hook_in_a_subfolder_project_names_its_root():
    [repo] = small_yaml.load(starting.precommit_config("vendor/configs"))["repos"]
    assert repo["hooks"][0]["entry"] == "backend-config-generator --root vendor/configs check"
