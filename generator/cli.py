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
import codecs
import difflib
import errno
import functools
import os
import sys
import warnings
from pathlib import Path

from generator import cache, digests, errors, files, progress, project
from generator.freshness import manifest, planning

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
    errors.UnspellableBoundError: ERROR,
    errors.UnnamedBackendConfigError: ERROR,
    errors.ImportedSpecRefusedError: ERROR,
    errors.ImportWouldDropError: ERROR,
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
    errors.MissingDependencyError: ERROR,
    errors.NotImportableError: ERROR,
}
INTERRUPTED_MESSAGE = "interrupted; every file is its old or its new version"
FIX_COMMAND = "python -m generator regenerate"


class OutputStream:
    """A standard stream whose failure is one line naming it ("cannot write to standard output: ...").

    A closed pipe (BrokenPipeError) is left to main, which exits quietly.
    """

    def __init__(self, stream, name: str):
        self.stream, self.name = stream, name

    def write(self, text: str) -> None:
        self._do(self.stream.write, text)

    def writelines(self, lines) -> None:
        self._do(self.stream.writelines, lines)

    def flush(self) -> None:
        self._do(self.stream.flush)

    def isatty(self) -> bool:
        return self.stream.isatty()

    def _do(self, action, *args) -> None:
        try:
            action(*args)
        except BrokenPipeError:
            raise
        except OSError as error:
            _discard_output(self.stream)  # the failed buffer must not fail again at exit
            raise errors.WriteError(f"cannot write to {self.name}: {error.strerror or error}") from None


def _discard_output(stream) -> None:
    """Point a failed standard stream at /dev/null, so that Python's flush at exit succeeds."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # not a real file (a test's capture): nothing is flushed at exit


class ClosedStream:
    """Stands for a standard stream the shell closed (`>&-`): Python made it None."""

    def write(self, text: str) -> None:
        raise OSError(errno.EBADF, "it is closed")

    writelines = write

    def flush(self) -> None:
        pass  # nothing was written, so nothing fails at exit

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise ValueError("closed")


def tolerant_standard_streams() -> None:
    """A closed stream fails on use with one line; an unencodable character (◐ in ASCII) is escaped."""
    for fd in (0, 1, 2):  # keep a file opened later from becoming a closed stream, inherited as one
        try:
            os.fstat(fd)
        except OSError:
            os.open(os.devnull, os.O_RDWR)  # the lowest free descriptor: this one
    sys.stdout = sys.stdout if sys.stdout is not None else ClosedStream()
    sys.stderr = sys.stderr if sys.stderr is not None else ClosedStream()
    codecs.register_error("generator-output", _escape_unencodable)
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="generator-output")


def _escape_unencodable(error: UnicodeError) -> tuple:
    """A path's undecodable bytes (C locale, /tmp/n\xc3\xb6) go out as they came; other characters escaped."""
    try:
        return codecs.lookup_error("surrogateescape")(error)
    except UnicodeError:
        return codecs.backslashreplace_errors(error)


class Console:
    """Prints to stdout/stderr, in colour only when the stream is a terminal."""

    COLOURS = {"red": "31", "green": "32", "yellow": "33", "bold": "1"}

    def __init__(self, out=None, err=None):
        self.out = OutputStream(out or sys.stdout, "standard output")
        self.err = OutputStream(err or sys.stderr, "standard error")

    def paint(self, text: str, colour: str, stream) -> str:
        if not stream.isatty() or os.environ.get("NO_COLOR"):
            return text
        return f"\033[{self.COLOURS[colour]}m{text}\033[0m"

    def say(self, text: str, colour: str | None = None) -> None:
        print(self.paint(text, colour, self.out) if colour else text, file=self.out)

    def warn(self, text: str) -> None:
        print(self.paint(f"warning: {text}", "yellow", self.err), file=self.err)

    def error(self, text: str) -> None:
        try:
            print(self.paint(f"error: {text}", "red", self.err), file=self.err)
            self.err.flush()
        except (OSError, errors.WriteError):
            pass  # nowhere left to say it: the exit code still does


def lint_findings(root: Path, targets, modules) -> list[str]:
    """The spec lint's findings, cached; `modules` are the expanded spec if already loaded."""
    cached = planning.kept_lint_findings(root, targets) if modules is None else None
    if cached is not None:
        return cached
    from generator.build import lint
    from generator.build.expansion import expand_module
    from generator.loading import loader

    # Not pipeline.load: the lint needs neither Jinja2 nor black, and check must not import them.
    # Unchanged spec files' loads come from the model cache, as regenerate's do, and the loads made
    # are kept there: the build check then makes to explain a stale tree executes no spec file again.
    if modules is None:
        modules = [expand_module(m) for m in loader.load_modules(root, reuse=True, keep=True)]
    findings = [str(f) for f in lint.lint(modules)]
    planning.keep_lint_findings(root, targets, findings)
    return findings


def report_lint(console: Console, findings: list[str], strict: bool) -> None:
    if strict and findings:
        raise errors.LintError(f"{findings[0]} (--strict; {len(findings)} lint finding(s))")
    for finding in findings:
        console.warn(finding)


def cmd_regenerate(args, console: Console) -> int:
    with files.project_lock(cache.lock_file(args.root), functools.partial(_say_waiting, console)):
        return _regenerate(args, console)


def _say_waiting(console: Console) -> None:
    console.warn("another regenerate or matrix is running in this project; waiting for it to finish")


def _regenerate(args, console: Console) -> int:
    root = args.root
    recorded = manifest.read(root)
    targets = planning.plan(root, recorded)
    stale = [t for t in targets if args.force or planning.freshness(t, recorded) != "fresh"]
    modules, texts = None, {}
    if stale:
        modules, texts = build_with_progress("regenerate", root, stale, args.jobs, reuse=not args.force, keep=True)
        targets = _observed(targets, modules)
    report_lint(console, lint_findings(root, targets, modules), args.strict)
    orphans = planning.orphans(root, targets)
    report = _write(root, targets, texts, also=orphans)
    for orphan in orphans:
        orphan.unlink()
        report.append((f"{'removed':9} {orphan.relative_to(root)}", "yellow"))
    _report(console, report)
    return OK


def cmd_matrix(args, console: Console) -> int:
    if args.stdout:  # writes nothing
        return _matrix(args, console)
    with files.project_lock(cache.lock_file(args.root), functools.partial(_say_waiting, console)):
        return _matrix(args, console)


def _matrix(args, console: Console) -> int:
    root = args.root
    every = planning.plan(root)
    matrix = [t for t in every if t.is_matrix]
    texts = {}
    if args.stdout or args.force or planning.freshness(matrix[0]) != "fresh":
        modules, texts = build_with_progress("matrix", root, matrix, jobs=1)
        every = _observed(every, modules)
        matrix = [t for t in every if t.is_matrix]
    if args.stdout:
        console.out.write(texts[planning.MATRIX])
    else:
        _report(console, _write(root, matrix, texts, every=every))
    return OK


def build_with_progress(command: str, root: Path, targets, jobs: int, reuse: bool = False, keep: bool = False):
    """pipeline.load_and_build, with a progress line on a terminal: seconds when torch or black start cold.

    `reuse`: trust the recorded reads of unchanged spec files, as a plain regenerate trusts the
    manifest; --force and check --full execute every spec file. `keep`: keep the loads made for
    later runs (regenerate, --force included: it fills the caches).
    """
    from generator.build import importability, pipeline

    with progress.Progress(command) as shown:
        shown.step(f"loading spec/ to build {len(targets)} file(s)")
        built = shown.counter("built", len(targets))
        modules, texts = pipeline.load_and_build(root, targets, jobs, built=built, reuse=reuse, keep=keep)
    importability.require_importable_anywhere(modules)  # before anything is written
    return modules, texts


def _observed(targets, modules) -> list:
    """The targets with the inputs that this run's loads of their spec files read."""
    return planning.observed(targets, {m.spec.spec_file: dict(m.spec.read) for m in modules})


def _write(root: Path, targets, texts: dict[str, str], every=None, also=()) -> list:
    """Write the targets' new texts, then the manifest; `every` is all targets (default: `targets`).

    The manifest is written twice when a file changes: first with each replaced
    file's old digest (so that a run killed among the outputs leaves files that
    check calls either fresh or stale, never edited by hand), last without.
    Before any of it, every folder written (and those of the files in `also`, which
    the caller removes) must take a new file. What happened is returned as
    (line, colour) for the caller to print once the tree is whole: a full or
    closed standard output cannot stop the run halfway.
    """
    for directory in {t.output.parent for t in targets} | {(root / manifest.PATH).parent}:
        files.remove_stale_temporaries(directory)
    recorded = manifest.read(root)
    new_texts = {t.relative: texts[t.name] for t in targets if t.name in texts}
    current = {t.relative: dict(t.made_from) for t in (every or targets)}
    final = manifest.updated(recorded, current, {o: digests.text_digest(text) for o, text in new_texts.items()})
    replaced = {t.relative: _digest_of(t.output) for t in targets if t.relative in new_texts}
    replaced = {o: d for o, d in replaced.items() if d != final.outputs[o].digest}
    manifest_changes = bool(replaced) or _digest_of(root / manifest.PATH) != digests.text_digest(final.text())
    files.ensure_writable([*(root / o for o in replaced), *[root / manifest.PATH] * manifest_changes, *also])
    if replaced:
        files.write_if_changed(root / manifest.PATH, manifest.pending(final, replaced).text())
    files_written, report = 0, []
    for target in targets:
        written = target.relative in new_texts and files.write_if_changed(target.output, new_texts[target.relative])
        status = "written" if written else "unchanged"
        report.append((f"{status:9} {target.output.relative_to(root)}", "green" if written else None))
        files_written += written
        files.pause_if_asked(files_written)
    if files.write_if_changed(root / manifest.PATH, final.text()):
        report.append((f"{'written':9} {manifest.PATH.as_posix()}", "green"))
    return report


def _report(console: Console, report: list) -> None:
    for line, colour in report:
        console.say(line, colour)


def _digest_of(path: Path) -> str | None:
    return digests.file_text_digest(path) if path.exists() else None


def cmd_check(args, console: Console) -> int:
    root = args.root
    recorded = manifest.read(root)
    targets = planning.plan(root, recorded)
    modules, texts = None, None
    if args.full:
        modules, texts = build_with_progress("check", root, targets, args.jobs)
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
        wrong = [t for t in targets if t.name in problems]
        _, texts = build_with_progress("check", root, wrong, args.jobs, reuse=True, keep=True)
    _explain(root, targets, problems, orphaned, console, texts or {}, recorded)
    if manifest_problem is not None:
        _explain_manifest(root, manifest_problem, console)
    console.say(f"fix: {FIX_COMMAND}", "bold")
    return DIFFERENT


def _full_comparison(targets, texts: dict[str, str], statuses: dict) -> dict:
    """Byte comparison with a fresh render; the manifest explains any difference."""
    found = {}
    for target in targets:
        current = target.output.read_bytes() if target.output.exists() else None
        status = statuses[target.name]
        if current == texts[target.name].encode():
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
    return None if path.exists() and path.read_bytes() == expected.encode() else expected


def _explain(root, targets, problems, orphaned, console: Console, texts: dict[str, str], recorded) -> None:
    for target in targets:
        if target.name not in problems:
            continue
        relative = str(target.output.relative_to(root))
        status = problems[target.name]
        current_text = digests.lenient_text(target.output) if target.output.exists() else None
        known = recorded is not None and target.relative in recorded.outputs
        if status.state == "stale" and known and current_text == texts[target.name]:
            # Re-rendered to know: an input changed in a way that does not reach this file.
            changed = "; ".join(status.reasons)
            console.say(f"{relative}: inputs changed ({changed}), content unchanged: {SAME_OUTPUT_FIX}")
            continue
        if status.state == "edited" and current_text == texts[target.name]:
            # Not a hand edit: a regenerate killed between writing the files and the manifest.
            console.say(f"{relative}: what regenerate writes, not yet recorded (an unfinished run?): {SAME_OUTPUT_FIX}")
            continue
        reasons = f": {'; '.join(status.reasons)}" if status.reasons else ""
        console.say(f"{relative}: {REASONS[status.state]}{reasons}", "red")
        current = current_text.splitlines(keepends=True) if current_text is not None else []
        regenerated = texts[target.name].splitlines(keepends=True)
        console.out.writelines(difflib.unified_diff(current, regenerated, relative, f"{relative} (regenerated)"))
    for orphan in orphaned:
        console.say(f"{orphan.relative_to(root)}: its spec file is gone", "red")


def _explain_manifest(root: Path, expected: str, console: Console) -> None:
    path = root / manifest.PATH
    relative = manifest.PATH.as_posix()
    current = digests.lenient_text(path).splitlines(keepends=True) if path.exists() else []
    console.say(f"{relative}: {'stale: it does not record what regenerate wrote' if current else 'missing'}", "red")
    regenerated = expected.splitlines(keepends=True)
    console.out.writelines(difflib.unified_diff(current, regenerated, relative, f"{relative} (regenerated)"))


REASONS = {"missing": "missing", "stale": "stale", "edited": "edited by hand"}
SAME_OUTPUT_FIX = f"regenerate updates only {manifest.PATH.as_posix()}"


def cmd_diff(args, console: Console) -> int:
    from generator.review import diff, formats

    root = args.root
    if args.against_torch:
        # The stale notice comes first, but its title names the reference, which the spec says.
        refs, locations = diff.load_builders(root, args.backends)
        old, new = diff.reference_title(refs), "generated"
        if _stale_notice(diff.Side(root, None), args.format, old, new, console):
            return DIFFERENT
        with progress.Progress("diff") as shown:
            compared = [ref.label for ref in refs if ref.reference is not None]
            shown.step(f"building {len(compared)} backend(s) and their reference builders")
            advance = shown.counter("compared", len(compared))
            results = []
            for result in diff.against_torch(root, refs, locations):
                advance(result.backend)
                results.append(result)
        uncompared = diff.unreferenced(refs)
        if not results:  # nothing has a reference: say so, and that is no difference
            console.out.write(formats.render(args.format, results, old, new, uncompared))
            return OK
    else:
        uncompared = []
        old_side, new_side = diff.parse_revisions(root, args.rev)
        for side in (old_side, new_side):
            diff.require_generated(side)
        old, new = old_side.title, new_side.title
        if _stale_notice(new_side, args.format, old, new, console):
            return DIFFERENT
        results = list(diff.against_revision(old_side, new_side, args.backends))
    if not results:
        raise errors.NothingToCompareError("nothing to compare: no backend on either side")
    console.out.write(formats.render(args.format, results, old, new, uncompared))
    return DIFFERENT if any(r.status != "same" for r in results) else OK


def _stale_notice(side, fmt: str, old: str, new: str, console: Console) -> bool:
    """Say, in the diff's format, when the side's generated/ is not what its spec says; True when so.

    A diff of such a generated/ would mislead: it would not show the spec's change.
    """
    from generator.review import diff, formats

    stale = diff.stale_files(side)
    if stale and side.revision is None:
        stale = _content_changes(side.root, stale, console)
    if not stale:
        return False
    fix = FIX_COMMAND
    if side.revision is not None:
        fix = f"check out {side.revision}, run {FIX_COMMAND} and commit the result"
    console.out.write(formats.stale(fmt, stale, old, new, fix))
    return True


def _content_changes(root: Path, stale: list, console: Console) -> list:
    """Of the working tree's stale files, those whose text regenerate would change.

    A file whose inputs changed but whose text would not (a comment in the spec) is
    what the spec says, so the diff is right; only the manifest is behind, as check says.
    """
    if any(found.state != "stale" for found in stale):
        return stale
    targets = [t for t in planning.plan(root) if t.relative in {found.file for found in stale}]
    # As regenerate would build them: the unedited spec files' loads come from the model cache.
    _, texts = build_with_progress("diff", root, targets, 1, reuse=True, keep=True)
    unchanged = {t.relative for t in targets if _digest_of(t.output) == digests.text_digest(texts[t.name])}
    if unchanged:
        console.warn(f"inputs changed, content unchanged: {', '.join(sorted(unchanged))}; {SAME_OUTPUT_FIX}")
    return [found for found in stale if found.file not in unchanged]


def cmd_import(args, console: Console) -> int:
    from generator import user_code
    from generator.importer import reading, round_trip, spec_writer, validation

    root = args.root
    name = args.name or reading.default_name(reading.split_target(args.target)[1])
    if not reading.valid_spec_name(name):
        raise errors.ImportNameError(
            f"{name!r} cannot name a spec file: use a lower-case identifier that is not a Python keyword (--name)"
        )
    path = root / "spec" / f"{name}.py"
    if path.exists() and not args.force:
        raise errors.SpecExistsError(f"{path.relative_to(root)} exists; give --force to overwrite it or --name")
    with progress.Progress("import") as shown:
        shown.step(f"calling {args.target}")
        builder, module, backend_config = reading.load_builder(args.target, root)
        # Reading the config calls the builder's own callables (fuser methods): an exit there must not end the run.
        with user_code.running(errors.BuilderCallError, f"reading {args.target}()", root, exceptions=False):
            shown.step("comparing with the existing spec")
            existing = round_trip.existing_spec(root, path)
            unchanged = round_trip.spec_already_builds(root, existing, backend_config)
            if not unchanged:
                round_trip.refuse_to_drop_backends(existing, backend_config)
                shown.step(f"reading {len(backend_config.configs)} pattern configs")
                templates = root / "templates"
                spec = reading.read_backend_config(name, args.target, builder, module, backend_config, templates)
                spec = round_trip.recover(spec, existing)
                if not args.no_compact:
                    from generator.importer import compaction

                    shown.step(f"compacting {len(spec.backend.configs)} patterns with spec/_common.py's op groups")
                    spec = compaction.compact(spec, root)
        if not unchanged:
            shown.step("checking the spec regenerates")
            _refuse_a_taken_backend_name(root, path, spec.backend)
            text = spec_writer.spec_source(spec)
            validation.refuse_what_regenerate_refuses(root, path, text)
    if unchanged:
        console.say(f"{'unchanged':9} {path.relative_to(root)}: it already builds exactly what {args.target} returns")
        console.say(f"next: {FIX_COMMAND}")
        return OK
    files.write_if_changed(path, text)
    console.say(f"{'written':9} {path.relative_to(root)}: {len(spec.backend.configs)} patterns", "green")
    console.say(f"next: {FIX_COMMAND}")
    return OK


def _refuse_a_taken_backend_name(root: Path, path: Path, backend) -> None:
    """regenerate requires backend names unique across spec/: never write a spec it would refuse."""
    from generator.loading import loader

    try:
        others = loader.load_modules(root, exclude=path, reuse=True)  # as regenerate will load them
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


class Parser(argparse.ArgumentParser):
    """argparse, but --help that cannot reach standard output is an error, not a silent exit 0."""

    def print_help(self, file=None) -> None:
        OutputStream(file or sys.stdout, "standard output").write(self.format_help())


def build_parser() -> argparse.ArgumentParser:
    root_help = "project root, the folder holding spec/ (default: the nearest one at or above the current folder)"
    parser = Parser(
        prog="python -m generator",
        description="Expand spec/ into flat, explicit BackendConfig modules in generated/.",
    )
    parser.add_argument("--root", type=Path, default=None, help=root_help)
    # --root is accepted after the command too; SUPPRESS keeps an absent one from
    # overwriting the value given before the command.
    after = argparse.ArgumentParser(add_help=False)
    after.add_argument("--root", type=Path, default=argparse.SUPPRESS, help=root_help)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_command = functools.partial(commands.add_parser, parents=[after])
    regenerate = add_command(
        "regenerate", help=f"write generated/ and {planning.MATRIX_OUTPUT} from spec/ (only what changed)"
    )
    regenerate.add_argument(
        "--force", action="store_true", help="re-run every spec file and re-render every module, even unchanged ones"
    )
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


def find_root(start: Path) -> Path:
    """The nearest folder at or above `start` that holds spec/, as git finds the folder holding .git.

    A backend author may stand in spec/, generated/ or any folder below the project.
    """
    looked = []
    for folder in (start, *start.parents):
        if (folder / "spec").is_dir():
            return folder
        looked.append(str(folder))
    raise errors.NotAProjectError(
        f"no project here: none of {', '.join(looked)} has a spec/ folder; "
        "run inside a project (any folder below the one holding spec/) or pass --root DIR"
    )


def forget_the_subfolder_on_path(root: Path) -> None:
    """Drop the current folder from sys.path when it is a folder inside the project.

    `python -m` puts the current folder first on sys.path; in spec/ or generated/
    a module such as spec/black.py would then shadow black itself. The project
    root is put on sys.path where spec code runs, as from the root.
    """
    cwd = Path.cwd()
    if sys.path and sys.path[0] in (str(cwd), "") and root in cwd.parents:
        del sys.path[0]


def require_project(root: Path, command: str) -> None:
    """Refuse to run anywhere but a project root, before anything is read or written.

    A spec/ without spec files is refused too (but by `import`, which writes the
    first one): regenerate would otherwise delete every generated module.
    """
    if not (root / "spec").is_dir():
        raise errors.NotAProjectError(
            f"{root} is not a project root: it has no spec/ folder; run in the project's folder or pass --root DIR"
        )
    if command != "import" and not project.spec_files(root):
        raise errors.NoSpecFilesError(
            f"{root / 'spec'} has no spec files (spec/NAME.py with MODULE = Module(...)); write one, "
            "or start from a builder with python -m generator import MODULE:FUNCTION"
        )


def main(argv: list[str] | None = None) -> int:
    """Run one command; every failure is one line on stderr and an exit code, never a traceback."""
    # torch warns on import when NumPy is absent; nothing here needs NumPy.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    tolerant_standard_streams()
    console = Console()
    try:
        args = build_parser().parse_args(argv)
        args.root = args.root.resolve() if args.root is not None else find_root(Path.cwd())
        require_project(args.root, args.command)
        forget_the_subfolder_on_path(args.root)
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
    except ModuleNotFoundError as error:  # importlib.metadata.PackageNotFoundError is one too
        if (error.name or "").partition(".")[0] != "generator":  # one of ours missing is a bug, below
            return fail(console, missing_dependency(error))
        return internal_error(console, error)
    except OSError as error:
        where = f"{error.filename}: " if error.filename else ""
        return fail(console, errors.FileAccessError(f"{where}{error.strerror or error}"))
    except Exception as error:  # a bug: the user still gets one line, a developer can ask for more
        return internal_error(console, error)


def internal_error(console: Console, error: Exception) -> int:
    if os.environ.get("GENERATOR_TRACEBACK"):
        raise error
    message = f"internal error: {type(error).__name__}: {error} (GENERATOR_TRACEBACK=1 shows where; report it)"
    return fail(console, errors.InternalError(message))


def missing_dependency(error: ModuleNotFoundError) -> errors.MissingDependencyError:
    """What to do when this interpreter lacks a package the generator imports (or reads the version of).

    Spec files and user builders that import a missing module are reported as
    their own errors before this; what reaches here is the generator's own need.
    """
    package = (error.name or str(error)).partition(".")[0]
    checkout = Path(__file__).resolve().parent.parent
    where = f"in {checkout}" if (checkout / "pyproject.toml").exists() else "in the generator's source folder"
    return errors.MissingDependencyError(
        f"{package} is not installed for {sys.executable}; activate the environment the project is installed "
        f"in, or install the project with its dependencies: pip install -e . ({where})"
    )


def fail(console: Console, error: errors.GeneratorError) -> int:
    console.error(str(error))
    return EXIT_CODES[type(error)]
