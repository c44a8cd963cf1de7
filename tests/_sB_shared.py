"""Projects built once per test run and shared by every pytest-xdist worker.

A module-scoped fixture is built once per worker, and again after each switch to another
module; pytest-xdist's loadgroup cannot keep a group on one worker under pytest 9 (its
`item._nodeid` rename no longer changes the node id). A project built here is built by the
first process to ask for it; the others wait for it and share it (read-only: copy it to change it).
"""

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder `build` fills, built by the first process of this test run to ask for it."""
    shared = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the folder all the workers' temporary folders are in
    folder = shared / f"sB-{name}"
    with open(shared / f"sB-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / f"sB-{name}.complete").exists():
            shutil.rmtree(folder, ignore_errors=True)  # a failed build of another worker: fail here too
            build(folder)
            (shared / f"sB-{name}.complete").touch()
    return folder
