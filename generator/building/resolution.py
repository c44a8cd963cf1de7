"""Validation: every torch name in the spec exists and is of the kind its field needs.

This is the one stage that needs torch, and importing torch takes seconds. What
it learns about each name of torch or the standard library (does it exist, is it a
dtype / an nn.Module class / callable, what is its public spelling) depends only on
the torch release and Python, so it is cached per both (cache.TORCH_NAMES). Only a
spec that introduces a name not seen before pays for the import. A name in any other
module (the project's own, importable() or a reference builder; another installed
package) depends on that module's code: it is looked up on every run, never kept.

Pattern elements must use the object's public spelling (e.g. `F.avg_pool2d`, not
`torch._C._nn.avg_pool2d`): duplicate detection compares names, so one object
must have one name.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import pkgutil
import sys
from pathlib import Path

from generator import cache, digests, process, user_code
from generator.building import method_names
from generator.errors import (
    GeneratorError,
    SpecFieldError,
    TemplateRenderError,
    TorchKindError,
    UnknownTorchNameError,
)
from generator.model import (
    Call,
    DTypeConfig,
    DTypeWithConstraints,
    FixedQParams,
    FunctionDef,
    ModuleSpec,
    PatternConfig,
    TorchRef,
)
from generator.spelling import ref_source

ROLE_NEEDS = {
    "pattern": ("callable", "a module, function or operator overload"),
    "dtype": ("dtype", "a torch dtype such as torch.quint8"),
    "module": ("module", "an nn.Module subclass"),
    "callable": ("function", "a function"),
    "factory": ("callable", "a function or class to call"),
    "any": (None, "an existing name"),
}
# What a name is, in the spec's words, most specific first.
KIND_WORDS = (
    ("dtype", "a dtype"),
    ("module", "an nn.Module class"),
    ("class", "a class"),
    ("function", "a function"),
    ("callable", "a callable object"),
)
# Bumped when the facts recorded per name change, so that an old cache is not read.
FACTS_VERSION = 2


def validate(modules: list[ModuleSpec], root: Path) -> None:
    """Check every torch name the spec uses; raise the first error. May import torch (seconds, for a new name)."""
    with Validation(modules, root, overlap=False) as validation:
        validation.finish()


class Validation:
    """The check of the spec's torch names, started as soon as the spec is loaded; `finish()` completes it.

    Names known from the cache are checked without torch. When one is new, a
    child process (generator.process) starts importing torch at once to look the
    new names up, while the caller expands, renders and formats; `finish()`
    waits for it, then raises the first error in the order a check made in one
    go gives: a name that does not exist, then a name of the wrong kind (in the
    spec's order), then a method name that does not exist. Without `overlap`, or
    where torch is imported already (a lookup then takes milliseconds), the names
    are looked up here, on `finish()`. Use it as a context manager: leaving it
    ends the child.
    """

    def __init__(self, modules: list[ModuleSpec], root: Path, overlap: bool = True):
        self.root = root
        self.uses = list(_uses(modules))
        self.torch_version = _torch_version()
        self.kept = cache.Cache(root, cache.TORCH_NAMES)
        self.facts = _read_cache(self.kept.get(self._key(), self.torch_version))
        self.unknown: dict[str, TorchRef] = {}  # each new name at its first use, in the spec's order
        for ref, _, _ in self.uses:
            if ref.path not in self.facts:
                self.unknown.setdefault(ref.path, ref)
        methods = method_names.uses(modules)
        self.unknown_methods = {n: where for n, where in methods.items() if method_names.fact_key(n) not in self.facts}
        self.lookup = None
        if self.unknown or self.unknown_methods:
            fork = overlap and "torch" not in sys.modules
            self.lookup = process.Forked(_new_facts, self.unknown, self.unknown_methods, root, fork=fork)
        self.finished = False

    def check_known(self) -> None:
        """Finish now if no name is new (no torch to wait for); otherwise leave it to `finish()`."""
        if self.lookup is None:
            self.finish()

    def finish(self) -> None:
        """Raise the first error, as validate does; once done, a second call does nothing."""
        if self.finished:
            return
        self.finished = True
        ref_facts, ref_error, method_facts, method_error = self.lookup.result() if self.lookup else ({}, None, {}, None)
        if ref_error is not None:
            raise ref_error
        self.facts.update(ref_facts)
        for ref, role, what in self.uses:
            _check(ref, role, what, self.facts[ref.path])
        if method_error is not None:
            raise method_error
        self.facts.update(method_facts)
        if self.lookup is not None:  # a read-only checkout only loses the speed-up
            kept = {path: fact for path, fact in self.facts.items() if _keeps(path)}
            self.kept.put(self._key(), json.dumps(kept, indent=0, sort_keys=True).encode(), self.torch_version)

    def _key(self) -> bytes:
        return self.kept.key(self.torch_version, sys.version, str(FACTS_VERSION))

    def __enter__(self) -> Validation:
        return self

    def __exit__(self, *exc_info) -> None:
        if self.lookup is not None:
            self.lookup.close()


def _new_facts(unknown: dict[str, TorchRef], unknown_methods: dict, root: Path):
    """(facts, error) of the new names, then (facts, error) of the new method names (imports torch).

    The errors are returned, not raised, so that the caller raises them in its
    order; method names are not looked up once a name is missing. torch's own
    names and Tensor's methods are looked up before any other module is imported,
    as a user's fresh interpreter has them: a vendor module may add names to torch
    as it imports (`torch.nn.NpuGELU`), which a generated module that does not
    import it never sees. Where this process has imported torch already (and
    perhaps such a module: `import` has run a builder), they are looked up in a
    fresh interpreter.
    """
    torchs = {path: ref for path, ref in unknown.items() if path.partition(".")[0] == "torch"}
    others = {path: ref for path, ref in unknown.items() if path not in torchs}
    fresh = "torch" not in sys.modules
    facts, error, method_facts, method_error = (
        torch_facts(torchs, unknown_methods, root) if fresh else _in_a_fresh_interpreter(torchs, unknown_methods, root)
    )
    if others:
        # A reference builder or an importable() name may be the user's own module, run on import.
        with project_on_path(root), user_code.running(UnknownTorchNameError, "importing the spec's names", root):
            their_facts, their_error = _facts_in_order(others)
        facts = {**facts, **their_facts}
        if their_error is not None:
            order = list(unknown)
            first = next(path for path in others if path not in facts)
            failed = next((path for path in torchs if path not in facts), None) if error is not None else None
            if failed is None or order.index(first) < order.index(failed):
                error = their_error  # the first missing name in the spec's order is the one reported
    if error is not None:
        return {}, error, {}, None
    return facts, None, method_facts, method_error


def torch_facts(refs: dict[str, TorchRef], methods: dict, root: Path):
    """(facts, error) of torch's own names, then (facts, error) of Tensor's method names, looked up here."""
    facts, error = _facts_in_order(refs)
    if error is not None or not methods:
        return facts, error, {}, None
    try:
        return facts, None, method_names.facts_from_torch(methods, root), None
    except GeneratorError as method_error:
        return facts, None, {}, method_error


def _facts_in_order(refs: dict[str, TorchRef]) -> tuple[dict, GeneratorError | None]:
    """The facts of the names up to the first that fails, and its error (None if none fails)."""
    facts = {}
    for path, ref in refs.items():
        try:
            facts.update(_facts_from_torch({path: ref}))
        except GeneratorError as error:
            return facts, error
    return facts, None


# torch's names looked up in an interpreter that imported nothing else: the facts, pickled, on standard output.
_FRESH = (
    "import pickle, sys\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "from generator.building import resolution\n"
    "found = resolution.torch_facts(*pickle.load(sys.stdin.buffer))\n"
    "sys.stdout.buffer.write(pickle.dumps(found))\n"
)


def _in_a_fresh_interpreter(refs: dict[str, TorchRef], methods: dict, root: Path):
    """torch_facts, from a fresh interpreter (isolated: no project folder, no PYTHON* variable on its path); here
    if none can be started (a process limit)."""
    if not refs and not methods:
        return {}, None, {}, None
    import pickle
    import subprocess

    parent = str(Path(__file__).resolve().parent.parent.parent)
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-c", _FRESH, parent], input=pickle.dumps((refs, methods, root)),
            capture_output=True, check=False,
        )  # fmt: skip
        return pickle.loads(done.stdout)
    except Exception:  # noqa: BLE001 - no process to spare, or it failed: looked up here, as before
        return torch_facts(refs, methods, root)


def _check(ref: TorchRef, role: str, what: str, fact: dict) -> None:
    kind, description = ROLE_NEEDS[role]
    if kind is not None and kind not in fact["kinds"]:
        actual = next((words for k, words in KIND_WORDS if k in fact["kinds"]), "not callable")
        raise TorchKindError(f"{what} must be {description}, not {spelling(ref)} ({actual})", ref.location)
    public = fact["public"]
    if role == "pattern" and public is not None and public != ref.path:
        raise SpecFieldError(
            f"{ref.path} is the same object as {public}; write it that way so that "
            "duplicate patterns are recognised",
            ref.location,
        )


def spelling(ref: TorchRef) -> str:
    """A torch name as the spec writes it (`F.relu`), for messages."""
    try:
        return ref_source(ref)
    except TemplateRenderError:
        return ref.path


def _uses(modules):
    """(reference, role, field) for every torch name the spec uses.

    A dtype config object shared by many patterns (the usual case) is gone
    through once: its names, checked again, would pass or fail again alike.
    """
    seen: set[int] = set()  # ids of the dtype configs gone through; the modules keep them alive
    for module in modules:
        for backend in module.backends:
            if backend.reference:
                where = backend.reference_location or backend.location
                yield TorchRef(backend.reference, where), "callable", "reference"
            for config in backend.configs:
                yield from _config_uses(config, seen)
            for removal in backend.removals:
                yield from ((ref, "pattern", "a removed pattern element") for ref in _refs(removal.pattern))
        for dtype_config in module.extra_dtype_configs:
            yield from _dtype_config_uses(dtype_config, "dtype")


_PATTERN_FIELDS = (("pattern", "a pattern element"), ("pattern_complex_format", "a pattern_complex_format element"))
_MODULE_FIELDS = ("root_module", "qat_module", "reference_quantized_module", "fused_module")
_CALLABLE_FIELDS = ("fuser_method", "root_node_getter", "extra_inputs_getter")


def _config_uses(config: PatternConfig, seen: set[int]) -> list:
    # A list built in place: thousands of configs, most of their fields None.
    uses: list = []
    for field, what in _PATTERN_FIELDS:
        _collect(getattr(config, field), "pattern", what, uses)
    for dtype_config in config.dtype_configs:
        if id(dtype_config) not in seen:
            seen.add(id(dtype_config))
            uses.extend(_dtype_config_uses(dtype_config, "dtype"))
    for field in _MODULE_FIELDS:
        _collect(getattr(config, field), "module", field, uses)
    for field in _CALLABLE_FIELDS:
        value = getattr(config, field)
        if isinstance(value, FunctionDef):
            uses.extend((ref, "any", value.name) for _, param in value.params for ref in _refs(param))
        elif isinstance(value, Call):
            uses.extend(_call_uses(value, field))
        else:
            _collect(value, "callable", field, uses)
    return uses


def _collect(value, role: str, what: str, uses: list) -> None:
    """Append (reference, role, what) for each torch name in `value` (a name or a nested tuple of them)."""
    if isinstance(value, TorchRef):
        uses.append((value, role, what))
    elif isinstance(value, tuple):
        for item in value:
            _collect(item, role, what, uses)


def _call_uses(call: Call, field: str):
    yield call.function, "factory", f"the factory of {field}"
    for argument in (*call.args, *(value for _, value in call.keywords)):
        yield from _argument_uses(argument, field)


def _argument_uses(argument, field: str):
    if isinstance(argument, Call):
        yield from _call_uses(argument, field)
    elif isinstance(argument, tuple):
        for item in argument:
            yield from _argument_uses(item, field)
    elif isinstance(argument, TorchRef):
        yield argument, "any", f"an argument of {field}"


def _dtype_config_uses(dtype_config, what: str):
    if isinstance(dtype_config, FixedQParams):
        yield from _dtype_config_uses(dtype_config.base, what)
        yield from _dtype_config_uses(dtype_config.constraints, what)
    elif isinstance(dtype_config, DTypeWithConstraints):
        yield from ((ref, "dtype", "dtype") for ref in _refs(dtype_config.dtype))
    elif isinstance(dtype_config, DTypeConfig):
        for field in ("input_dtype", "output_dtype", "weight_dtype", "bias_dtype"):
            dtype = getattr(dtype_config, field)
            if isinstance(dtype, DTypeWithConstraints):
                yield from _dtype_config_uses(dtype, field)
            else:
                yield from ((ref, "dtype", field) for ref in _refs(dtype))


def _refs(value):
    if isinstance(value, TorchRef):
        yield value
    elif isinstance(value, tuple):
        for item in value:
            yield from _refs(item)


def _torch_version() -> str:
    try:
        return digests.installed_version("torch")  # from the dist-info folder's name: no metadata scan
    except ModuleNotFoundError:  # importlib.metadata.PackageNotFoundError is one
        raise UnknownTorchNameError("torch is not installed; install the project first") from None


def _keeps(path: str) -> bool:
    """Whether the fact about a name depends on torch and Python alone (the cache's key), so may be kept: a name
    of torch's or the standard library's, or a Tensor method's (method_names.fact_key)."""
    top = path.partition(".")[0]
    return top == "torch" or top in sys.stdlib_module_names or path.startswith(method_names.fact_key(""))


def _read_cache(kept: bytes | None) -> dict:
    try:
        cached = json.loads(kept) if kept is not None else {}
    except ValueError:  # not UTF-8, not JSON: rebuilt
        return {}
    if not isinstance(cached, dict):
        return {}
    return {path: fact for path, fact in cached.items() if _is_fact(fact) and _keeps(path)}


def _is_fact(fact) -> bool:
    """A cache entry as _facts_from_torch writes it; anything else is looked up again."""
    if not isinstance(fact, dict) or not isinstance(fact.get("kinds"), list):
        return False
    return isinstance(fact.get("public", 0), (str, type(None)))


def _facts_from_torch(refs: dict[str, TorchRef]) -> dict[str, dict]:
    import warnings

    with warnings.catch_warnings():
        # torch warns on import when NumPy is absent; the generator does not need it.
        warnings.simplefilter("ignore")
        import torch

    from generator.building import torch_names

    facts = {}
    for path, ref in refs.items():  # in the spec's order: a missing name is reported at its first use
        obj = _lookup(path, ref)
        kinds = []
        if isinstance(obj, torch.dtype):
            kinds.append("dtype")
        if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
            kinds.append("module")
        if isinstance(obj, type):
            kinds.append("class")
        elif callable(obj):
            kinds.append("function")
        if callable(obj):
            kinds.append("callable")
        facts[path] = {"kinds": kinds, "public": torch_names.public_path(obj) if callable(obj) else None}
    return facts


@contextlib.contextmanager
def project_on_path(root: Path):
    """The project root on sys.path, as for `python -m` run there but after the standard library
    (user_code.path_with_project), while names are imported."""
    saved = list(sys.path)
    sys.path[:] = user_code.path_with_project(root, saved)
    try:
        yield
    finally:
        sys.path[:] = saved


def load_object(ref: TorchRef):
    """The object a dotted name stands for, imported as needed; a missing one is a one-line error."""
    return _lookup(ref.path, ref)


def _lookup(path: str, ref: TorchRef):
    parts = path.split(".")
    obj = _import(parts[0], path, ref)
    for index, part in enumerate(parts[1:], start=1):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            obj = _import_submodule(".".join(parts[: index + 1]), path, part, obj, ref)
    return obj


def _import(module: str, path: str, ref: TorchRef):
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name != module:
            raise _import_failure(module, path, error, ref) from None
        import difflib

        close = difflib.get_close_matches(module, sorted({m.name for m in pkgutil.iter_modules()}), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise UnknownTorchNameError(f"unknown name {path}: no module {module}{hint}", ref.location) from None
    except Exception as error:  # e.g. a user's reference builder module that fails to import
        raise _import_failure(module, path, error, ref) from None


def _import_failure(module: str, path: str, error: Exception, ref: TorchRef) -> UnknownTorchNameError:
    return UnknownTorchNameError(f"cannot import {module} for {path}: {type(error).__name__}: {error}", ref.location)


def _import_submodule(module: str, path: str, part: str, parent, ref: TorchRef):
    if not inspect.ismodule(parent):  # a class or function has attributes, never submodules
        raise _unknown(path, module, part, parent, ref)
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name != module:  # the module exists but fails to import something else
            raise _import_failure(module, path, error, ref) from None
        raise _unknown(path, module, part, parent, ref) from None
    except Exception as error:
        raise _import_failure(module, path, error, ref) from None


def _unknown(path: str, module: str, part: str, parent, ref: TorchRef) -> UnknownTorchNameError:
    """`unknown torch name` for torch's names, `unknown name` for others (a user's `importable()`)."""
    import difflib

    close = difflib.get_close_matches(part, sorted(_members(parent)), n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    owner = module.rsplit(".", 1)[0]
    what = "unknown torch name" if path.split(".")[0] == "torch" else "unknown name"
    return UnknownTorchNameError(f"{what} {path}: {owner} has no {part!r}{hint}", ref.location)


def _members(parent) -> set[str]:
    """A module's or object's attribute names, and a package's submodules not imported yet."""
    names = {n for n in dir(parent) if not n.startswith("__")}
    if inspect.ismodule(parent) and hasattr(parent, "__path__"):
        names |= {info.name for info in pkgutil.iter_modules(parent.__path__)}
    return names
