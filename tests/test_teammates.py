"""Teammates on other environments: another black, another build of the tool, a fresh clone.

The committed manifest records only the project's inputs; what an environment adds (the generator's code,
the templates it ships, black's and Jinja2's versions) is proven once per environment, in the project's
cache (generator/freshness/proofs.py). So `check` fails only when a file's bytes would change, and then
names the tool version that wrote the tree against the one installed.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from generator import commands, digests, project
from generator.freshness import manifest, planning
from tests.support.cli_runs import run
from tests.support.projects import ROOT, at_one_path_fixture

one_path_project = at_one_path_fixture("teammates", "x86")  # a fresh copy per test, of x86 alone


def snapshot(root):
    """Every file of the project but its caches, by path: what a commit would see."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".cache" not in p.parts and "__pycache__" not in p.parts
    }


@pytest.fixture
def builds(monkeypatch):
    """The targets each build of a command was asked for, by name, in order."""
    asked = []
    build = commands.build_with_progress

    def counted(command, root, targets, *args, **kwargs):
        asked.append(sorted(t.name for t in targets))
        return build(command, root, targets, *args, **kwargs)

    monkeypatch.setattr(commands, "build_with_progress", counted)
    return asked


def another_black(monkeypatch, version="99.1.0"):
    """This process as an environment with another black (its version is what the environment is known by)."""
    installed = digests.installed_version
    monkeypatch.setattr(digests, "installed_version", lambda name: version if name == "black" else installed(name))


@pytest.mark.parametrize("where", ["committed", "regenerated"])
def test_the_manifest_holds_nothing_of_a_teammate_s_environment(one_path_project, capsys, where):
    if where == "regenerated":
        (one_path_project / "generated" / "manifest.json").unlink()
        assert run(capsys, "--root", str(one_path_project), "regenerate")[0] == 0
    root = ROOT if where == "committed" else one_path_project
    document = json.loads((root / "generated" / "manifest.json").read_text())
    named = {*document["inputs"], *(n for record in document["outputs"].values() for n in record["inputs"])}
    assert named and not [name for name in named if name.startswith("generator/") or name in ("black", "jinja2")]
    assert not [n for r in document["outputs"].values() for n in r.get("pinned", {}) if n.startswith("generator/")]
    assert document["written_by"] == f"backend-config-generator {project.VERSION}"


def test_another_black_renders_once_passes_check_and_regenerate_writes_nothing(
    one_path_project, capsys, monkeypatch, builds
):
    root = str(one_path_project)
    before = snapshot(one_path_project)
    outputs = len(planning.plan(one_path_project))
    assert run(capsys, "--root", root, "check") == (0, f"{outputs} generated files are up to date\n")
    assert builds == []  # this environment proved them already
    another_black(monkeypatch)
    assert run(capsys, "--root", root, "check") == (0, f"{outputs} generated files are up to date\n")
    assert builds == [["support-matrix", "x86"]]  # rendered once, to prove the bytes on disk
    assert run(capsys, "--root", root, "check") == (0, f"{outputs} generated files are up to date\n")
    assert len(builds) == 1  # ... and not again
    code, out = run(capsys, "--root", root, "regenerate")
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == ["unchanged"] * outputs, out
    assert snapshot(one_path_project) == before  # nothing to commit


def test_another_build_of_the_tool_passes_check_without_a_commit(one_path_project, capsys, monkeypatch, builds):
    """A rebuilt tool whose output-shaping code differs (a comment) is another environment: proven once."""
    shaping = digests._file_digest  # the digest of the generator's own files, as another build has them
    monkeypatch.setattr(
        digests, "_file_digest", lambda path: "0" * 64 if path.name == "rendering.py" else shaping(path)
    )
    before = snapshot(one_path_project)
    assert run(capsys, "--root", str(one_path_project), "check")[0] == 0
    assert run(capsys, "--root", str(one_path_project), "regenerate")[0] == 0
    assert len(builds) == 1 and snapshot(one_path_project) == before


def test_where_bytes_would_change_check_names_the_file_and_both_tool_versions(one_path_project, capsys, monkeypatch):
    """An environment that writes other bytes from the same inputs (here: another header line and another
    black) is no hand edit: check says which file, and which tool wrote the tree against the one installed."""
    another_black(monkeypatch)
    monkeypatch.setattr(manifest, "WRITER", "backend-config-generator 9.9.9")
    header = digests.header_text
    monkeypatch.setattr(digests, "header_text", lambda *args: header(*args) + "# another build\n")
    before = snapshot(one_path_project)
    code, out = run(capsys, "--root", str(one_path_project), "check")
    assert code == 1
    why = (
        "stale: this environment writes it otherwise "
        f"(written by backend-config-generator {project.VERSION}; installed: backend-config-generator 9.9.9)"
    )
    assert f"generated/x86.py: {why}\n" in out, out
    assert "+# another build\n" in out and out.endswith("fix: python -m generator regenerate\n")
    assert snapshot(one_path_project) == before
    assert run(capsys, "--root", str(one_path_project), "regenerate")[0] == 0
    written = json.loads((one_path_project / "generated" / "manifest.json").read_text())["written_by"]
    assert written == "backend-config-generator 9.9.9"
    assert run(capsys, "--root", str(one_path_project), "check")[0] == 0


def test_a_fresh_clone_proves_once_then_checks_from_digests(one_path_project, capsys, builds):
    shutil.rmtree(one_path_project / ".cache")
    for _ in range(2):
        assert run(capsys, "--root", str(one_path_project), "check")[0] == 0
    assert builds == [["support-matrix", "x86"]]


def test_a_proof_holds_only_while_the_files_its_load_read_are_as_read(one_path_project, capsys, builds):
    """A spec that reads a new file, without changing its output, is proven with that file: an edit to it that
    changes the output is found, though the manifest never listed it."""
    (one_path_project / "x86_doc.txt").write_text("BackendConfig for PyTorch's native x86 backend.")
    spec = one_path_project / "spec" / "x86.py"
    text = spec.read_text()
    doc = 'doc="BackendConfig for PyTorch\'s native x86 backend."'
    assert doc in text
    reading = "import pathlib as _pathlib\n" + text.replace(
        doc, "doc=(_pathlib.Path(__file__).parent.parent / 'x86_doc.txt').read_text()"
    )
    spec.write_text(reading)
    before = snapshot(one_path_project)
    assert run(capsys, "--root", str(one_path_project), "check")[0] == 0
    assert run(capsys, "--root", str(one_path_project), "regenerate")[0] == 0
    assert snapshot(one_path_project) == before
    (one_path_project / "x86_doc.txt").write_text("Another doc.")
    code, out = run(capsys, "--root", str(one_path_project), "check")
    assert code == 1 and "generated/x86.py: stale" in out and '+"""Another doc."""' in out, out


def test_check_from_spec_with_the_generator_through_a_symbolic_link_and_no_bytecode(one_path_project, tmp_path):
    """A monorepo imports the tool through a symbolic link inside the repository, in a container that writes no
    bytecode: the generator's own frames are named by the link's path, and its reads of its cache are its own."""
    shutil.copytree(ROOT / "generator", tmp_path / "vendor" / "generator", ignore=shutil.ignore_patterns("__pycache__"))
    (one_path_project / "third_party").mkdir()
    (one_path_project / "third_party" / "tool").symlink_to(tmp_path / "vendor")
    shutil.rmtree(one_path_project / ".cache")  # a fresh clone
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(one_path_project / "third_party" / "tool"))
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-m", "generator", "check"], cwd=one_path_project / "spec", env=env,
            capture_output=True, text=True,
        )  # fmt: skip
        assert (done.returncode, done.stdout, done.stderr) == (0, "2 generated files are up to date\n", "")


WITHOUT_TORCH = """
import sys

class NoTorch:  # an interpreter where torch is not installed
    @staticmethod
    def find_spec(name, *args):
        if name.partition(".")[0] == "torch":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, NoTorch)
sys.argv = ["backend-config-generator", *sys.argv[1:]]
from generator.__main__ import run
sys.exit(run())
"""


def test_a_fresh_clone_proves_its_files_without_torch(one_path_project):
    """Proving what this environment writes renders and formats; it checks no torch name, so check needs no torch
    (an interpreter that has only the tool, black and Jinja2: CI's check step, or another Python)."""
    shutil.rmtree(one_path_project / ".cache")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_TORCH, "check"], cwd=one_path_project, env=env, capture_output=True, text=True
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "2 generated files are up to date\n", "")
    assert not (one_path_project / ".cache" / "generator" / "torch-names").exists()
