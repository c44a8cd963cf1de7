"""A costly project built once per test run and copied to each pytest-xdist worker that asks for it.

(The xdist_group mark does not group tests with the pytest and pytest-xdist installed
here, so a module-scoped fixture would be built once per worker.) The first worker to
take the lock builds the project; each worker then gets its own copy, so that tests
that edit their project (and restore it) never see another worker's edits.
"""

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path


def built_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """This worker's copy of the project `build(folder)` makes in an empty folder, once per run."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the folder all the workers' temporary folders are in
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        built = shared / name
        if not (built / ".complete").exists():
            shutil.rmtree(built, ignore_errors=True)
            (built / "project").mkdir(parents=True)
            build(built / "project")
            (built / ".complete").touch()
    copy = tmp_path_factory.mktemp(name) / "project"
    shutil.copytree(built / "project", copy, symlinks=True)
    return copy
