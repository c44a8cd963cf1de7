"""Semantic diffs for reviewers: generated modules against torch, or against a git revision.

Both sides are built by running the builders, then compared pattern by pattern
(`generator.compare.diff_backend_configs`), so the output speaks of patterns and
fields (`fbgemm: (nn.Conv2d, nn.ReLU): dtype_configs: + ...`), not of lines.
Against torch (any reference builder), the differences a spec declares are
reported apart from undeclared drift, and backends without a reference builder
are named but not compared.
"""

from __future__ import annotations

import subprocess
import types
from dataclasses import dataclass
from pathlib import Path

from generator.errors import GeneratedModuleError, GitError, SpecFieldError
from generator.expansion import Declaration, expand_backend
from generator.model import ModuleSpec, SourceLocation


@dataclass(frozen=True)
class BuilderRef:
    """One generated builder: its module, function name, reference builder and declared differences."""

    label: str
    module: str
    function: str
    torch_builder: str | None  # the reference builder's dotted path
    declarations: tuple[Declaration, ...] = ()
    location: SourceLocation | None = None


@dataclass(frozen=True)
class TorchReview:
    """`diff --against-torch`: undeclared drift, declared differences, and backends not compared."""

    drift: list[str]  # undeclared differences and declarations that do not happen: exit 1
    declared: list[str]  # differences the spec declares, with their reasons
    unreferenced: list[str]  # labels of backends that have no reference builder


def builders(modules: list[ModuleSpec], wanted: list[str]) -> list[BuilderRef]:
    """The builders of the given spec modules, filtered by backend or module name."""
    found = [
        BuilderRef(b.label, m.name, b.builder, b.reference, expand_backend(b).declarations, b.location)
        for m in modules
        for b in m.backends
    ]
    unknown = set(wanted) - {f.label for f in found} - {f.module for f in found}
    if unknown:
        choices = ", ".join(sorted({f.label for f in found}))
        raise SpecFieldError(f"unknown backend(s) {', '.join(sorted(unknown))}; choose from {choices}")
    return [f for f in found if not wanted or f.label in wanted or f.module in wanted]


def against_torch(root: Path, refs: list[BuilderRef]) -> TorchReview:
    """Each builder that has a reference against it; the others are only named."""
    review = TorchReview([], [], [ref.label for ref in refs if ref.torch_builder is None])
    for ref in refs:
        if ref.torch_builder is not None:
            _review_one(root, ref, review)
    return review


def _review_one(root: Path, ref: BuilderRef, review: TorchReview) -> None:
    from generator import divergence
    from generator.compare import diff_backend_configs

    module = _import_generated(root, ref.module)
    ours = _build(module, ref)
    theirs = divergence.build_reference(ref.torch_builder, root, ref.location)
    names = _dtype_names(module)
    split = divergence.split_differences(ref.label, ours, theirs, ref.declarations)
    keys = {divergence.torch_key(d.key) for d in ref.declarations}
    drift = diff_backend_configs(ref.label, divergence.without(theirs, keys), divergence.without(ours, keys), names)
    review.drift.extend(drift or [str(d) for d in split.undeclared])
    review.drift.extend(split.stale)
    for declaration in split.declared:
        review.declared.append(str(declaration))
        if declaration.kind == "changed":
            key = {divergence.torch_key(declaration.key)}
            changes = diff_backend_configs(ref.label, divergence.only(theirs, key), divergence.only(ours, key), names)
            review.declared.extend(f"  {line}" for line in changes)


def _build(module: types.ModuleType, ref: BuilderRef):
    builder = getattr(module, ref.function, None)
    if builder is None:
        fix = "run python -m generator regenerate"
        raise GeneratedModuleError(f"generated/{ref.module}.py has no {ref.function}; {fix}")
    return builder()


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
    if not path.exists():
        raise GeneratedModuleError(f"generated/{name}.py is missing; run python -m generator regenerate")
    try:
        return _module_from_source(f"generated.{name}", path.read_text(), str(path))
    except Exception as error:
        raise GeneratedModuleError(f"generated/{name}.py fails to import: {type(error).__name__}: {error}") from None


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
