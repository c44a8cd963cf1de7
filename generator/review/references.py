"""The generated builders a spec names and their reference builders: which backends a command chooses
(`choose`, `builders`), and both loaded for `verify` and `diff --against-torch` (`load_builders`).
"""

from __future__ import annotations

import difflib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from generator import process, project
from generator.building.expansion import Declaration, expand_backend
from generator.errors import GeneratorError, UnknownBackendError
from generator.model import Backend, ModuleSpec, SourceLocation
from generator.review.sides import Side, spec_locations, stale_files


@dataclass(frozen=True)
class BuilderRef:
    """One generated builder: its module, function name, reference builder and declared differences."""

    label: str
    module: str
    function: str
    reference: str | None  # the reference builder's dotted path
    declarations: tuple[Declaration, ...] = ()
    location: SourceLocation | None = None


def builders(modules: list[ModuleSpec], wanted: list[str]) -> list[BuilderRef]:
    """The builders of the given spec modules, filtered by label, BackendConfig name or module name."""
    found = [(_builder_ref(m, b), b.name) for m in modules for b in m.backends]
    chosen = choose(wanted, [(ref.label, {ref.label, name, ref.module}) for ref, name in found])
    return [ref for ref, _ in found if ref.label in chosen]


def choose(wanted: list[str], known: list[tuple[str, set[str]]]) -> set[str]:
    """The labels that the wanted names select (all when none is wanted); each name may be any of a backend's."""
    if not wanted:
        return {label for label, _ in known}
    every = {name for _, names in known for name in names}
    unknown = sorted(set(wanted) - every)
    if unknown:
        choices = ", ".join(sorted({label for label, _ in known}))
        close = [match for name in unknown for match in difflib.get_close_matches(name, sorted(every), n=1)]
        hint = f"did you mean {', '.join(dict.fromkeys(close))}? " if close else ""
        raise UnknownBackendError(f"unknown backend(s) {', '.join(unknown)}; {hint}choose from {choices}")
    labels = {label for label, _ in known}
    # A backend's label names it alone, though other backends' BackendConfigs may have that name too.
    chosen = set(wanted) & labels
    return chosen | {label for label, names in known if names & (set(wanted) - labels)}


def _builder_ref(module: ModuleSpec, backend: Backend) -> BuilderRef:
    declarations = expand_backend(backend).declarations
    location = backend.reference_location or backend.location  # where a failing reference is named
    return BuilderRef(backend.label, module.name, backend.builder, backend.reference, declarations, location)


def load_builders(root: Path, wanted: list[str]) -> tuple[list[BuilderRef], dict[str, dict[str, str]]]:
    """The spec's `builders` and `spec_locations`, for `against_torch`.

    The spec runs in a child process (generator.process) while this one imports
    torch, which comparing the builders needs: both take a while. Not when
    generated/ is stale, or in doubt: the diff then only says so, without torch;
    nor when torch is imported already: the spec then runs here.
    """
    with process.Forked(_builders_and_locations, root, wanted, fork="torch" not in sys.modules) as loading:
        try:
            fresh = not stale_files(Side(root, None))
        except GeneratorError:  # said in its turn, after the spec's own errors
            fresh = False
        if fresh and _may_name_a_reference(root, wanted):
            _import_torch()
        return loading.result()


def _may_name_a_reference(root: Path, wanted: list[str]) -> bool:
    """Whether a spec file could give a wanted backend a reference builder (`reference=`): only then is
    torch worth importing ahead. A guess from the text, only for speed: comparing imports what it needs."""
    try:
        files = sorted(project.spec_folder(root).rglob("*.py"))
        texts = [path.read_text(encoding="utf-8", errors="replace") for path in files]
    except OSError:
        return True
    naming = [text for text in texts if any(name in text for name in wanted)]
    return any(_REFERENCE.search(text) for text in (naming if wanted and naming else texts))


_REFERENCE = re.compile(r"\breference\s*=")


def _builders_and_locations(root: Path, wanted: list[str]):
    from generator.loading import loader

    modules = loader.load_modules(root, reuse=True)  # unchanged spec files' loads from the model cache
    return builders(modules, wanted), spec_locations(root, modules)


def _import_torch() -> None:
    try:
        import torch.ao.quantization.backend_config.utils  # noqa: F401
    except Exception:  # noqa: S110 - the builders' own import reports it, where it is handled
        pass


def reference_title(refs: list[BuilderRef]) -> str:
    """What the reference side is called: `torch` only when every reference is torch's builder.

    One reference of the user's own is named by its dotted path; several are `reference`.
    """
    references = sorted({ref.reference for ref in refs if ref.reference is not None})
    if all(path.startswith("torch.") for path in references):
        return "torch"
    return references[0] if len(references) == 1 else "reference"


def unreferenced(refs: list[BuilderRef]) -> list[str]:
    """Labels of the backends that have no reference builder to compare with."""
    return [ref.label for ref in refs if ref.reference is None]
