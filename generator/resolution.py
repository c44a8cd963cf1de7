"""Validation: every torch name in the spec exists and is of the kind its field needs.

This is the one stage that needs torch, and importing torch takes seconds. What
it learns about each name (does it exist, is it a dtype / an nn.Module class /
callable, what is its public spelling) depends only on the torch release, so it
is cached per torch version in .cache/generator/. Only a spec that introduces a
name not seen before pays for the import.

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
from importlib import metadata
from pathlib import Path

from generator import method_names, user_code, writing
from generator.errors import SpecFieldError, TemplateRenderError, TorchKindError, UnknownTorchNameError, WriteError
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
from generator.source_spelling import ref_source

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
    uses = list(_uses(modules))
    cache_file = root / ".cache" / "generator" / f"torch-names-{_torch_version()}-v{FACTS_VERSION}.json"
    facts = _read_cache(cache_file)
    unknown = {ref.path: ref for ref, _, _ in uses if ref.path not in facts}
    if unknown:
        # A reference builder or an importable() name may be the user's own module, run on import.
        with project_on_path(root), user_code.running(UnknownTorchNameError, "importing the spec's names", root):
            facts.update(_facts_from_torch(unknown))
    for ref, role, what in uses:
        _check(ref, role, what, facts[ref.path])
    methods = method_names.uses(modules)
    unknown_methods = {name: where for name, where in methods.items() if method_names.fact_key(name) not in facts}
    if unknown_methods:
        facts.update(method_names.facts_from_torch(unknown_methods, root))
    if unknown or unknown_methods:
        try:
            writing.write_if_changed(cache_file, json.dumps(facts, indent=0, sort_keys=True))
        except WriteError:
            pass  # a read-only checkout only loses the speed-up


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
    """(reference, role, field) for every torch name the spec uses."""
    for module in modules:
        for backend in module.backends:
            if backend.reference:
                where = backend.reference_location or backend.location
                yield TorchRef(backend.reference, where), "callable", "reference"
            for config in backend.configs:
                yield from _config_uses(config)
            for removal in backend.removals:
                yield from ((ref, "pattern", "a removed pattern element") for ref in _refs(removal.pattern))
        for dtype_config in module.extra_dtype_configs:
            yield from _dtype_config_uses(dtype_config, "dtype")


def _config_uses(config: PatternConfig):
    for field in ("pattern", "pattern_complex_format"):
        yield from ((ref, "pattern", f"a {field} element") for ref in _refs(getattr(config, field)))
    for dtype_config in config.dtype_configs:
        yield from _dtype_config_uses(dtype_config, "dtype")
    for field in ("root_module", "qat_module", "reference_quantized_module", "fused_module"):
        yield from ((ref, "module", field) for ref in _refs(getattr(config, field)))
    for field in ("fuser_method", "root_node_getter", "extra_inputs_getter"):
        value = getattr(config, field)
        if isinstance(value, FunctionDef):
            yield from ((ref, "any", value.name) for _, param in value.params for ref in _refs(param))
        elif isinstance(value, Call):
            yield from _call_uses(value, field)
        else:
            yield from ((ref, "callable", field) for ref in _refs(value))


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
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        raise UnknownTorchNameError("torch is not installed; install the project first") from None


def _read_cache(cache_file: Path) -> dict:
    try:
        cached = json.loads(cache_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing, or corrupt (not UTF-8, not JSON): rebuilt
        return {}
    if not isinstance(cached, dict):
        return {}
    return {path: fact for path, fact in cached.items() if _is_fact(fact)}


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

    from generator import torch_names

    facts = {}
    for path, ref in sorted(refs.items()):
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
    """The project root first on sys.path, as for `python -m` run there, while names are imported."""
    saved = list(sys.path)
    sys.path.insert(0, str(root))
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
