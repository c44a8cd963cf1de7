"""The documentation says what is: its links resolve, and what the README shows of the modules and commands is true.

Other examples run in the tests they belong to: the spec reference's (docs/spec.md) and the README's quick start
regenerate to builders equal to their expansion, the tutorial's usage snippet (docs/adding-a-backend.md) runs with
the tutorial's backend, and the review walkthrough's edit (docs/reviewing.md) is the one the equality tests make.
Here: every relative link of the README, docs/ and the READMEs of tests/ and benchmarks/; the README's usage
example, module table and commands table; every option of every command in docs/commands.md; the tutorial's spec
as docs/adding-a-backend.md shows it.
"""

from __future__ import annotations

import ast
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch.ao.quantization.backend_config as torch_backend_config
from torch.ao.quantization.backend_config import BackendConfig

from tests.support.projects import ROOT

PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "benchmarks" / "README.md",
    ROOT / "tests" / "README.md",
]
FENCED = re.compile(r"^ *```.*?^ *```", re.S | re.M)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
README = (ROOT / "README.md").read_text(encoding="utf-8")


def prose(text: str) -> str:
    """The text without fenced blocks and inline code, where brackets and # are not Markdown."""
    return re.sub(r"`[^`\n]*`", "", FENCED.sub("", text))


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} +(.+?) *$", FENCED.sub("", page.read_text(encoding="utf-8")), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        seen[slug] = seen.get(slug, -1) + 1  # a repeated heading's anchor takes -1, -2, ...
    return set(seen) | {f"{slug}-{n}" for slug, count in seen.items() for n in range(1, count + 1)}


def relative_links(page: Path) -> list[str]:
    return [t for t in LINK.findall(prose(page.read_text(encoding="utf-8"))) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_a_file_that_exists(page):
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no file {linked}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: {linked.name} has no heading #{anchor}")
    assert broken == [], f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_readme_links_every_page_of_docs():
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in relative_links(ROOT / "README.md")}
    assert [p.name for p in sorted((ROOT / "docs").glob("*.md")) if p.resolve() not in linked] == []
    assert {ROOT / "tests" / "README.md", ROOT / "benchmarks" / "README.md"} <= linked


def test_the_readme_s_usage_example_builds_a_backend_config():
    [example] = [block for block in re.findall(r"```python\n(.*?)```", README, re.S) if "from generated." in block]
    namespace: dict = {}
    exec(compile(example, "README.md", "exec"), namespace)
    assert isinstance(namespace["backend_config"], BackendConfig) and namespace["backend_config"].name == "fbgemm"


def public_names(module: Path) -> list[str]:
    tree = ast.parse(module.read_text(encoding="utf-8"))
    [names] = [n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "__all__"]
    return ast.literal_eval(names)


def test_the_readme_s_module_table_names_every_module_torch_has_and_its_builders():
    """Every generated module that stands for one of torch's (a backend of your own need not be in the table)."""
    rows = dict(re.findall(r"^\| `generated\.(\w+)` \| (.+) \|$", README, re.M))
    modules = {p.stem: p for p in (ROOT / "generated").glob("*.py") if p.stem != "__init__"}
    torch_modules = {m.name.lstrip("_") for m in pkgutil.iter_modules(torch_backend_config.__path__)}
    assert set(rows) <= set(modules) and {m for m in modules if m in torch_modules} <= set(rows)
    for name, cell in rows.items():
        shown = set()
        for builder in re.findall(r"`(\w+)(\(_dict\))?`", cell):
            shown |= {builder[0], builder[0] + "_dict"} if builder[1] else {builder[0]}
        builders = {n for n in public_names(modules[name]) if n.startswith("get_")}
        assert shown == builders, name


def generator_help(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "generator", *args, "--help"], cwd=ROOT, capture_output=True,
                          text=True, check=True)  # fmt: skip
    return done.stdout


COMMANDS = re.findall(r"^    ([a-z]+)\b", generator_help().partition("positional arguments:")[2], re.M)


def test_the_readme_s_command_table_lists_every_command():
    assert len(COMMANDS) >= 5
    assert re.findall(r"^\| `python -m generator ([a-z]+)", README, re.M) == COMMANDS


@pytest.mark.parametrize("command", COMMANDS)
def test_docs_commands_md_documents_every_option(command):
    page = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    options = set(re.findall(r"(--[a-z][a-z-]*)", generator_help(command))) - {"--help"}
    assert options and f"## {command}" in page
    assert sorted(o for o in options if o not in page) == []


def test_the_tutorial_spec_docs_show_is_the_one_the_tests_run():
    page = (ROOT / "docs" / "adding-a-backend.md").read_text(encoding="utf-8")
    [shown] = [b for b in re.findall(r"```python\n(.*?)```", page, re.S) if 'MODULE = Module(' in b]
    tree = ast.parse((ROOT / "tests" / "custom_backends" / "tutorial" / "spec" / "my_backend.py").read_text())
    del tree.body[0]  # its docstring, which the page says in prose
    assert ast.dump(ast.parse(shown)) == ast.dump(tree)
