"""`python -m generator init`: a working start for a project of one's own, in an empty or existing repository.

It writes the `[tool.backend-config-generator]` table (appended to an existing pyproject.toml, whose bytes
stay as they were), a commented example spec, the generated package's `__init__.py`, a `.pre-commit-config.yaml`
running `check` on every commit and a CI job that installs the tool from where the team gets it; `regenerate`
then `check` pass at once. It never overwrites a file that exists: it keeps it and says so, but for two
additions to files of the team's own: the generated package, appended to pyproject.toml's explicit
`[tool.setuptools] packages` list (else the team's wheel would ship without it), and `.cache/`, appended to
`.gitignore`. Everything is decided before anything is written, so a refusal (a table that says otherwise than
the options, a pyproject.toml that is not TOML) changes no file.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from generator import errors, files, project

TABLE = f"tool.{project.TABLE}"
# The table's keys init writes, with their defaults: what the tool reads when a key is absent
# (project.ProjectConfig; `templates` is left out: the shipped templates serve a new project).
DEFAULTS = {f.name: f.default for f in dataclasses.fields(project.ProjectConfig) if f.name != "templates"}
EXAMPLE = "my_backend"
HOOK_ID = "backend-config-generator-check"
DISTRIBUTION = project.COMMAND
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
CI_PATH = Path(".github") / "workflows" / "backend-configs.yml"
PRECOMMIT_PATH = Path(".pre-commit-config.yaml")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class InitError(errors.GeneratorError):
    """init cannot make a working start as asked; nothing is written."""


@dataclass(frozen=True)
class Step:
    """One file of the start: `text` to write (None: keep what is there), and what to say about it."""

    path: Path
    text: str | None
    note: str = ""


@dataclass(frozen=True)
class Start:
    """What init does: the files in the order it reports them, and the command to run next."""

    steps: tuple[Step, ...]
    next_command: str


def plan(
    root: Path, options: dict[str, str | None], cwd: Path, root_given: bool = True, install: str | None = None
) -> Start:
    """Decide every file; raises InitError (one line) when the project cannot start as asked.

    Without --root (`root_given`), a folder inside a project is refused: init run from spec/ by mistake
    would start a second project there. `install` is what CI gives pip to install the tool (--install), else
    the requirement pyproject.toml names, else where this tool was installed from (installed_from).
    """
    if not root.is_dir():
        raise InitError(f"{root} is not a folder: make it first (mkdir), or run init in the repository's folder")
    if not root_given:
        _refuse_inside_a_project(root)
    pyproject = root / "pyproject.toml"
    current = _read_pyproject(pyproject)
    table = _table(current)
    if table is not None:
        project.validated(root, table)  # a table every other command would refuse is refused here first
    layout = _layout(options, table)
    project.validated(root, layout)
    top = _repository_top(root)
    where = "" if top == root else root.relative_to(top).as_posix()
    steps = [_pyproject_step(pyproject, current, table, layout)]
    steps.append(_example_step(root, layout))
    steps.extend(_package_steps(root, layout))
    steps.append(_kept_or_written(top / PRECOMMIT_PATH, precommit_config(where), _precommit_note))
    source = install or _named_requirement(current) or installed_from()
    ci_step = _kept_or_written(top / CI_PATH, ci_workflow(where, _has_project(current), source or from_an_index()))
    if source is None and ci_step.text is not None:  # the tool's own version, from an index: say so
        guess = f"it installs {from_an_index()} from your package index; --install says where you get the tool"
        ci_step = dataclasses.replace(ci_step, note=guess)
    steps.append(ci_step)
    steps.append(_gitignore_step(top / ".gitignore"))
    prefix = "" if root == cwd else f"--root {shlex.quote(_shown(root, cwd))} "
    return Start(tuple(steps), f"{project.COMMAND} {prefix}regenerate")


def write(root: Path, start: Start) -> list[str]:
    """Write the planned files; the report lines (`written   PATH` / `kept      PATH`), relative to root."""
    writing = [step.path for step in start.steps if step.text is not None]
    files.ensure_writable(writing)
    lines = []
    for step in start.steps:
        if step.text is not None:
            files.write_if_changed(step.path, step.text)
        done = "written" if step.text is not None else "kept"
        note = f": {step.note}" if step.note else ""
        lines.append(f"{done:9} {_shown(step.path, root)}{note}")
    return lines


def _shown(path: Path, base: Path) -> str:
    try:
        return path.relative_to(base).as_posix() or "."
    except ValueError:
        return str(path)


# --- pyproject.toml --------------------------------------------------------------------------------------------


def _read_pyproject(path: Path) -> str | None:
    if not path.exists():
        return None
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise InitError(f"{path.name} is not UTF-8 text; init appends its table to it only as TOML") from None


def _toml(text: str, what: str) -> dict:
    tomllib = project.toml_reader()
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InitError(f"{what} is not valid TOML ({error}); fix it, then run init again") from None


def _table(text: str | None) -> dict | None:
    """The existing [tool.backend-config-generator] table, or None."""
    if text is None:
        return None
    tool = _toml(text, "pyproject.toml").get("tool", {})
    table = tool.get(project.TABLE) if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise InitError(f"pyproject.toml: tool.backend-config-generator must be a table ([{TABLE}])")
    return table


def _has_project(text: str | None) -> bool:
    return text is not None and isinstance(_toml(text, "pyproject.toml").get("project"), dict)


def _layout(options: dict[str, str | None], table: dict | None) -> dict[str, str]:
    """The layout to start: an existing table's, else the options' (one derived from the other), else defaults."""
    given = {key: value for key, value in options.items() if value is not None}
    if table is not None:
        layout = {key: table.get(key, default) for key, default in DEFAULTS.items()}  # checked by project.validated
        for key, value in given.items():
            if _normal(key, value) != _normal(key, layout[key]):
                raise InitError(
                    f'pyproject.toml\'s [{TABLE}] already says {key} = "{layout[key]}", not --{key} {value}: '
                    "edit the table or leave the option out"
                )
        _require_valid(layout, lambda key: f'pyproject.toml\'s [{TABLE}] {key} = "{layout[key]}"')
        return layout
    layout = dict(DEFAULTS)
    if "package" in given and "generated" not in given:
        given["generated"] = given["package"].replace(".", "/")
    if "generated" in given and "package" not in given:  # src/acme/configs is acme.configs (the src layout)
        parts = Path(_normal("generated", given["generated"])).parts
        given["package"] = ".".join(parts[1:] if parts[0] == "src" and len(parts) > 1 else parts)
    layout.update({key: _normal(key, value) for key, value in given.items()})
    _require_valid(layout, lambda key: f"--{key} {layout[key]}")
    return layout


def _normal(key: str, value: str) -> str:
    return value if key == "package" else Path(value).as_posix().rstrip("/") or "."


def _require_valid(layout: dict[str, str], named) -> None:
    """Folders inside the project, and a package importable from the generated folder; `named(key)` says where
    a value comes from."""
    for key in ("specs", "generated"):
        path = Path(layout[key])
        if path.is_absolute() or ".." in path.parts or path == Path("."):
            raise InitError(f"{named(key)}: give a folder inside the project, relative to its root")
    parts = layout["package"].split(".")
    if not all(IDENTIFIER.fullmatch(part) for part in parts):
        raise InitError(f"{named('package')}: an import name is dotted Python identifiers (acme_quant.configs)")
    if tuple(Path(layout["generated"]).parts[-len(parts) :]) != tuple(parts):
        raise InitError(
            f"{named('package')} cannot be imported from {named('generated')}: "
            f"the generated folder must end in {'/'.join(parts)}"
        )


def table_text(layout: dict[str, str]) -> str:
    lines = [
        "",
        f"[{TABLE}]",
        f"# {project.COMMAND} reads its layout here; a key left out takes this default.",
        f'specs = "{layout["specs"]}"  # the spec files (one per generated module; _name.py: shared helpers)',
        f'generated = "{layout["generated"]}"  # where regenerate writes the generated modules',
        f'package = "{layout["package"]}"  # their import name',
        f'matrix = "{layout["matrix"]}"  # the support matrix ("": none)',
        '# templates = "templates"  # a folder of your own templates overriding the shipped ones',
    ]
    return "\n".join(lines) + "\n"


def _pyproject_step(path: Path, current: str | None, table: dict | None, layout: dict[str, str]) -> Step:
    if current is None:
        return Step(path, table_text(layout).lstrip("\n"))
    text, notes = current, []
    if table is None:
        text = current + ("" if current.endswith("\n") or not current else "\n") + table_text(layout)
        _toml(text, f"pyproject.toml with [{TABLE}] appended")  # e.g. a file that spells tool as an inline table
        notes.append(f"[{TABLE}] appended")
    listed = _listed_packages(current)
    missing = [] if listed is None else [p for p in _packages(layout["package"]) if p not in listed]
    if missing:
        added = _with_packages(text, missing)
        if added is not None and _listed_packages(added) == [*listed, *missing]:
            text = added
            notes.append(f"{', '.join(missing)} added to [tool.setuptools] packages")
        else:
            line = ", ".join(f'"{p}"' for p in missing)
            notes.append(f"add {line} to [tool.setuptools] packages yourself, or your wheel ships without them")
    if text == current:
        return Step(path, None, "; ".join([f"it has [{TABLE}]", *notes]))
    return Step(path, text, "; ".join(notes))


def _packages(package: str) -> list[str]:
    """The generated package and each package above it: an explicit packages list must name every one."""
    parts = package.split(".")
    return [".".join(parts[: n + 1]) for n in range(len(parts))]


def _listed_packages(text: str) -> list[str] | None:
    """pyproject.toml's explicit `[tool.setuptools] packages` list, None when there is none (setuptools finds the
    packages itself: `find:` or automatic discovery)."""
    setuptools = _toml(text, "pyproject.toml").get("tool", {}).get("setuptools", {})
    listed = setuptools.get("packages") if isinstance(setuptools, dict) else None
    return [p for p in listed if isinstance(p, str)] if isinstance(listed, list) else None


_PACKAGES_LIST = re.compile(r"(?ms)^\[tool\.setuptools\][^\[]*?^packages\s*=\s*\[(?P<items>[^\]]*)\]")


def _with_packages(text: str, missing: list[str]) -> str | None:
    """The text with `missing` appended to the packages list, spelt as the list is (one a line or on one line);
    None when the list is not where a plain `[tool.setuptools]` table holds it."""
    found = _PACKAGES_LIST.search(text)
    if found is None:
        return None
    items, end = found.group("items"), found.end("items")
    body = items.rstrip()
    comma = "" if not body.strip() or body.endswith(",") else ","
    if "\n" in items.strip("\n") or items.startswith("\n"):  # one a line: the last line's indentation
        lines = [line for line in items.splitlines() if line.strip()]
        indent = re.match(r"\s*", lines[-1]).group() if lines else "    "
        added = "".join(f'\n{indent}"{p}",' for p in missing)
        return text[: found.start("items")] + body + comma + added + "\n" + text[end:]
    added = ", ".join(f'"{p}"' for p in missing)
    return text[: found.start("items")] + body + comma + (" " if body.strip() else "") + added + text[end:]


# --- spec/, the generated package -----------------------------------------------------------------------------


def _example_step(root: Path, layout: dict[str, str]) -> Step:
    specs = root / layout["specs"]
    existing = sorted(p.name for p in specs.glob("*.py") if not p.name.startswith("_")) if specs.is_dir() else []
    path = specs / f"{EXAMPLE}.py"
    if path.exists():
        return Step(path, None)
    if existing:
        return Step(specs, None, f"it has spec files ({', '.join(existing)}); no example added")
    return Step(path, example_spec(layout["package"]))


def _package_steps(root: Path, layout: dict[str, str]) -> list[Step]:
    """An __init__.py for the generated package and each package above it (acme_quant/ for acme_quant.configs)."""
    parts = layout["package"].split(".")
    generated = root / layout["generated"]
    folders = [*reversed(generated.parents[: len(parts) - 1]), generated]
    docs = [f'"""The {part} package."""\n' for part in parts[:-1]] + [GENERATED_DOC]
    return [_kept_or_written(folder / "__init__.py", doc) for folder, doc in zip(folders, docs)]


GENERATED_DOC = '"""Generated BackendConfig modules: python -m generator regenerate writes them from the spec."""\n'


def _kept_or_written(path: Path, text: str, note=None) -> Step:
    if path.exists():
        return Step(path, None, note(path) if note else "")
    return Step(path, text)


def _precommit_note(path: Path) -> str:
    try:
        has_hook = HOOK_ID in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        has_hook = False
    return "" if has_hook else f"add the hook {HOOK_ID} to it yourself (see the .pre-commit-config.yaml init writes)"


def _gitignore_step(path: Path) -> Step:
    """`.cache/` ignored: a new .gitignore, or the line appended to the team's own (whose lines stay)."""
    if not path.exists():
        return Step(path, ".cache/\n")
    try:
        current = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return Step(path, None, "add .cache/ to it: the generator's caches are no files to commit")
    if any(line.strip().rstrip("/").lstrip("/") in (".cache", ".cache/*", ".cache/**") for line in current.split("\n")):
        return Step(path, None)
    separator = "" if current.endswith("\n") or not current else "\n"
    note = ".cache/ appended: the generator's caches are no files to commit"
    return Step(path, f"{current}{separator}.cache/\n", note)



def _refuse_inside_a_project(root: Path) -> None:
    for folder in root.parents:
        if project.has_table(folder) or (folder / DEFAULTS["specs"]).is_dir():
            raise InitError(
                f"{root} is inside the project {folder}: run init there, or pass --root {root} to start another "
                "project here"
            )
        if (folder / ".git").exists():
            return  # a project above the repository is not this repository's


def _repository_top(root: Path) -> Path:
    """The git repository's top folder (where pre-commit and CI look), or root outside one."""
    for folder in (root, *root.parents):
        if (folder / ".git").exists():
            return folder
    return root


# --- the texts -------------------------------------------------------------------------------------------------


def example_spec(package: str) -> str:
    return EXAMPLE_SPEC.replace("{package}", package)


EXAMPLE_SPEC = '''\
"""An example backend: python -m generator regenerate writes {package}.my_backend from this file.

Rename it, edit it, or delete it once you have a backend of your own. The vocabulary: docs/spec.md of
backend-config-generator; a backend with a reference builder: docs/adding-a-backend.md.
"""

from generator.dsl import Backend, DTypeConfig, Module, config, nn, nni, nniqat, nnqat, nnqr, sequential, torch

# A dtype config: quint8 activations, qint8 weights, float bias. Its name is the constant's name in the
# generated module; every pattern below that lists it shares it.
weighted_int8_dtype_config = DTypeConfig(
    input_dtype=torch.quint8,
    output_dtype=torch.quint8,
    weight_dtype=torch.qint8,
    bias_dtype=torch.float,
)
weighted = [weighted_int8_dtype_config]

MODULE = Module(
    doc="BackendConfig for my_backend: linear, and conv2d + relu.",
    backends=[
        Backend(
            name="my_backend",  # the BackendConfig's name
            builder="get_my_backend_config",  # the generated function that returns it
            doc="Return the `BackendConfig` for my_backend: linear, and conv2d + relu.",
            # A dynamic builder this backend must equal (python -m generator verify proves it), e.g.
            # reference="my_package.backend_config.get_my_backend_config",
            configs=[
                # One config() per pattern: the pattern, its dtype configs, then BackendPatternConfig's fields.
                config(
                    nn.Linear, weighted, root_module=nn.Linear, qat_module=nnqat.Linear,
                    reference_quantized_module=nnqr.Linear, section="linear",
                ),
                # fuse Conv2d + ReLU into ConvReLU2d (sequential(): a fuser method the generated module defines) ...
                config(
                    (nn.Conv2d, nn.ReLU), weighted, fused_module=nni.ConvReLU2d,
                    fuser_method=sequential(nni.ConvReLU2d), section="conv2d",
                ),
                # ... and quantize ConvReLU2d
                config(
                    nni.ConvReLU2d, weighted, root_module=nn.Conv2d, qat_module=nniqat.ConvReLU2d,
                    reference_quantized_module=nnqr.Conv2d, section="conv2d",
                ),
            ],
        )
    ],
)
'''


def precommit_config(where: str) -> str:
    root = f"--root {shlex.quote(where)} " if where else ""
    return f"""\
# {project.COMMAND} check on every commit: it refuses a commit whose generated modules are stale, missing or
# edited by hand. It runs whatever files a commit touches (always_run): check also tracks your own packages the
# spec imports, and it takes a tenth of a second when nothing changed. `language: system`: the
# {project.COMMAND} command on PATH when you commit runs it (activate the environment it is installed in first).
# Set up once: pip install pre-commit && pre-commit install
repos:
  - repo: local
    hooks:
      - id: {HOOK_ID}
        name: generated BackendConfig modules are what the spec says
        entry: {project.COMMAND} {root}check
        language: system
        pass_filenames: false
        always_run: true
"""


def ci_workflow(where: str, installs_itself: bool, install: str) -> str:
    """The CI job: install the tool as `install` says (pip's arguments), torch's CPU wheel, then check and verify."""
    root = f"--root {shlex.quote(where)} " if where else ""
    command = f"pip install {install} --extra-index-url {TORCH_CPU_INDEX}"
    own = "# If the spec imports packages of this repository, add to the install step: && pip install -e ."
    if installs_itself:
        command += f" && pip install -e {shlex.quote(where or '.')}"
        own = "# This repository's own packages (those the spec imports) are installed with it."
    return f"""\
# The generated BackendConfig modules are what the spec says (check), and each equals its reference builder
# and runs through torch's FX quantization (verify).
{own}
# The tool is installed as `{project.COMMAND} init --install` or pyproject.toml named it (a git tag, a wheel, an
# index of your own); torch comes from its CPU index.
name: backend configs
on:
  push:
  pull_request:
jobs:
  backend-configs:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
      - name: Install backend-config-generator (torch's CPU wheel)
        run: {command}
      - name: The generated modules are what the spec says
        run: {project.COMMAND} {root}check
      - name: Each generated builder equals its reference builder and runs through FX
        run: {project.COMMAND} {root}verify
"""


def _named_requirement(text: str | None) -> str | None:
    """The tool's requirement as pyproject.toml names it (a dependency, an optional or a group's), quoted for the
    shell: `backend-config-generator @ git+https://...@v0.1.0` installs in CI as it does on a laptop."""
    if text is None:
        return None
    document = _toml(text, "pyproject.toml")
    found = []
    declared = document.get("project", {}) if isinstance(document.get("project"), dict) else {}
    found.extend(declared.get("dependencies", []) if isinstance(declared.get("dependencies"), list) else [])
    for group in (declared.get("optional-dependencies", {}), document.get("dependency-groups", {})):
        if isinstance(group, dict):
            found.extend(r for requirements in group.values() if isinstance(requirements, list) for r in requirements)
    for requirement in found:
        name = re.match(r"\s*([A-Za-z0-9._-]+)", requirement) if isinstance(requirement, str) else None
        if name and re.sub(r"[-_.]+", "-", name.group(1)).lower() == DISTRIBUTION:
            return shlex.quote(requirement.strip())
    return None


def installed_from() -> str | None:
    """Where this tool was installed from, as pip's arguments, when CI can get it there too: the git repository
    at the commit, or the wheel or archive at its URL (pip's direct_url.json); None for a local folder or file."""
    from importlib import metadata

    try:
        direct = json.loads(metadata.distribution(DISTRIBUTION).read_text("direct_url.json") or "null")
    except (metadata.PackageNotFoundError, ValueError):
        return None
    if isinstance(direct, dict) and isinstance(direct.get("url"), str) and not direct["url"].startswith("file:"):
        vcs = direct.get("vcs_info")
        if isinstance(vcs, dict) and vcs.get("vcs") == "git" and vcs.get("commit_id"):
            return shlex.quote(f"{DISTRIBUTION} @ git+{direct['url']}@{vcs['commit_id']}")
        if "archive_info" in direct:
            return shlex.quote(f"{DISTRIBUTION} @ {direct['url']}")
    return None


def from_an_index() -> str:
    """This tool's version, from the package index pip uses."""
    return shlex.quote(f"{DISTRIBUTION}=={project.VERSION}")

