"""A project copy made a git repository whose one commit holds everything in it, its .git made once per run.

Tests that need a revision (`diff`, `diff --rev HEAD`) each commit a fresh project copy
that is the same, file for file, in every one of them. `git add -A` hashes and writes
every file of it again for each test; here the first test of the run commits its copy
(tests/conftest.py commit_all, in a folder of its own) and every test gets a copy of that
.git. The commit is checked to hold the very files of the caller's copy (a digest of
every path and its bytes), so a copy that differs fails loudly instead of sharing a
history that is not its own. The copied index has another folder's file times: git then
compares the files' contents, not their times, so the working tree reads as committed.
"""

import hashlib
import shutil
from pathlib import Path

import pytest

from tests.conftest import commit_all, git
from tests.support.shared_builds import built_once


def tree_digest(project: Path) -> str:
    """Every file below project (but .git), by path and bytes."""
    digest = hashlib.sha256()
    for path in sorted(p for p in project.rglob("*") if p.is_file() and ".git" not in p.relative_to(project).parts):
        digest.update(f"{path.relative_to(project).as_posix()}\0{path.stat().st_size}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def commit_all_once(project: Path, factory: pytest.TempPathFactory, name: str) -> Path:
    """commit_all(project), for a project that is the same in every test asking under `name`."""
    files = tree_digest(project)

    def commit_a_copy(folder: Path) -> None:
        copy = folder / "project"
        shutil.copytree(project, copy, symlinks=True)
        commit_all(copy)
        git(copy, "gc", "-q")  # a few pack files to copy per test, not a file per object
        (folder / "digest").write_text(files)

    shared = built_once(factory, f"committed-{name}", commit_a_copy)
    assert (shared / "digest").read_text() == files, f"{project} is not the project committed once for {name}"
    shutil.copytree(shared / "project" / ".git", project / ".git", symlinks=True)
    return project
