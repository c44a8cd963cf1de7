"""Import: what the generated module still imports from the legacy code.

An author imports a builder to delete it afterwards. The generated module imports what the
spec names by path (`importable("acme_npu.backend.fuse_conv_bn")`, the function of a
`partial(...)` or a factory `call(...)`, a backend's own fused module): every module it
imports that is neither torch nor the standard library is legacy code that must stay, or
whose names must move, before it can be deleted. A private name (a leading `_`) is flagged:
the author should make it public or move it, not keep importing a module's internals.

The modules are found from the spec's model (every dotted path it holds), each path cut
where the module ends: the longest prefix that is a module Python has imported (the builder
was just imported, so its modules are), else the last dot, as the generated module's imports
cut it (`generator.spelling.split_ref`).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from generator import model
from generator.errors import BuilderRebindsError


@dataclasses.dataclass(frozen=True)
class Dependency:
    """A module outside torch and the standard library, and the names the generated module imports from it."""

    module: str
    names: tuple[str, ...]  # public names first, each group sorted

    @property
    def private(self) -> tuple[str, ...]:
        return tuple(name for name in self.names if name.startswith("_"))


def legacy_dependencies(backend: model.Backend) -> tuple[Dependency, ...]:
    """The modules outside torch and the standard library the backend's generated module imports, by module."""
    found: dict[str, set[str]] = {}
    for path in dict.fromkeys(_paths(backend.configs)):
        module, name = _module_and_name(path)
        if module is not None and not _torch_or_stdlib(module):
            found.setdefault(module, set()).add(name)
    return tuple(
        Dependency(module, tuple(sorted(names, key=lambda name: (name.startswith("_"), name))))
        for module, names in sorted(found.items())
    )


def report(backend: model.Backend) -> list[str]:
    """One line per legacy module the backend's generated module imports (none: nothing to say)."""
    return [describe(dependency) for dependency in legacy_dependencies(backend)]


def describe(dependency: Dependency) -> str:
    """`depends on acme_npu.backend: fuse_conv_bn, _make_relu6_fuser (private: make it public or move it
    before deleting acme_npu/backend.py)`."""
    line = f"depends on {dependency.module}: {', '.join(dependency.names)}"
    if dependency.private:
        them = "it" if len(dependency.private) == 1 else "them"
        line += f" (private: make {them} public or move {them} before deleting {module_file(dependency.module)})"
    return line


def module_file(module: str) -> str:
    """A module's file as the author sees it in their tree: `acme_npu/backend.py`, `acme_npu/__init__.py`."""
    parts = module.split(".")
    file = getattr(sys.modules.get(module), "__file__", None)
    if file and Path(file).name == "__init__.py":
        return "/".join([*parts, "__init__.py"])
    return "/".join(parts) + ".py"


def module_globals() -> dict[str, dict]:
    """Each imported module's globals as they are now, but torch's and the standard library's: what the
    generated module would import by path, to be compared after the builder ran (`refuse_rebound`)."""
    return {
        name: dict(vars(module))
        for name, module in list(sys.modules.items())
        if module is not None and not _torch_or_stdlib(name)
    }


def refuse_rebound(backend: model.Backend, before: dict[str, dict], target: str) -> None:
    """The generated module imports each legacy name afresh, getting what the name holds at import; a
    builder that rebinds such a name when it runs returned another object than the module will import."""
    for dependency in legacy_dependencies(backend):
        module = sys.modules.get(dependency.module)
        if dependency.module not in before or module is None:
            continue  # imported while the builder ran: its globals are what an import gives
        for name in dependency.names:
            missing = object()
            if before[dependency.module].get(name, missing) is not getattr(module, name, missing):
                raise BuilderRebindsError(
                    f"{target}() rebinds {dependency.module}.{name} when it runs, so the generated module would "
                    f"import the object it held before; bind it once at module level of "
                    f"{module_file(dependency.module)} (or make it in a function the builder calls)"
                )


def _paths(value):
    """Every dotted path a model value holds: patterns, modules, callables and their arguments."""
    if isinstance(value, model.TorchRef):
        yield value.path
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _paths(item)
    elif isinstance(value, model.PatternConfig):
        for field in ("pattern", "pattern_complex_format", "root_module", "qat_module", "reference_quantized_module",
                      "fused_module", "fuser_method", "root_node_getter", "extra_inputs_getter"):  # fmt: skip
            yield from _paths(getattr(value, field))
    elif isinstance(value, model.FunctionDef):
        yield from _paths(tuple(v for _, v in value.params))
    elif isinstance(value, model.Call):
        yield from _paths(value.function)
        yield from _paths(value.args)
        yield from _paths(tuple(v for _, v in value.keywords))


def _module_and_name(path: str) -> tuple[str | None, str]:
    """(module, the name imported from it) for a dotted path; (None, "") for a path of no module."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        if ".".join(parts[:cut]) in sys.modules:
            return ".".join(parts[:cut]), parts[cut]
    if len(parts) < 2:
        return None, ""
    return ".".join(parts[:-1]), parts[-1]


def _torch_or_stdlib(module: str) -> bool:
    top = module.split(".")[0]
    return top == "torch" or top in sys.stdlib_module_names
