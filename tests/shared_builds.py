"""Projects built once per test run and shared by every pytest-xdist worker.

A module-scoped fixture is built once per worker, and again after each switch to
another module; pytest-xdist's loadgroup cannot keep a group on one worker under
pytest 9 (its `item._nodeid` rename no longer changes the node id). A project built
here is built by the first process to ask for it, under a file lock; the others wait
for it. `built_once` shares the folder itself (read-only: copy it to change it);
`worker_copy` gives each caller a copy of its own, for tests that edit their project.
"""

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

SESSION_FACTORY: list[pytest.TempPathFactory] = []  # the run's, set by tests/conftest.py
SESSION_CACHE: list[Path] = []  # the caches of the committed spec (tests/conftest.py session_caches)


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder `build` makes (it does not exist before), built by the first process of the run to ask."""
    shared = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the folder all the workers' temporary folders are in
    folder = shared / f"shared-{name}"
    with open(shared / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / f"shared-{name}.complete").exists():
            shutil.rmtree(folder, ignore_errors=True)  # a failed build of another worker: fail here too
            build(folder)
            (shared / f"shared-{name}.complete").touch()
    return folder


def worker_copy(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """A copy of its own of the project `build` makes in an empty folder, built once per run."""

    def in_an_empty_folder(folder: Path) -> None:
        folder.mkdir(parents=True)
        build(folder)

    copy = factory.mktemp(name) / "project"
    shutil.copytree(built_once(factory, name, in_an_empty_folder), copy, symlinks=True)
    return copy
