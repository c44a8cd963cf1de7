"""Command line: `python -m generator regenerate | check | matrix | diff`.

Exit codes are decided in one place, `EXIT_CODES`: 0 when all is well, 1 when
generated files differ from what regenerate would write, 2 for errors (a bad
spec, a broken template, ...). Errors print as one line and change no file.

The building stages (pipeline: Jinja2, black, sometimes torch) are imported
inside the commands that use them, so that `check` on an up-to-date tree runs
on planning alone.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import json
import os
import sys
import warnings
from pathlib import Path

from generator import digests, errors, manifest, planning, writing

OK, DIFFERENT, ERROR = 0, 1, 2
INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for Ctrl-C
CLOSED_OUTPUT = 141  # 128 + SIGPIPE, what `yes | head -1` reports for `yes`
EXIT_CODES: dict[type[errors.GeneratorError], int] = {
    errors.SpecSyntaxError: ERROR,
    errors.SpecExecutionError: ERROR,
    errors.SpecFieldError: ERROR,
    errors.EmptyAxisError: ERROR,
    errors.UnknownTorchNameError: ERROR,
    errors.TorchKindError: ERROR,
    errors.DuplicateOutputError: ERROR,
    errors.DuplicateBackendError: ERROR,
    errors.DeclarationWithoutReferenceError: ERROR,
    errors.NameClashError: ERROR,
    errors.EmptyBackendError: ERROR,
    errors.TemplateRenderError: ERROR,
    errors.FormattingError: ERROR,
    errors.OutputCheckError: ERROR,
    errors.LintError: ERROR,
    errors.GitError: ERROR,
    errors.BuilderImportError: ERROR,
    errors.BuilderCallError: ERROR,
    errors.NotABackendConfigError: ERROR,
    errors.UnnamedCallableError: ERROR,
    errors.SpecExistsError: ERROR,
    errors.ImportNameError: ERROR,
    errors.UnknownBackendError: ERROR,
    errors.NothingToCompareError: ERROR,
    errors.NotAProjectError: ERROR,
    errors.NoSpecFilesError: ERROR,
    errors.WriteError: ERROR,
    errors.FileAccessError: ERROR,
    errors.InternalError: ERROR,
    errors.Interrupted: INTERRUPTED,
    errors.ReferenceBuilderError: ERROR,
    errors.GeneratedModuleError: ERROR,
}
INTERRUPTED_MESSAGE = "interrupted; every file is its old or its new version"
FIX_COMMAND = "python -m generator regenerate"


class Console:
    """Prints to stdout/stderr, in colour only when the stream is a terminal."""

    COLOURS = {"red": "31", "green": "32", "yellow": "33", "bold": "1"}

    def __init__(self, out=None, err=None):
        self.out = out or sys.stdout
        self.err = err or sys.stderr

    def paint(self, text: str, colour: str, stream) -> str:
        if not stream.isatty() or os.environ.get("NO_COLOR"):
            return text
        return f"\033[{self.COLOURS[colour]}m{text}\033[0m"

    def say(self, text: str, colour: str | None = None) -> None:
        print(self.paint(text, colour, self.out) if colour else text, file=self.out)

    def warn(self, text: str) -> None:
        print(self.paint(f"warning: {text}", "yellow", self.err), file=self.err)

    def error(self, text: str) -> None:
        print(self.paint(f"error: {text}", "red", self.err), file=self.err)


def lint_findings(root: Path, targets, modules) -> list[str]:
    """The spec lint's findings, cached; `modules` are the expanded spec if already loaded."""
    cache_file = planning.lint_cache_file(root, targets)
    if modules is None and cache_file.exists():
        return json.loads(cache_file.read_text())
    from generator import lint, pipeline

    findings = [str(f) for f in lint.lint(modules if modules is not None else pipeline.load(root, validate=False))]
    try:
        for old in cache_file.parent.glob("lint-*.json"):
            old.unlink(missing_ok=True)
        writing.write_if_changed(cache_file, json.dumps(findings, indent=1))
    except (OSError, errors.WriteError):
        pass  # a read-only checkout only loses the speed-up: the findings were computed
    return findings


def report_lint(console: Console, findings: list[str], strict: bool) -> None:
    if strict and findings:
        raise errors.LintError(f"{findings[0]} (--strict; {len(findings)} lint finding(s))")
    for finding in findings:
        console.warn(finding)


def cmd_regenerate(args, console: Console) -> int:
    root = args.root
    recorded = manifest.read(root)
    targets = planning.plan(root, recorded)
    stale = [t for t in targets if args.force or planning.freshness(t, recorded) != "fresh"]
    modules, texts = None, {}
    if stale:
        from generator import pipeline

        modules, texts = pipeline.load_and_build(root, stale, args.jobs)
        targets = _observed(targets, modules)
    report_lint(console, lint_findings(root, targets, modules), args.strict)
    _write(root, targets, texts, console)
    for orphan in planning.orphans(root, targets):
        orphan.unlink()
        console.say(f"{'removed':9} {orphan.relative_to(root)}", "yellow")
    return OK


def cmd_matrix(args, console: Console) -> int:
    from generator import pipeline

    root = args.root
    every = planning.plan(root)
    matrix = [t for t in every if t.is_matrix]
    texts = {}
    if args.stdout or args.force or planning.freshness(matrix[0]) != "fresh":
        modules, texts = pipeline.load_and_build(root, matrix, jobs=1)
        every = _observed(every, modules)
        matrix = [t for t in every if t.is_matrix]
    if args.stdout:
        console.out.write(texts[planning.MATRIX])
    else:
        _write(root, matrix, texts, console, every=every)
    return OK


def _observed(targets, modules) -> list:
    """The targets with the inputs that this run's loads of their spec files read."""
    return planning.observed(targets, {m.spec.spec_file: dict(m.spec.read) for m in modules})


def _write(root: Path, targets, texts: dict[str, str], console: Console, every=None) -> None:
    """Write the targets' new texts, then the manifest; `every` is all targets (default: `targets`).

    The manifest is written twice when a file changes: first with each replaced
    file's old digest (so that a run killed among the outputs leaves files that
    check calls either fresh or stale, never edited by hand), last without.
    """
    for directory in {t.output.parent for t in targets} | {(root / manifest.PATH).parent}:
        writing.remove_stale_temporaries(directory)
    recorded = manifest.read(root)
    new_texts = {t.relative: texts[t.name] for t in targets if t.name in texts}
    current = {t.relative: dict(t.made_from) for t in (every or targets)}
    final = manifest.updated(recorded, current, {o: digests.text_digest(text) for o, text in new_texts.items()})
    replaced = {t.relative: _digest_of(t.output) for t in targets if t.relative in new_texts}
    replaced = {o: d for o, d in replaced.items() if d != final.outputs[o].digest}
    if replaced:
        writing.write_if_changed(root / manifest.PATH, manifest.pending(final, replaced).text())
    files_written = 0
    for target in targets:
        written = target.relative in new_texts and writing.write_if_changed(target.output, new_texts[target.relative])
        status = "written" if written else "unchanged"
        console.say(f"{status:9} {target.output.relative_to(root)}", "green" if written else None)
        files_written += written
        writing.pause_if_asked(files_written)
    if writing.write_if_changed(root / manifest.PATH, final.text()):
        console.say(f"{'written':9} {manifest.PATH.as_posix()}", "green")


def _digest_of(path: Path) -> str | None:
    return digests.text_digest(path.read_text()) if path.exists() else None


def cmd_check(args, console: Console) -> int:
    root = args.root
    recorded = manifest.read(root)
    targets = planning.plan(root, recorded)
    modules, texts = None, None
    if args.full:
        from generator import pipeline

        modules, texts = pipeline.load_and_build(root, targets, args.jobs)
    report_lint(console, lint_findings(root, targets, modules), args.strict)
    statuses = {t.name: planning.status(t, recorded) for t in targets}
    if texts is not None:
        statuses = _full_comparison(targets, texts, statuses)
    problems = {name: status for name, status in statuses.items() if status.state != "fresh"}
    orphaned = planning.orphans(root, targets)
    # --full knows what the loads read: the manifest must record exactly that.
    observed = _observed(targets, modules) if modules is not None else targets
    manifest_problem = None if problems else _manifest_problem(root, observed, recorded, texts)
    if not problems and not orphaned and manifest_problem is None:
        console.say(f"{len(targets)} generated files are up to date", "green")
        return OK
    # The slow path (torch names, black) runs only once something is wrong, to show the fix.
    if texts is None and problems:
        from generator import pipeline

        wrong = [t for t in targets if t.name in problems]
        _, texts = pipeline.load_and_build(root, wrong, args.jobs)
    _explain(root, targets, problems, orphaned, console, texts or {})
    if manifest_problem is not None:
        _explain_manifest(root, manifest_problem, console)
    console.say(f"fix: {FIX_COMMAND}", "bold")
    return DIFFERENT


def _full_comparison(targets, texts: dict[str, str], statuses: dict) -> dict:
    """Byte comparison with a fresh render; the manifest explains any difference."""
    found = {}
    for target in targets:
        current = target.output.read_text() if target.output.exists() else None
        status = statuses[target.name]
        if current == texts[target.name]:
            found[target.name] = planning.Status("fresh")
        elif status.state == "fresh":
            found[target.name] = planning.Status("edited", ("its content is not what regenerate writes",))
        else:
            found[target.name] = status
    return found


def _manifest_problem(root: Path, targets, recorded, texts) -> str | None:
    """The manifest regenerate would write, when it differs from the one on disk (all outputs fresh)."""
    written = {t.relative: digests.text_digest(texts[t.name]) for t in targets} if texts else {}
    expected = manifest.updated(recorded, {t.relative: dict(t.made_from) for t in targets}, written).text()
    path = root / manifest.PATH
    return None if path.exists() and path.read_text() == expected else expected


def _explain(root, targets, problems, orphaned, console: Console, texts: dict[str, str]) -> None:
    for target in targets:
        if target.name not in problems:
            continue
        relative = str(target.output.relative_to(root))
        status = problems[target.name]
        reasons = f": {'; '.join(status.reasons)}" if status.reasons else ""
        console.say(f"{relative}: {REASONS[status.state]}{reasons}", "red")
        current = target.output.read_text().splitlines(keepends=True) if target.output.exists() else []
        regenerated = texts[target.name].splitlines(keepends=True)
        console.out.writelines(difflib.unified_diff(current, regenerated, relative, f"{relative} (regenerated)"))
    for orphan in orphaned:
        console.say(f"{orphan.relative_to(root)}: its spec file is gone", "red")


def _explain_manifest(root: Path, expected: str, console: Console) -> None:
    path = root / manifest.PATH
    relative = manifest.PATH.as_posix()
    current = path.read_text().splitlines(keepends=True) if path.exists() else []
    console.say(f"{relative}: {'stale: it does not record what regenerate wrote' if current else 'missing'}", "red")
    regenerated = expected.splitlines(keepends=True)
    console.out.writelines(difflib.unified_diff(current, regenerated, relative, f"{relative} (regenerated)"))


REASONS = {"missing": "missing", "stale": "stale", "edited": "edited by hand"}


def cmd_diff(args, console: Console) -> int:
    from generator import review_formats, reviewing

    root = args.root
    if args.against_torch:
        old, new = "torch", "generated"
        if _stale_notice(reviewing.Side(root, None), args.format, old, new, console):
            return DIFFERENT
        from generator import spec_loading

        refs = reviewing.builders(spec_loading.load_modules(root), args.backends)
        results = list(reviewing.against_torch(root, refs))
        uncompared = reviewing.unreferenced(refs)
        if not results:  # nothing has a reference: say so, and that is no difference
            console.out.write(review_formats.render(args.format, results, old, new, uncompared))
            return OK
    else:
        uncompared = []
        old_side, new_side = reviewing.parse_revisions(root, args.rev)
        for side in (old_side, new_side):
            reviewing.require_generated(side)
        old, new = old_side.title, new_side.title
        if _stale_notice(new_side, args.format, old, new, console):
            return DIFFERENT
        results = list(reviewing.against_revision(old_side, new_side, args.backends))
    if not results:
        raise errors.NothingToCompareError("nothing to compare: no backend on either side")
    console.out.write(review_formats.render(args.format, results, old, new, uncompared))
    return DIFFERENT if any(r.status != "same" for r in results) else OK


def _stale_notice(side, fmt: str, old: str, new: str, console: Console) -> bool:
    """Say, in the diff's format, when the side's generated/ is not what its spec says; True when so.

    A diff of such a generated/ would mislead: it would not show the spec's change.
    """
    from generator import review_formats, reviewing

    stale = reviewing.stale_files(side)
    if not stale:
        return False
    fix = FIX_COMMAND
    if side.revision is not None:
        fix = f"check out {side.revision}, run {FIX_COMMAND} and commit the result"
    console.out.write(review_formats.stale(fmt, stale, old, new, fix))
    return True


def cmd_import(args, console: Console) -> int:
    from generator import importing, spec_source, user_code

    root = args.root
    name = args.name or importing.default_name(importing.split_target(args.target)[1])
    if not importing.valid_spec_name(name):
        raise errors.ImportNameError(f"{name!r} cannot name a spec file: use a lower-case identifier (--name)")
    path = root / "spec" / f"{name}.py"
    if path.exists() and not args.force:
        raise errors.SpecExistsError(f"{path.relative_to(root)} exists; give --force to overwrite it or --name")
    builder, module, backend_config = importing.load_builder(args.target, root)
    # Reading the config calls the builder's own callables (fuser methods): an exit there must not end the run.
    with user_code.running(errors.BuilderCallError, f"reading {args.target}()", root, exceptions=False):
        spec = importing.read_backend_config(name, args.target, builder, module, backend_config, root / "templates")
        if not args.no_compact:
            from generator import compaction

            spec = compaction.compact(spec, root)
    _refuse_a_taken_backend_name(root, path, spec.backend)
    writing.write_if_changed(path, spec_source.spec_source(spec))
    console.say(f"{'written':9} {path.relative_to(root)}: {len(spec.backend.configs)} patterns", "green")
    console.say(f"next: {FIX_COMMAND}")
    return OK


def _refuse_a_taken_backend_name(root: Path, path: Path, backend) -> None:
    """regenerate requires backend names unique across spec/: never write a spec it would refuse."""
    from generator import spec_loading

    try:
        others = spec_loading.load_modules(root, exclude=path)
    except errors.GeneratorError:
        return  # the other spec files are broken already: regenerate names that, whatever import writes
    for other in (b for m in others for b in m.backends):
        taken = sorted({other.name, other.label} & {backend.name, backend.label})
        if taken:
            raise errors.DuplicateBackendError(
                f"backend name {taken[0]!r} is already used by the backend at {other.location}; backend names "
                f"must be unique across spec/, so replace that file (--name {Path(other.location.file).stem} "
                "--force) or import into a project without it"
            )


def positive_int(text: str) -> int:
    """argparse type for counts such as --jobs: a usage error unless 1 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not 1 or more")
    return value


def build_parser() -> argparse.ArgumentParser:
    root_help = "project root, the folder holding spec/ (default: current directory)"
    parser = argparse.ArgumentParser(
        prog="python -m generator",
        description="Expand spec/ into flat, explicit BackendConfig modules in generated/.",
    )
    parser.add_argument("--root", type=Path, default=Path.cwd(), help=root_help)
    # --root is accepted after the command too; SUPPRESS keeps an absent one from
    # overwriting the value given before the command.
    after = argparse.ArgumentParser(add_help=False)
    after.add_argument("--root", type=Path, default=argparse.SUPPRESS, help=root_help)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_command = functools.partial(commands.add_parser, parents=[after])
    regenerate = add_command(
        "regenerate", help=f"write generated/ and {planning.MATRIX_OUTPUT} from spec/ (only what changed)"
    )
    regenerate.add_argument("--force", action="store_true", help="re-render every module, even unchanged ones")
    check = add_command("check", help="exit 1 if a generated file is stale, missing or hand-edited")
    check.add_argument("--full", action="store_true", help="re-render everything and compare bytes")
    for command in (regenerate, check):
        command.add_argument("--strict", action="store_true", help="treat lint warnings as errors")
        command.add_argument("--jobs", type=positive_int, default=os.cpu_count() or 1, help="processes for black")
    matrix = add_command("matrix", help=f"write {planning.MATRIX_OUTPUT}: patterns x backends -> dtype configs")
    matrix.add_argument("--force", action="store_true", help="re-render even when it is up to date")
    matrix.add_argument("--stdout", action="store_true", help="print the matrix instead of writing it")
    matrix.set_defaults(handler=cmd_matrix)
    diff = add_command(
        "diff", help="per-pattern semantic diff of generated/: working tree vs HEAD, revisions, or against torch"
    )
    side = diff.add_mutually_exclusive_group()
    side.add_argument("--against-torch", action="store_true", help="generated builders against torch's builders")
    side.add_argument(
        "--rev", metavar="REV", help="A..B: revision A against revision B; REV: REV against the working tree "
        "(default: HEAD against the working tree)"
    )
    diff.add_argument("--format", choices=("text", "markdown", "json"), default="text", help="output format")
    diff.add_argument(
        "backends", nargs="*", metavar="BACKEND", help="backend or module names, e.g. fbgemm onednn (default: all)"
    )
    diff.set_defaults(handler=cmd_diff)
    importer = add_command("import", help="write spec/<name>.py from an existing builder MODULE:FUNCTION")
    importer.add_argument("target", metavar="MODULE:FUNCTION", help="e.g. my_backend.config:get_my_backend_config")
    importer.add_argument("--name", help="spec file name (default: FUNCTION without get_ and _backend_config)")
    importer.add_argument("--force", action="store_true", help="overwrite an existing spec file")
    importer.add_argument(
        "--no-compact", action="store_true", help="write every pattern, not spec/_common.py's op-group calls"
    )
    importer.set_defaults(handler=cmd_import)
    regenerate.set_defaults(handler=cmd_regenerate)
    check.set_defaults(handler=cmd_check)
    return parser


def require_project(root: Path, command: str) -> None:
    """Refuse to run anywhere but a project root, before anything is read or written.

    A spec/ without spec files is refused too (but by `import`, which writes the
    first one): regenerate would otherwise delete every generated module.
    """
    if not (root / "spec").is_dir():
        raise errors.NotAProjectError(
            f"{root} is not a project root: it has no spec/ folder; run in the project's folder or pass --root DIR"
        )
    if command != "import" and not planning.spec_files(root):
        raise errors.NoSpecFilesError(
            f"{root / 'spec'} has no spec files (spec/NAME.py with MODULE = Module(...)); write one, "
            "or start from a builder with python -m generator import MODULE:FUNCTION"
        )


def main(argv: list[str] | None = None) -> int:
    """Run one command; every failure is one line on stderr and an exit code, never a traceback."""
    # torch warns on import when NumPy is absent; nothing here needs NumPy.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    console = Console()
    try:
        args = build_parser().parse_args(argv)
        args.root = args.root.resolve()
        require_project(args.root, args.command)
        code = args.handler(args, console)
        console.out.flush()  # a closed stdout fails here, not at interpreter exit
        return code
    except errors.GeneratorError as error:
        return fail(console, error)
    except KeyboardInterrupt:
        return fail(console, errors.Interrupted(INTERRUPTED_MESSAGE))
    except BrokenPipeError:
        # The reader (e.g. `| head`) has all it wanted: exit quietly, and keep Python
        # from reporting the failed flush of stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return CLOSED_OUTPUT
    except OSError as error:
        where = f"{error.filename}: " if error.filename else ""
        return fail(console, errors.FileAccessError(f"{where}{error.strerror or error}"))
    except Exception as error:  # a bug: the user still gets one line, a developer can ask for more
        if os.environ.get("GENERATOR_TRACEBACK"):
            raise
        message = f"internal error: {type(error).__name__}: {error} (GENERATOR_TRACEBACK=1 shows where; report it)"
        return fail(console, errors.InternalError(message))


def fail(console: Console, error: errors.GeneratorError) -> int:
    console.error(str(error))
    return EXIT_CODES[type(error)]
