"""Stage 1: load spec/ into the model.

Each spec module that does not start with an underscore describes one generated
module in its `MODULE` value. Loading executes the spec files (they are Python),
so any failure while doing so is turned into a one-line error at the spec line
that caused it.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import difflib
import functools
import gc
import hashlib
import importlib
import importlib.machinery
import os
import sys
from importlib.util import MAGIC_NUMBER
from pathlib import Path

from generator import dsl, heap, project, user_code
from generator.errors import (
    DeclarationWithoutReferenceError,
    DuplicateBackendError,
    DuplicateOutputError,
    GeneratorError,
    Interrupted,
    SpecExecutionError,
    SpecFieldError,
    SpecSyntaxError,
)
from generator.loading import compiled, locations, model_cache, plain_values, processes, reads, spellings, syntax
from generator.model import ModuleSpec, SourceLocation
from generator.project import spec_files


@contextlib.contextmanager
def spec_context(root: Path):
    """While spec code runs: a fresh `spec` package from this project, the project root first
    on sys.path, and locations (names, lines) read from the spec files as they are now.

    A load runs in a process of its own (processes.py), where nothing needs undoing; sys.path and the
    `spec` package are put back after for the callers that run spec code in theirs: the import command's
    compaction (importer/compaction.py runs spec/_common.py) and tests that watch a load from inside."""
    saved_path = list(sys.path)
    package = project.config(root).spec_package
    _forget_spec_package(package)
    locations.set_project_root(root)
    sys.path.insert(0, str(root))
    try:
        with _compiled_once(str(root) + "/"):
            yield
    finally:
        sys.path[:] = saved_path
        locations.set_project_root(None)
        _forget_spec_package(package)


# Project source already compiled in this process, by path and source bytes: each spec file's load runs
# on fresh modules, so spec/_common.py is executed once per spec file, and a long-lived process (the
# tests) loads the same files again and again. A code object is immutable, so executing it again is
# executing the file again; PYTHONDONTWRITEBYTECODE (or a read-only project) leaves no .pyc to reuse.
# Every process would still compile each file it runs, so the code is also kept on disk under a digest
# of the Python, the file name and the source bytes (generator/loading/compiled.py): an edit is compiled again.
_COMPILED: dict[tuple[str, bytes], object] = {}
_COMPILED_LIMIT = 512
_LARGE_SOURCE = 1 << 18  # bytes of a spec file whose compiling frees enough to return


@contextlib.contextmanager
def _compiled_once(project_prefix: str):
    loader = importlib.machinery.SourceFileLoader
    compile_source = loader.source_to_code
    installed = tuple(p + "/" for p in {sys.prefix, sys.base_prefix, sys.exec_prefix})  # a venv in the project

    def source_to_code(self, data, path, *args, **kwargs):
        if not str(path).startswith(project_prefix) or str(path).startswith(installed):
            return compile_source(self, data, path, *args, **kwargs)
        compile_it = functools.partial(compile_source, self, data, path, *args, **kwargs)
        return _project_code(project_prefix, str(path), data, compile_it, args, kwargs)

    loader.source_to_code = source_to_code
    try:
        yield
    finally:
        loader.source_to_code = compile_source


def _project_code(project_prefix: str, path: str, data, compile_it, args: tuple, kwargs: dict):
    """The code of a project file: compiled once per process and source, and kept in the project's cache."""
    key = (path, bytes(data))
    code = _COMPILED.get(key)
    if code is None:
        how = repr((_compiler(), args, sorted(kwargs.items())))
        code = compiled.cached(Path(project_prefix), _code_name(path), (how, os.fsencode(path), key[1]), compile_it)
        if len(data) > _LARGE_SOURCE:
            heap.release_freed_memory()  # the compiler's syntax tree, before the spec runs and parses again
        if len(_COMPILED) >= _COMPILED_LIMIT:
            _COMPILED.clear()
        _COMPILED[key] = code
    return code


def _compiler() -> str:
    return f"{sys.version}\0{MAGIC_NUMBER.hex()}\0{sys.flags.optimize}"


def _code_name(path: str) -> str:
    """The cache entry a project file is kept compiled in between runs: each process would compile every spec file."""
    return "project-" + hashlib.sha256(os.fsencode(path)).hexdigest()[:24]


def load_modules(
    root: Path, exclude: Path | None = None, reuse: bool = False, keep: bool = False, cache_of: Path | None = None
) -> list[ModuleSpec]:
    """Execute every spec file (but `exclude`, one `import` is about to replace) and return their modules.

    Each module records the inputs its load read (`ModuleSpec.read`, see generator/loading/reads.py), and
    each load runs in a process of its own, so no spec file changes another's
    output (generator/loading/processes.py). With `reuse`, a spec file none of whose
    recorded reads changed is not executed: its last load is taken from the
    model cache (generator/loading/model_cache.py). With `keep`, every load made is kept there.
    `cache_of` is the project whose model cache serves a spec extracted elsewhere (a revision's, for
    `diff --rev`): an entry serves a file whose recorded reads are the same under `root`. Nothing is kept then.
    """
    return start_loads(root, exclude, reuse, keep, cache_of).modules()


def start_loads(
    root: Path, exclude: Path | None = None, reuse: bool = False, keep: bool = False, cache_of: Path | None = None
) -> Loads:
    """load_modules, begun: the loads run in their processes while the caller goes on; `.modules()` ends it."""
    return Loads(root, exclude, reuse, keep, cache_of)


class Loads:
    """The spec loads of a project, under way (see load_modules)."""

    def __init__(self, root: Path, exclude: Path | None, reuse: bool, keep: bool, cache_of: Path | None):
        self.root = root = root.resolve()
        exclude = exclude.resolve() if exclude is not None else None
        self.cache = model_cache.ModelCache(root if cache_of is None else cache_of.resolve(), files=root)
        self.keep = keep and cache_of is None
        self.paths = [path for path in spec_files(root) if path != exclude]
        self.found = {path: self.cache.lookup(str(path.relative_to(root))) if reuse else None for path in self.paths}
        self.missing = [path for path in self.paths if self.found[path] is None]
        self.running = processes.start(root, self.missing)  # each in a process of its own

    def modules(self) -> list[ModuleSpec]:
        """Each spec file's module, in order; the first error, in the order of the files."""
        root = self.root
        locations.forget_source_files()  # later questions about spec lines read the files as they are now
        spellings.forget()
        made = self.running.modules()
        self.found.update(zip(self.missing, made))
        modules = [self.found[path] for path in self.paths]
        generated = project.config(root).generated
        modules = [m if m.generated == generated else dataclasses.replace(m, generated=generated) for m in modules]
        # The spec files' syntax trees served the loads (spec lines, dtype config names); any later
        # question parses again. Freed now, they leave the process and its formatting workers small.
        syntax.forget()
        heap.release_freed_memory()
        _check_unique_outputs(modules)
        _check_unique_backends(modules)
        _check_declarations_have_a_reference(modules)
        if self.keep:
            for module in made:
                self.cache.keep(module)
        return modules


def prepare(root: Path) -> None:
    """Ready this process for loads of the project at `root`, forked from it (generator/loading/processes.py):
    the spec folder's helper modules (spec/_common.py), which each load may import, are read here once
    rather than once per load (their syntax trees, number spellings and compiled code), and again only
    when one changed. Runs no spec code."""
    helpers = {}
    for path in sorted(set(project.spec_folder(root).glob("*.py")) - set(spec_files(root))):
        with contextlib.suppress(OSError):
            helpers[path] = path.read_bytes()
    global _prepared
    if _prepared == (root, helpers):
        return
    locations.forget_source_files()
    spellings.forget()
    for path, data in helpers.items():
        try:
            syntax.index_of(data, path)
        except (SyntaxError, ValueError):
            continue  # its load says what is wrong
        spellings.prepare(path)
        compile_it = functools.partial(compile, data, str(path), "exec", dont_inherit=True)  # as importlib does
        _project_code(str(root) + "/", str(path), data, compile_it, (), {})
    _prepared = (root, helpers)


_prepared: tuple | None = None  # what prepare() last read: the project and its helper modules' bytes


def load_here(root: Path, path: Path) -> ModuleSpec:
    """Execute one spec file in this process: what a load's own process does (generator/loading/processes.py)."""
    with spec_context(root):
        return _load_one(root, path, reads.Observer(root))


def _load_one(root: Path, path: Path, observer: reads.Observer) -> ModuleSpec:
    relative = str(path.relative_to(root))
    try:
        with user_code.running(SpecExecutionError, f"loading {relative}", root, SourceLocation(relative, 1)):
            with _finalizers_in_the_guard():
                with observer.load() as read:
                    namespace = _import_spec(root, path.stem)
                    # Reading MODULE may run spec code too: a module's __getattr__, a value's properties.
                    module = _module_spec(root, path, relative, namespace)
                    observer.note_file(str(path), read)
                del namespace
    except GeneratorError as error:
        if observer.refused is None or isinstance(error, Interrupted):
            raise
    if observer.refused is not None:  # what was refused is the cause of whatever the load did next
        what, where = observer.refused
        location = SourceLocation(*where) if where is not None else SourceLocation(relative, 1)
        raise SpecExecutionError(f"{relative} {what}", location) from None
    if observer.off_limits is not None:
        name, what, where = observer.off_limits
        location = SourceLocation(*where) if where is not None else SourceLocation(relative, 1)
        raise SpecExecutionError(f"{relative} reads {name}, {what}: a spec must not read it", location)
    plain_values.require_plain(module)
    return dataclasses.replace(module, read=tuple(sorted((name, observer.digests[name]) for name in read)))


@contextlib.contextmanager
def _finalizers_in_the_guard():
    """Free what the load leaves behind before its guard ends: a spec object's __del__ is spec code.

    The spec module dies with the load, mostly as a reference cycle (its functions hold its
    namespace) that the collector would free in whichever later stage it next ran, where what
    __del__ prints would reach standard output. What a __del__ raises, Python would print as a
    traceback and go on; here it is the load's error. The heap from before the load is frozen
    meanwhile, so that the collection looks only at what the load made (not at torch's modules).
    A caller that froze its own heap (the test session: unfreezing would thaw it too) gets the
    young generations collected, which hold what the load made unless it outgrew them: a full
    collection would walk everything the caller made since.
    """
    unraisable = []
    saved, sys.unraisablehook = sys.unraisablehook, unraisable.append
    freezing = not heap.frozen_for_good  # (gc.get_freeze_count() would walk the frozen heap: a ms per call)
    if freezing:
        gc.freeze()
    try:
        yield
        gc.collect() if freezing else gc.collect(1)
    finally:
        sys.unraisablehook = saved
        if freezing:
            gc.unfreeze()
    if unraisable:
        raise unraisable[0].exc_value


def _module_spec(root: Path, path: Path, relative: str, namespace) -> ModuleSpec:
    declared = getattr(namespace, "MODULE", None)
    if declared is None:
        raise SpecFieldError("spec file defines no `MODULE = Module(...)`", SourceLocation(relative, 1))
    if type(declared) is not dsl.ModuleValue:  # not isinstance: a spec class's __class__ could claim to be one
        lines = [line for line, name in locations.name_assignments(str(path)) if name == "MODULE"]
        message = f"MODULE must be a Module(...), not {dsl.describe(declared)}"
        raise SpecFieldError(message, SourceLocation(relative, max(lines, default=1)))
    if declared.name is None:
        # The file's name is then the generated module's: `import generated.<name>` (the project's package) must work.
        what = "a spec file's name (it names the generated module)"
        dsl.identifier(path.stem, what, SourceLocation(relative, 1), "my_backend")
    return ModuleSpec(
        name=getattr(declared, "name", None) or path.stem,
        spec_file=relative,
        doc=declared.doc,
        backends=declared.backends,
        exports=declared.exports,
        extra_dtype_configs=declared.dtype_configs,
        location=getattr(declared, "location", None) or SourceLocation(relative, 1),
    )


def _import_spec(root: Path, stem: str):
    try:
        return importlib.import_module(f"{project.config(root).spec_package}.{stem}")
    except GeneratorError:
        raise
    except SyntaxError as error:
        filename, line = syntax.error_place(error, project.spec_folder(root) / f"{stem}.py")
        location = SourceLocation(user_code.shown(filename, root), line)
        hint = " (save the file as UTF-8)" if "codec can't decode" in error.msg else ""
        raise SpecSyntaxError(f"invalid Python: {error.msg}{hint}", location) from None
    except Exception as error:
        location, names = _innermost_spec_frame(root, error)
        hint = _name_hint(error, names)
        raise SpecExecutionError(f"{type(error).__name__}: {error}{hint}", location) from None


def _innermost_spec_frame(root: Path, error: BaseException) -> tuple[SourceLocation | None, set[str]]:
    """Where in the spec the error arose, and the names visible there."""
    spec_dir = str(project.spec_folder(root))
    location, names = None, set()
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename.startswith(spec_dir):
            location = SourceLocation(user_code.shown(code.co_filename, root), tb.tb_lineno or 1)
            names = set(tb.tb_frame.f_globals) | set(tb.tb_frame.f_locals) | set(dir(builtins))
        tb = tb.tb_next
    return location, names


def _name_hint(error: Exception, names: set[str]) -> str:
    """Python prints 'did you mean' only in full tracebacks; a one-line error needs it too."""
    if isinstance(error, NameError) and error.name:
        close = difflib.get_close_matches(error.name, sorted(names), n=1)
        return f" (did you mean {close[0]!r}?)" if close else ""
    return ""


def _forget_spec_package(package: str) -> None:
    for name in [n for n in list(sys.modules) if n == package or n.startswith(package + ".")]:  # one copy: threads
        del sys.modules[name]


def _check_unique_outputs(modules: list[ModuleSpec]) -> None:
    seen: dict[str, ModuleSpec] = {}
    for module in modules:
        other = seen.setdefault(module.output, module)
        if other is not module:
            raise DuplicateOutputError(
                f"this module writes {module.output}, which {other.spec_file} already writes; "
                "give one of them another Module(name=...) or file name",
                module.location,
            )


def _check_unique_backends(modules: list[ModuleSpec]) -> None:
    """The support matrix, diff and lint key on backend labels, the project's names: one backend each.
    The names their BackendConfigs have may repeat (torch's default "" among them)."""
    seen: dict[str, object] = {}
    for backend in (b for m in modules for b in m.backends):
        other = seen.setdefault(backend.label, backend)
        if other is not backend:
            raise DuplicateBackendError(
                f"backend name {backend.label!r} is already used by the backend at {other.location}; "
                "backend names must be unique across spec/ (Backend(label=...) names one otherwise than "
                "the name its builder returns)",
                backend.location,
            )


def _check_declarations_have_a_reference(modules: list[ModuleSpec]) -> None:
    """added()/removed()/changed() declare a difference from a reference builder, so one must exist.

    A declaration is one spec line, reached by every backend whose configs include it
    (a shared list in spec/_common.py reaches many). It is an error when none of them
    has a reference builder: it would be silently ignored. Otherwise the backends
    without a reference ignore it, and those with one are held to it.
    """
    reached: dict[SourceLocation, list] = {}
    for backend in (b for m in modules for b in m.backends):
        for item in (*backend.configs, *backend.removals):
            if item.divergence is not None:
                reached.setdefault(item.divergence.location, []).append((backend, item.divergence.kind))
    for location, uses in reached.items():
        if not any(backend.reference is not None for backend, _ in uses):
            kind = uses[0][1]
            names = list(dict.fromkeys(repr(b.label) for b, _ in uses))
            whose = (
                f"backend {names[0]} has none"
                if len(names) == 1
                else f"none of the backends that use it ({', '.join(names)}) has one"
            )
            raise DeclarationWithoutReferenceError(
                f"{kind}() declares a difference from a reference builder, but {whose} "
                "(give the Backend reference=..., or write the pattern without the declaration)",
                location,
            )
