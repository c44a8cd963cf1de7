"""Planning: which files the generator writes, and which of them are out of date.

Nothing here executes the spec, renders or formats, and nothing imports torch,
Jinja2 or black: `check` decides from this module alone, by comparing what the
manifest (`generator/freshness/manifest.py`) recorded for each file with the file and the
current inputs, and names the inputs that changed. The project files that feed
an output are those its spec load read, as the manifest recorded them (see
generator/loading/reads.py). Spec files are read only as syntax trees, to find
the output name.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import json
from dataclasses import dataclass
from pathlib import Path

from generator import cache, digests, project
from generator.freshness import manifest
from generator.loading import syntax
from generator.project import spec_files

MATRIX = "support-matrix"
MATRIX_OUTPUT = Path(project.DEFAULT.matrix)  # in a project of the default layout; matrix_output(root) in any
_KEPT_MODULE_NAMES = 256  # names of contents long gone are pruned beyond this
_LINT_ENTRY = "findings"  # one entry: the findings of the last inputs linted


@dataclass(frozen=True)
class Target:
    """A generated file: what it is made from, where it goes and its current inputs.

    `name` is a generated module's name, or MATRIX for the support matrix, which
    is made from every spec file. `made_from` maps each input's name to its
    current digest (see `digests.InputsDigester`).
    """

    name: str
    source: str
    root: Path
    relative: str  # the output, relative to the root: its key in the manifest
    made_from: tuple[tuple[str, str], ...]

    @property
    def output(self) -> Path:
        return self.root / self.relative

    @property
    def is_matrix(self) -> bool:
        return self.name == MATRIX

    @property
    def inputs(self) -> str:
        """One digest of all current inputs."""
        return digests.combined(dict(self.made_from))


@dataclass(frozen=True)
class Status:
    """'fresh', 'missing', 'stale' (inputs changed) or 'edited' (changed by hand), and why."""

    state: str
    reasons: tuple[str, ...] = ()
    as_recorded: bool = False  # the file holds what the manifest records for it (fresh, or stale by its inputs)


def plan(root: Path, recorded: manifest.Manifest | None = None) -> list[Target]:
    """Every target, with the inputs the manifest (read unless given) records its last load read.

    The spec is not executed: a spec load can read a file it did not read last
    time only through an edit to a file it did read, which makes the target stale.
    The matrix is made from every spec file, so a new one is an input of it.
    """
    recorded = recorded if recorded is not None else manifest.read(root)
    layout = project.config(root)
    digester = digests.InputsDigester(root)
    targets = []
    for spec_file in spec_files(root):
        name = module_name(spec_file)
        relative = spec_file.relative_to(root).as_posix()
        output = Path(layout.output(name))
        read = digester.project_files([relative, *_recorded_reads(recorded, output.as_posix(), digester)])
        targets.append(_target(root, name, relative, output, tuple(sorted(digester.inputs(read).items()))))
    if not layout.matrix:
        return targets  # the project keeps no support matrix
    every = [t.source for t in targets] + _recorded_reads(recorded, layout.matrix, digester)
    matrix_inputs = digester.matrix_inputs(digester.project_files(every))
    matrix = _target(root, MATRIX, f"{layout.specs}/", Path(layout.matrix), tuple(sorted(matrix_inputs.items())))
    return [*targets, matrix]


def matrix_output(root: Path) -> Path | None:
    """The support matrix's path relative to the root, None when the project keeps none."""
    matrix = project.config(root).matrix
    return Path(matrix) if matrix else None


def _recorded_reads(recorded: manifest.Manifest | None, output: str, digester: digests.InputsDigester) -> list[str]:
    entry = recorded.outputs.get(output) if recorded is not None else None
    return [name for name in entry.inputs if not digester.is_shared(name)] if entry is not None else []


def observed(targets: list[Target], reads: dict[str, dict[str, str]]) -> list[Target]:
    """The targets with the inputs that this run's spec loads read: `reads` maps each spec file to
    {project file: digest as read}. The manifest records these for the files written."""
    if not targets:
        return targets
    digester = digests.InputsDigester(targets[0].root)
    found = []
    for target in targets:
        if target.is_matrix:
            every = {name: digest for read in reads.values() for name, digest in read.items()}
            inputs = digester.matrix_inputs(every)
        elif target.source in reads:
            inputs = digester.inputs(reads[target.source])
        else:
            found.append(target)
            continue
        found.append(dataclasses.replace(target, made_from=tuple(sorted(inputs.items()))))
    return found


def _target(root: Path, name: str, source: str, output: Path, made_from) -> Target:
    return Target(name, source, root, output.as_posix(), made_from)


def read_manifest(root: Path) -> manifest.Manifest | None:
    return manifest.read(root)


def freshness(target: Target, recorded: manifest.Manifest | None = None) -> str:
    """'fresh', 'missing', 'stale' or 'edited'; reads the manifest unless given."""
    return status(target, recorded if recorded is not None else manifest.read(target.root)).state


def status(target: Target, recorded: manifest.Manifest | None) -> Status:
    if not target.output.exists():
        return Status("missing")
    entry = recorded.outputs.get(target.relative) if recorded is not None else None
    if entry is None:
        return Status("stale", (f"{manifest.path_in(target.root).as_posix()} has no record of it",))
    digest = digests.file_text_digest(target.output)
    if digest != entry.digest:
        if digest == entry.previous:
            return Status("stale", ("a regenerate was interrupted before it rewrote this file",))
        if not digests.is_utf8(target.output):
            return Status("edited", ("it is not UTF-8 text, as regenerate writes it",))
        return Status("edited", ("its content is not what regenerate wrote",))
    # An environment variable is recorded as READ, whatever its value: its value is in the proof's key (proofs.py).
    reasons = changed_inputs(recorded.made_from(entry), manifest.committed(target.made_from))
    return Status("stale" if reasons else "fresh", reasons, as_recorded=True)


def changed_inputs(before: dict[str, str | None], now: dict[str, str]) -> tuple[str, ...]:
    """Reasons in the reviewer's words: spec files and templates by name, then the rest. The environment's inputs
    (the generator, black, Jinja2) are no reasons: an environment proves what it writes (freshness/proofs.py)."""
    changed = sorted(name for name in before.keys() | now.keys() if before.get(name) != now.get(name))
    reasons = []
    for name in changed:
        if digests.is_environmental(name):
            continue
        if name.startswith(digests.ENVIRONMENT):
            reasons.append(_environment_reason(name, before.get(name), now.get(name)))
        elif name not in before or before[name] is None:
            reasons.append(f"{name} is new to it")
        elif name not in now:
            reasons.append(f"{name} no longer feeds it")
        else:
            reasons.append(f"{name} changed")
    return tuple(sorted(reasons, key=_reason_order))


def _environment_reason(name: str, before: str | None, now: str | None) -> str:
    """An environment variable a spec load read (`env:NAME`), or the whole environment, that changed."""
    if name == digests.ENVIRONMENT_INPUT:
        what = "the environment (a spec load read all of it)"
    else:
        what = f"environment variable {name[len(digests.ENVIRONMENT) :]}"
    if before is None:
        return f"{what} is new to it"
    if now is None:
        return f"{what} no longer feeds it"
    if before == digests.ABSENT:
        return f"{what} is set now"
    if now == digests.ABSENT:
        return f"{what} is no longer set"
    return f"{what} changed"


def _reason_order(reason: str) -> int:
    for rank, prefix in enumerate(("spec/", "templates/")):
        if reason.startswith(prefix):
            return rank
    return 3


def orphans(root: Path, targets: list[Target], recorded: manifest.Manifest | None) -> list[Path]:
    """Generated files whose spec file is gone: those the manifest lists that no target makes.

    Only the manifest says what the generator wrote: a file of the user's own in the generated folder
    (a copy of a generated module, header line and all) is never one, whatever it starts with.
    """
    if recorded is None:
        return []
    expected = {t.relative for t in targets} | {manifest.path_in(root).as_posix()}
    return [root / name for name in sorted(recorded.outputs) if name not in expected and (root / name).is_file()]


def is_unchanged_output(root: Path, path: Path, recorded: manifest.Manifest | None) -> bool:
    """Whether a listed output still holds what regenerate wrote there (or what an interrupted run replaced), its
    header and all: an orphan edited by hand since is the user's to delete, not the generator's."""
    entry = recorded.outputs.get(path.relative_to(root).as_posix()) if recorded is not None else None
    if entry is None or manifest.digest_of(path) not in (entry.digest, entry.previous):
        return False
    header = digests.comment_style(path).line(digests.GENERATED_TEXT).encode()
    with path.open("rb") as stream:  # a file of the user's own that a bad merge listed is no output of ours
        return stream.read(len(header)) == header


def module_name(spec_file: Path) -> str:
    """The generated module's name: `Module(name=...)` if given literally, else the file stem.

    Read from the syntax tree so that `check` can map specs to outputs without
    executing them. Parsing a spec of thousands of patterns costs more than the
    rest of `check`, so the name is kept by the file's name and content (and this code's)
    in the cache (cache.MODULE_NAMES); a kept name that is wrong can only make a
    run fail, never write elsewhere: a build compares it with the executed spec's.
    """
    source = spec_file.read_bytes()
    names = cache.Cache(spec_file.parent.parent, cache.MODULE_NAMES)
    # The file's name too: without Module(name=...) it is the module's, so a renamed file or a twin is another.
    key = names.key(_module_name_code(), spec_file.name, source)
    kept = names.get(key)
    if kept is not None:
        with contextlib.suppress(UnicodeDecodeError):
            return kept.decode("utf-8", "surrogatepass")
    name = _parsed_module_name(spec_file)
    names.put(key, name.encode("utf-8", "surrogatepass"))
    names.prune(_KEPT_MODULE_NAMES)
    return name


def _parsed_module_name(spec_file: Path) -> str:
    try:
        calls = syntax.index(spec_file).calls
    except SyntaxError:
        return spec_file.stem
    for node in calls:
        if getattr(node.func, "id", None) == "Module":
            for keyword in node.keywords:
                if keyword.arg == "name" and isinstance(keyword.value, ast.Constant):
                    return str(keyword.value.value)
    return spec_file.stem


@functools.cache
def _module_name_code() -> bytes:
    """The code that reads a module name: kept names made by other code are not used."""
    generator = Path(__file__).parent.parent
    return b"".join((generator / name).read_bytes() for name in ("freshness/planning.py", "loading/syntax.py")) + b"\0"


def kept_lint_findings(root: Path, targets: list[Target]) -> list[str] | None:
    """The spec lint's findings for the current inputs, if kept (cache.LINT), else None.

    The findings are a pure function of the spec and generator files that the
    targets' inputs cover, plus the lint's own code; executing the spec to
    recompute them is most of what `check` would otherwise spend.
    """
    kept = cache.Cache(root, cache.LINT).get(_lint_key(targets), _LINT_ENTRY)
    try:
        findings = json.loads(kept) if kept is not None else None
    except ValueError:  # not UTF-8, or not JSON: the lint runs again
        return None
    if not isinstance(findings, list) or not all(isinstance(f, str) for f in findings):
        return None
    return findings


def keep_lint_findings(root: Path, targets: list[Target], findings: list[str]) -> None:
    """Keep the findings for the current inputs in place of any others (an unwritable cache costs time only)."""
    lints, key = cache.Cache(root, cache.LINT), _lint_key(targets)
    payload = json.dumps(findings, indent=1).encode()
    if lints.get(key, _LINT_ENTRY) != payload:
        lints.put(key, payload, _LINT_ENTRY)


def _lint_key(targets: list[Target]) -> bytes:
    lint_code = (Path(__file__).parent.parent / "building" / "lint.py").read_bytes()
    return cache.key(cache.LINT, lint_code, *(t.inputs for t in targets))
