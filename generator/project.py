"""The project's layout: where a project keeps what the generator reads and writes.

A project is a folder holding spec files (one per generated module, and `_` helper
modules) and the generated package; every command is given its root. Where each
lives is the project's own choice, in its pyproject.toml (all keys optional; the
defaults are this repository's layout):

    [tool.backend-config-generator]
    specs = "spec"                        # folder of spec files (imported as a package: spec.x86)
    generated = "generated"               # folder the generated modules are written to
    package = "generated"                 # their import name (acme_quant.backend_configs)
    matrix = "docs/support-matrix.md"     # the support matrix ("": none)
    templates = "templates"               # the project's own templates, overriding the shipped ones

The configuration is an input of every generated file: the manifest records it.
The templates a project does not override are the ones the tool ships
(generator/templates/ in an installed tool, templates/ in its source checkout).
"""

from __future__ import annotations

import hashlib
import json
import keyword
import os
import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path, PurePosixPath

from generator.errors import ProjectConfigError

COMMAND = "backend-config-generator"  # the console script, and the distribution's name
VERSION = "0.1.0"  # the distribution's (pyproject.toml reads it here), `--version`; its git tag is v0.1.0
TABLE = "backend-config-generator"
PYPROJECT = "pyproject.toml"
# The name the configuration has among the manifest's inputs.
CONFIG_INPUT = f"{PYPROJECT} [tool.{TABLE}]"


@dataclass(frozen=True)
class ProjectConfig:
    """The `[tool.backend-config-generator]` table, validated: folders are project-relative POSIX paths."""

    specs: str = "spec"
    generated: str = "generated"
    package: str = "generated"
    matrix: str = "docs/support-matrix.md"
    templates: str = "templates"

    @property
    def spec_package(self) -> str:
        """The import name of the spec folder (`spec`, or `quant.specs` for quant/specs)."""
        return ".".join(PurePosixPath(self.specs).parts)

    @property
    def manifest(self) -> str:
        return f"{self.generated}/manifest.json"

    def output(self, name: str) -> str:
        """A generated module's file, relative to the root."""
        return f"{self.generated}/{name}.py"

    def import_name(self, name: str) -> str:
        """A generated module's import name: `generated.x86`, `acme_quant.backend_configs.dsp`."""
        return f"{self.package}.{name}"

    def digest(self) -> str:
        """What the manifest records of it: every value, so any change makes every output stale."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()

    def output_folders(self) -> tuple[str, ...]:
        """Project paths that hold the generator's output, not inputs."""
        return (self.generated,)


DEFAULT = ProjectConfig()
_KEYS = {f.name for f in fields(ProjectConfig)}
_loaded: dict[tuple, ProjectConfig] = {}


def config(root: Path) -> ProjectConfig:
    """The project's configuration, read from its pyproject.toml (re-read when the file changes).

    Raise ProjectConfigError, one line naming pyproject.toml and the key, for a table that is not valid.
    """
    path = Path(root) / PYPROJECT
    try:
        stat = path.stat()
    except OSError:
        return DEFAULT
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    found = _loaded.get(key)
    if found is None:
        found = _parse(Path(root), path)
        _loaded.clear()  # one project per run; a test's many projects need not pile up
        _loaded[key] = found
    return found


def toml_reader():
    """tomllib, or tomli on Python 3.10."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib
        except ModuleNotFoundError:
            raise ProjectConfigError(
                f"{PYPROJECT}: [tool.{TABLE}] needs Python 3.11+ (tomllib) or the tomli package to be read"
            ) from None
    return tomllib


def _parse(root: Path, path: Path) -> ProjectConfig:
    if TABLE not in path.read_text(encoding="utf-8", errors="replace"):
        return DEFAULT  # no table of ours (pyproject.toml's other tables are not ours to judge)
    tomllib = toml_reader()
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ProjectConfigError(f"{PYPROJECT}: not valid TOML: {error}") from None
    table = document.get("tool", {}).get(TABLE) if isinstance(document.get("tool"), dict) else None
    if table is None:
        return DEFAULT
    if not isinstance(table, dict):
        raise ProjectConfigError(f"{PYPROJECT}: [tool.{TABLE}] must be a table")
    return validated(root, table)


def validated(root: Path, table: dict) -> ProjectConfig:
    """The table's values checked as every command reads them (init checks what it writes the same way)."""
    values = {}
    for key, value in table.items():
        where = f"{PYPROJECT}: [tool.{TABLE}] {key}"
        if key not in _KEYS:
            raise ProjectConfigError(f"{where}: unknown key; the keys are {', '.join(sorted(_KEYS))}")
        if not isinstance(value, str):
            raise ProjectConfigError(f"{where}: must be a string, not {type(value).__name__} {value!r}")
        values[key] = _package(where, value) if key == "package" else _folder(root, where, key, value)
    found = ProjectConfig(**values)
    _check_apart(found)
    return found


def _folder(root: Path, where: str, key: str, value: str) -> str:
    """A project-relative path, as POSIX, inside the project."""
    if value == "" and key == "matrix":
        return ""
    text = value.replace("\\", "/").strip()
    posix = PurePosixPath(text)
    if not text or posix.is_absolute() or Path(value).is_absolute():
        raise ProjectConfigError(f"{where}: must be a path relative to the project's folder, not {value!r}")
    parts = [part for part in posix.parts if part != "."]
    if not parts or ".." in parts:
        raise ProjectConfigError(f"{where}: {value!r} is outside the project; give a folder inside it")
    resolved = (root / Path(*parts)).resolve()
    if root.resolve() not in (resolved, *resolved.parents) or resolved == root.resolve():
        raise ProjectConfigError(f"{where}: {value!r} is outside the project; give a folder inside it")
    if key == "specs" and not all(part.isidentifier() and not keyword.iskeyword(part) for part in parts):
        raise ProjectConfigError(f"{where}: {value!r} must be importable as a package (identifiers, like spec)")
    if key == "specs":
        _refuse_a_taken_top_level(where, parts[0], value)
    return "/".join(parts)


def _package(where: str, value: str) -> str:
    parts = value.split(".")
    if not all(part.isidentifier() and not keyword.iskeyword(part) for part in parts):
        raise ProjectConfigError(f"{where}: {value!r} is not a Python import name (like acme_quant.backend_configs)")
    _refuse_a_taken_top_level(where, parts[0], value)
    return value


# Top-level import names a project's packages must leave alone: the tool's and those it imports.
TAKEN_TOP_LEVEL = frozenset({"generator", "torch", "jinja2", "markupsafe", "black", "numpy", "pytest", "tomli"})


def _refuse_a_taken_top_level(where: str, top: str, value: str) -> None:
    """A package named like the tool, a library it imports or a standard module would shadow it, or be shadowed."""
    if top in TAKEN_TOP_LEVEL or top in sys.stdlib_module_names:
        raise ProjectConfigError(
            f"{where}: {value!r} would share the import name {top!r} with "
            f"{'the standard library' if top in sys.stdlib_module_names else 'the tool or a library it uses'}; "
            "give a name of your own (like acme_quant.backend_configs)"
        )


def _check_apart(found: ProjectConfig) -> None:
    """The generated folder holds output only: it must not hold the specs or the templates, nor sit in them."""
    for key in ("specs", "templates"):
        other = getattr(found, key)
        if _within(other, found.generated) or _within(found.generated, other):
            raise ProjectConfigError(
                f"{PYPROJECT}: [tool.{TABLE}] generated: {found.generated!r} overlaps {key} {other!r}; "
                "give the generated modules a folder of their own"
            )
    where = f"{PYPROJECT}: [tool.{TABLE}] matrix"
    if found.matrix:
        for key in ("specs", "generated", "templates"):
            if _within(found.matrix, getattr(found, key)):
                raise ProjectConfigError(
                    f"{where}: {found.matrix!r} is inside {key}; give the matrix a file of its own"
                )
        if not found.matrix.endswith(".md"):
            raise ProjectConfigError(f"{where}: {found.matrix!r} is not a Markdown file; give a path ending in .md")
        if found.matrix.split("/")[0].startswith("."):
            raise ProjectConfigError(f"{where}: {found.matrix!r} is in a hidden folder; give a folder of the project")


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder + "/")


def has_table(folder: Path) -> bool:
    """Whether the folder's pyproject.toml has the tool's table: the folder is then a project's root."""
    try:
        text = (folder / PYPROJECT).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return f"tool.{TABLE}" in text or f'tool."{TABLE}"' in text


def spec_folder(root: Path) -> Path:
    return root / config(root).specs


def spec_files(root: Path) -> list[Path]:
    """The spec files that describe generated modules, in a stable order."""
    return sorted(p for p in spec_folder(root).glob("*.py") if not p.name.startswith("_"))


def is_output(root: Path, relative: str) -> bool:
    """Whether a project-relative POSIX path is (inside) a folder the generator writes."""
    return any(_within(relative, folder) for folder in config(root).output_folders())


# ---------------------------------------------------------------------------
# Templates: the project's own first, then the shipped ones
# ---------------------------------------------------------------------------


def shipped_templates() -> Path:
    """The templates the tool ships: generator/templates/ when installed, the checkout's templates/ in source."""
    package = Path(__file__).resolve().parent
    installed = package / "templates"
    return installed if installed.is_dir() else package.parent / "templates"


@dataclass(frozen=True)
class Templates:
    """Where templates are looked up, first folder first, each with the label reports and the manifest name it by
    (the project's folder by its project path, `templates`; the shipped one as part of the generator)."""

    folders: tuple[Path, ...]
    labels: tuple[str, ...]

    def found(self, name: str) -> tuple[Path, str] | None:
        """The file a template name resolves to, and its label (`templates/module.py.j2`)."""
        for folder, label in zip(self.folders, self.labels):
            path = folder / name
            if path.is_file():
                return path, f"{label}/{name}"
        return None

    def label_of(self, filename: str) -> str | None:
        """The label of a template file given by its path, or None if it is none of these folders'."""
        path = Path(filename)
        for folder, label in zip(self.folders, self.labels):
            if folder in path.parents:
                return f"{label}/{path.relative_to(folder).as_posix()}"
        return None

    def every(self) -> dict[str, tuple[str, Path]]:
        """{name: (label, file)} of each template a render can use (`functions/x.py.j2`): the file the name
        resolves to, the project's own when it overrides the shipped one."""
        names: dict[str, tuple[str, Path]] = {}
        for folder, label in zip(self.folders, self.labels):
            if not folder.is_dir():
                continue
            for path in _template_files(folder):
                name = path.relative_to(folder).as_posix()
                names.setdefault(name, (f"{label}/{name}", path))
        return dict(sorted(names.items()))


def _template_files(folder: Path) -> list[Path]:
    """Every file below `folder` (not only *.j2: a template may {% include %} any file of the folder), through
    symlinked folders too (as Jinja2's loader finds them: a `templates/functions` that is a symlink holds
    templates), each real folder once (a symlink cycle ends)."""
    found, seen = [], set()
    for directory, subfolders, names in os.walk(folder, followlinks=True):
        real = os.path.realpath(directory)
        if real in seen:
            subfolders[:] = []
            continue
        seen.add(real)
        subfolders.sort()
        if "__pycache__" not in Path(directory).parts:
            found.extend(Path(directory) / name for name in names)
    return sorted(found)


SHIPPED_LABEL = "generator/templates"


def templates(root: Path) -> Templates:
    """The project's templates folder (if it has one), then the shipped one; one folder when they are the same."""
    own = root / config(root).templates
    shipped = shipped_templates()
    if own.is_dir() and _same(own, shipped):
        return Templates((own,), (config(root).templates,))
    if own.is_dir():
        return Templates((own, shipped), (config(root).templates, SHIPPED_LABEL))
    return Templates((shipped,), (SHIPPED_LABEL,))


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
