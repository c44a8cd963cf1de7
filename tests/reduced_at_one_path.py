"""A `project` fixture at one path (tests/one_path.py) whose spec/ holds only the spec files named
(tests/fewer_specs.py), for test modules about how a run behaves, not about what the other spec files make.

Each test gets a fresh copy of the reduced project, made once per test run, at one path per
module and worker: the worker's compiled spec files and templates then serve the files a test
leaves unchanged, as for tests/one_path.py.
"""

import shutil

import pytest

from tests.fewer_specs import copy_with_only


def reduced_project_at_one_path(name: str, *spec_names: str):
    """The fixture `project` for a test module: assign it there, as `project = reduced_project_at_one_path(...)`."""

    @pytest.fixture
    def project(tmp_path_factory):
        path = tmp_path_factory.getbasetemp() / f"one-path-{name}" / "project"
        shutil.rmtree(path, ignore_errors=True)
        return copy_with_only(tmp_path_factory, path, *spec_names)

    return project
