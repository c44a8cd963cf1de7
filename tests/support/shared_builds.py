"""Projects built once per test run and shared by every pytest-xdist worker.

A module-scoped fixture is built once per worker, and again after each switch to
another module; pytest-xdist's loadgroup cannot keep a group on one worker under
pytest 9 (its `item._nodeid` rename no longer changes the node id). A project built
here is built by the first process to ask for it, under a file lock; the others wait
for it. `built_once` shares the folder itself (read-only: copy it to change it);
`worker_copy` gives each caller a copy of its own, for tests that edit their project.
`computed_once` shares a value the same way (pickled), such as a torch flow's results.
"""

import fcntl
import hashlib
import os
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")

SESSION_FACTORY: list[pytest.TempPathFactory] = []  # the run's, set by tests/conftest.py
SESSION_CACHE: list[tuple[str, list[Path]]] = []  # (kind, entries) of the committed spec (projects.session_caches)


def _shared_folder(factory: pytest.TempPathFactory) -> Path:
    shared = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the folder all the workers' temporary folders are in
    return shared


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder `build` makes (it does not exist before), built by the first process of the run to ask."""
    shared = _shared_folder(factory)
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


def computed_once(factory: pytest.TempPathFactory, name: str, key: str, compute: Callable[[], T]) -> T:
    """compute(), run by the first process of the run to ask for key; the others get its pickled value.

    For values that depend on key alone (the caller's promise) and pickle to an equal value.
    """
    folder = _shared_folder(factory) / f"computed-{name}"
    folder.mkdir(exist_ok=True)
    stored = folder / f"{hashlib.sha256(key.encode()).hexdigest()}.pickle"
    with open(stored.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stored.exists():
            stored_key, value = pickle.loads(stored.read_bytes())
            assert stored_key == key, (stored_key, key)  # a hash collision, not a cache hit
            return value
        value = compute()
        partial = stored.with_suffix(".partial")
        partial.write_bytes(pickle.dumps((key, value)))
        partial.rename(stored)  # complete or absent: a worker that dies mid-write leaves no half value
        return value
