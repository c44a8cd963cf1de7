"""Semantic diffs for reviewers: generated modules against torch, or between two versions of generated/.

Both sides are built by running the builders (`generator.review.sides` builds
each side), then compared pattern by pattern (`generator.review.changes.backend_diff`),
so the output speaks of patterns, fields and dtype configs
(`fbgemm: (nn.Conv2d, nn.ReLU): dtype_configs: + ...`), not of lines.
Each comparison is a function that yields one `BackendDiff` per backend;
`generator.review.formats` prints them as text, Markdown or JSON.

Against torch (any reference builder), the differences a spec declares are
reported apart from undeclared drift (`generator.review.divergence`), and
backends without a reference builder are named but not compared. Between two
revisions, a backend that exists on one side only is listed with all its
patterns, and a module whose source both sides share is the same unbuilt.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import types
from collections.abc import Iterator
from pathlib import Path

from generator import digests, process, project, user_code
from generator.building.expansion import Declaration
from generator.errors import GeneratedModuleError, ReferenceBuilderError
from generator.model import Backend
from generator.review.references import BuilderRef, choose
from generator.review.results import BackendDiff, DeclaredChange
from generator.review.sides import (
    Side,
    dtype_names,
    import_generated,
    locations_of,
    side_backends,
    spec_locations,
)
from generator.review.spellings import Spellings

# ---------------------------------------------------------------------------
# Against a reference builder
# ---------------------------------------------------------------------------


def against_torch(root: Path, refs: list[BuilderRef], locations: dict | None = None) -> Iterator[BackendDiff]:
    """One BackendDiff per builder that has a reference: the reference (old) against the generated one (new).

    Declared patterns are left out of the drift and reported apart, each with its
    reason; a declaration that does not happen counts as drift. `locations` are the
    spec's lines when the caller has them (`load_builders`): the spec is not run again.
    """
    if all(ref.reference is None for ref in refs):
        return  # nothing to compare: no torch to import
    if locations is None:
        locations = spec_locations(root, reuse=True)
    from generator.review import divergence  # noqa: F401 - torch, imported here once: each comparison's process has it

    def lost(ref: BuilderRef) -> ReferenceBuilderError:
        return ReferenceBuilderError(
            f"comparing {ref.label}: its process ended without a result (a reference builder, a generated "
            "module or a fuser must not end its process: raise an Exception instead)",
            ref.location,
        )

    # The generated modules and the reference builders are user code: a child process of their own.
    compared = [ref for ref in refs if ref.reference is not None]
    yield from process.isolated_each(functools.partial(_against_torch_one, root, locations=locations), compared, lost)


def _against_torch_one(root: Path, ref: BuilderRef, locations: dict) -> BackendDiff:
    from generator.review import divergence  # imported (torch with it) by against_torch already

    output = project.config(root).output(ref.module)
    with user_code.running(GeneratedModuleError, output, root):
        module = import_generated(root, ref.module)
        ours = build_generated(module, ref, output)
    theirs = divergence.build_reference(ref.reference, root, ref.location)
    # Comparing callables calls the user's own (fuser methods): an exit there must not end the run.
    with user_code.running(ReferenceBuilderError, f"comparing {ref.label}", root, ref.location, exceptions=False):
        return against_reference(ref, module, ours, theirs, locations)


def against_reference(ref: BuilderRef, module, ours, theirs, locations) -> BackendDiff:
    from generator.review import divergence
    from generator.review.changes import backend_diff

    names, where = dtype_names(module), ({}, locations.get(ref.label, {}))
    split = divergence.split_differences(ref.label, ours, theirs, ref.declarations)
    compared = split.reference  # the reference with ours where a declared dtype config change stands
    names = {**names, **_paired_names(compared, ours, names)}
    keys = {divergence.torch_key(d.key) for d in ref.declarations if not d.of_dtype_config}
    spelt = (Spellings(), _spelt(digests.lenient_text(Path(module.__file__))) if module.__file__ else Spellings())
    drift = backend_diff(
        ref.label, divergence.without(compared, keys), divergence.without(ours, keys), names, where, spelt
    )
    # The reviewer's diff names every field the comparator checks; this is a safety net, not a format.
    shown = drift.patterns or drift.name or drift.dtype_configs
    stale = tuple(line.removeprefix(f"{ref.label}: ") for line in split.stale)  # lines() adds the label
    unexplained = stale + (() if shown else tuple(map(str, split.undeclared)))
    declared = tuple(
        _declared_dtype_config(d, split.replaced[d], names, spelt) if d.of_dtype_config
        else _declared(d, theirs, ours, names, where, ref.label)
        for d in split.declared
    )  # fmt: skip
    status = "changed" if unexplained else drift.status
    return dataclasses.replace(drift, status=status, unexplained=unexplained, declared=declared)


def _paired_names(theirs, ours, names: dict[int, str]) -> dict[int, str]:
    """Our names for the reference's dtype configs: the one ours stands in for, where that is unambiguous.

    The reference's dtype configs have no names the diff knows, so one whose
    content differs from ours would show as removed and re-added in every
    pattern that uses it. Paired by position within each pattern both register
    (lists of equal length), a reference dtype config that always meets the same
    named one of ours, and only it, gets that name: a content change is then
    reported once, by field. One that meets several (a pattern whose dtype configs
    the spec changes on purpose) gets the one whose content it has, if just one has it.
    """
    from generator.review.identity import configs_by_key, dtype_config_key

    ours_by_key = configs_by_key(ours.configs)
    met: dict[int, tuple[object, dict[str, object]]] = {}
    for key, (_, config) in configs_by_key(theirs.configs).items():
        mine = ours_by_key.get(key, (None, None))[1]
        if mine is None or len(mine.dtype_configs) != len(config.dtype_configs):
            continue
        for their, our in zip(config.dtype_configs, mine.dtype_configs):
            if id(our) in names:
                met.setdefault(id(their), (their, {}))[1][names[id(our)]] = our
    unique = {}
    for their_id, (their, found) in met.items():
        if len(found) > 1:
            found = {name: our for name, our in found.items() if dtype_config_key(our) == dtype_config_key(their)}
        if len(found) == 1:
            unique[their_id] = next(iter(found))
    claimed: dict[str, int] = {}
    for name in unique.values():
        claimed[name] = claimed.get(name, 0) + 1
    # A name two reference objects claim stays ours alone: neither is known to be it.
    return {their: name for their, name in unique.items() if claimed[name] == 1}


def _declared(declaration: Declaration, theirs, ours, names, where, label: str):
    """A declared difference with its reason and, for a changed pattern, the fields that change."""
    from generator.review import divergence
    from generator.review.changes import backend_diff

    key = {divergence.torch_key(declaration.key)}
    changes = backend_diff(label, divergence.only(theirs, key), divergence.only(ours, key), names, where)
    fields = tuple(f for change in changes.patterns for f in change.fields)
    location = str(declaration.location) if declaration.location else None
    return DeclaredChange(declaration.kind, str(declaration.pattern), declaration.reason, location, fields)


def _declared_dtype_config(declaration: Declaration, replaced, names: dict[int, str], spelt):
    """A declared change of a dtype config, with the fields in which ours differ from the reference's
    (ours as our module spells them)."""
    from generator.review.changes import dtype_config_fields

    fields = {}
    for its, mine in replaced:
        for change in dtype_config_fields(its, mine, ("", names.get(id(mine), "")), spelt):
            fields.setdefault(str(change), change)
    location = str(declaration.location) if declaration.location else None
    return DeclaredChange(declaration.kind, declaration.pattern, declaration.reason, location, tuple(fields.values()))


def build_generated(module: types.ModuleType, ref: BuilderRef, output: str):
    builder = getattr(module, ref.function, None)
    if builder is None:
        fix = "run python -m generator regenerate"
        raise GeneratedModuleError(f"{output} has no {ref.function}; {fix}")
    return builder()


# ---------------------------------------------------------------------------
# Two versions of generated/
# ---------------------------------------------------------------------------


def against_revision(old: Side, new: Side, wanted: list[str], sources: tuple | None = None) -> Iterator:
    """One BackendDiff per backend found on either side, in label order.

    A generated module whose source is the same on both sides builds the same
    backends, so they are the same without being built: a diff of an unchanged
    tree imports no torch. Where something must be built, each side's spec lines
    are found in a child process (generator.process: running a side's spec takes
    as long as importing torch) while this one imports torch and builds both sides.
    """
    sources = sources or (old.sources(), new.sources())  # each side's generated modules' sources, by module
    unchanged = _unchanged_backends(*sources)
    skipped = {module for _, module in unchanged.values()}
    differing = set(sources[0]) | set(sources[1]) != skipped
    with locations_of(old, differing) as finding_old, locations_of(new, differing) as finding_new:
        try:
            before, after = side_backends(old, sources[0], skipped), side_backends(new, sources[1], skipped)
            if unchanged.keys() & (before.keys() | after.keys()):  # a label built elsewhere too: build everything
                unchanged, skipped = {}, set()
                before, after = side_backends(old, sources[0], skipped), side_backends(new, sources[1], skipped)
        except Exception:  # the spec lines' errors come first, as when they were found first
            finding_old.result(), finding_new.result()
            raise
        (old_locations, old_declared), (new_locations, new_declared) = finding_old.result(), finding_new.result()
    known = [(b.label, {b.label, b.name, b.module}) for b in [*before.values(), *after.values()]]
    known += [(label, {label, name, module}) for label, (name, module) in unchanged.items()]
    chosen = choose(wanted, known)
    for label in sorted(chosen):
        if label in unchanged:
            yield BackendDiff(label, "same")
            continue
        from generator.review.changes import backend_diff

        a, b = before.get(label), after.get(label)
        names = {**(a.names if a else {}), **(b.names if b else {})}
        where = (old_locations.get(label, {}), new_locations.get(label, {}))
        spelt = (_spellings(sources[0], a), _spellings(sources[1], b))
        found = backend_diff(label, a.config if a else None, b.config if b else None, names, where, spelt)
        declared = _declared_between(found, old_declared.get(label, ()), new_declared.get(label, ()))
        yield dataclasses.replace(found, declared=declared) if declared else found


def _declared_between(found: BackendDiff, old: tuple[Declaration, ...], new: tuple[Declaration, ...]):
    """The differences the newer side declares that the older one does not in the same words, and those
    declared of a pattern or dtype config the diff lists: each with its reason (the older side's, for a
    backend the newer one removes)."""
    if found.status == "removed":
        new, old = old, ()
    before = {(d.kind, d.pattern, d.reason) for d in old}
    listed = {p.pattern: p.fields for p in found.patterns} | {d.name: d.fields for d in found.dtype_configs}
    return tuple(
        DeclaredChange(d.kind, d.pattern, d.reason, str(d.location) if d.location else None, listed.get(d.pattern, ()))
        for d in new
        if (d.kind, d.pattern, d.reason) not in before or d.pattern in listed
    )


@functools.cache
def _spelt(source: str) -> Spellings:
    return Spellings.of(source)


def _spellings(sources: dict[str, str], backend) -> Spellings:
    """How the side's module of the backend spells its dtype configs (once per module text)."""
    return _spelt(sources[backend.module]) if backend is not None and backend.module in sources else Spellings()


def _unchanged_backends(old: dict[str, str], new: dict[str, str]) -> dict[str, tuple[str, str]]:
    """{label: (BackendConfig name, module)} of the backends of modules whose source both sides share."""
    found = {}
    for module in sorted(old.keys() & new.keys()):
        builders = _declared_builders(old[module]) if old[module] == new[module] else None
        for function, name, label in builders or ():
            found[label or Backend(name, function, "", ()).label] = (name, module)
    return found


def _declared_builders(source: str) -> list[tuple[str, str, str | None]] | None:
    """(function, BackendConfig name, label the module records or None) of each builder a generated module
    exports, read from its source; None unless every one has the shape the templates give:
    `return BackendConfig("name")...`, and the labels a `__backend_labels__ = {...}` of strings."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    exported = functions = None
    labels: dict = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"]:
            exported = ast.literal_eval(node.value) if isinstance(node.value, ast.List) else None
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__backend_labels__"]:
            try:
                labels = ast.literal_eval(node.value)
            except ValueError:
                labels = None
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        return None
    if not isinstance(exported, list):
        return None
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    builders = []
    for function in exported:
        if isinstance(function, str) and function.startswith("get_") and function.endswith("_backend_config"):
            name = _built_name(functions.get(function))
            if name is None:
                return None
            builders.append((function, name, labels.get(function)))
    return builders


def _built_name(function: ast.FunctionDef | None) -> str | None:
    """The name in `return BackendConfig("name")[.method(...)...]`, the last statement of `function`."""
    returned = function.body[-1] if function is not None and function.body else None
    node = returned.value if isinstance(returned, ast.Return) else None
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node = node.func.value
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "BackendConfig"):
        return None
    if not node.args and not node.keywords:
        return ""  # BackendConfig(): torch's default name
    if len(node.args) != 1 or node.keywords or not isinstance(node.args[0], ast.Constant):
        return None
    return node.args[0].value if isinstance(node.args[0].value, str) else None
