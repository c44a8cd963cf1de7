"""Import over an existing spec: keep it when it already builds exactly what the builder returns.

A BackendConfig carries less than a spec says: sections, how a dtype is spelt
(`torch.float` and `torch.float32` are one object), docstrings, declared differences
from a reference builder (`added`/`removed`/`changed`), loops and op groups are gone
from what a builder returns. So `import --force` of a builder over the spec file it
would replace first builds that spec as regenerate would (load, expand, render, run
the rendered module) and compares each of its backends with what the builder returned,
with the comparator the equality tests use. When one equals it, the spec file is
already a lossless description of the builder and is kept byte for byte; only a
builder that returns something else gets a freshly written spec.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from generator import model, project
from generator.errors import DuplicateBackendError, GeneratorError, ImportWouldDropError
from generator.model import ModuleSpec


def existing_spec(root: Path, path: Path) -> ModuleSpec | None:
    """Spec file `path` as regenerate loads it, or None if there is none or it does not load."""
    if not path.is_file():
        return None
    from generator.loading import loader

    try:
        modules = loader.load_modules(root, reuse=True)  # unchanged files' loads from the model cache
    except GeneratorError:
        return None  # a spec that does not load is replaced, as before
    return next((m for m in modules if (root / m.spec_file).resolve() == path.resolve()), None)


def spec_already_builds(root: Path, module: ModuleSpec | None, backend_config) -> bool:
    """Whether a backend of `module` builds exactly `backend_config` (by the comparator)."""
    if module is None:
        return False
    from generator.building.expansion import expand_module
    from generator.building.rendering import render_module

    try:
        text = render_module(expand_module(module, root), project.templates(root))
    except GeneratorError:
        return False
    return any(
        backend.name == backend_config.name and _builds(text, backend.builder, backend_config, module.spec_file)
        for backend in module.backends
    )


def _builds(text: str, builder: str, backend_config, spec_file: str) -> bool:
    from generator.review.equality import compare_backend_configs

    try:
        built = build_rendered(text, builder, spec_file)
    except Exception:  # the spec's own user code may fail; then it is not kept
        return False
    return compare_backend_configs(builder, built, backend_config) == []


def build_rendered(text: str, builder: str, spec_file: str):
    """What `builder` of rendered module `text` returns. The module runs in this process, so it
    imports the very objects the original builder used; what it or its builder raises propagates."""
    namespace: dict = {"__name__": "_import_round_trip"}
    exec(compile(text, f"<{spec_file} as regenerate renders it>", "exec"), namespace)
    return namespace[builder]()


# ---------------------------------------------------------------------------
# A builder that returns something else: what the replaced spec still tells
# ---------------------------------------------------------------------------


def refuse_to_drop_backends(module: ModuleSpec | None, backend_config) -> None:
    """`import` writes a spec of one backend: replacing a file that declares several would drop
    the others (replacing a file's one backend is what --force asks for)."""
    if module is not None and len(module.backends) > 1:
        replaced = _replaced(module, backend_config.name)
        others = [b for b in module.backends if b is not replaced]
        names = ", ".join(repr(b.label) for b in others)
        raise ImportWouldDropError(
            f"{module.spec_file} also declares {names}, which import (one backend per file) would drop; "
            f"move {'it' if len(others) == 1 else 'them'} to a spec file of {'its' if len(others) == 1 else 'their'} "
            f"own first, or edit {module.spec_file} by hand"
        )


def refuse_to_drop_declarations(module: ModuleSpec | None) -> None:
    """`import` writes what the builder returns, and no declared difference from a reference builder
    (`added`/`removed`/`changed`): replacing a spec that declares some would drop them silently."""
    if module is None:
        return
    from generator.building.expansion import expand_backend

    try:  # the whole file is replaced (one that declares other backends too is refused before)
        declared = [d for b in module.backends for d in expand_backend(b).declarations]
    except GeneratorError:
        return  # regenerate refuses the replaced spec already: nothing of it would build
    if declared:
        listed = ", ".join(f"{d.kind} {d.pattern} ({d.location})" for d in declared)
        raise ImportWouldDropError(
            f"{module.spec_file} declares differences from its reference builder that import does not write: "
            f"{listed}; import into a new file (--name {module.name}_imported) and carry them over by hand, "
            f"or delete them from {module.spec_file} first"
        )


def _replaced(module: ModuleSpec, name: str, builder: str | None = None) -> model.Backend | None:
    """The backend of `module` that an import of a BackendConfig named `name` replaces: the one of that
    name (and builder, where several have the name)."""
    named = [b for b in module.backends if b.name == name]
    return next((b for b in named if b.builder == builder), named[0] if named else None)


def with_a_free_label(spec, others: list[model.Backend]):
    """`spec` (a `reading.ImportedSpec`) with a label no backend of `others` (the other spec files') has:
    the one of the spec it replaces, else the name its builder returns when that is a plain name, else
    the spec file's name (`--name`, by default the builder's); one line when none is free."""
    taken = {b.label: b for b in others}
    backend = spec.backend
    own = backend.name if model.LABEL.fullmatch(backend.name) else None
    for label in (backend.given_label, own, spec.name):
        if label is not None and label not in taken:
            given = label if label != model.default_label(backend.name, backend.builder) else None
            return replace(spec, backend=replace(backend, given_label=given))
    other = taken[spec.name]
    owner = taken.get(own, other)
    if owner is other:
        used = f"backend name {spec.name!r} is already used by the backend at {other.location}"
    else:
        used = (
            f"backend names {own!r} (its builder's) and {spec.name!r} (--name) are already used by the "
            f"backends at {owner.location} and {other.location}"
        )
    owner_file = Path(owner.location.file).stem if owner.location else spec.name
    raise DuplicateBackendError(
        f"{used}; backend names must be unique across spec/, so import with another --name, or replace "
        f"that file (--name {owner_file} --force)"
    )


def recover(spec, module: ModuleSpec | None):
    """`spec` (a `reading.ImportedSpec`) with what the spec it replaces says and a
    BackendConfig does not: for the backend of the same name, its builder name and
    docstrings; the section of each pattern it also registers; and the name and spelling
    (`torch.float`) of each dtype config of equal content."""
    if module is None:
        return spec
    backend = _replaced(module, spec.backend.name, spec.backend.builder)
    if backend is None:
        return spec
    sections = {c.key: c.section for c in backend.configs if c.section}
    written = _written_dtype_configs(module)
    renamed = {}
    for dtype_config in spec.dtype_configs:
        same = written.get(_content_key(dtype_config))
        if same is not None and same.name not in {r.name for r in renamed.values()}:
            renamed[dtype_config] = same
    configs = tuple(
        replace(
            c,
            section=sections.get(c.key, c.section),
            dtype_configs=tuple(renamed.get(dc, dc) for dc in c.dtype_configs),
        )
        for c in spec.backend.configs
    )
    # Recovered ones where the replaced spec defines them (the generated module keeps the
    # spec's definition order), new ones after them in first-use order.
    order = {name: index for index, name in enumerate(_generated_order(module))}
    dtype_configs = tuple(
        sorted(
            (renamed.get(dc, dc) for dc in spec.dtype_configs),
            key=lambda dc: (dc.name not in order, order.get(dc.name, 0)),
        )
    )
    constraints = _constraints_of(dtype_configs)
    if not (_unique_names(dtype_configs) and _unique_names(constraints)):
        return spec  # a recovered name would clash with an imported one: keep the import's names
    from generator.importer.dtype_names import shared_lists

    recovered = replace(
        spec.backend, builder=backend.builder, doc=backend.doc, configs=configs, given_label=backend.given_label
    )
    return replace(
        spec,
        backend=recovered,
        module_doc=module.doc,
        dtype_configs=dtype_configs,
        constraints=constraints,
        shared_lists=shared_lists([tuple(dc.name for dc in c.dtype_configs) for c in configs], set()),
    )


def _generated_order(module: ModuleSpec) -> list[str]:
    """The dtype configs' names in the order the generated module defines them."""
    from generator.building.expansion import expand_module

    try:
        return [dc.name for dc in expand_module(module).dtype_configs]
    except GeneratorError:
        return []


def _unique_names(values) -> bool:
    return len({v.name for v in values}) == len(values)


def _written_dtype_configs(module: ModuleSpec) -> dict[tuple, model.DTypeConfig]:
    """The dtype configs the spec writes itself (not the fixed-qparams copies the expansion
    derives), by content with torch names resolved."""
    found: dict[tuple, model.DTypeConfig] = {}
    configs = [dc for b in module.backends for c in b.configs for dc in c.dtype_configs]
    for dtype_config in [*configs, *module.extra_dtype_configs]:
        if isinstance(dtype_config, model.DTypeConfig):
            found.setdefault(_content_key(dtype_config), dtype_config)
    return found


def _content_key(dtype_config: model.DTypeConfig) -> tuple:
    """What a dtype config builds: `torch.float` and `torch.float32` are one dtype."""
    sides = []
    for side in (*model.DTYPE_SIDES, "bias_dtype"):
        value = getattr(dtype_config, side)
        if isinstance(value, model.DTypeWithConstraints):
            sides.append((_resolved(value.dtype), tuple(value.bounds.items())))
        else:
            sides.append(_resolved(value))
    return (*sides, dtype_config.is_dynamic)


def _resolved(ref):
    if ref is None:
        return None
    from generator.building.resolution import load_object
    from generator.importer.object_paths import object_path

    try:
        return object_path(load_object(ref)) or ref.path
    except GeneratorError:
        return ref.path


def _constraints_of(dtype_configs) -> tuple:
    found = {}
    for dtype_config in dtype_configs:
        for side in model.DTYPE_SIDES:
            value = getattr(dtype_config, side)
            if isinstance(value, model.DTypeWithConstraints):
                found.setdefault(value, None)
    return tuple(found)
