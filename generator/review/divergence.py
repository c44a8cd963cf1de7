"""A generated builder against its reference: the declared differences apart from the rest.

A spec may declare that a backend adds, removes or changes a pattern relative to
its reference builder (`added`, `removed`, `changed` in generator/dsl.py), or
changes a dtype config (`changed` around a DTypeConfig or DTypeWithConstraints).
The generated builder must then equal the reference plus exactly those changes:
- every difference outside the declared patterns is undeclared drift;
- a declaration that does not happen (the pattern is not added, not removed, or
  not changed after all) is stale, so that it cannot linger after a torch upgrade.
Imports torch: the comparison runs on built BackendConfigs.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

from torch.ao.quantization.backend_config import BackendConfig, BackendPatternConfig, DTypeConfig

from generator import user_code
from generator.building import resolution
from generator.building.expansion import Declaration
from generator.errors import ReferenceBuilderError
from generator.model import Pattern, TorchRef
from generator.review import equality
from generator.review.identity import dtype_config_key, pattern_key


@dataclass(frozen=True)
class Split:
    """What differs between a generated builder and its reference, sorted by whether the spec says so."""

    declared: tuple[Declaration, ...]  # declarations that happen
    stale: tuple[str, ...]  # declarations that do not happen, one line each
    undeclared: tuple[equality.Difference, ...]  # every other difference
    # The reference with our dtype configs where a declared change of a dtype config stands,
    # and, per such declaration that happens, the (reference's, ours) dtype configs it replaced.
    reference: BackendConfig | None = None
    replaced: dict[Declaration, tuple[tuple[DTypeConfig, DTypeConfig], ...]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.stale and not self.undeclared


def split_differences(
    label: str, ours: BackendConfig, theirs: BackendConfig, declarations: tuple[Declaration, ...]
) -> Split:
    """Compare `ours` with `theirs` outside the declared patterns, and check each declaration happens."""
    keys = {d: torch_key(d.key) for d in declarations if not d.of_dtype_config}
    ours_by_key = {pattern_key(c): c for c in ours.configs}
    theirs_by_key = {pattern_key(c): c for c in theirs.configs}
    happened, stale = [], []
    for declaration, key in keys.items():
        problem = _stale_reason(declaration.kind, ours_by_key.get(key), theirs_by_key.get(key), label)
        if problem:
            where = f"declared {declaration.kind} at {declaration.location}"
            stale.append(f"{label}: {declaration.pattern}: {where}, but {problem}")
        else:
            happened.append(declaration)
    reference, replaced = with_declared_dtype_configs(ours, theirs, declarations)
    for declaration in (d for d in declarations if d.of_dtype_config):
        pairs = replaced.get(declaration, ())
        if any(dtype_config_key(mine) != dtype_config_key(its) for its, mine in pairs):
            happened.append(declaration)
            continue
        problem = "it equals the reference's, field by field" if pairs else "the reference has none in its place"
        stale.append(f"{label}: {declaration.pattern}: declared changed at {declaration.location}, but {problem}")
    declared_keys = set(keys.values())
    undeclared = equality.compare_backend_configs(
        label, without(ours, declared_keys), without(reference, declared_keys)
    )
    return Split(tuple(happened), tuple(stale), tuple(undeclared), reference, replaced)


def with_declared_dtype_configs(ours: BackendConfig, theirs: BackendConfig, declarations: tuple[Declaration, ...]):
    """The reference with our dtype config wherever a declared change of a dtype config stands.

    The declaration lists where the backend uses the dtype config (pattern, position);
    where the reference registers that pattern with as many dtype configs, its dtype
    config in that position is the one ours stands for. The comparison outside the
    declarations then sees ours there, so only undeclared differences remain.
    Returns (that reference, {declaration: ((reference's, ours), ...)}).
    """
    ours_by_key = {pattern_key(c): c for c in ours.configs}
    theirs_by_key = {pattern_key(c): c for c in theirs.configs}
    lists: dict[object, list] = {}
    replaced: dict[Declaration, list] = {}
    for declaration in (d for d in declarations if d.of_dtype_config):
        for key, index in declaration.uses:
            key = torch_key(key)
            mine, its = ours_by_key.get(key), theirs_by_key.get(key)
            if mine is None or its is None or len(mine.dtype_configs) != len(its.dtype_configs):
                continue
            new_list = lists.setdefault(key, list(its.dtype_configs))
            replaced.setdefault(declaration, []).append((its.dtype_configs[index], mine.dtype_configs[index]))
            new_list[index] = mine.dtype_configs[index]
    if not lists:
        return theirs, {}
    configs = []
    for config in theirs.configs:
        key = pattern_key(config)
        if key in lists:
            config = copy.copy(config)  # the reference's own config stays as built
            config.dtype_configs = lists[key]
        configs.append(config)
    reference = BackendConfig(theirs.name).set_backend_pattern_configs(configs)
    return reference, {d: tuple(pairs) for d, pairs in replaced.items()}


def _stale_reason(kind: str, ours: BackendPatternConfig | None, theirs: BackendPatternConfig | None, label: str):
    """Why a declaration does not happen, or None when it does."""
    if kind == "added":
        if theirs is not None:
            return "the reference registers it too"
        return None if ours is not None else f"{label} does not register it"
    if kind == "removed":
        if theirs is None:
            return "the reference does not register it"
        return None if ours is None else f"{label} still registers it"
    if ours is None or theirs is None:
        return f"{'the reference' if theirs is None else label} does not register it"
    if not equality.compare_pattern_configs(label, ours, theirs):
        return "it equals the reference's, field by field"
    return None


def without(config: BackendConfig, keys: set) -> BackendConfig:
    """A BackendConfig of the same name with the patterns of `keys` left out (the configs are shared)."""
    kept = [c for c in config.configs if pattern_key(c) not in keys]
    return BackendConfig(config.name).set_backend_pattern_configs(kept)


def only(config: BackendConfig, keys: set) -> BackendConfig:
    """A BackendConfig of the same name with only the patterns of `keys`."""
    kept = [c for c in config.configs if pattern_key(c) in keys]
    return BackendConfig(config.name).set_backend_pattern_configs(kept)


def torch_key(key: Pattern):
    """A model pattern key with its torch names imported: torch's own key for the pattern."""
    if isinstance(key, TorchRef):
        return resolution.load_object(key)
    if isinstance(key, tuple):
        return tuple(torch_key(item) for item in key)
    return key


def reference_builder(path: str, root: Path, location=None):
    """The reference builder function (any importable one, the user's own included)."""
    with resolution.project_on_path(root):
        builder = resolution.load_object(TorchRef(path, location))
    if not callable(builder):
        raise ReferenceBuilderError(f"reference builder {path} is not callable", location)
    return builder


def build_reference(path: str, root: Path, location=None) -> BackendConfig:
    """Call the reference builder; what it raises or returns wrongly is a one-line error."""
    with user_code.running(ReferenceBuilderError, f"reference builder {path}", root, location):
        builder = reference_builder(path, root, location)
        try:
            built = builder()
        except Exception as error:
            raise ReferenceBuilderError(
                f"reference builder {path} raised {type(error).__name__}: {error}", location
            ) from None
    if not isinstance(built, BackendConfig):
        raise ReferenceBuilderError(
            f"reference builder {path} returned {type(built).__name__}, not a BackendConfig", location
        )
    return built
