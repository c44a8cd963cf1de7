"""Readable, public names for the torch objects that appear in BackendConfigs.

Patterns and configs hold classes, functions, aten operator overloads, dtypes
and enum members.  Their reprs are unhelpful (``<built-in method cat of type
object at 0x...>``, ``boolean_dispatch.<locals>.fn``), so this module finds
the public import path of each object by searching the public attributes of a
preference-ordered list of namespaces.  ``public_path`` gives the full dotted
path; ``short_name`` gives the reviewer-friendly form with the usual aliases
(``nn.``, ``F.``, ``nni.`` ...).
"""

from __future__ import annotations

import enum
import functools
import importlib
import inspect
import re
import types
from typing import Any

import torch

# Building a config in a fresh interpreter fails unless backend_config.utils
# has been imported; importing it here keeps every user of this module safe.
import torch.ao.quantization.backend_config.utils

# Namespaces searched for a public name, most preferred first, with the alias
# short_name uses for them (None: keep the full path).  F comes before torch so
# that objects shared by both (F.avg_pool2d is torch._C._nn.avg_pool2d, and
# F.conv2d is torch.conv2d) get the functional name reviewers know.
NAMESPACES: tuple[tuple[str, str | None], ...] = (
    ("torch.nn.functional", "F"),
    ("torch.nn", "nn"),
    ("torch.ao.nn.intrinsic", "nni"),
    ("torch.ao.nn.intrinsic.qat", "nniqat"),
    ("torch.ao.nn.qat", "nnqat"),
    ("torch.ao.nn.quantized.reference", "nnqr"),
    ("torch.ao.nn.quantized", "nnq"),
    ("torch", "torch"),
    ("operator", "operator"),
    ("torch.ao.quantization.fuser_method_mappings", None),
    ("torch.ao.quantization.utils", None),
    ("torch.ao.quantization.backend_config", None),
    ("torch.ao.quantization", None),
)

# Names that read better without any namespace at all.
_BARE_NAMES = {
    "torch.ao.quantization.utils.MatchAllNode": "MatchAllNode",
    "torch.ao.quantization.backend_config.ObservationType": "ObservationType",
}

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def public_path(obj: Any) -> str | None:
    """Return the full dotted public import path of ``obj``, or None."""
    if isinstance(obj, torch.dtype):
        return _dtype_path(obj)
    if isinstance(obj, torch._ops.OpOverload):
        return _op_overload_path(obj)
    if isinstance(obj, torch._ops.OpOverloadPacket):
        return _op_packet_path(obj)
    if isinstance(obj, enum.Enum):
        owner = public_path(type(obj))
        return None if owner is None else f"{owner}.{obj.name}"
    entry = _public_index().get(id(obj))
    if entry is None or entry[0] is not obj:
        return None
    return f"{entry[1]}.{entry[2]}"


def short_name(obj: Any) -> str:
    """Return a deterministic, reviewer-friendly name for ``obj``."""
    if isinstance(obj, tuple):
        inner = ", ".join(short_name(item) for item in obj)
        return f"({inner},)" if len(obj) == 1 else f"({inner})"
    if isinstance(obj, list):
        return "[" + ", ".join(short_name(item) for item in obj) + "]"
    if isinstance(obj, dict):
        items = (f"{short_name(k)}: {short_name(v)}" for k, v in obj.items())
        return "{" + ", ".join(items) + "}"
    if obj is None or isinstance(obj, (str, int, float, bytes)):
        # Method-name strings such as 'contiguous' stay quoted so they are not
        # mistaken for functions.
        return repr(obj)
    if isinstance(obj, enum.Enum):
        return f"{type(obj).__name__}.{obj.name}"
    path = public_path(obj)
    if path is not None:
        return _alias(path)
    return _private_name(obj)


def describe_pattern(pattern: Any) -> str:
    """Render a (possibly nested tuple) pattern, e.g. ``(nn.Conv2d, nn.ReLU)``."""
    return short_name(pattern)


def _alias(path: str) -> str:
    if path in _BARE_NAMES:
        return _BARE_NAMES[path]
    entry = _public_index_by_path().get(path)
    if entry is not None and entry[1] is not None:
        return f"{entry[1]}.{entry[0]}"
    return path


def _private_name(obj: Any) -> str:
    """Name objects without a public path by where they are defined."""
    if isinstance(obj, types.FunctionType):
        return _function_name(obj, with_closure=True)
    qualname = getattr(obj, "__qualname__", None)
    module = getattr(obj, "__module__", None)
    if isinstance(qualname, str) and isinstance(module, str):
        return f"{module}.{qualname}"
    # Default reprs embed addresses; strip them to stay deterministic.
    return _ADDRESS.sub("", repr(obj))


def _function_name(func: types.FunctionType, with_closure: bool) -> str:
    name = f"{func.__module__}.{func.__qualname__}"
    if not with_closure or not func.__closure__:
        return name
    # Factories like _sequential_wrapper2 make many same-named closures; the
    # captured values are what tell them apart.
    captured = ", ".join(
        f"{var}={_cell_name(cell)}"
        for var, cell in zip(func.__code__.co_freevars, func.__closure__)
    )
    return f"{name}[{captured}]"


def _cell_name(cell: types.CellType) -> str:
    try:
        value = cell.cell_contents
    except ValueError:  # an empty cell: the variable was never assigned
        return "<empty>"
    if isinstance(value, types.FunctionType):
        # One level only: closures may refer to themselves.
        return _function_name(value, with_closure=False)
    return short_name(value)


def _dtype_path(dtype: torch.dtype) -> str | None:
    # str(dtype) is the canonical name, e.g. torch.float for torch.float32.
    text = str(dtype)
    module, _, name = text.rpartition(".")
    if module == "torch" and getattr(torch, name, None) is dtype:
        return text
    return None


def _op_overload_path(op: torch._ops.OpOverload) -> str | None:
    namespace, _, packet = op._schema.name.partition("::")
    path = f"torch.ops.{namespace}.{packet}.{op._overloadname}"
    return path if _resolve_ops_path(path) is op else None


def _op_packet_path(packet: torch._ops.OpOverloadPacket) -> str | None:
    namespace, _, name = packet._qualified_op_name.partition("::")
    path = f"torch.ops.{namespace}.{name}"
    return path if _resolve_ops_path(path) is packet else None


def _resolve_ops_path(path: str) -> Any:
    target: Any = torch.ops
    for part in path.split(".")[2:]:
        target = getattr(target, part, None)
    return target


@functools.cache
def _public_index() -> dict[int, tuple[Any, str, str | None]]:
    """Map id(obj) -> (obj, namespace, attribute name), first namespace wins.

    The object itself is kept in the entry so its id cannot be reused.
    """
    index: dict[int, tuple[Any, str, str | None]] = {}
    for namespace, _alias_name in NAMESPACES:
        module = importlib.import_module(namespace)
        for name, obj in sorted(vars(module).items()):
            if _is_public_member(namespace, name, obj):
                index.setdefault(id(obj), (obj, namespace, name))
    return index


@functools.cache
def _public_index_by_path() -> dict[str, tuple[str, str | None]]:
    aliases = dict(NAMESPACES)
    return {
        f"{namespace}.{name}": (name, aliases[namespace])
        for _obj, namespace, name in _public_index().values()
    }


def _is_public_member(namespace: str, name: str, obj: Any) -> bool:
    if name.startswith("_") or inspect.ismodule(obj) or not callable(obj):
        return False
    if isinstance(obj, (type, types.FunctionType)):
        # Python-level classes and functions are often re-exported by
        # unrelated modules (F.Tensor, fuser_method_mappings.get_combined_dict);
        # only accept them in the package that defines them.  Builtins carry no
        # reliable __module__, so they are accepted anywhere.
        module = getattr(obj, "__module__", None) or ""
        return module == namespace or module.startswith(namespace + ".")
    return True
