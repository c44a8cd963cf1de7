"""Import: object paths, the dotted names by which a spec reaches the objects a builder returns.

An object a BackendConfig holds (a module class, a fuser, a dtype, a callable instance)
is named in the spec by a path a generated module can import: its public torch name
(`build.torch_names.public_path`), else the module and qualified name it is defined
under, else (an object that has no qualified name, or a lambda: `_fuse = lambda ...`) the
module-level global it is bound to. A bound method (a classmethod, a method of a module-level instance) is named by its
owner's path and its name: that path gives an equal bound method, not the same object.
`__main__` and torch's own builder modules are never such a module. What has no path is
refused with the pattern and field it was found in.
"""

from __future__ import annotations

import functools
import os
import sys
import types

from generator import model
from generator.errors import UnnamedCallableError

# torch's builder modules: a generated module must not import from them.
TORCH_BUILDERS_PACKAGE = "torch.ao.quantization.backend_config"


def path_ref(value, label: str, field: str) -> model.TorchRef:
    """`value` as a spec names it, by its dotted path; refused if it has none (`label` and `field` say where)."""
    path = object_path(value)
    if path is None:
        raise UnnamedCallableError(f"pattern {label}: {field} {readable_name(value)} has no import path")
    refuse_unimportable(path, label, field)
    return model.TorchRef(path)


def refuse_unimportable(path: str, label: str, field: str) -> None:
    """One line for a path with a part that is no identifier (`projects.nas-mqbench.models.X`, a module loaded
    with importlib.import_module): no import statement of a generated module can name it."""
    reason = unimportable_reason(path)
    if reason is not None:
        raise UnnamedCallableError(f"pattern {label}: cannot name {field} {path}: {reason}")


def unimportable_reason(path: str) -> str | None:
    """Why a generated module cannot import `path`, with the fix; None if it can."""
    bad = [part for part in path.split(".") if not part.isidentifier()]
    if not bad:
        return None
    module = path.rpartition(".")[0]
    return (
        f"its module {module} is imported by a path that is not made of identifiers ({', '.join(map(repr, bad))}: "
        "importlib.import_module loads it, an import statement cannot), and a generated module imports what it "
        "uses with import statements; rename the folder to an identifier and import the module by that name, or "
        "bind the module to a name at module level of the builder's module"
    )


def object_path(value) -> str | None:
    """The dotted path a spec can name `value` by: its public torch name, else where it is defined."""
    from generator.building.torch_names import public_path

    path = public_path(value)
    if path is not None:
        return path
    if isinstance(value, types.MethodType):
        return _method_path(value)
    module_name, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if not isinstance(qualname, str) and not isinstance(value, type | types.FunctionType | types.BuiltinFunctionType):
        return _global_path(value)  # an object (a callable instance): by the global it is bound to
    if isinstance(value, types.FunctionType) and qualname == "<lambda>" and isinstance(module_name, str):
        return _bound_in(value, module_name)  # a module-level lambda: by the global it is bound to
    if not isinstance(module_name, str) or not isinstance(qualname, str) or "<" in qualname:
        return None
    if not _importable_module(module_name):
        return None
    target = sys.modules.get(module_name)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    if target is not value:
        return None
    if not all(part.isidentifier() for part in module_name.split(".")):
        return _through_a_global(module_name, qualname) or f"{module_name}.{qualname}"
    return f"{module_name}.{qualname}"


def _through_a_global(module_name: str, qualname: str) -> str | None:
    """`package.module.alias.Name` for an object of a module loaded by a path that is no identifier
    (`importlib.import_module("projects.nas-mqbench.models")`, as OpenMMLab projects load theirs), through a
    module-level name another module, importable by identifiers, binds that module to (`alias = ...`)."""
    module = sys.modules.get(module_name)
    found = []
    for name, other in list(sys.modules.items()):
        if other is None or not all(part.isidentifier() for part in name.split(".")) or not _importable_module(name):
            continue
        try:
            bound = [n for n, v in vars(other).items() if v is module and n.isidentifier()]
        except TypeError:  # a module object without a __dict__
            continue
        found += [(n.startswith("_"), name.count("."), f"{name}.{n}.{qualname}") for n in bound]
    return min(found)[2] if found else None


def _method_path(method: types.MethodType) -> str | None:
    """`path.of.owner.name` for a bound method: a classmethod of an importable class, a method of a
    module-level instance. That path gives a new bound method each time it is read, equal to this
    one (`==`: the same function bound to the same object), never the same object (`is`)."""
    owner, name = method.__self__, getattr(method.__func__, "__name__", None)
    if not isinstance(name, str) or not name.isidentifier() or isinstance(owner, types.ModuleType):
        return None
    owner_path = object_path(owner)
    if owner_path is None:
        return None
    try:
        same = getattr(owner, name) == method
    except Exception:  # a user's __getattr__ or __eq__ may raise: then there is no such path
        return None
    return f"{owner_path}.{name}" if same is True else None


def _importable_module(module_name: str) -> bool:
    # __main__ is not importable by a generated module; torch's builder modules must not be imported.
    return module_name != "__main__" and not module_name.startswith(TORCH_BUILDERS_PACKAGE + ".")


def _global_path(value) -> str | None:
    """`module.NAME` for an object bound to a module-level name of its class's module, public names first."""
    module_name = getattr(type(value), "__module__", None)
    return _bound_in(value, module_name) if isinstance(module_name, str) else None


def _bound_in(value, module_name: str) -> str | None:
    """`module.NAME` for `value` bound to a module-level name of that module, public names first."""
    module = sys.modules.get(module_name)
    if module is None or not _importable_module(module_name):
        return None
    names = sorted((name for name, bound in vars(module).items() if bound is value), key=lambda n: (n[0] == "_", n))
    return f"{module_name}.{names[0]}" if names else None


def readable_name(value) -> str:
    """`module.qualname` of `value` for a message, else its repr."""
    module_name, qualname = getattr(value, "__module__", "?"), getattr(value, "__qualname__", None)
    return f"{module_name}.{qualname}" if qualname else repr(value)


def home_of(value) -> str:
    """Where a callable's code lives, for "define it at module level of ...": its file (relative to the
    current folder when inside it), else its module, else "an importable module"."""
    while isinstance(value, functools.partial):
        value = value.func
    code = getattr(getattr(value, "__func__", value), "__code__", None)
    filename = getattr(code, "co_filename", None)
    module = getattr(value, "__module__", None)
    if isinstance(filename, str) and os.path.isabs(filename):
        relative = os.path.relpath(filename)
        if not relative.startswith(".."):
            return relative
    if isinstance(module, str) and module != "__main__":
        return module
    return filename if isinstance(filename, str) else "an importable module"
