"""The manifest is untrusted input (a bad merge, a hand edit, a pull request): only a file the generator could
have written (a module in the generated folder, the matrix) is ever removed or replaced. Anything else it lists
is one error line at the manifest's line, exit 2, and nothing changed, inside the project or out of it."""

import hashlib
import json
from pathlib import Path

import pytest

from tests.support.spec_code import run_here


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (the project and what is beside it), by path, caches aside."""
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and ".cache" not in path.parts and "__pycache__" not in path.parts
    }


def listing(project: Path, *outputs: str, inputs: tuple[str, ...] = ()) -> None:
    """The manifest lists `outputs` as generated files, each with the digest of what is there now (so each looks
    unchanged since written: an orphan regenerate would remove), and x86's entry the `inputs` too."""
    manifest = project / "generated" / "manifest.json"
    document = json.loads(manifest.read_text())
    for output in outputs:
        path = project / output
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "0" * 64
        document["outputs"][output] = {"digest": digest, "inputs": ["spec/x86.py"]}
    document["outputs"]["generated/x86.py"]["inputs"] += inputs
    document["inputs"].update(dict.fromkeys(inputs, "0" * 64))
    manifest.write_text(json.dumps(document, indent=1) + "\n")


@pytest.mark.parametrize(
    "output",
    ["README.md", "../NOTES.md", "/tmp/elsewhere.py", "generated/../README.md", "generated/__init__.py",
     "spec/x86.py", "generated/sub/x.py", "pyproject.toml"],
)  # fmt: skip
def test_a_listed_output_the_generator_never_writes_is_one_error_and_nothing_is_removed(project_with_only, output):
    project = project_with_only("x86")
    (project / "README.md").write_text("# my project\n")
    (project.parent / "NOTES.md").write_text("my notes, outside the project\n")
    listing(project, output)
    before = snapshot(project.parent)
    for command in ("check", "regenerate", "matrix"):
        done = run_here(project, command)
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert done.stdout == ""
        line = next(n for n, text in enumerate((project / "generated/manifest.json").read_text().splitlines(), 1)
                    if json.dumps(output) in text)  # fmt: skip
        assert done.stderr.startswith(f"error: generated/manifest.json:{line}: lists {output!r} as a generated file")
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert snapshot(project.parent) == before


def test_an_input_by_an_absolute_path_is_one_error(project_with_only):
    project = project_with_only("x86")
    listing(project, inputs=("/etc/hostname",))
    before = snapshot(project)
    done = run_here(project, "check")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: generated/manifest.json:") and "'/etc/hostname'" in done.stderr
    assert len(done.stderr.splitlines()) == 1 and snapshot(project) == before


def test_a_manifest_nested_too_deep_is_a_broken_manifest_that_regenerate_writes_again(project_with_only):
    project = project_with_only("x86")
    manifest = project / "generated" / "manifest.json"
    manifest.write_text('{"outputs": ' + "[" * 100_000 + "]" * 100_000 + "}")
    done = run_here(project, "check")
    assert done.returncode == 1, done.stderr
    assert "generated/x86.py: stale: generated/manifest.json has no record of it" in done.stdout
    assert run_here(project, "regenerate").returncode == 0
    assert run_here(project, "check").returncode == 0


def test_a_matrix_the_table_moved_away_is_still_the_generator_s_to_remove(project_with_only):
    """A manifest listing the matrix at its old path (the project's table moved it): the generator wrote that
    file (it starts with the matrix's header), so regenerate removes it, as an orphaned module."""
    project = project_with_only("x86")
    old = project / "docs" / "support-matrix.md"
    assert not (project / "pyproject.toml").exists()
    (project / "pyproject.toml").write_text('[tool.backend-config-generator]\nmatrix = "docs/backends.md"\n')
    done = run_here(project, "regenerate")
    assert done.returncode == 0, done.stderr
    assert not old.exists() and (project / "docs" / "backends.md").is_file()
    assert run_here(project, "check").returncode == 0


def test_a_listed_module_without_the_generated_header_is_never_removed(project_with_only):
    """A bad merge lists generated/helpers.py, the user's own module, with its digest: a path the generator could
    have written, but a file it did not (no generated header): regenerate leaves it, and the manifest forgets it."""
    project = project_with_only("x86")
    helper = project / "generated" / "helpers.py"
    helper.write_text('DOC = "my own helper"\n')
    listing(project, "generated/helpers.py")
    done = run_here(project, "regenerate")
    assert done.returncode == 0, done.stderr
    assert helper.read_text() == 'DOC = "my own helper"\n'
    assert "generated/helpers.py: its spec file is gone, but it was edited by hand: left alone" in done.stderr
    assert "generated/helpers.py" not in (project / "generated" / "manifest.json").read_text()
    assert run_here(project, "check").returncode == 0


def test_a_listed_markdown_output_that_is_a_fifo_is_one_error_and_never_waited_on(project_with_only):
    import os
    import subprocess
    import sys

    from tests.support.projects import ROOT

    project = project_with_only("x86")
    os.mkfifo(project / "docs" / "old-matrix.md")
    listing(project, "docs/old-matrix.md")
    done = subprocess.run([sys.executable, "-m", "generator", "--root", str(project), "check"], cwd=project,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 2 and "lists 'docs/old-matrix.md' as a generated file" in done.stderr, done.stderr
