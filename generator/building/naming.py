"""Names a spec chooses that would break the generated module or the generated/ package.

Two checks, each raising one located error before anything is written:
- a module name must be what `check` reads without running the spec (a literal
  `Module(name=...)` or the file's name), must not be a dunder or a package file
  (`__init__`, `manifest`), and must not take over a Python file in generated/
  that the generator did not write;
- a name the spec gives a dtype config, a constraint, a function or a builder must
  not be bound a second time in the rendered module (an import, `__all__`, any
  other definition), nor be a dunder or hide a built-in. The names the module
  imports and defines are read from the rendered text itself, so the check follows
  the templates.
"""

from __future__ import annotations

import builtins
import contextlib
from pathlib import Path

from generator import digests
from generator.building.expansion import ExpandedModule
from generator.building.output_check import module_bindings
from generator.errors import NameClashError
from generator.freshness import manifest, planning
from generator.loading.locations import at_argument, set_project_root
from generator.model import SourceLocation

_BUILTINS = frozenset(dir(builtins))
# generated/ files that are the package's own, whatever a spec says.
PACKAGE_FILES = ("__init__", Path(manifest.PATH.name).stem)


def check_module_names(root: Path, modules: list[ExpandedModule]) -> None:
    """Refuse a module name that check cannot read or that would overwrite a file not ours."""
    recorded = manifest.read(root)
    with _locating(root):
        for module in modules:
            _check_module_name(root, module, recorded)
        _check_case_clashes(modules)


def _check_case_clashes(modules: list[ExpandedModule]) -> None:
    """Two module names that differ only in case are one file on macOS and Windows checkouts."""
    seen: dict[str, ExpandedModule] = {}
    for module in sorted(modules, key=lambda m: m.spec.spec_file):
        other = seen.setdefault(module.spec.name.casefold(), module)
        if other is not module:
            raise NameClashError(
                f"module name {module.spec.name!r} differs only in case from {other.spec.name!r} "
                f"({other.spec.spec_file}): on macOS and Windows {module.spec.output} and {other.spec.output} "
                "are one file; give one module another name",
                at_argument(module.spec.location, "name") or module.spec.location,
            )


def _check_module_name(root: Path, module: ExpandedModule, recorded: manifest.Manifest | None) -> None:
    spec = module.spec
    literal = planning.module_name(root / spec.spec_file)

    def where() -> SourceLocation | None:
        # Found only for an error: it parses the spec file, which is big when the backend is.
        return at_argument(spec.location, "name") or spec.location

    if spec.name != literal:
        raise NameClashError(
            f"Module(name=...) must be a string literal, such as name={spec.name!r}: check and regenerate read "
            f"it without running the spec, and would take this module for {spec.generated}/{literal}.py",
            where(),
        )
    if _is_dunder(spec.name) or spec.name in PACKAGE_FILES:
        raise NameClashError(
            f"module name {spec.name!r} would replace {spec.output}, a file of the {spec.generated}/ "
            "package itself; rename the spec file or give Module(name=...) another name",
            where(),
        )
    output = root / spec.output
    if _not_ours(output, spec.output, recorded):
        raise NameClashError(
            f"module name {spec.name!r} would overwrite {spec.output}, which the generator did not write; "
            "move that file away or give the module another name",
            where(),
        )


def _not_ours(output: Path, relative: str, recorded: manifest.Manifest | None) -> bool:
    """A file the generator did not write: one the manifest does not list (a copy of a generated module,
    header line and all, is the user's). Without a manifest (lost), a file with the header line is ours."""
    if not output.is_file():
        return False
    if recorded is not None:
        return relative not in recorded.outputs
    with output.open("rb") as stream:
        return not stream.read(len(digests.GENERATED_LINE)).startswith(digests.GENERATED_LINE.encode())


def check_spec_names(root: Path, module: ExpandedModule, text: str) -> None:
    """Refuse a spec-given name that the rendered module `text` binds more than once, or a dunder."""
    bindings = module_bindings(text)
    lines = text.splitlines()
    with _locating(root):
        names = _spec_names(module)
    for name, (kind, location) in names.items():
        if _is_dunder(name):
            raise NameClashError(
                f"{kind} name {name!r} is a dunder name, which Python reserves for itself; rename it", location
            )
        if name in _BUILTINS:
            raise NameClashError(
                f"{kind} name {name!r} would hide Python's built-in {name}, which generated code may use "
                "(fuser methods call type()); rename it",
                location,
            )
        found = bindings.get(name, [])
        if len(found) > 1:
            line, verb = next((b for b in found if not _defines(lines[b[0] - 1], name)), found[0])
            raise NameClashError(
                f"{kind} name {name!r} is a name that {module.spec.output} already {verb} (its line {line}), "
                "so one would replace the other; rename it",
                location,
            )


@contextlib.contextmanager
def _locating(root: Path):
    """at_argument reads the spec files of the project being built."""
    set_project_root(root)
    try:
        yield
    finally:
        set_project_root(None)


def _spec_names(module: ExpandedModule) -> dict[str, tuple[str, SourceLocation | None]]:
    """Each module-level name the spec chooses: what it is, and where the spec gives it."""
    names: dict[str, tuple[str, SourceLocation | None]] = {}
    for kind, values in (("DTypeWithConstraints", module.constraints), ("dtype config", module.dtype_configs),
                         ("function", module.functions)):  # fmt: skip
        for value in values:
            names.setdefault(value.name, (kind, value.location))
    for expanded in module.backends:
        backend = expanded.backend
        for argument in ("builder", "dict_builder"):
            name = getattr(backend, argument)
            if name:
                names.setdefault(name, (argument, at_argument(backend.location, argument) or backend.location))
    return names


def _defines(line: str, name: str) -> bool:
    """Whether a line is the spec's own definition of `name` (an assignment or a def)."""
    stripped = line.lstrip()
    return stripped.startswith((f"{name} =", f"def {name}("))


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")
