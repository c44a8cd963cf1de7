"""A `project` fixture for test modules whose tests run the generator in this process, many times.

Each test still gets a fresh copy of the project (tests/conftest.py copy_project: files and
caches copied anew, nothing kept from the test before), but always at one path per module and
worker. The worker's compiled spec files and templates are kept by path and content
(spec_loading._COMPILED, rendering.make_environment), so they then serve the files a test
leaves unchanged instead of being compiled again under a new path, and the worker does not
pile up one Jinja2 environment per test. A file a test changes has new bytes (Python) and a
new modification time (Jinja2), so it is compiled again; the generator drops what it read
from spec files' source at the start of each run (dsl.forget_source_files).
"""

import shutil
from pathlib import Path

import pytest

from tests.support.projects import copy_with_only


def copy_at_one_path(factory: pytest.TempPathFactory, name: str, *spec_names: str) -> Path:
    """A fresh copy of the project at the one path `name` gives, in place of the copy there before; with
    `spec_names`, of the project reduced to those spec files (tests/support/projects.py), for tests about a
    few backends or about how a run behaves, whose runs would otherwise load and build every spec file."""
    path = factory.getbasetemp() / f"one-path-{name}" / "project"
    shutil.rmtree(path, ignore_errors=True)
    return copy_with_only(factory, path, *spec_names)


def project_at_one_path(name: str, *spec_names: str):
    """The fixture `project` for a test module: assign it there, as `project = project_at_one_path(...)`;
    with `spec_names`, of the project reduced to them (copy_at_one_path)."""

    @pytest.fixture
    def project(tmp_path_factory) -> Path:
        return copy_at_one_path(tmp_path_factory, name, *spec_names)

    return project
