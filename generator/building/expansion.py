"""Stage 2: expand the loaded model into exactly what torch builds. Pure functions.

Expansion reproduces two behaviours of torch's builders that nobody can see
without running them:
- fixed-qparams ops get deep copies of their dtype configs with pinned activation
  constraints; here those become named dtype configs (`<base>_<suffix>`);
- a pattern registered twice keeps its first position but takes the later
  config's content (BackendConfig stores configs in a dict keyed by pattern).
It also collects the named constants and functions a generated module defines,
and the differences from its reference builder that a backend declares
(`added`, `removed`, `changed` in the spec).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, replace
from pathlib import Path

from generator.building import dtype_roles
from generator.errors import (
    DeclarationWithoutReferenceError,
    EmptyBackendError,
    NameClashError,
    SpecFieldError,
)
from generator.loading.locations import at_argument
from generator.model import (
    Backend,
    DTypeConfig,
    DTypeWithConstraints,
    FixedQParams,
    FunctionDef,
    ModuleSpec,
    Pattern,
    PatternConfig,
    SourceLocation,
    TorchRef,
)
from generator.spelling import python_source


@dataclass(frozen=True)
class Override:
    """A pattern registered again within one backend: the later config wins in place."""

    backend: str
    first: PatternConfig
    later: PatternConfig

    @property
    def same_content(self) -> bool:
        return replace(self.first, section="") == replace(self.later, section="")


@dataclass(frozen=True)
class Declaration:
    """A declared difference from the reference builder: what, which pattern, why, and where."""

    backend: str  # the backend's label
    kind: str  # "added", "removed" or "changed"
    key: Pattern  # the pattern in torch's reversed nested tuple format
    pattern: str  # the pattern as the spec writes it
    reason: str
    location: SourceLocation | None
    # A declared change of a dtype config (key None): where the backend uses it, as
    # (pattern key, index in that pattern's dtype configs), its copies for fixed-qparams ops included.
    uses: tuple[tuple[Pattern, int], ...] = ()

    @property
    def of_dtype_config(self) -> bool:
        return self.key is None

    def __str__(self) -> str:
        sign = {"added": "+", "removed": "-", "changed": "~"}[self.kind]
        return f"{self.backend}: {sign} {self.kind} {self.pattern}: {self.reason} (declared at {self.location})"


@dataclass(frozen=True)
class ExpandedBackend:
    backend: Backend
    overridden: frozenset[int]
    overrides: tuple[Override, ...]

    @property
    def declarations(self) -> tuple[Declaration, ...]:
        """Declared differences, in pattern order then removals; none without a reference builder."""
        if self.backend.reference is None:
            return ()
        declared = [(c, c.divergence) for c in self.backend.configs if c.divergence is not None]
        declared += [(r, r.divergence) for r in self.backend.removals]
        found = {}
        for item, divergence in declared:
            shown = python_source(item.pattern if item.pattern is not None else item.key)
            declaration = Declaration(
                self.backend.label, divergence.kind, item.key, shown, divergence.reason, divergence.location
            )
            found.setdefault((declaration.kind, declaration.key), declaration)
        return tuple(found.values()) + self._dtype_config_declarations()

    def _dtype_config_declarations(self) -> tuple[Declaration, ...]:
        """One per `changed()` dtype config or constraint that this backend's patterns use."""
        uses: dict[SourceLocation | None, list] = {}
        subjects: dict[SourceLocation | None, tuple] = {}
        for config in self.backend.configs:
            if config.divergence is not None:  # a declared pattern is compared as a whole
                continue
            for index, dtype_config in enumerate(config.dtype_configs):
                divergence = dtype_config.declared_change
                if divergence is not None:
                    uses.setdefault(divergence.location, []).append((config.key, index))
                    subjects.setdefault(divergence.location, (divergence, set()))[1].add(_subject(dtype_config))
        return tuple(
            Declaration(self.backend.label, "changed", None, min(names), divergence.reason, divergence.location,
                        tuple(uses[location]))
            for location, (divergence, names) in subjects.items()
        )  # fmt: skip


def _subject(dtype_config: DTypeConfig) -> str:
    """What a dtype-config declaration is called: the declared constraint, else the dtype config
    (its fixed-qparams copies, `<name>_<suffix>`, sort after it and are not named)."""
    if dtype_config.divergence is None:
        sides = (dtype_config.input_dtype, dtype_config.output_dtype, dtype_config.weight_dtype)
        held = next(s for s in sides if isinstance(s, DTypeWithConstraints) and s.divergence is not None)
        return f"DTypeWithConstraints {held.name}"
    return f"dtype config {dtype_config.name}"


@dataclass(frozen=True)
class ExpandedModule:
    spec: ModuleSpec
    backends: tuple[ExpandedBackend, ...]
    constraints: tuple[DTypeWithConstraints, ...]
    dtype_configs: tuple[DTypeConfig, ...]
    functions: tuple[FunctionDef, ...]


def expand_module(module: ModuleSpec, root: Path | None = None) -> ExpandedModule:
    """The module expanded; `root` (the project's) lets an error point at the argument that is wrong."""
    backends = tuple(expand_backend(backend) for backend in module.backends)
    configs = [c for b in backends for c in b.backend.configs]
    dtype_configs = _named_dtype_configs(configs, module.extra_dtype_configs)
    expanded = ExpandedModule(
        spec=module,
        backends=backends,
        constraints=_named_constraints(dtype_configs),
        dtype_configs=dtype_configs,
        functions=_functions(configs),
    )
    for config in configs:
        dtype_roles.check_pattern_config(config, root)
    _check_builder_names(expanded, root)
    return expanded


def check_dtype_config_declarations(modules: list[ExpandedModule]) -> None:
    """A changed() dtype config or constraint needs a backend with a reference builder that uses it.

    Like a pattern's declaration, it would otherwise be silently ignored.
    """
    reached: dict[SourceLocation | None, list] = {}
    for module in modules:
        for dtype_config in module.dtype_configs:
            if dtype_config.declared_change is not None:
                reached.setdefault(dtype_config.declared_change.location, [])
        for expanded in module.backends:
            for dtype_config in (dc for c in expanded.backend.configs for dc in c.dtype_configs):
                if dtype_config.declared_change is not None:
                    reached[dtype_config.declared_change.location].append(expanded.backend)
    for location, backends in reached.items():
        if not any(backend.reference is not None for backend in backends):
            names = list(dict.fromkeys(repr(b.label) for b in backends))
            whose = (
                "no backend uses it" if not names
                else f"backend {names[0]} has none" if len(names) == 1
                else f"none of the backends that use it ({', '.join(names)}) has one"
            )  # fmt: skip
            raise DeclarationWithoutReferenceError(
                f"changed() declares a difference from a reference builder, but {whose} "
                "(give the Backend reference=..., or write the dtype config without the declaration)",
                location,
            )


def _check_builder_names(module: ExpandedModule, root: Path | None) -> None:
    """A builder that shares a name with another spec definition silently replaces it in the module.

    Names the rendered module imports or the templates define are checked on the
    rendered text itself (generator/building/naming.py), so no list here can drift from them.
    """
    defined: dict[str, object] = {}
    for kind, values in (("dtype config", module.dtype_configs), ("DTypeWithConstraints", module.constraints),
                         ("function", module.functions)):  # fmt: skip
        defined.update({v.name: f"the {kind} {v.name} (at {v.location})" for v in values})
    for expanded in module.backends:
        backend = expanded.backend
        for argument, name in (("builder", backend.builder), ("dict_builder", backend.dict_builder)):
            if not name:
                continue
            if name in defined:
                earlier = defined[name]
                if not isinstance(earlier, str):
                    earlier = f"the builder of the backend at {_where(*earlier, root)}"
                where = _where(backend.location, argument, root)
                raise NameClashError(f"builder name {name!r} is already used by {earlier}", where)
            defined[name] = (backend.location, argument)


def _where(location, argument: str, root: Path | None):
    """The line that writes `argument=` of the call at `location` (a parse of the spec file: only for an error)."""
    return at_argument(location, argument, root) or location


def expand_backend(backend: Backend) -> ExpandedBackend:
    if not backend.configs and not backend.reference:
        # An empty backend is a forgotten configs list, unless it mirrors a builder that
        # returns no patterns (an imported empty BackendConfig): the equality proof covers that.
        raise EmptyBackendError(f"backend {backend.name!r} has no patterns", backend.location)
    configs = [_derive_dtype_configs(c) for c in backend.configs]
    unique, overridden, overrides = deduplicate(backend.name, configs)
    _check_removals(backend, unique)
    return ExpandedBackend(replace(backend, configs=unique), overridden, overrides)


def _check_removals(backend: Backend, configs: tuple[PatternConfig, ...]) -> None:
    """A pattern declared removed must not be registered by the same backend."""
    registered = {c.key: c for c in configs}
    for removal in backend.removals:
        kept = registered.get(removal.key)
        if kept is not None:
            raise SpecFieldError(
                f"pattern {python_source(removal.pattern)} is declared removed, but backend "
                f"{backend.label!r} still registers it (at {kept.location})",
                removal.location,
            )


def deduplicate(backend: str, configs: list[PatternConfig]):
    """torch's BackendConfig semantics: first position, last content."""
    position: dict[object, int] = {}
    unique: list[PatternConfig] = []
    overrides: list[Override] = []
    for config in configs:
        index = position.setdefault(config.key, len(unique))
        if index == len(unique):
            unique.append(config)
        else:
            overrides.append(Override(backend, unique[index], config))
            unique[index] = config
    overridden = frozenset(position[o.later.key] for o in overrides)
    return tuple(unique), overridden, tuple(overrides)


def _derive_dtype_configs(config: PatternConfig) -> PatternConfig:
    if not any(isinstance(dc, FixedQParams) for dc in config.dtype_configs):
        return config
    derived = tuple(
        derive_fixed_qparams(dc) if isinstance(dc, FixedQParams) else dc for dc in config.dtype_configs
    )
    return replace(config, dtype_configs=derived)


def derive_fixed_qparams(fixed: FixedQParams) -> DTypeConfig:
    """torch's `_add_fixed_qparams_to_dtype_configs` for one dtype config."""
    base, constraints = fixed.base, fixed.constraints
    if constraints.scale_min_lower_bound is not None or constraints.scale_max_upper_bound is not None:
        raise SpecFieldError("fixed-qparams constraints cannot bound the scale", constraints.location)
    pinned_input = _pin(base, base.input_dtype, constraints)
    pinned_output = _pin(base, base.output_dtype, constraints)
    if pinned_input is base.input_dtype and pinned_output is base.output_dtype:
        return base
    return replace(
        base, name=f"{base.name}_{fixed.suffix}", input_dtype=pinned_input, output_dtype=pinned_output
    )


def _pin(base: DTypeConfig, dtype, constraints: DTypeWithConstraints):
    """An activation dtype of `constraints.dtype` takes the fixed qparams; others stay."""
    actual = dtype.dtype if isinstance(dtype, DTypeWithConstraints) else dtype
    if actual != constraints.dtype:
        return dtype
    if isinstance(dtype, DTypeWithConstraints) and (
        dtype.scale_min_lower_bound is not None or dtype.scale_max_upper_bound is not None
    ):
        raise SpecFieldError(
            f"{base.name}: scale bounds are invalid for fixed qparams ops", base.location
        )
    return constraints


def _named_dtype_configs(configs, extra) -> tuple[DTypeConfig, ...]:
    found: dict[str, DTypeConfig] = {}
    for dtype_config in [dc for c in configs for dc in c.dtype_configs] + list(extra):
        _add_unique(found, dtype_config.name, dtype_config, "dtype config")
    # Definition order, with derived configs right after their base: stable
    # under changes to which patterns use which config.
    return tuple(sorted(found.values(), key=_definition_order))


def _definition_order(item):
    location = item.location
    return (location.file, location.line, item.name) if location else ("", 0, item.name)


def _named_constraints(dtype_configs) -> tuple[DTypeWithConstraints, ...]:
    found: dict[str, DTypeWithConstraints] = {}
    for dtype_config in dtype_configs:
        for dtype in (dtype_config.input_dtype, dtype_config.output_dtype, dtype_config.weight_dtype):
            if isinstance(dtype, DTypeWithConstraints):
                _add_unique(found, dtype.name, dtype, "DTypeWithConstraints")
    return tuple(sorted(found.values(), key=_definition_order))


def _functions(configs) -> tuple[FunctionDef, ...]:
    found: dict[str, FunctionDef] = {}
    for config in configs:
        for function in (config.fuser_method, config.root_node_getter, config.extra_inputs_getter):
            if isinstance(function, FunctionDef):
                _add_unique(found, function.name, function, "function")
    return tuple(found.values())


def _add_unique(found: dict, name: str, value, kind: str) -> None:
    existing = found.setdefault(name, value)
    if existing != value:
        raise SpecFieldError(
            f"two different {kind}s are named {name!r} (the other one is at {existing.location})",
            value.location,
        )


def torch_refs(value) -> list[TorchRef]:
    """Every TorchRef inside a model value, depth first, in field order; a shared value is walked once.

    A spec shares its values (one dtype config list reaches hundreds of patterns,
    and a module holds its spec's backends and their expansion), so walking every
    occurrence would visit the same objects again and again; a value already
    walked holds only refs already found, so each distinct ref's first use is
    the same either way.
    """
    found: list[TorchRef] = []
    walked: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind in _LEAVES or id(item) in walked:
            continue
        if isinstance(item, TorchRef):
            found.append(item)
            continue
        fields = _walked_fields.get(kind)
        if fields is None:
            fields = _walked_fields[kind] = _fields_to_walk(kind)
        walked.add(id(item))
        if fields is _ITEMS:
            stack.extend(reversed(item))
        else:
            stack.extend(fields(item))
    return found


_LEAVES = frozenset({str, int, float, bool, type(None), bytes})
_ITEMS = object()  # walk the items (a tuple or list), not fields
_walked_fields: dict[type, object] = {}


def _fields_to_walk(kind: type):
    """What torch_refs walks in a value of this type: _ITEMS, or a function giving the values of its
    fields, last first (the stack reverses them); attrgetter is the fastest way to read several."""
    if issubclass(kind, (tuple, list)):
        return _ITEMS
    fields = getattr(kind, "__dataclass_fields__", None)
    names = tuple(reversed([n for n in fields if n != "location"])) if fields else ()
    if len(names) == 1:
        return lambda item, name=names[0]: (getattr(item, name),)
    return operator.attrgetter(*names) if names else lambda item: ()
