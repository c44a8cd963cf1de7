"""Shared fixtures. torch needs its backend_config.utils imported before builders run."""

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


NAMES_CACHE: list[Path] = []  # filled once per session by warm_torch_names_cache


def copy_project(destination: Path) -> Path:
    """A copy of what regenerate reads and writes, to run the generator on safely.

    It gets the session's torch-names cache, so that a generator subprocess
    need not import torch (seconds) just to validate names it already knows.
    """
    for folder in ("spec", "templates", "generated", "docs"):
        shutil.copytree(ROOT / folder, destination / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for cache_file in NAMES_CACHE:
        (destination / ".cache" / "generator").mkdir(parents=True, exist_ok=True)
        shutil.copy(cache_file, destination / ".cache" / "generator" / cache_file.name)
    return destination


@pytest.fixture(scope="session", autouse=True)
def warm_torch_names_cache(tmp_path_factory):
    """Validate the committed spec once, in this process where torch is imported anyway."""
    from generator import pipeline

    project = copy_project(tmp_path_factory.mktemp("names-cache"))
    pipeline.load(project, validate=True)
    NAMES_CACHE.extend((project / ".cache" / "generator").glob("torch-names-*.json"))


@pytest.fixture
def project(tmp_path) -> Path:
    return copy_project(tmp_path / "project")
