"""The project copies tests run the generator on: one factory, each variant named for what a test gets.

Every copy holds what regenerate reads and writes, as committed (spec/, templates/, generated/, docs/, and
every other project file that generated/manifest.json says the outputs were made from: copied_paths),
and the session's caches (session_caches): its torch-names cache, so that a generator subprocess need
not import torch (seconds) just to validate names it already knows; its format cache, so that black
formats only what a test changes (a cache entry can only make a run faster, never different:
tests/test_formatting.py); its check memo, so that the static checks of a generated module (a third of
a forced regenerate's CPU) run only on texts a test changes: an entry skips them only for the very text,
names and checking code that passed them (tests/test_caches.py); and its compiled templates, which serve
any copy of the same templates (tests/test_caches.py).

The variants, and the fixtures made of them (each named for its variant):

| variant | what a test gets | fixture |
| --- | --- | --- |
| fresh_copy | a fresh copy at a path of its own | fresh_project (conftest.py) |
| fresh_copy(..., *spec_names) | the same, reduced to some spec files | project_with_only(*spec_names) (conftest.py) |
| at_one_path | a fresh copy at one path per test module and worker | a module's one_path_project |
| restored_in_place | what at_one_path gives, restoring what the last test left there | a module's restored_project |
| inputs_only | the inputs alone (no cache, nothing regenerated), reduced to some spec files | - |
| reduced_keeping_its_caches | reduced and regenerated, with the caches that run left | - |
| tutorial | the project with the tutorial's backend laid over it, regenerated | tutorial (test_tutorial_backend.py) |
| committed | a copy made a git repository whose one commit holds everything in it | - |

A reduced copy is for tests about a few backends or about how a run behaves, whose runs would otherwise
load and build every spec file. Each reduction is built once per test run (tests/support/shared_builds.py):
the project with the other spec files removed, regenerated (which removes their outputs and updates the
matrix and manifest), then stripped of every cache that run left but the session's. A copy of it starts
as a fresh copy of the whole project does: committed outputs that are fresh, the session's caches and
nothing else, only with fewer spec files.

At one path: for test modules whose tests run the generator in this process, many times. Each test still
gets a fresh copy, but always at one path per module and worker. The worker's compiled spec files and
templates are kept by path and content (loader._COMPILED, rendering.make_environment), so they then serve
the files a test leaves unchanged instead of being compiled again under a new path, and the worker does
not pile up one Jinja2 environment per test. A file a test changes has new bytes (Python) and a new
modification time (Jinja2), so it is compiled again; the generator drops what it read from spec files'
source at the start of each run (locations.forget_source_files).

Restored in place: at_one_path makes the copy anew for every test (about 13 ms of CPU: removing the last
copy, copying ~50 files); here, before each test, the project left by the one before is compared with the
committed files and only what differs is put back, as the copy would put it (tests/support/restoring.py).
A test that changes one spec file then costs the restoring of that file. A restored file gets the
committed modification time back, so Jinja2 compiles a template again after any change to it.
"""

import contextlib
import functools
import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

import generator
from generator import cache, digests
from tests.support import restoring, shared_builds

ROOT = Path(__file__).resolve().parent.parent.parent
GIT = shutil.which("git") or "git"
FOLDERS = ("spec", "templates", "generated", "docs")  # the folders regenerate reads and writes
TUTORIAL = ROOT / "tests" / "custom_backends" / "tutorial"  # the tutorial's backend, laid over a copy


# ---------------------------------------------------------------- what a copy holds


def project_folders() -> tuple[str, ...]:
    """The folders of the project that regenerate reads and writes, relative to its root."""
    return FOLDERS


@functools.cache
def tracked_files(root: Path = ROOT) -> tuple[str, ...]:
    """The other files of the project that its generated files were made from, as generated/manifest.json
    tracks them: a user's own package that a spec imports (its fusers, its reference builder), a helper
    module beside spec/. Not the generator's own modules (also tracked: they are the tool, not the project)
    nor what lies in project_folders()."""
    try:
        inputs = json.loads((root / "generated" / "manifest.json").read_text())["inputs"]
    except (OSError, ValueError, KeyError, TypeError):
        return ()
    tool = Path(generator.__file__).resolve().parent
    files = []
    for name in inputs:
        path = root / name
        if Path(name).parts[0] in project_folders() or not path.is_file():
            continue  # copied with its folder; or a package recorded by its version (black, jinja2)
        if path.resolve().is_relative_to(tool):
            continue
        files.append(name)
    return tuple(sorted(files))


def copied_paths() -> tuple[str, ...]:
    """What a copy of the project copies, relative to its root: its folders and the files they were made from."""
    return project_folders() + tracked_files()


def copy_inputs(destination: Path) -> Path:
    """A copy of what regenerate reads and writes, without any cache."""
    for folder in project_folders():
        shutil.copytree(ROOT / folder, destination / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name in tracked_files():
        (destination / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, destination / name)
    for name in tracked_files():  # the folders' times last, as copytree gives them
        for parent in Path(name).parents[:-1]:
            shutil.copystat(ROOT / parent, destination / parent)
    return destination


def fresh_copy(destination: Path, *spec_names: str, factory: pytest.TempPathFactory | None = None) -> Path:
    """A fresh copy of the project at `destination` (which does not exist), with the session's caches; with
    `spec_names`, of the project reduced to those spec files (and the helpers they import): `factory` then
    builds the reduction once per run."""
    if not spec_names:
        return with_session_caches(copy_inputs(destination))
    assert factory is not None, "a reduced copy is built once per run: give the tmp_path_factory"
    return Path(shutil.copytree(reduced(factory, *spec_names), destination, symlinks=True))


def with_session_caches(project: Path) -> Path:
    """The session's caches (session_caches) put into project's cache folder, each where the warm build left it."""
    for kind, entries in session_caches():
        kept = cache.Cache(project, kind)
        kept.folder.mkdir(parents=True, exist_ok=True)
        for entry in entries:
            shutil.copy(entry, kept.folder / entry.name)
    return project


def warm(project: Path) -> None:
    """Validate and format the committed spec, in this process where torch is imported anyway."""
    from generator.building import pipeline
    from generator.freshness import planning, proofs

    copy_inputs(project)
    targets = planning.plan(project)
    texts = pipeline.build(project, pipeline.load(project, validate=True), targets)
    for target in targets:  # this environment's proof of each committed file, as a check that renders it keeps
        if digests.same_text(target.output, texts[target.name]):
            proofs.keep(target, target, texts[target.name])


def session_caches() -> list[tuple[str, list[Path]]]:
    """The caches of the committed spec, (kind, entries) built once per test run by the first worker to
    copy a project.

    Built on first use rather than at the start of the run: a worker that starts with
    tests that copy no project (the FX flows) does not wait for the other one to build it.
    """
    if not shared_builds.SESSION_CACHE:
        project = shared_builds.built_once(shared_builds.SESSION_FACTORY[0], "warm-caches", warm)
        # Not the lint cache: tests see a first run's lint.
        for kind in (cache.TORCH_NAMES, cache.FORMAT, cache.CHECKS, cache.TEMPLATES, cache.PROOFS):
            kept = cache.Cache(project, kind)
            shared_builds.SESSION_CACHE.append((kind, [kept.path(name) for name in kept.names()]))
        assert all(entries for _, entries in shared_builds.SESSION_CACHE), "the warm build wrote no cache"
    return shared_builds.SESSION_CACHE


# ---------------------------------------------------------------- reduced to some spec files


def _without_other_specs(project: Path, names: tuple[str, ...]) -> None:
    for spec in (project / "spec").glob("[!_]*.py"):
        if spec.stem not in names:
            spec.unlink()


def _regenerated(project: Path, names: tuple[str, ...]) -> None:
    from generator import cli

    with contextlib.redirect_stdout(io.StringIO()):  # the written files' list, not a test's output
        assert cli.main(["--root", str(project), "regenerate", "--jobs", "1"]) == 0, names  # removes the others


def _reduced(folder: Path, names: tuple[str, ...]) -> None:
    fresh_copy(folder)
    _without_other_specs(folder, names)
    _regenerated(folder, names)
    for kind in (folder / cache.FOLDER).iterdir():  # but the proofs its regenerate kept (of its own matrix)
        if kind.is_dir() and kind.name != cache.PROOFS:
            shutil.rmtree(kind)
        elif kind.name != cache.PROOFS:
            kind.unlink()
    for cached in folder.rglob("__pycache__"):
        shutil.rmtree(cached)
    with_session_caches(folder)


def reduced(factory: pytest.TempPathFactory, *spec_names: str) -> Path:
    """The project reduced to the spec files named, built once per test run: to copy, never to change."""
    key = tuple(sorted(spec_names))
    return shared_builds.built_once(factory, "only-" + "-".join(key), lambda folder: _reduced(folder, key))


def reduced_keeping_its_caches(factory: pytest.TempPathFactory, destination: Path, *spec_names: str) -> Path:
    """A copy at `destination` (put in place of what is there) of the project reduced to the spec files named,
    with the caches its regenerate left (the models of its loads, its lint, ...) beside the session's.
    Each reduction is regenerated once per test run, in process (setup, not what a test checks)."""

    def build(copy: Path) -> None:
        fresh_copy(copy)
        _without_other_specs(copy, spec_names)
        _regenerated(copy, spec_names)

    built = shared_builds.built_once(factory, "user-code-" + "-".join(spec_names), build)
    shutil.rmtree(destination, ignore_errors=True)
    shutil.copytree(built, destination, symlinks=True)
    return destination


def inputs_only(destination: Path, *spec_names: str) -> Path:
    """A copy of the project's inputs alone (no cache) whose spec/ holds only the spec files named (and the
    helpers): nothing regenerated, for tests that load the spec in this process."""
    project = copy_inputs(destination)
    _without_other_specs(project, spec_names)
    return project


# ---------------------------------------------------------------- at one path per module and worker


def at_one_path(factory: pytest.TempPathFactory, name: str, *spec_names: str) -> Path:
    """A fresh copy of the project at the one path `name` gives, in place of the copy there before; with
    `spec_names`, of the project reduced to those spec files."""
    path = factory.getbasetemp() / f"one-path-{name}" / "project"
    shutil.rmtree(path, ignore_errors=True)
    return fresh_copy(path, *spec_names, factory=factory)


def restored_in_place(factory: pytest.TempPathFactory, name: str, *spec_names: str) -> Path:
    """What at_one_path gives (at a path of its own), made by restoring what the test before left there."""
    path = factory.getbasetemp() / f"restored-{name}" / "project"
    base = reduced(factory, *spec_names) if spec_names else ROOT
    if path.is_dir():
        try:
            restoring.restore(path, base, copied_paths())
            return with_session_caches(path)  # as a fresh copy gives them
        except OSError:  # what a test left cannot be read or changed: a new copy, as at_one_path makes
            _make_writable(path)
            shutil.rmtree(path, ignore_errors=True)
    return fresh_copy(path, *spec_names, factory=factory)


def _make_writable(project: Path) -> None:
    for parent, _names, _files in os.walk(project):
        os.chmod(parent, os.stat(parent).st_mode | stat.S_IRWXU)


def at_one_path_fixture(name: str, *spec_names: str):
    """The fixture one_path_project for a test module (at_one_path): assign it there, as
    `one_path_project = projects.at_one_path_fixture(name, *spec_names)`."""

    @pytest.fixture
    def one_path_project(tmp_path_factory) -> Path:
        return at_one_path(tmp_path_factory, name, *spec_names)

    return one_path_project


def restored_in_place_fixture(name: str, *spec_names: str):
    """The fixture restored_project for a test module (restored_in_place): assign it there, as
    `restored_project = projects.restored_in_place_fixture(name, *spec_names)`."""

    @pytest.fixture
    def restored_project(tmp_path_factory) -> Path:
        return restored_in_place(tmp_path_factory, name, *spec_names)

    return restored_project


# ---------------------------------------------------------------- the tutorial's


def lay_tutorial_over(project: Path) -> None:
    """Add the tutorial's backend to a project copy that does not have it.

    A project that already has a spec of that name (a user who followed docs/adding-a-backend.md's
    "Adding a backend") loses it first, and is regenerated without it.
    """
    from generator import cli

    present = [project / "spec" / s.name for s in (TUTORIAL / "spec").glob("*.py")]
    present = [path for path in present if path.exists()]
    for path in present:
        path.unlink()
    if present:  # regenerate removes the orphaned modules and updates the matrix
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert cli.main(["--root", str(project), "regenerate", "--jobs", "1"]) == 0
    for source in TUTORIAL.rglob("*.py"):
        target = project / source.relative_to(TUTORIAL)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


def _build_tutorial(folder: Path) -> None:
    """folder/project: a copy of the project with the tutorial's backend added and regenerated;
    folder/regenerate.out: what regenerate printed."""
    from generator import cli

    project = fresh_copy(folder / "project")
    lay_tutorial_over(project)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["--root", str(project), "regenerate", "--jobs", "1"])
    assert code == 0, err.getvalue()
    (folder / "regenerate.out").write_text(out.getvalue())


def tutorial(factory: pytest.TempPathFactory, destination: Path) -> str:
    """A copy at `destination` of the project with the tutorial's backend, regenerated once per test run;
    what that regenerate printed."""
    built = shared_builds.built_once(factory, "tutorial", _build_tutorial)
    shutil.copytree(built / "project", destination, symlinks=True)
    return (built / "regenerate.out").read_text()


# ---------------------------------------------------------------- committed to git


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


def tree_digest(project: Path) -> str:
    """Every file below project (but .git), by path and bytes."""
    digest = hashlib.sha256()
    for path in sorted(p for p in project.rglob("*") if p.is_file() and ".git" not in p.relative_to(project).parts):
        digest.update(f"{path.relative_to(project).as_posix()}\0{path.stat().st_size}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def committed(project: Path, factory: pytest.TempPathFactory, name: str) -> Path:
    """commit_all(project), its .git made once per run, for a project that is the same in every test asking
    under `name`.

    Tests that need a revision (`diff`, `diff --rev HEAD`) each commit a fresh project copy that is the
    same, file for file, in every one of them. `git add -A` hashes and writes every file of it again for
    each test; here the first test of the run commits its copy (in a folder of its own) and every test gets
    a copy of that .git. The commit is checked to hold the very files of the caller's copy (a digest of
    every path and its bytes), so a copy that differs fails loudly instead of sharing a history that is not
    its own. The copied index has another folder's file times: git then compares the files' contents, not
    their times, so the working tree reads as committed.
    """
    files = tree_digest(project)

    def commit_a_copy(folder: Path) -> None:
        copy = folder / "project"
        shutil.copytree(project, copy, symlinks=True)
        commit_all(copy)
        git(copy, "gc", "-q")  # a few pack files to copy per test, not a file per object
        (folder / "digest").write_text(files)

    shared = shared_builds.built_once(factory, f"committed-{name}", commit_a_copy)
    assert (shared / "digest").read_text() == files, f"{project} is not the project committed once for {name}"
    shutil.copytree(shared / "project" / ".git", project / ".git", symlinks=True)
    return project
