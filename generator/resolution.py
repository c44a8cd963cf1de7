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
import json
import sys
from importlib import metadata
from pathlib import Path

from generator import writing
from generator.errors import SpecFieldError, TorchKindError, UnknownTorchNameError
from generator.model import (
    DTypeConfig,
    DTypeWithConstraints,
    FixedQParams,
    FunctionDef,
    ModuleSpec,
    PatternConfig,
    TorchRef,
)

ROLE_NEEDS = {
    "pattern": ("callable", "a pattern element (module class, function or op)"),
    "dtype": ("dtype", "a torch.dtype"),
    "module": ("module", "an nn.Module class"),
    "callable": ("callable", "a callable"),
    "any": (None, "an existing name"),
}


def validate(modules: list[ModuleSpec], root: Path) -> None:
    uses = list(_uses(modules))
    cache_file = root / ".cache" / "generator" / f"torch-names-{_torch_version()}.json"
    facts = _read_cache(cache_file)
    unknown = {ref.path: ref for ref, _ in uses if ref.path not in facts}
    if unknown:
        with project_on_path(root):  # a reference builder may be the user's own module
            facts.update(_facts_from_torch(unknown))
    for ref, role in uses:
        _check(ref, role, facts[ref.path])
    if unknown:
        writing.write_if_changed(cache_file, json.dumps(facts, indent=0, sort_keys=True))


def _check(ref: TorchRef, role: str, fact: dict) -> None:
    kind, description = ROLE_NEEDS[role]
    if kind is not None and kind not in fact["kinds"]:
        raise TorchKindError(f"{ref.path} is not {description}", ref.location)
    public = fact["public"]
    if role == "pattern" and public is not None and public != ref.path:
        raise SpecFieldError(
            f"{ref.path} is the same object as {public}; write it that way so that "
            "duplicate patterns are recognised",
            ref.location,
        )


def _uses(modules):
    """(reference, role) for every torch name the spec uses."""
    for module in modules:
        for backend in module.backends:
            if backend.reference:
                yield TorchRef(backend.reference, backend.location), "callable"
            for config in backend.configs:
                yield from _config_uses(config)
            for removal in backend.removals:
                yield from ((ref, "pattern") for ref in _refs(removal.pattern))
        for dtype_config in module.extra_dtype_configs:
            yield from _dtype_config_uses(dtype_config)


def _config_uses(config: PatternConfig):
    for pattern in (config.pattern, config.pattern_complex_format):
        yield from ((ref, "pattern") for ref in _refs(pattern))
    for dtype_config in config.dtype_configs:
        yield from _dtype_config_uses(dtype_config)
    for field in ("root_module", "qat_module", "reference_quantized_module", "fused_module"):
        yield from ((ref, "module") for ref in _refs(getattr(config, field)))
    for field in ("fuser_method", "root_node_getter", "extra_inputs_getter"):
        value = getattr(config, field)
        if isinstance(value, FunctionDef):
            yield from ((ref, "any") for _, param in value.params for ref in _refs(param))
        else:
            yield from ((ref, "callable") for ref in _refs(value))


def _dtype_config_uses(dtype_config):
    if isinstance(dtype_config, FixedQParams):
        yield from _dtype_config_uses(dtype_config.base)
        yield from _dtype_config_uses(dtype_config.constraints)
    elif isinstance(dtype_config, DTypeWithConstraints):
        yield from ((ref, "dtype") for ref in _refs(dtype_config.dtype))
    elif isinstance(dtype_config, DTypeConfig):
        for dtype in (dtype_config.input_dtype, dtype_config.output_dtype, dtype_config.weight_dtype):
            yield from _dtype_config_uses(dtype) if isinstance(dtype, DTypeWithConstraints) else (
                (ref, "dtype") for ref in _refs(dtype)
            )
        yield from ((ref, "dtype") for ref in _refs(dtype_config.bias_dtype))


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
        return json.loads(cache_file.read_text())
    except (OSError, ValueError):
        return {}


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
        raise UnknownTorchNameError(f"unknown name {path}: no module {module}", ref.location) from None
    except Exception as error:  # e.g. a user's reference builder module that fails to import
        raise _import_failure(module, path, error, ref) from None


def _import_failure(module: str, path: str, error: Exception, ref: TorchRef) -> UnknownTorchNameError:
    return UnknownTorchNameError(f"cannot import {module} for {path}: {type(error).__name__}: {error}", ref.location)


def _import_submodule(module: str, path: str, part: str, parent, ref: TorchRef):
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name != module:  # the module exists but fails to import something else
            raise _import_failure(module, path, error, ref) from None
        import difflib

        close = difflib.get_close_matches(part, [n for n in dir(parent) if not n.startswith("__")], n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        owner = module.rsplit(".", 1)[0]
        raise UnknownTorchNameError(f"unknown torch name {path}: {owner} has no {part!r}{hint}", ref.location) from None
    except Exception as error:
        raise _import_failure(module, path, error, ref) from None
