"""What a spec load reads: the inputs of the outputs it makes.

The inputs recorded for a generated file (generator/freshness/manifest.py) are
what its spec load really used, observed while it ran: the spec file, the spec
modules it imports (relative imports too), helper modules anywhere in the project
(the user's own files in the generated folder too: only the generator's outputs are
no input), data files it opens, the project folders it lists (a name ending in "/":
their digest is of the names in them), where in the project it looked for a module
it failed to import (ABSENT), the project modules its importable() names and
reference builders point to, the paths it tested (os.path.exists, Path.is_file,
os.stat: what is there, a file's bytes, a folder or nothing), the files outside the
project it read or tested (`../shared/doc.txt`, by path from the root, but not the
Python installation's or the generator's), and the environment variables it read
(`env:NAME`; `env:*` once it iterated or copied os.environ). An audit hook sees each
file executed (the "exec" event carries the code object, whose file is the module's
source), opened and listed, and digests it then, as it is read; os.stat, os.lstat,
os.access and os.environ's class are replaced to see the rest. A new input can only
appear through an edit to one already recorded or a file appearing where one was
looked for, so the record stays sound.

Each load runs in a process of its own (generator/loading/processes.py), so nothing
here undoes what a load changes: the replacements stay, and whatever the spec does
to sys.modules, sys.path, os.environ or an import hook ends with its process. Only
what project code asks is recorded, not what the import machinery or installed
code does on its own account.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.machinery
import json
import os
import sys
import types
from pathlib import Path

from generator import digests, project
from generator.loading import read_hooks

# The generator's own folder, resolved and as imported: imported through a symbolic link (a monorepo's), its
# code's file names are the link's.
_HERE = Path(__file__)
_GENERATOR_DIRS = tuple({f"{path.parent.parent}{os.sep}": None for path in (_HERE.resolve(), _HERE.absolute())})
# The standard library's own code (importlib, pathlib, glob) only carries out what its caller asks.
_STDLIB_DIR = os.path.dirname(os.__file__) + os.sep
_LISTING_EVENTS = ("os.listdir", "os.scandir")
# Events of starting another program: what it reads is not seen (no audit event, another process).
_STARTING_EVENTS = ("subprocess.Popen", "os.system", "os.posix_spawn", "os.spawn")
_OBSERVED_EVENTS = frozenset(("exec", "open", "sqlite3.connect", *_LISTING_EVENTS, *_STARTING_EVENTS))
# A module's namespace, read where the import system keeps it: not vars(), which asks the object for its
# `__dict__` attribute, and a module's class (user code) may make that raise or answer with another dict.
_namespace = types.ModuleType.__dict__["__dict__"].__get__
_PACKAGES = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")
# The process's and the machine's own state, not files of a repository: no input (docs/guarantees.md).
_SYSTEM = ("/proc/", "/sys/", "/dev/")

_HOOKS = read_hooks.__file__
_observer: Observer | None = None
_hooked = False


class Observer:
    """A load's observer: the inputs it read, with each one's digest as first read."""

    def __init__(self, root: Path):
        self.root = root.resolve()
        self._prefix = str(self.root) + os.sep
        # A virtualenv or installed packages inside the project are not the project's code (whatever the
        # folders above the project are called: /srv/dist-packages/acme is a project like another).
        installs = {str(Path(p).resolve()) + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix) if p}
        packages = {str(Path(p).resolve()) + os.sep for p in sys.path if p and _installed_part(p, self._prefix)}
        inside = [p for p in installs | packages if p.startswith(self._prefix) and p != self._prefix]
        self._outside = (*_GENERATOR_DIRS, *sorted(inside))
        self._layout = project.config(self.root)
        self._outputs = tuple(f"{folder}/" for folder in self._layout.output_folders())
        self._generated: frozenset[str] | None = None  # the generator's own outputs (_written_by_generator)
        self._installed = _installation(self._prefix)
        self.digests: dict[str, str] = {}
        self._changed: dict[str, str | None] = {}  # environment variables the load set or unset: their values before
        self._read: set[str] | None = None
        self._busy = False
        # The first file the load read that no load may depend on (the generator's outputs, .git, .cache), with
        # the spec line that read it: the load's error (loader).
        self.off_limits: tuple[str, str, tuple[str, int] | None] | None = None
        # The first thing the load did whose reads cannot be recorded (starting another program), with the spec
        # line that did it: the load's error (loader).
        self.refused: tuple[str, tuple[str, int] | None] | None = None

    @contextlib.contextmanager
    def load(self):
        """Observe one load; yields the set of inputs it read. The load runs in a process of its own, which
        ends with it: nothing it changed is undone here."""
        global _observer
        _install_hook()
        read: set[str] = set()
        before = set(sys.modules)
        finders = (_SourceOnlyFinder(self), _MissedImportNoter(self))
        sys.meta_path.insert(0, finders[0])
        sys.meta_path.append(finders[1])
        previous, _observer, self._read = _observer, self, read
        try:
            yield read
        finally:
            _observer, self._read = previous, None
            for finder in finders:  # this module's own: a caller that loads in its process (a test) imports on
                with contextlib.suppress(ValueError, AttributeError):
                    sys.meta_path.remove(finder)
            self._let_go(set(sys.modules) - before, read)

    def _let_go(self, names: set[str], read: set[str]) -> None:
        """Note the files of the project modules the load imported (an extension module shows no "exec" event),
        and take them out of sys.modules: they die with the load (loader._finalizers_in_the_guard), where what a
        spec object's __del__ does is the load's. `__file__` is read from each module's namespace, where the
        import system puts it: a module's class (user code) could make getattr run code."""
        for name in names:
            module = sys.modules.get(name)
            if issubclass(type(module), types.ModuleType):
                filename = _namespace(module).get("__file__")
                if isinstance(filename, str) and self._is_local_file(filename):
                    self.note_file(filename, read)
                    del sys.modules[name]

    def note_module(self, dotted: str, read: set[str]) -> None:
        """Note the project files a dotted name (`my_backend.fusers.fuse`) would import, without importing."""
        parts = dotted.split(".")
        if parts[0] not in self._top_level_names():
            return  # torch, operator, ...: not the project's
        folder = self.root
        for part in parts:
            module = folder / f"{part}.py"
            package = folder / part
            if (package / "__init__.py").is_file():
                self.note_file(str(package / "__init__.py"), read)
            elif module.is_file():
                self.note_file(str(module), read)
                return
            elif not package.is_dir():  # nothing (more) of it in the project
                return
            folder = package

    @functools.cache  # noqa: B019 - one observer serves one run, and the project's top level does not change
    def _top_level_names(self) -> frozenset[str]:
        try:
            return frozenset(name.removesuffix(".py") for name in os.listdir(self.root))
        except OSError:
            return frozenset()

    def note_file(self, filename: str | None, read: set[str]) -> None:
        relative = self._relative(filename)
        if relative is None:
            return
        if _forked_from_a_load:
            raise _RefusedInAFork(f"{relative}: a process a spec load forked must not read the project's files or "
                                  "others it depends on: what it reads would reach the load unrecorded")  # fmt: skip
        if relative not in self.digests:
            self._busy = True  # reading it here must not be observed again
            try:
                self.digests[relative] = digests.path_digest(filename)
            except OSError:
                return  # unreadable: nothing to record
            finally:
                self._busy = False
        read.add(relative)

    def watching(self) -> bool:
        """Whether a load is under way and what happens now is its own (not this observer's reading)."""
        return self._read is not None and not self._busy

    @contextlib.contextmanager
    def quietly(self):
        """What happens inside is not observed (the observer notes it itself, afterwards)."""
        busy, self._busy = self._busy, True
        try:
            yield
        finally:
            self._busy = busy

    def note_opened_in(self, folder: str, path) -> None:
        """Note a file project code opened relative to a folder descriptor (`os.open(path, dir_fd=...)`)."""
        if self._asked_by_project_code():
            self.note_file(os.path.join(folder, os.fsdecode(path)), self._read)

    def note_test(self, path) -> None:
        """Note a path project code tested (os.stat, os.path.exists, Path.is_file, os.access): what it found
        there (a file's bytes, a folder, nothing) is an input. The root and the folders it is in are not."""
        try:
            filename = os.path.abspath(os.fsdecode(path))
        except (TypeError, ValueError):
            return
        relative = self._relative(filename)
        if relative is None:
            self._note_off_limits(filename)
        if relative is None or relative in self._read or self._prefix.startswith(filename.rstrip(os.sep) + os.sep):
            return
        if self._asked_by_project_code(by_imports=False):
            self.note_file(filename, self._read)

    def note_variable(self, name: str | None) -> None:
        """Note an environment variable project code read (`env:NAME`), or (None) the whole environment,
        as the command's own environment has it: a value the load set itself is not an input."""
        key = digests.ENVIRONMENT_INPUT if name is None else digests.ENVIRONMENT + name
        if key in self._read or name in self._changed or not self._asked_by_project_code():
            return
        self._busy = True
        try:
            if name is None:
                environment = dict(os.environ)
                environment.update(self._changed)
                before = {n: v for n, v in environment.items() if v is not None}
                self.digests[key] = digests.environment_digest(before)
            else:
                self.digests[key] = digests.variable_digest(os.environ.get(name))
        finally:
            self._busy = False
        self._read.add(key)

    def note_change(self, name: str) -> None:
        """An environment variable the load sets or unsets: its value before, for the whole environment's digest."""
        if name not in self._changed:
            self._busy = True
            try:
                self._changed[name] = os.environ.get(name)
            finally:
                self._busy = False

    def _note_entries(self, folder: str) -> None:
        """Note what is in a folder a load scanned (os.scandir, and glob and os.walk through it): each entry
        answers is_file() and stat() without another look, so each one's bytes (or that it is a folder)
        are inputs."""
        if self._relative(folder) is None and folder + os.sep != self._prefix:
            return
        self._busy = True
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return
        finally:
            self._busy = False
        for name in names:
            self.note_file(os.path.join(folder, name), self._read)

    def note_listing(self, folder: str, read: set[str]) -> None:
        """Note a project folder a load listed (`spec/`): a file added there or removed is a change."""
        if _forked_from_a_load and (self._relative(folder) is not None or folder + os.sep == self._prefix):
            raise _RefusedInAFork(f"{folder}: a process a spec load forked must not list the project's folders")
        if folder + os.sep == self._prefix:
            name = "./"
        else:
            relative = self._relative(folder)
            if relative is None:
                return
            name = relative + "/"
        if name not in self.digests:
            self._busy = True
            try:
                self.digests[name] = digests.input_digest(self.root, name)  # as check and the model cache judge it
            finally:
                self._busy = False
        read.add(name)

    def _asked_by_project_code(self, by_imports: bool = True) -> bool:
        """Whether what is under way was asked for by project code: the first frame out from here that is
        neither this module's, nor the standard library's (the import machinery, pathlib, glob), nor installed
        code's (numpy.loadtxt, torch) is one; the generator's own frames ask for themselves. Each load's
        process starts from the same state, so what installed code does at a spec's request is the spec's.
        Unless `by_imports`, what the import machinery does is not asked for: it lists a folder once per
        process, not once per load."""
        frame = sys._getframe(0)
        here = frame.f_code.co_filename
        while frame is not None:
            filename = frame.f_code.co_filename
            if not by_imports and filename.startswith("<frozen importlib"):
                return False
            standard = filename.startswith(_STDLIB_DIR) and "-packages" not in filename
            if filename == _HOOKS:
                filename = here  # the replaced os functions observe for this module: they ask nothing
            if filename.startswith(_GENERATOR_DIRS) and filename != here:
                return False  # the generator records what it reads on a spec's behalf itself
            installed = _installed_part(filename, self._prefix)
            # "<string>" (exec, compile), "<frozen ...>": no file of its own; whoever ran it asked
            if not (standard or installed or filename.startswith("<") or filename == here):
                return self._is_local_file(filename) or self._outside_relative(filename) is not None
            frame = frame.f_back
        return False

    def _relative(self, filename) -> str | None:
        """The input name of an absolute path: relative to the root (`../shared/doc.txt` outside it), None for
        what is no input (the Python installation, the generator, caches, the generator's outputs)."""
        if not isinstance(filename, str):
            return None
        if f"{os.sep}." in filename:
            filename = os.path.normpath(filename)  # `root/../shared/x.py`, as a relative sys.path entry makes it
        if not filename.startswith(self._prefix):
            return self._outside_relative(filename)
        if filename.startswith(self._outside):
            return None
        relative = Path(filename[len(self._prefix) :])
        if not relative.parts or relative.parts[0] in digests.NOT_INPUTS or "__pycache__" in relative.parts:
            return None
        name = relative.as_posix()
        if (name.startswith(self._outputs) or name == self._layout.matrix) and name in self._written_by_generator():
            return None  # what regenerate writes: its own output, never an input
        return f"./{name}" if name.startswith(digests.ENVIRONMENT) else name

    def _outside_relative(self, filename: str) -> str | None:
        """A file outside the project (`../shared/doc.txt` in a monorepo), by its path relative to the root (so the
        record is the same in every clone of the repository); None for the Python installation and the generator."""
        if not os.path.isabs(filename) or filename.startswith(self._installed) or filename.startswith(_SYSTEM):
            return None
        if _installed_part(filename, self._prefix):
            return None
        return os.path.relpath(filename, self.root).replace(os.sep, "/")

    def _written_by_generator(self) -> frozenset[str]:
        """The files regenerate writes: those the manifest lists, the manifest, and each spec file's module by
        its name; a file of the user's own in the generated folder (a helper a spec imports) is an input."""
        if self._generated is None:
            layout, busy, self._busy = self._layout, self._busy, True
            try:
                names = {layout.manifest, layout.matrix}
                names.update(layout.output(path.stem) for path in project.spec_files(self.root))
                try:
                    with open(self.root / layout.manifest, encoding="utf-8") as stream:
                        names.update(str(name) for name in json.load(stream)["outputs"])
                except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
                    pass  # no manifest (a first run), or a broken one
            finally:
                self._busy = busy
            self._generated = frozenset(names)
        return self._generated

    def _note_off_limits(self, filename: str) -> None:
        """Remember a project file project code read that no load may depend on: what regenerate writes (another
        spec's module, the manifest, the matrix), which would make the output depend on the last run, and the
        repository's and the generator's own state (.git, .cache), which every clone has its own of."""
        if self.off_limits is not None or not filename.startswith(self._prefix):
            return
        name = Path(filename[len(self._prefix) :]).as_posix()
        top = name.partition("/")[0]
        if top in digests.NOT_INPUTS[:2]:  # .git, .cache
            what = "the repository's own state, which every clone has its own of" if top == ".git" else (
                "the generator's cache")
        elif name in self._written_by_generator() and not name.endswith("/__init__.py"):
            what = "a file regenerate writes, so the output would depend on the last run"
        else:
            return
        if self._asked_by_project_code():
            self.off_limits = (name, what, self._project_line())

    def refuse(self, what: str) -> None:
        """Remember the first thing project code did whose reads cannot be recorded: the load fails at that line."""
        if self.refused is None and self._asked_by_project_code():
            self.refused = (what, self._project_line())

    def _project_line(self) -> tuple[str, int] | None:
        """The innermost line of the project's own code under way: where it read what it read."""
        frame = sys._getframe(1)
        while frame is not None:
            filename = frame.f_code.co_filename
            if self._is_local_file(filename):
                return Path(filename[len(self._prefix) :]).as_posix(), frame.f_lineno
            frame = frame.f_back
        return None

    def _is_local_file(self, filename: str) -> bool:
        return filename.startswith(self._prefix) and not filename.startswith(self._outside)

    def _saw(self, event: str, args) -> None:
        if event in _STARTING_EVENTS:
            if self._read is not None:
                program = os.fsdecode(args[0]) if args and isinstance(args[0], (str, bytes, os.PathLike)) else "?"
                self.refuse(f"starts another program ({event}: {program!r}), whose reads are not recorded, so check "
                            "could not tell when they change the output; read the files in the spec itself")
            return
        if event in _LISTING_EVENTS:
            path = args[0] if args[0] is not None else "."
            if isinstance(path, int):
                path = read_hooks.descriptor_path(path)  # os.listdir(fd): the folder it is open on
            if self._read is not None and path is not None and self._asked_by_project_code(by_imports=False):
                folder = os.path.abspath(os.fsdecode(path))
                self.note_listing(folder, self._read)
                if event == "os.scandir":  # its entries answer stat() without another look: what is there counts
                    self._note_entries(folder)
            return
        if event == "sqlite3.connect":
            database = _sqlite_file(args[0] if args else None)
            if database is not None and self._read is not None:
                self.note_file(os.path.abspath(database), self._read)
            return
        if event == "exec":
            filename = getattr(args[0], "co_filename", None)
            if not isinstance(filename, str) or not os.path.isabs(filename):
                return  # <string>, <frozen ...>: no file
        else:  # open(path, mode, flags)
            path, mode, flags = args
            if isinstance(path, int) or path is None:
                return
            if not isinstance(flags, int):
                flags = os.O_RDONLY if mode is None or not any(c in mode for c in "wax+") else os.O_WRONLY
            if flags & os.O_ACCMODE == os.O_WRONLY or flags & (os.O_TRUNC | os.O_EXCL):
                return  # written, not read ("r+b" and "a+" read what is there: then mmap, read, ...)
            filename = os.path.abspath(os.fsdecode(path))
        if self._read is None:
            return
        if self._relative(filename) is None:
            self._note_off_limits(filename)
        if not filename.startswith(self._prefix):
            if self._outside_relative(filename) is None or not self._asked_by_project_code():
                return  # the installation's files, or what installed code does outside the project: its own business
        self.note_file(filename, self._read)


def _installed_part(filename: str, project_prefix: str) -> bool:
    """Whether `filename` is in a site-packages or dist-packages folder: only the part below the project counts
    for a file in the project, since the folders above it are no business of the project's."""
    if filename.startswith(project_prefix):
        filename = os.sep + filename[len(project_prefix) :]
    return any(folder in filename for folder in _PACKAGES)


def _sqlite_file(database) -> str | None:
    """The file an sqlite3.connect() opens (a path, or a `file:` URI), None for an in-memory database."""
    if isinstance(database, bytes):
        database = os.fsdecode(database)
    if not isinstance(database, str) or database in ("", ":memory:"):
        return None
    if database.startswith("file:"):
        database = database[len("file:") :].partition("?")[0]
        return database or None
    return database


class _SourceOnlyFinder:
    """Imports the project's modules from their source as it is now, never from __pycache__.

    Python trusts a .pyc while its source keeps its size and modification time in whole
    seconds, so a same-size edit saved within a second (an editor, a git checkout) would
    run the old code while the digest recorded is the new source's. Other modules are
    left to the usual finders.
    """

    def __init__(self, observer: Observer):
        self.observer = observer

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] not in self.observer._top_level_names() or name in sys.builtin_module_names:
            return None
        if importlib.machinery.FrozenImporter.find_spec(name) is not None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        loader = getattr(spec, "loader", None)
        if type(loader) is not importlib.machinery.SourceFileLoader or not self.observer._is_local_file(loader.path):
            return None
        spec.loader = _SourceOnlyLoader(loader.name, loader.path)
        return spec


class _SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    def path_stats(self, path):
        raise OSError("compiled from source")  # get_code then neither reads nor writes a .pyc


class _MissedImportNoter:
    """Last on sys.meta_path, so asked only about a module no finder found: where project code looked
    for it in the project (`spec/_doc.py`, `helpers/__init__.py`) is an input, ABSENT, as a file a load
    opened and missed is. `try: import x except ImportError` gives another output once x appears.
    Imports that torch and other installed code try and miss are theirs, not the spec's, and a
    process that imported them already would not try them again: those are not noted."""

    def __init__(self, observer: Observer):
        self.observer = observer

    def find_spec(self, name, path=None, target=None):
        observer = self.observer
        if observer._read is None or observer._busy or not observer._asked_by_project_code():
            return None
        last = name.rpartition(".")[2]
        for folder in sys.path if path is None else list(path):
            if not isinstance(folder, str):
                continue
            folder = os.path.abspath(folder)
            if observer._is_local_file(folder + os.sep):
                for candidate in (os.path.join(folder, f"{last}.py"), os.path.join(folder, last, "__init__.py")):
                    observer.note_file(candidate, observer._read)
        return None


@contextlib.contextmanager
def unobserved():
    """Files read inside are not inputs of the load under way: a search through every spec file
    (loading/spellings.py's) reads files that do not shape the output; note_read() names those that do."""
    observer = _observer
    if observer is None or observer._busy:
        yield
        return
    observer._busy = True
    try:
        yield
    finally:
        observer._busy = False


def note_read(filename: str) -> None:
    """Record `filename` as read by the load under way (if one is)."""
    observer = _observer
    if observer is not None and observer._read is not None:
        observer.note_file(filename, observer._read)


def note_module(dotted: str) -> None:
    """Record the project files a dotted name (`my_backend.fusers.fuse`) would import as read by the load
    under way (if one is): a spec names code by import path (importable(...), Backend(reference=...))
    without importing it."""
    observer = _observer
    if observer is not None and observer._read is not None:
        observer.note_module(dotted, observer._read)


def _audit(event: str, args) -> None:
    observer = _observer
    if observer is None or observer._busy or event not in _OBSERVED_EVENTS:
        return
    try:
        observer._saw(event, args)
    except _RefusedInAFork:
        raise
    except Exception:  # noqa: S110 - an audit hook that raises would fail the user's own open()
        pass
    if event in _STARTING_EVENTS and observer.refused is not None:
        raise PermissionError(f"refused: {observer.refused[0]}")  # the program does not run: the load fails


def _installation(project_prefix: str) -> tuple[str, ...]:
    """The folders outside the project whose files are no input: the generator's and the Python installation's
    (a prefix the project is in, /usr for /usr/src/project, by its Python folders only)."""
    packages = (p + os.sep for p in sys.path if "-packages" in p and not (p + os.sep).startswith(project_prefix))
    folders = {*_GENERATOR_DIRS, _STDLIB_DIR, *packages}
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
        for form in {prefix, os.path.realpath(prefix)}:
            folder = form.rstrip(os.sep) + os.sep
            if project_prefix.startswith(folder):
                folders.update(f"{folder}{name}{os.sep}" for name in ("lib", "lib64", "include", "bin"))
            else:
                folders.add(folder)
    return tuple(sorted(folders))


class _RefusedInAFork(PermissionError):
    """A read in a process a load forked: raised to the code that reads (an open() that fails), never swallowed."""


_forked_from_a_load = False  # this process was forked while a load was observed (a spec's os.fork())


def _forked() -> None:
    global _forked_from_a_load
    observer = _observer
    if observer is not None and observer._read is not None:
        _forked_from_a_load = True


def _install_hook() -> None:
    """Audit hooks cannot be removed: one hook per process, idle unless a load is observed. What raises no
    audit event is observed too (generator/loading/read_hooks.py). A load's process is its own, so these stay."""
    global _hooked
    if not _hooked:
        sys.addaudithook(_audit)
        read_hooks.install(lambda: _observer)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_forked)
        _hooked = True
