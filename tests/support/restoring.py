"""A `project` fixture that gives each test a fresh project by restoring the last test's in place.

The project a test gets is what tests/conftest.py copy_project makes (or, given spec file names, what
tests/support/projects.py copy_with_only makes: the project reduced to them): spec/, templates/,
generated/ and docs/ as committed (each file's bytes, mode and modification time, nothing
more in them), .cache/ holding the session's caches alone, nothing else. tests/support/one_path.py
makes it anew for every test (about 13 ms of CPU: removing the last copy, copying ~50
files); here, before each test, the project left by the one before is compared with the
committed files and only what differs is put back, as the copy would put it. A test that
changes one spec file then costs the restoring of that file. Like one_path, the project
stays at one path per module and worker, so the worker's compiled spec files and templates
serve what a test leaves unchanged (a restored file gets the committed modification time
back, so Jinja2 compiles a template again after any change to it).
"""

import os
import shutil
import stat
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import ROOT, with_session_caches
from tests.support.projects import copy_with_only, reduced_project

FOLDERS = ("spec", "templates", "generated", "docs")  # what copy_project copies (conftest.copy_inputs)


@cache
def committed(base: Path) -> tuple[dict[str, tuple[bytes, os.stat_result]], dict[str, os.stat_result]]:
    """The files of `base` (the repository, or a reduction of it) as a copy copies them, {relative path:
    (bytes, stat)}, and the folders' stats."""
    files, folders = {}, {}
    for folder in FOLDERS:
        for parent, names, file_names in os.walk(base / folder):
            names[:] = [n for n in names if n != "__pycache__"]
            relative = Path(parent).relative_to(base)
            folders[str(relative)] = os.stat(parent)
            for name in file_names:
                path = Path(parent) / name
                files[str(relative / name)] = (path.read_bytes(), path.stat())
    return files, folders


def restore(project: Path, base: Path = ROOT) -> None:
    """Make `project` what a copy of `base` is, changing only what differs from it."""
    files, folders = committed(base)
    for entry in os.scandir(project):
        if entry.name not in FOLDERS:
            _remove(Path(entry.path))  # .cache/ too: it is copied anew below
    for folder in FOLDERS:
        for parent, names, file_names in os.walk(project / folder, topdown=True):
            relative = Path(parent).relative_to(project)
            for name in list(names):
                if str(relative / name) not in folders or (Path(parent) / name).is_symlink():
                    _remove(Path(parent) / name)
                    names.remove(name)
            for name in file_names:
                path = Path(parent) / name
                wanted = files.get(str(relative / name))
                found = path.lstat()
                if wanted is None or not stat.S_ISREG(found.st_mode) or found.st_mode != wanted[1].st_mode:
                    _remove(path)
                elif found.st_mtime_ns != wanted[1].st_mtime_ns or path.read_bytes() != wanted[0]:
                    shutil.copy2(base / relative / name, path)
    for relative in folders:  # parents first (os.walk's order)
        (project / relative).mkdir(exist_ok=True)
    for relative in files:
        if not (project / relative).exists():
            shutil.copy2(base / relative, project / relative)
    for relative, wanted in folders.items():  # last: a file added or removed changed its folder's time
        found = (project / relative).stat()
        if (found.st_mode, found.st_mtime_ns) != (wanted.st_mode, wanted.st_mtime_ns):
            shutil.copystat(base / relative, project / relative)
    with_session_caches(project)  # as copy_project gives them


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def project_restored_before_each_test(name: str, *spec_names: str):
    """The fixture `project` for a test module: assign it, as `project = project_restored_before_each_test(name)`;
    with `spec_names`, of the project reduced to those spec files."""

    @pytest.fixture
    def project(tmp_path_factory) -> Path:
        path = tmp_path_factory.getbasetemp() / f"restored-{name}" / "project"
        base = reduced_project(tmp_path_factory, *spec_names) if spec_names else ROOT
        if path.is_dir():
            try:
                restore(path, base)
                return path
            except OSError:  # what a test left cannot be read or changed: a new copy, as one_path makes
                _make_writable(path)
                shutil.rmtree(path, ignore_errors=True)
        return copy_with_only(tmp_path_factory, path, *spec_names)

    return project


def _make_writable(project: Path) -> None:
    for parent, _names, _files in os.walk(project):
        os.chmod(parent, os.stat(parent).st_mode | stat.S_IRWXU)
