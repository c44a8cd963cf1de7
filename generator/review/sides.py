"""The two sides of a `diff`: what each one builds, and where its spec writes each pattern.

A side of a revision diff is the working tree or a git revision (`Side`,
`parse_revisions`). Its backends are found in its generated modules (every
`get_*_backend_config` they export, `side_backends`), and its patterns are traced
to spec lines by loading that side's spec (`spec_locations`, found in a child
process by `locations_of`). Against a reference builder, one side is the
generated builders the spec names (review/references.py), each built from its
generated module (`import_generated`, compiled once per text).

Before comparing, the newer side's generated/ is checked against that side's own
spec (`stale_files`): in the working tree as `check` does, at a revision from
the revision's manifest and files, without executing its spec.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import io
import subprocess
import sys
import tarfile
import tempfile
import types
from dataclasses import dataclass
from importlib.util import MAGIC_NUMBER
from pathlib import Path

from generator import digests, process, project, user_code
from generator.building.expansion import Declaration
from generator.errors import (
    GeneratedModuleError,
    GeneratorError,
    GitError,
    NothingToCompareError,
)
from generator.freshness import manifest, planning
from generator.loading import compiled
from generator.model import Backend, ModuleSpec, SourceLocation

WORKING_TREE = "working tree"


@dataclass(frozen=True)
class Side:
    """generated/ in the working tree (revision None) or at a git revision."""

    root: Path
    revision: str | None

    @property
    def title(self) -> str:
        return self.revision or WORKING_TREE

    @property
    def generated(self) -> str:
        """The generated folder, as the working tree's pyproject.toml places it."""
        return project.config(self.root).generated

    def module_names(self) -> list[str]:
        if self.revision is None:
            return sorted(p.stem for p in (self.root / self.generated).glob("*.py") if not p.name.startswith("_"))
        try:
            listed = _git(self.root, "ls-tree", "--full-tree", "--name-only", self.path(self.generated + "/"))
        except GitError:
            return []  # the revision exists (require_generated checked) but has no generated/
        names = [n.rpartition("/")[2] for n in listed.split()]
        return sorted(n[:-3] for n in names if n.endswith(".py") and not n.startswith("_"))

    def source(self, module: str) -> str:
        if self.revision is None:
            return digests.lenient_text(self.root / self.generated / f"{module}.py")
        return _git(self.root, "show", self.path(f"{self.generated}/{module}.py"))

    def sources(self) -> dict[str, str]:
        """The source of every generated module, by module name (at a revision, read by one git process)."""
        names = self.module_names()
        if self.revision is None:
            return {name: self.source(name) for name in names}
        return dict(zip(names, _git_blobs(self.root, [self.path(f"{self.generated}/{name}.py") for name in names])))

    def path(self, relative: str) -> str:
        """`REV:./relative`: a project path at the revision, wherever the project sits in its repository.

        `./` makes git read the path from the project root (the folder `git -C`
        runs in), not from the repository's top level: the project may be a
        subfolder of a bigger repository (a monorepo, vendor/backend-configs/).
        """
        return f"{self.revision}:./{relative}"


@dataclass(frozen=True)
class SideBackend:
    """A backend as one side builds it."""

    label: str
    name: str
    module: str
    config: object  # torch's BackendConfig
    names: dict[int, str]  # id(dtype config) -> its name in the module


def parse_revisions(root: Path, rev: str | None) -> tuple[Side, Side]:
    """`A..B`: A against B; `REV`: REV against the working tree; None: HEAD against the working tree."""
    if rev is None:
        return Side(root, "HEAD"), Side(root, None)
    if not rev or "..." in rev or rev.count("..") > 1:
        raise GitError(f"--rev takes a revision REV or a range A..B, not {rev!r}")
    if ".." in rev:
        old, _, new = rev.partition("..")
        return Side(root, old or "HEAD"), Side(root, new or "HEAD")
    return Side(root, rev), Side(root, None)


def require_generated(side: Side) -> None:
    """A side without generated modules leaves nothing to compare."""
    if side.revision is not None:
        try:
            _git(side.root, "rev-parse", "--verify", "--quiet", f"{side.revision}^{{commit}}")
        except GitError:
            raise GitError(_why_no_revision(side)) from None
    if not side.module_names():
        where = f"{side.revision} has" if side.revision else f"{side.root} has"
        raise NothingToCompareError(f"nothing to compare: {where} no generated modules in {side.generated}/")


def _why_no_revision(side: Side) -> str:
    """What is wrong when a side's revision is not found: no repository, no commit yet, or the name."""
    try:
        _git(side.root, "rev-parse", "--git-dir")
    except GitError:
        return f"{side.root} is in no git repository, so there is no {side.revision}; diff needs a git checkout"
    try:
        _git(side.root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    except GitError:
        return f"the git repository at {side.root} has no commit yet, so there is no {side.revision}; commit first"
    message = f"{side.revision} is not a revision of the git repository at {side.root}"
    try:
        refs = _git(side.root, "for-each-ref", "--format=%(refname:short)", "refs/heads", "refs/tags", "refs/remotes")
    except GitError:
        return message
    close = difflib.get_close_matches(side.revision, sorted(set(refs.split())), n=3)
    return message + (f"; did you mean {' or '.join(close)}?" if close else "")


def _git(root: Path, *args: str) -> str:
    result = subprocess.run(["git", "-C", str(root), *args], capture_output=True, encoding="utf-8", errors="replace")
    if result.returncode != 0:
        message = result.stderr.strip().splitlines()
        raise GitError(f"git {' '.join(args)} failed: {message[0] if message else 'unknown revision'}")
    return result.stdout


def _git_blobs(root: Path, objects: list[str]) -> list[str]:
    """The text of each object (`REV:path`), read by one git process rather than one each."""
    done = subprocess.run(
        ["git", "-C", str(root), "cat-file", "--batch"], input="".join(f"{o}\n" for o in objects).encode(),
        capture_output=True,
    )
    texts, data = [], done.stdout
    for wanted in objects:
        header, _, data = data.partition(b"\n")
        parts = header.split()
        if done.returncode != 0 or len(parts) != 3 or parts[1] != b"blob":
            raise GitError(f"git cat-file could not read {wanted}")
        size = int(parts[2])
        texts.append(data[:size].decode("utf-8", errors="replace"))  # a non-UTF-8 file is no generated module
        data = data[size + 1 :]
    return texts


def locations_of(side: Side, wanted: bool) -> process.Forked:
    """The side's spec lines and declared differences (`_side_locations`), found in a child process; none when
    not `wanted`."""
    return process.Forked(_side_locations, side) if wanted else process.Forked(_nothing_known, fork=False)


def _nothing_known() -> tuple[dict, dict]:
    return {}, {}


def side_backends(side: Side, sources: dict[str, str], skipped: set[str]) -> dict[str, SideBackend]:
    """Every backend the side's generated modules build, by label, but for the `skipped` modules."""
    found = {}
    for module_name, source in sources.items():
        if module_name in skipped:
            continue
        if not source.startswith(digests.GENERATED_LINE):
            continue  # a file of the user's own in generated/: not a module to compare
        where = f"{side.generated}/{module_name}.py" + (f" at {side.revision}" if side.revision else "")
        with user_code.running(GeneratedModuleError, where, side.root, SourceLocation(where, 1)):
            try:
                module = _module_from_source(f"generated_{module_name}", source, where)
            except Exception as error:
                revision = f"{side.revision}:" if side.revision else ""
                raise GeneratedModuleError(
                    f"{revision}{side.generated}/{module_name}.py fails to import: {type(error).__name__}: {error}; "
                    f"compare other revisions, or regenerate and commit at {side.title}"
                ) from None
        names, labels = dtype_names(module), given_labels(module)
        for function in getattr(module, "__all__", vars(module)):
            if function.startswith("get_") and function.endswith("_backend_config"):
                with user_code.running(GeneratedModuleError, f"{where}: {function}()", side.root):
                    config = getattr(module, function)()
                label = labels.get(function) or Backend(config.name, function, "", ()).label
                found[label] = SideBackend(label, config.name, module_name, config, names)
    return found


def lost_building(old: Side, new: Side) -> GeneratedModuleError:
    """The error for a diff whose process ended without a result: the first generated module that ends its
    process when it is built alone, in a process of its own (it has no line to blame: its file's first)."""
    for side in (old, new):
        for name, source in side.sources().items():
            where = f"{side.generated}/{name}.py"
            shown = where + (f" at {side.revision}" if side.revision else "")
            message = (
                f"{shown}: its process ended without a result (a generated module must not end its process, fork "
                "or leave threads that exit: regenerate it, or compare other revisions)"
            )
            error = GeneratedModuleError(message, SourceLocation(where, 1))
            try:
                process.isolated(_builds, side, name, source, lost=lambda error=error: error)
            except GeneratorError as found:  # another error of the module's is said when it is compared
                if found is error:
                    return error
    return GeneratedModuleError(
        "diff: its process ended without a result (a generated module, or code it calls, must not end its process)"
    )


def _builds(side: Side, name: str, source: str) -> None:
    side_backends(side, {name: source}, set())


def given_labels(module: types.ModuleType) -> dict[str, str]:
    """{builder: label} of a generated module's builders whose spec gives the label (`Backend(label=...)`):
    the module records them, since their BackendConfig's name does not tell it."""
    labels = getattr(module, "__backend_labels__", None)
    if not isinstance(labels, dict):
        return {}
    return {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}


def _side_locations(side: Side) -> tuple[dict[str, dict[str, str]], dict[str, tuple[Declaration, ...]]]:
    """(spec lines, {label: the differences its spec declares from its reference builder}) of the side."""
    if side.revision is None:  # the working tree: its unchanged spec files' loads are in the model cache
        return _located(spec_modules(side.root, reuse=True))
    with tempfile.TemporaryDirectory(prefix="generator-review-") as folder:
        if not _extract(side, Path(folder), _top_level(side.root, "specs")):
            return {}, {}  # the revision has no spec/: its patterns keep no spec lines
        # A revision's spec file that reads what a kept load read (most of them, after a one-file edit)
        # is not executed again either.
        return _located(spec_modules(Path(folder), reuse=True, cache_of=side.root))


def _located(modules) -> tuple[dict[str, dict[str, str]], dict[str, tuple[Declaration, ...]]]:
    declared = {e.backend.label: e.declarations for m in modules or () for e in m.backends if e.declarations}
    return _locations(modules or []), declared


def _extract(side: Side, folder: Path, paths: tuple[str, ...]) -> bool:
    """Write the revision's files under the given top-level paths into `folder`; False when it has none."""
    # --full-tree: in a subfolder of the repository, ls-tree would otherwise also filter by that subfolder.
    try:
        top = _git(side.root, "ls-tree", "--full-tree", "--name-only", side.path("")).splitlines()
    except GitError:
        return False  # the project's folder did not exist at that revision
    present = [p for p in paths if p in top]
    if not present:
        return False
    archive = subprocess.run(
        ["git", "-C", str(side.root), "archive", "--format=tar", side.revision, *present], capture_output=True
    )
    if archive.returncode != 0:
        return False
    try:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(folder, filter=_links_as_committed)
    except tarfile.TarError as error:
        raise GitError(f"cannot check out {side.revision}'s {', '.join(present)}: {error}") from None
    return True


def _top_level(root: Path, key: str) -> tuple[str, ...]:
    """The top-level folder of the project that holds one of its configured folders (`spec`)."""
    return (getattr(project.config(root), key).split("/")[0],)


def _links_as_committed(member: tarfile.TarInfo, destination: str) -> tarfile.TarInfo:
    """tarfile's "data" filter, except that a symlink pointing outside (e.g. to an absolute path)
    is made as committed: the working tree follows the same link, and spec code runs anyway."""
    try:
        return tarfile.data_filter(member, destination)
    except (tarfile.AbsoluteLinkError, tarfile.LinkOutsideDestinationError):
        if member.issym():
            return member
        raise


# ---------------------------------------------------------------------------
# Generated modules, as a diff runs them
# ---------------------------------------------------------------------------


def import_generated(root: Path, name: str) -> types.ModuleType:
    """The working tree's generated/NAME.py, run as a fresh module (its code compiled once per text)."""
    layout = project.config(root)
    relative = layout.output(name)
    path = root / relative
    if not path.exists():
        raise NothingToCompareError(f"nothing to compare: {relative} does not exist")
    try:
        code = _compiled(path.read_text(encoding="utf-8"), str(path), root, name)
        return _module_from_code(layout.import_name(name), str(path), code)
    except Exception as error:
        raise GeneratedModuleError(f"{relative} fails to import: {type(error).__name__}: {error}") from None


def _module_from_source(name: str, source: str, filename: str) -> types.ModuleType:
    """Run a generated module's source as a fresh module (not cached in sys.modules)."""
    return _module_from_code(name, filename, compile(source, filename, "exec"))


def _module_from_code(name: str, filename: str, code: types.CodeType) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = filename
    exec(code, vars(module))  # noqa: S102 - our own generated code
    return module


def _compiled(source: str, filename: str, root: Path, module: str) -> types.CodeType:
    """The module's code; kept in `root`'s cache (loading/compiled.py) under a digest of the text, the file
    name and the Python that compiled it: compiling every generated module takes a tenth of a second, and
    the same ones are compared run after run. An entry of another text, another Python, or corrupt is
    compiled again, so the cache can make a diff faster, never different."""
    parts = (sys.version, MAGIC_NUMBER.hex(), filename, source)
    return compiled.cached(root, f"generated_{module}", parts, lambda: compile(source, filename, "exec"))


def dtype_names(module: types.ModuleType) -> dict[int, str]:
    """{id(dtype config): its name} of the dtype configs a generated module assigns to names."""
    from torch.ao.quantization.backend_config import DTypeConfig

    return {id(value): name for name, value in vars(module).items() if isinstance(value, DTypeConfig)}


# ---------------------------------------------------------------------------
# Reference builders: the generated builders the spec names, and what each is compared with
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# Is the newer side's generated/ what its own spec says?
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class StaleFile:
    """A generated file that is not what its side's spec says: 'missing', 'stale' or 'edited', and why."""

    file: str
    state: str
    reasons: tuple[str, ...] = ()
    cause: str | None = None  # the project file (a spec file) whose change makes it stale, where one did
    as_recorded: bool = False  # its bytes are what the manifest records (stale by its inputs alone)


def stale_files(side: Side) -> list[StaleFile]:
    """The side's generated files that regenerate would change, decided from digests (at a revision, a file
    whose bytes are as recorded but whose project inputs changed since is built there to compare).

    In the working tree, a file whose spec was never regenerated is stale
    (missing); one the manifest records but that is gone leaves nothing to
    compare. At a revision, the revision's own spec, templates, generator code
    and generated files are compared with its manifest; the black and Jinja2
    versions it recorded are taken as given (they are not the revision's files),
    and a revision without a manifest is not judged.
    """
    if side.revision is None:
        return _stale_in(side.root, manifest.read(side.root), revision=None)
    with tempfile.TemporaryDirectory(prefix="generator-review-") as folder:
        tree = Path(folder)
        _extract(side, tree, (project.PYPROJECT,))  # the revision's layout, read from its own pyproject.toml
        layout = project.config(tree)
        folders = (layout.specs, layout.templates, layout.generated, layout.matrix)
        _extract(side, tree, tuple(sorted({"generator", *(f.split("/")[0] for f in folders if f)})))
        recorded = manifest.read(tree)
        if recorded is None or not project.spec_folder(tree).is_dir():
            return []
        # The other files its spec loads read (helper modules anywhere in the project).
        elsewhere = {name.split("/")[0] for name in recorded.inputs} - {p.name for p in tree.iterdir()}
        _extract(side, tree, tuple(sorted(elsewhere - set(digests.VERSIONED_PACKAGES))))
        stale = _stale_in(tree, recorded, revision=side.revision)
        return _changing_bytes(tree, stale)


def _changing_bytes(tree: Path, stale: list[StaleFile]) -> list[StaleFile]:
    """Of a revision's stale files, those whose bytes regenerate would change there. A file whose bytes are what
    its manifest records but whose project inputs changed since (a spec comment: regenerate writes nothing, so
    the manifest keeps the old digests) is built at the revision to compare, as `check` proves it."""
    recorded_bytes = [f for f in stale if f.as_recorded]
    if not recorded_bytes:
        return stale
    from generator.building import pipeline
    from generator.loading import loader

    targets = [t for t in planning.plan(tree) if t.relative in {f.file for f in recorded_bytes}]
    _, texts = pipeline.load_and_build(tree, targets, 1, loader.start_loads(tree, reuse=True), validate=False)
    same = {t.relative for t in targets if digests.same_text(t.output, texts[t.name])}
    return [f for f in stale if f.file not in same]


def _stale_in(root: Path, recorded: manifest.Manifest | None, revision: str | None) -> list[StaleFile]:
    found = []
    for target in planning.plan(root):
        if revision is not None:
            target = dataclasses.replace(target, made_from=_as_committed(root, target, recorded))
        status = planning.status(target, recorded)
        if status.state == "missing" and revision is None and recorded and target.relative in recorded.outputs:
            fix = "fix: python -m generator regenerate"
            raise NothingToCompareError(f"nothing to compare: {target.relative} is missing; {fix}")
        if status.state != "fresh":
            cause = stale_cause(target, recorded) if status.state == "stale" else None
            found.append(StaleFile(target.relative, status.state, status.reasons, cause, status.as_recorded))
    return found


def stale_cause(target: planning.Target, recorded: manifest.Manifest | None) -> str | None:
    """The first project file (a spec file, a helper module, a template) whose change makes the target stale."""
    entry = recorded.outputs.get(target.relative) if recorded is not None else None
    if entry is None:
        return None
    before, now = recorded.made_from(entry), dict(target.made_from)
    for name in sorted(before.keys() | now.keys()):
        project_file = not name.startswith(("generator/", "../", digests.ENVIRONMENT))
        if project_file and name not in digests.VERSIONED_PACKAGES and before.get(name) != now.get(name):
            if (target.root / name).is_file():
                return name
    return None


def _as_committed(root: Path, target: planning.Target, recorded: manifest.Manifest | None) -> tuple:
    """The target's inputs as the revision has them: its own generator code, the recorded package versions (and
    files outside the project and environment variables, which are not the revision's)."""
    entry = recorded.outputs.get(target.relative) if recorded else None
    before = recorded.made_from(entry) if entry else {}
    inputs = {}
    for name, digest in target.made_from:
        if name in digests.VERSIONED_PACKAGES or name.startswith(("../", digests.ENVIRONMENT)):
            digest = before.get(name, digest)  # not the revision's files: as it recorded them
        elif name.startswith("generator/"):
            committed = root / name
            digest = hashlib.sha256(committed.read_bytes()).hexdigest() if committed.exists() else before.get(name)
        inputs[name] = digest
    return tuple(sorted(inputs.items()))


def spec_locations(
    root: Path, loaded: list[ModuleSpec] | None = None, reuse: bool = False, cache_of: Path | None = None
) -> dict[str, dict[str, str]]:
    """{backend label: {pattern as the diff names it: spec line}}, from the spec under `root` (`loaded`, if given;
    `reuse`: loads from the model cache, `cache_of`'s if given, where the spec files are unchanged).

    A single op's line is where the op is named (in an op list shared by many
    backends, the list entry); a fused pattern's is its config() call.

    A spec the current generator cannot load (an old revision's) gives none: the
    diff then names patterns without their spec lines.
    """
    return _locations(spec_modules(root, loaded, reuse, cache_of) or [])


def spec_modules(root: Path, loaded: list[ModuleSpec] | None = None, reuse: bool = False, cache_of: Path | None = None):
    """The spec under `root` expanded (`loaded`, if given), as `spec_locations` reads it; None if it fails."""
    from generator.building import naming
    from generator.building.expansion import check_dtype_config_declarations, expand_module

    try:
        if loaded is None:
            from generator.building import pipeline

            return pipeline.load(root, validate=False, reuse=reuse, cache_of=cache_of)
        modules = [expand_module(m, root) for m in loaded]  # what pipeline.load does after loading (no Jinja2, black)
        check_dtype_config_declarations(modules)
        naming.check_module_names(root, modules)
        return modules
    except GeneratorError:
        return None


def _locations(modules) -> dict[str, dict[str, str]]:
    from generator.spelling import python_source

    return {
        expanded.backend.label: {
            **_dtype_config_lines(module),
            **{
                python_source(c.pattern if c.pattern is not None else c.key): str(_origin(c))
                for c in expanded.backend.configs
                if _origin(c) is not None
            },
        }
        for module in modules
        for expanded in module.backends
    }


def _dtype_config_lines(module) -> dict[str, str]:
    """`dtype config NAME` and `dtype config NAME.SIDE` (a constrained side): their spec lines."""
    from generator.model import DTYPE_SIDES, DTypeWithConstraints

    lines = {}
    for dtype_config in module.dtype_configs:
        if dtype_config.location is not None:
            lines[f"dtype config {dtype_config.name}"] = str(dtype_config.location)
        for side in DTYPE_SIDES:
            constraint = getattr(dtype_config, side)
            if isinstance(constraint, DTypeWithConstraints) and constraint.location is not None:
                lines[f"dtype config {dtype_config.name}.{side}"] = str(constraint.location)
    return lines


def _origin(config) -> SourceLocation | None:
    """Where the spec writes the pattern: the config() call, unless it is a single op named
    before it (an op list's entry, which is what a spec change edits)."""
    pattern = config.pattern if config.pattern is not None else config.key
    named = getattr(pattern, "location", None)
    call = config.location
    if named is None or call is None:
        return call or named
    before = named.file != call.file or named.line < call.line
    return named if before else call
