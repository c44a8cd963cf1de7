"""Semantic diffs for reviewers: generated modules against torch, or against a git revision.

Both sides are built by running the builders, then compared pattern by pattern
(`generator.compare.diff_backend_configs`), so the output speaks of patterns and
fields (`fbgemm: (nn.Conv2d, nn.ReLU): dtype_configs: + ...`), not of lines.
"""

from __future__ import annotations

import importlib
import subprocess
import types
from dataclasses import dataclass
from pathlib import Path

from generator.errors import GitError, SpecFieldError
from generator.model import ModuleSpec


@dataclass(frozen=True)
class BuilderRef:
    """One generated builder: its module, function name and torch's counterpart."""

    label: str
    module: str
    function: str
    torch_builder: str | None


def builders(modules: list[ModuleSpec], wanted: list[str]) -> list[BuilderRef]:
    """The builders of the given spec modules, filtered by backend or module name."""
    found = [
        BuilderRef(b.builder.removeprefix("get_").removesuffix("_backend_config"), m.name, b.builder, b.reference)
        for m in modules
        for b in m.backends
    ]
    unknown = set(wanted) - {f.label for f in found} - {f.module for f in found}
    if unknown:
        choices = ", ".join(sorted({f.label for f in found}))
        raise SpecFieldError(f"unknown backend(s) {', '.join(sorted(unknown))}; choose from {choices}")
    return [f for f in found if not wanted or f.label in wanted or f.module in wanted]


def against_torch(root: Path, refs: list[BuilderRef]) -> list[str]:
    from generator.compare import diff_backend_configs

    lines = []
    for ref in refs:
        module = _import_generated(root, ref.module)
        torch_module, _, function = ref.torch_builder.rpartition(".")
        theirs = getattr(importlib.import_module(torch_module), function)()
        lines += diff_backend_configs(ref.label, theirs, getattr(module, ref.function)(), _dtype_names(module))
    return lines


def against_revision(root: Path, revision: str, refs: list[BuilderRef]) -> list[str]:
    from generator.compare import diff_backend_configs

    lines = []
    for ref in refs:
        new_module = _import_generated(root, ref.module)
        old_module = _module_at_revision(root, revision, ref.module)
        new = getattr(new_module, ref.function)()
        if old_module is None or not hasattr(old_module, ref.function):
            lines.append(f"{ref.label}: + backend (not in {revision})")
            continue
        old = getattr(old_module, ref.function)()
        names = {**_dtype_names(old_module), **_dtype_names(new_module)}
        lines += diff_backend_configs(ref.label, old, new, names)
    return lines


def _import_generated(root: Path, name: str) -> types.ModuleType:
    path = root / "generated" / f"{name}.py"
    return _module_from_source(f"generated.{name}", path.read_text(), str(path))


def _module_at_revision(root: Path, revision: str, name: str) -> types.ModuleType | None:
    relative = f"generated/{name}.py"
    result = subprocess.run(
        ["git", "-C", str(root), "show", f"{revision}:{relative}"], capture_output=True, text=True
    )
    if result.returncode != 0:
        if "exists on disk, but not in" in result.stderr or "does not exist in" in result.stderr:
            return None
        raise GitError(f"git show {revision}:{relative} failed: {result.stderr.strip()}")
    return _module_from_source(f"generated_at_{name}", result.stdout, f"{revision}:{relative}")


def _module_from_source(name: str, source: str, filename: str) -> types.ModuleType:
    """Run a generated module's source as a fresh module (not cached in sys.modules)."""
    module = types.ModuleType(name)
    module.__file__ = filename
    exec(compile(source, filename, "exec"), vars(module))  # noqa: S102 - our own generated code
    return module


def _dtype_names(module: types.ModuleType) -> dict[int, str]:
    from torch.ao.quantization.backend_config import DTypeConfig

    return {id(value): name for name, value in vars(module).items() if isinstance(value, DTypeConfig)}
