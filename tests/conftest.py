"""Shared fixtures and hooks. torch needs its backend_config.utils imported before builders run.

The project fixtures are made by the one factory, tests/support/projects.py, and named for its variant:
fresh_project and project_with_only here; a module's own one_path_project or restored_project
(projects.at_one_path_fixture, projects.restored_in_place_fixture).
"""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from generator import heap  # noqa: E402
from tests.support import projects, shared_builds  # noqa: E402  -- ROOT is on sys.path now


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


@pytest.fixture(scope="session", autouse=True)
def remember_the_session_s_temporary_folders(tmp_path_factory):
    """A fresh copy builds the session's caches in the run's shared temporary folder
    (tests/support/projects.py session_caches, tests/support/shared_builds.py)."""
    shared_builds.SESSION_FACTORY.append(tmp_path_factory)


@pytest.fixture
def fresh_project(tmp_path) -> Path:
    """A fresh copy of the project at a path of its own (projects.fresh_copy)."""
    return projects.fresh_copy(tmp_path / "project")


@pytest.fixture
def project_with_only(tmp_path_factory, tmp_path):
    """project_with_only(*spec_names): a fresh copy of the project reduced to those spec files (and the helpers
    they import), at a path of its own; with no name, of the whole project (projects.fresh_copy)."""
    return lambda *names: projects.fresh_copy(tmp_path / "project", *names, factory=tmp_path_factory)
