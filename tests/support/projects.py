"""Copies of the project reduced to the few spec files a test is about, so that each of its runs renders less.

A reduction is built once per test run (tests/support/shared_builds.py): the project with the other spec
files removed, regenerated (which removes their outputs and updates the matrix and manifest), then
stripped of every cache that run left but the session's (tests/conftest.py copy_project). A copy of
it starts as a fresh copy of the whole project does: committed outputs that are fresh, the session's
caches and nothing else, only with fewer spec files.
"""

import contextlib
import io
import shutil
from pathlib import Path

import pytest

from generator import cli
from tests.conftest import copy_project, with_session_caches
from tests.support.shared_builds import built_once


def _reduced(folder: Path, names: tuple[str, ...]) -> None:
    copy_project(folder)
    for spec in (folder / "spec").glob("[!_]*.py"):
        if spec.stem not in names:
            spec.unlink()
    with contextlib.redirect_stdout(io.StringIO()):  # the written files' list
        assert cli.main(["--root", str(folder), "regenerate", "--jobs", "1"]) == 0, names
    shutil.rmtree(folder / ".cache")
    for cached in folder.rglob("__pycache__"):
        shutil.rmtree(cached)
    with_session_caches(folder)


def reduced_project(factory: pytest.TempPathFactory, *names: str) -> Path:
    """The project reduced to the spec files named, built once per test run: to copy, never to change."""
    key = tuple(sorted(names))
    return built_once(factory, "only-" + "-".join(key), lambda folder: _reduced(folder, key))


def copy_with_only(factory: pytest.TempPathFactory, destination: Path, *names: str) -> Path:
    """A fresh copy of the project at `destination` (which does not exist) whose spec/ holds only the spec
    files named (and the helpers they import); with no name, of the whole project (copy_project)."""
    if not names:
        return copy_project(destination)
    return Path(shutil.copytree(reduced_project(factory, *names), destination, symlinks=True))


def fixture_of_projects_with_only():
    """The fixture project_with_only(*names): copy_with_only at tmp_path/project. Assign it in a test
    module, as `project_with_only = fixture_of_projects_with_only()`."""

    @pytest.fixture
    def project_with_only(tmp_path_factory, tmp_path):
        return lambda *names: copy_with_only(tmp_path_factory, tmp_path / "project", *names)

    return project_with_only
