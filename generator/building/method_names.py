"""Method-name pattern elements (`"view"`, `"contiguous"`) are checked against `torch.Tensor`.

torch matches a string pattern element against `call_method` nodes, so a misspelt
one (`"veiw"`) is a pattern that can never match. Like every other name, a method
name must exist, here as an attribute of `torch.Tensor`; what is known is cached with
the other torch facts (`generator.building.resolution`), per torch version.

torch 2.13's own builders register three method names that no Tensor method has
("hardsigmoid", "hardsigmoid_", "leaky_relu"); a spec that reproduces them must be
able to, so the names torch's builders register are accepted too.

Strings carry no spec location, so a wrong one is blamed at the line of its string
literal in the spec, found by reading the spec's source.
"""

from __future__ import annotations

import ast
import difflib
import functools
from pathlib import Path

from generator import project
from generator.errors import UnknownTorchNameError
from generator.model import ModuleSpec, SourceLocation, TorchRef

_GETATTR = ("getattr", "builtins.getattr")


def fact_key(name: str) -> str:
    """The cache key of a method name's fact, beside the torch names' facts (never a dotted path,
    so that it cannot collide with the fact about a name such as `torch.Tensor.view`)."""
    return f"Tensor method {name}"


def uses(modules: list[ModuleSpec]) -> dict[str, SourceLocation | None]:
    """Every method name the patterns use, with the location of the first config that uses it."""
    found: dict[str, SourceLocation | None] = {}
    for module in modules:
        for backend in module.backends:
            for config in backend.configs:
                for name in _names(config.pattern):
                    found.setdefault(name, config.location)
                for name in _names(config.pattern_complex_format):
                    found.setdefault(name, config.location)
            for removal in backend.removals:
                for name in _names(removal.pattern):
                    found.setdefault(name, removal.location)
    return found


def _names(pattern):
    """The method names of a pattern; a getattr pattern's argument is an attribute name, not a method."""
    if isinstance(pattern, str):
        yield pattern
    elif isinstance(pattern, tuple) and pattern:
        head = pattern[0]
        yield from _names(head)
        if not (head is getattr or (isinstance(head, TorchRef) and head.path in _GETATTR)):
            for item in pattern[1:]:
                yield from _names(item)


def facts_from_torch(names: dict[str, SourceLocation | None], root: Path) -> dict[str, dict]:
    """The facts of existing method names; a missing one is a one-line error at its string literal."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns on import when NumPy is absent
        import torch

    facts = {}
    for name, where in names.items():  # in the spec's order: a missing name is reported at its first use
        if not hasattr(torch.Tensor, name) and name not in _registered_by_torch():
            members = [m for m in dir(torch.Tensor) if not m.startswith("_")]
            close = difflib.get_close_matches(name, members, n=1)
            hint = f' (did you mean "{close[0]}"?)' if close else ""
            message = f'unknown method name "{name}": torch.Tensor has no {name!r}, so the pattern never matches{hint}'

            raise UnknownTorchNameError(message, literal_location(name, root, where))
        facts[fact_key(name)] = {"kinds": ["method"], "public": None}
    return facts


def literal_location(text: str, root: Path, fallback: SourceLocation | None) -> SourceLocation | None:
    """The line of the string literal `text` in the spec: in the fallback's file first, then in spec/."""
    files = sorted(project.spec_folder(root).glob("*.py"))
    if fallback is not None:
        files.sort(key=lambda f: f.relative_to(root).as_posix() != fallback.file)
    for file in files:
        try:
            tree = ast.parse(file.read_bytes(), str(file))
        except (OSError, SyntaxError, ValueError):
            continue
        lines = sorted(
            node.lineno for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value == text
        )
        if lines:
            return SourceLocation(file.relative_to(root).as_posix(), lines[0])
    return fallback


@functools.cache
def _registered_by_torch() -> frozenset[str]:
    """The method names torch's own backend_config builders register (some are no Tensor method)."""
    import importlib
    import pkgutil

    import torch.ao.quantization.backend_config as package
    import torch.ao.quantization.backend_config.utils  # noqa: F401  (torch's builders need it first)

    found: set[str] = set()
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for name, builder in sorted(vars(module).items()):
            if name.startswith("get_") and name.endswith("_backend_config") and callable(builder):
                for config in builder().configs:
                    found.update(_names(config.pattern))
                    found.update(_names(config._pattern_complex_format))
    return frozenset(found)
