"""Shared fixtures. torch needs its backend_config.utils imported before builders run."""

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch.ao.quantization.backend_config.utils  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


GIT = shutil.which("git") or "git"


def git(project: Path, *args: str) -> str:
    """Run git in a project copy as a throwaway author; its stdout."""
    done = subprocess.run([GIT, "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True)  # fmt: skip
    return done.stdout


def commit_all(project: Path, message: str = "base") -> Path:
    """Make a project copy a git repository whose one commit holds everything in it."""
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", message)
    return project


SESSION_CACHE: list[Path] = []  # filled once per session by warm_caches


def copy_project(destination: Path) -> Path:
    """A copy of what regenerate reads and writes, to run the generator on safely.

    It gets the session's torch-names cache, so that a generator subprocess
    need not import torch (seconds) just to validate names it already knows,
    and its format cache, so that black formats only what a test changes (a
    cache entry can only make a run faster, never different: tests/test_formatting.py).
    """
    for folder in ("spec", "templates", "generated", "docs"):
        shutil.copytree(ROOT / folder, destination / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for cache_file in SESSION_CACHE:
        (destination / ".cache" / "generator").mkdir(parents=True, exist_ok=True)
        shutil.copy(cache_file, destination / ".cache" / "generator" / cache_file.name)
    return destination


@pytest.fixture(scope="session", autouse=True)
def warm_caches(tmp_path_factory):
    """Validate and format the committed spec once per test run, in this process where torch is imported anyway.

    The pytest-xdist workers share one copy: the first to get the lock builds it,
    the others wait and take it.
    """
    from generator import pipeline, planning

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the folder all the workers' temporary folders are in
    with open(shared / "warm-caches.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        project = shared / "warm-caches"
        if not (project / "complete").exists():
            shutil.rmtree(project, ignore_errors=True)
            copy_project(project)
            pipeline.build(project, pipeline.load(project, validate=True), planning.plan(project))
            (project / "complete").touch()
    for kind in ("torch-names", "format"):  # not the lint cache: tests see a first run's lint
        SESSION_CACHE.extend(sorted((project / ".cache" / "generator").glob(f"{kind}-*.json")))


@pytest.fixture
def project(tmp_path) -> Path:
    return copy_project(tmp_path / "project")
