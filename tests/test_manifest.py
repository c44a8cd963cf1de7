"""Unchanged output, unchanged file: what a spec or template edit changes in git, and why check calls a file stale.

The record of what each generated file was made from lives in generated/manifest.json,
so an edit shows in git only where a file's body changes.
"""

import ast
import json
import re

from generator import cli
from generator.building import pipeline
from generator.freshness import planning
from generator.spelling import python_source
from tests.support.projects import at_one_path_fixture, commit_all, git

one_path_project = at_one_path_fixture("manifest")  # a fresh copy per test, at one path (see there)


def committed(project):
    (project / ".gitignore").write_text(".cache/\n")
    return commit_all(project)


def patterns_by_builder(project) -> dict[tuple[str, str], set[str]]:
    """{(module, builder function): patterns}, from the expanded spec."""
    return {
        (module.spec.name, expanded.backend.builder): {python_source(c.key) for c in expanded.backend.configs}
        for module in pipeline.load(project, validate=False)
        for expanded in module.backends
    }


def hunks(project, path: str) -> list[tuple[int, int]]:
    """(first, last) new-side line of each hunk of `git diff` for one file."""
    found = []
    for match in re.finditer(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@", git(project, "diff", "--", path), re.MULTILINE):
        first, count = int(match.group(1)), int(match.group(2) or 1)
        found.append((first, first + max(count, 1) - 1))
    return found


def enclosing_function(source: str, lines: tuple[int, int]) -> str | None:
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.lineno <= lines[0] and lines[1] <= node.end_lineno:
            return node.name
    return None


def test_a_one_op_edit_changes_only_the_builders_that_gain_the_pattern(one_path_project, capsys):
    committed(one_path_project)
    before = patterns_by_builder(one_path_project)
    common = one_path_project / "spec" / "_common.py"
    assert "    nn.ELU, nn.LeakyReLU," in common.read_text()
    common.write_text(common.read_text().replace("    nn.ELU, nn.LeakyReLU,", "    nn.ELU, nn.SiLU, nn.LeakyReLU,", 1))
    assert cli.main(["--root", str(one_path_project), "regenerate"]) == 0
    after = patterns_by_builder(one_path_project)
    gaining = {key for key in after if after[key] - before[key] == {"nn.SiLU"}}
    assert gaining and all(after[key] == before[key] for key in after if key not in gaining)
    modules = {f"generated/{module}.py" for module, _ in gaining}
    changed = set(git(one_path_project, "diff", "--name-only").split())
    assert changed == modules | {"spec/_common.py", "docs/support-matrix.md", "generated/manifest.json"}
    for path in modules:
        source = (one_path_project / path).read_text()
        functions = [enclosing_function(source, hunk) for hunk in hunks(one_path_project, path)]
        assert sorted(functions) == sorted(builder for module, builder in gaining if path.endswith(f"/{module}.py"))
    capsys.readouterr()


def test_a_template_edit_that_alters_no_output_changes_no_file_to_commit(one_path_project, capsys):
    committed(one_path_project)
    for template in ("module.py.j2", "docs/support-matrix.md.j2"):
        path = one_path_project / "templates" / template
        path.write_text("{#- Reviewed: this comment renders as nothing. -#}\n" + path.read_text())
    assert cli.main(["--root", str(one_path_project), "regenerate"]) == 0
    out = capsys.readouterr().out
    assert not [line for line in out.splitlines() if line.startswith("written")]  # the manifest neither
    assert set(git(one_path_project, "diff", "--name-only").split()) == {
        "templates/module.py.j2", "templates/docs/support-matrix.md.j2"
    }
    assert cli.main(["--root", str(one_path_project), "check"]) == 0


def statuses(project) -> dict[str, planning.Status]:
    recorded = planning.read_manifest(project)
    return {t.relative: planning.status(t, recorded) for t in planning.plan(project)}


def edit_manifest(project, change) -> None:
    path = project / "generated" / "manifest.json"
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document, indent=1) + "\n")


def test_check_names_the_input_that_changed(one_path_project):
    assert {s.state for s in statuses(one_path_project).values()} == {"fresh"}
    spec = one_path_project / "spec" / "x86.py"
    spec.write_text(spec.read_text() + "# touched\n")
    template = one_path_project / "templates" / "functions" / "sequential.py.j2"
    template.write_text(template.read_text() + "\n")
    edit_manifest(one_path_project, lambda d: d["inputs"].update({"black": "0.1", "generator/dsl.py": "0" * 64}))
    found = statuses(one_path_project)  # the environment's inputs an older manifest recorded are not its to judge
    assert found["generated/x86.py"] == planning.Status("stale", (
        "spec/x86.py changed",
        "templates/functions/sequential.py.j2 changed",
    ), as_recorded=True)  # fmt: skip
    assert "spec/x86.py changed" not in found["generated/fbgemm.py"].reasons
    matrix = found["docs/support-matrix.md"].reasons
    assert "spec/x86.py changed" in matrix and not any("sequential" in reason for reason in matrix)


def test_matrix_alone_keeps_the_modules_it_did_not_write_stale(one_path_project, capsys):
    common = one_path_project / "spec" / "_common.py"
    common.write_text(common.read_text().replace("    nn.ELU, nn.LeakyReLU,", "    nn.ELU, nn.SiLU, nn.LeakyReLU,", 1))
    assert cli.main(["--root", str(one_path_project), "matrix"]) == 0
    found = statuses(one_path_project)
    assert found["docs/support-matrix.md"].state == "fresh"
    assert found["generated/fbgemm.py"] == planning.Status("stale", ("spec/_common.py changed",), as_recorded=True)
    capsys.readouterr()
