"""Shared fixtures. torch needs its backend_config.utils imported before builders run."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from generator import heap  # noqa: E402
from tests.support import shared_builds  # noqa: E402  -- ROOT is on sys.path now

GIT = shutil.which("git") or "git"


def pytest_collectstart(collector):
    """torch 2.13's builders need backend_config.utils imported first: imported where tests are collected.

    Not at the top of this file: pytest-xdist's controller loads it too but collects and runs no test,
    and a second of torch import there would hold back the start of every worker.
    """
    import torch.ao.quantization.backend_config.utils  # noqa: F401


def pytest_collection_finish(session):
    """Collect garbage as `python -m generator` does (generator/heap.py), and never re-examine what
    torch, pytest and the test modules hold by now: each full collection would walk it again (the FX
    flows alone ran 25 of them, 5 s)."""
    heap.collect_rarely()
    heap.freeze_for_good()


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


# pytest imports this file as `conftest`, the test modules as `tests.conftest`: two modules, so
# what the session shares is kept in the one module tests.support.shared_builds.


def copy_inputs(destination: Path) -> Path:
    """A copy of what regenerate reads and writes, without any cache."""
    for folder in ("spec", "templates", "generated", "docs"):
        shutil.copytree(ROOT / folder, destination / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return destination


def copy_project(destination: Path) -> Path:
    """A copy of what regenerate reads and writes, to run the generator on safely.

    It gets the session's torch-names cache, so that a generator subprocess
    need not import torch (seconds) just to validate names it already knows,
    its format cache, so that black formats only what a test changes (a
    cache entry can only make a run faster, never different: tests/test_formatting.py),
    its check memo, so that the static checks of a generated module (a third of a
    forced regenerate's CPU) run only on texts a test changes: an entry skips them only
    for the very text, names and checking code that passed them (tests/test_caches.py),
    and its compiled templates, which serve any copy of the same templates (tests/test_caches.py).
    """
    return with_session_caches(copy_inputs(destination))


def with_session_caches(project: Path) -> Path:
    """The session's caches (session_caches) put into project's cache folder, each where the warm build left it."""
    for cache_file in session_caches():
        relative = Path(*cache_file.parts[cache_file.parts.index(".cache") + 2 :])
        (project / ".cache" / "generator" / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(cache_file, project / ".cache" / "generator" / relative)
    return project


def warm(project: Path) -> None:
    """Validate and format the committed spec, in this process where torch is imported anyway."""
    from generator.build import pipeline
    from generator.freshness import planning

    copy_inputs(project)
    pipeline.build(project, pipeline.load(project, validate=True), planning.plan(project))


def session_caches() -> list[Path]:
    """The caches of the committed spec, built once per test run by the first worker to copy a project.

    Built on first use rather than at the start of the run: a worker that starts with
    tests that copy no project (the FX flows) does not wait for the other one to build it.
    """
    if not shared_builds.SESSION_CACHE:
        project = shared_builds.built_once(shared_builds.SESSION_FACTORY[0], "warm-caches", warm)
        # Not the lint cache: tests see a first run's lint.
        for kind in ("torch-names-*.json", "format-*.json", "checked-*.bin", "templates/*.bin"):
            shared_builds.SESSION_CACHE.extend(sorted((project / ".cache" / "generator").glob(kind)))
        assert shared_builds.SESSION_CACHE, "the warm build wrote no cache"
    return shared_builds.SESSION_CACHE


@pytest.fixture(scope="session", autouse=True)
def remember_the_session_s_temporary_folders(tmp_path_factory):
    """copy_project builds the session's caches in the run's shared temporary folder
    (tests/support/shared_builds.py)."""
    shared_builds.SESSION_FACTORY.append(tmp_path_factory)


@pytest.fixture
def project(tmp_path) -> Path:
    return copy_project(tmp_path / "project")
