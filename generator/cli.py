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
import json
import os
import sys
import warnings
from pathlib import Path

from generator import errors, planning, writing

OK, DIFFERENT, ERROR = 0, 1, 2
EXIT_CODES: dict[type[errors.GeneratorError], int] = {
    errors.SpecSyntaxError: ERROR,
    errors.SpecExecutionError: ERROR,
    errors.SpecFieldError: ERROR,
    errors.EmptyAxisError: ERROR,
    errors.UnknownTorchNameError: ERROR,
    errors.TorchKindError: ERROR,
    errors.DuplicateOutputError: ERROR,
    errors.EmptyBackendError: ERROR,
    errors.TemplateRenderError: ERROR,
    errors.FormattingError: ERROR,
    errors.LintError: ERROR,
    errors.GitError: ERROR,
    errors.ReferenceBuilderError: ERROR,
    errors.GeneratedModuleError: ERROR,
}
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
    except OSError:
        pass  # a read-only checkout only loses the speed-up: the findings were computed
    return findings


def report_lint(console: Console, findings: list[str], strict: bool) -> None:
    if strict and findings:
        raise errors.LintError(f"{findings[0]} (--strict; {len(findings)} lint finding(s))")
    for finding in findings:
        console.warn(finding)


def cmd_regenerate(args, console: Console) -> int:
    root = args.root
    targets = planning.plan(root)
    stale = [t for t in targets if args.force or planning.freshness(t) != "fresh"]
    modules, texts = None, {}
    if stale:
        from generator import pipeline

        modules, texts = pipeline.load_and_build(root, stale, args.jobs)
    report_lint(console, lint_findings(root, targets, modules), args.strict)
    _write(root, targets, texts, console)
    for orphan in planning.orphans(root, targets):
        orphan.unlink()
        console.say(f"{'removed':9} {orphan.relative_to(root)}", "yellow")
    return OK


def cmd_matrix(args, console: Console) -> int:
    from generator import pipeline

    root = args.root
    matrix = [t for t in planning.plan(root) if t.is_matrix]
    texts = {}
    if args.stdout or args.force or planning.freshness(matrix[0]) != "fresh":
        _, texts = pipeline.load_and_build(root, matrix, jobs=1)
    if args.stdout:
        console.out.write(texts[planning.MATRIX])
    else:
        _write(root, matrix, texts, console)
    return OK


def _write(root: Path, targets, texts: dict[str, str], console: Console) -> None:
    for directory in {t.output.parent for t in targets}:
        writing.remove_stale_temporaries(directory)
    for target in targets:
        written = target.name in texts and writing.write_if_changed(target.output, texts[target.name])
        status = "written" if written else "unchanged"
        console.say(f"{status:9} {target.output.relative_to(root)}", "green" if written else None)


def cmd_check(args, console: Console) -> int:
    root = args.root
    targets = planning.plan(root)
    modules, texts = None, None
    if args.full:
        from generator import pipeline

        modules, texts = pipeline.load_and_build(root, targets, args.jobs)
    report_lint(console, lint_findings(root, targets, modules), args.strict)
    problems = {t.name: planning.freshness(t) for t in targets}
    if texts is not None:
        problems = _full_comparison(targets, texts)
    problems = {name: state for name, state in problems.items() if state != "fresh"}
    orphaned = planning.orphans(root, targets)
    if not problems and not orphaned:
        console.say(f"{len(targets)} generated files are up to date", "green")
        return OK
    # The slow path (torch names, black) runs only once something is wrong, to show the fix.
    if texts is None:
        from generator import pipeline

        wrong = [t for t in targets if t.name in problems]
        _, texts = pipeline.load_and_build(root, wrong, args.jobs)
    _explain(root, targets, problems, orphaned, console, texts)
    return DIFFERENT


def _full_comparison(targets, texts: dict[str, str]) -> dict[str, str]:
    """Byte comparison with a fresh render; the digest state explains any difference."""
    states = {}
    for target in targets:
        current = target.output.read_text() if target.output.exists() else None
        state = planning.freshness(target)
        states[target.name] = "fresh" if current == texts[target.name] else (state if state != "fresh" else "edited")
    return states


REASONS = {
    "missing": "missing",
    "stale": "stale: its spec, templates, generator or black changed",
    "edited": "edited by hand: its content does not match its digest",
}


def _explain(root, targets, problems, orphaned, console: Console, texts: dict[str, str]) -> None:
    for target in targets:
        if target.name not in problems:
            continue
        relative = str(target.output.relative_to(root))
        console.say(f"{relative}: {REASONS.get(problems[target.name], problems[target.name])}", "red")
        current = target.output.read_text().splitlines(keepends=True) if target.output.exists() else []
        regenerated = texts[target.name].splitlines(keepends=True)
        console.out.writelines(difflib.unified_diff(current, regenerated, relative, f"{relative} (regenerated)"))
    for orphan in orphaned:
        console.say(f"{orphan.relative_to(root)}: its spec file is gone", "red")
    console.say(f"fix: {FIX_COMMAND}", "bold")


def cmd_diff(args, console: Console) -> int:
    from generator import reviewing, spec_loading

    refs = reviewing.builders(spec_loading.load_modules(args.root), args.backends)
    if not args.rev:
        return _report_against_torch(reviewing.against_torch(args.root, refs), console)
    lines = reviewing.against_revision(args.root, args.rev, refs)
    for line in lines:
        console.say(line)
    if not lines:
        console.say("no differences", "green")
    return DIFFERENT if lines else OK


def _report_against_torch(review, console: Console) -> int:
    """Undeclared drift first (exit 1), then what the spec declares on purpose (exit 0)."""
    for line in review.drift:
        console.say(line)
    if not review.drift:
        console.say("no undeclared differences" if review.declared else "no differences", "green")
    if review.declared:
        console.say("declared differences (deliberate, see the spec):")
        for line in review.declared:
            console.say(line)
    if review.unreferenced:
        console.say(f"not compared (no reference builder): {', '.join(review.unreferenced)}")
    return DIFFERENT if review.drift else OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m generator",
        description="Expand spec/ into flat, explicit BackendConfig modules in generated/.",
    )
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="project root (default: current directory)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    regenerate = commands.add_parser(
        "regenerate", help=f"write generated/ and {planning.MATRIX_OUTPUT} from spec/ (only what changed)"
    )
    regenerate.add_argument("--force", action="store_true", help="re-render every module, even unchanged ones")
    check = commands.add_parser("check", help="exit 1 if a generated file is stale, missing or hand-edited")
    check.add_argument("--full", action="store_true", help="re-render everything and compare bytes")
    for command in (regenerate, check):
        command.add_argument("--strict", action="store_true", help="treat lint warnings as errors")
        command.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes for black")
    matrix = commands.add_parser("matrix", help=f"write {planning.MATRIX_OUTPUT}: patterns x backends -> dtype configs")
    matrix.add_argument("--force", action="store_true", help="re-render even when it is up to date")
    matrix.add_argument("--stdout", action="store_true", help="print the matrix instead of writing it")
    matrix.set_defaults(handler=cmd_matrix)
    diff = commands.add_parser("diff", help="per-pattern semantic diff: against torch, or against a git revision")
    side = diff.add_mutually_exclusive_group(required=True)
    side.add_argument("--against-torch", action="store_true", help="generated builders against torch's builders")
    side.add_argument("--rev", metavar="REV", help="generated modules at git revision REV against the working tree")
    diff.add_argument("backends", nargs="*", metavar="BACKEND", help="e.g. fbgemm onednn (default: all)")
    diff.set_defaults(handler=cmd_diff)
    regenerate.set_defaults(handler=cmd_regenerate)
    check.set_defaults(handler=cmd_check)
    return parser


def main(argv: list[str] | None = None) -> int:
    # torch warns on import when NumPy is absent; nothing here needs NumPy.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    args = build_parser().parse_args(argv)
    args.root = args.root.resolve()
    console = Console()
    try:
        return args.handler(args, console)
    except errors.GeneratorError as error:
        console.error(str(error))
        return EXIT_CODES[type(error)]
