"""The commands' bodies: init, regenerate, check, matrix, diff, verify and import.

Each command is `cmd_NAME(args, console) -> exit code`, called by generator.cli,
which parses the arguments, finds the project and owns the console (`console.say`,
`console.warn`, `console.out`): OK when all is well, DIFFERENT when generated files
differ from what regenerate would write; a failure raises a generator.errors class,
which carries its own exit code.

The building stages (pipeline: Jinja2, black, sometimes torch) are imported
inside the commands that use them, so that `check` on an up-to-date tree runs
on planning alone.
"""

from __future__ import annotations

import difflib
import functools
from pathlib import Path

from generator import cache, digests, errors, files, progress, project
from generator.freshness import manifest, planning
from generator.model import SourceLocation

OK, DIFFERENT = 0, 1
FIX_COMMAND = "python -m generator regenerate"


def lint_findings(root: Path, targets, modules) -> list[str]:
    """The spec lint's findings, cached; `modules` are the expanded spec if already loaded."""
    cached = planning.kept_lint_findings(root, targets) if modules is None else None
    if cached is not None:
        return cached
    from generator.building import lint
    from generator.building.expansion import expand_module
    from generator.loading import loader

    # Not pipeline.load: the lint needs neither Jinja2 nor black, and check must not import them.
    # Unchanged spec files' loads come from the model cache, as regenerate's do, and the loads made
    # are kept there: the build check then makes to explain a stale tree executes no spec file again.
    if modules is None:
        modules = [expand_module(m, root) for m in loader.load_modules(root, reuse=True, keep=True)]
    findings = [str(f) for f in lint.lint(modules)]
    planning.keep_lint_findings(root, targets, findings)
    return findings


def report_lint(console, findings: list[str], strict: bool) -> None:
    if strict and findings:
        raise errors.LintError(f"{findings[0]} (--strict; {len(findings)} lint finding(s))")
    for finding in findings:
        console.warn(finding)


def cmd_regenerate(args, console) -> int:
    with files.project_lock(cache.lock_file(args.root), functools.partial(_say_waiting, console)):
        return _regenerate(args, console)


def _say_waiting(console) -> None:
    console.warn("another regenerate or matrix is running in this project; waiting for it to finish")


def _regenerate(args, console) -> int:
    root = args.root
    recorded = manifest.read(root)
    targets = planning.plan(root, recorded)
    stale = [t for t in targets if args.force or planning.freshness(t, recorded) != "fresh"]
    modules, texts = None, {}
    if stale:
        modules, texts = build_with_progress("regenerate", root, stale, args.jobs, reuse=not args.force, keep=True)
        targets = _observed(targets, modules)
    report_lint(console, lint_findings(root, targets, modules), args.strict)
    orphans = planning.orphans(root, targets, recorded)
    removed = [path for path in orphans if planning.is_unchanged_output(root, path, recorded)]
    for path in orphans:
        if path not in removed:  # the manifest stops listing it: from now on it is a file of the user's own
            console.warn(f"{path.relative_to(root)}: its spec file is gone, but it was edited by hand: left alone")
    forgotten = [path for path in orphans if path not in removed]
    _report(console, manifest.write_outputs(root, targets, texts, remove=removed, forget=forgotten))
    return OK


def cmd_matrix(args, console) -> int:
    if args.stdout:  # writes nothing
        return _matrix(args, console)
    with files.project_lock(cache.lock_file(args.root), functools.partial(_say_waiting, console)):
        return _matrix(args, console)


def _matrix(args, console) -> int:
    root = args.root
    every = planning.plan(root)
    matrix = [t for t in every if t.is_matrix]
    if not matrix:
        raise errors.ProjectConfigError(
            f'{project.PYPROJECT}: [tool.{project.TABLE}] matrix is "": this project keeps no support matrix'
        )
    texts = {}
    if args.stdout or args.force or planning.freshness(matrix[0]) != "fresh":
        modules, texts = build_with_progress("matrix", root, matrix, jobs=1)
        every = _observed(every, modules)
        matrix = [t for t in every if t.is_matrix]
    if args.stdout:
        console.out.write(texts[planning.MATRIX])
    else:
        _report(console, manifest.write_outputs(root, matrix, texts, every=every))
    return OK


def build_with_progress(command: str, root: Path, targets, jobs: int, reuse: bool = False, keep: bool = False):
    """pipeline.load_and_build, with a progress line on a terminal: seconds when torch or black start cold.

    `reuse`: trust the recorded reads of unchanged spec files, as a plain regenerate trusts the
    manifest; --force and check --full execute every spec file. `keep`: keep the loads made for
    later runs (regenerate, --force included: it fills the caches).
    """
    from generator.loading import loader

    with progress.Progress(command) as shown:
        shown.step(f"loading spec/ to build {len(targets)} file(s)")
        loads = loader.start_loads(root, reuse=reuse, keep=keep)  # they run while the building stages import
        from generator.building import importability, pipeline

        built = shown.counter("built", len(targets))
        modules, texts = pipeline.load_and_build(root, targets, jobs, loads, built=built)
    importability.require_importable_anywhere(modules)  # before anything is written
    return modules, texts


def _observed(targets, modules) -> list:
    """The targets with the inputs that this run's loads of their spec files read."""
    return planning.observed(targets, {m.spec.spec_file: dict(m.spec.read) for m in modules})


def _report(console, report: list) -> None:
    for done, path in report:
        console.say(f"{done:9} {path}", COLOURS[done])


COLOURS = {"written": "green", "unchanged": None, "removed": "yellow"}


def cmd_check(args, console) -> int:
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
    orphaned = planning.orphans(root, targets, recorded)
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
        status = statuses[target.name]
        if target.output.exists() and digests.same_text(target.output, texts[target.name]):
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
    path = root / manifest.path_in(root)
    return None if path.exists() and digests.same_text(path, expected) else expected


def _explain(root, targets, problems, orphaned, console, texts: dict[str, str], recorded) -> None:
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
            console.say(f"{relative}: inputs changed ({changed}), content unchanged: {same_output_fix(root)}")
            continue
        if status.state == "edited" and current_text == texts[target.name]:
            # Not a hand edit: a regenerate killed between writing the files and the manifest.
            unfinished = "what regenerate writes, not yet recorded (an unfinished run?)"
            console.say(f"{relative}: {unfinished}: {same_output_fix(root)}")
            continue
        reasons = f": {'; '.join(status.reasons)}" if status.reasons else ""
        console.say(f"{relative}: {REASONS[status.state]}{reasons}", "red")
        current = current_text.splitlines(keepends=True) if current_text is not None else []
        regenerated = texts[target.name].splitlines(keepends=True)
        console.out.writelines(difflib.unified_diff(current, regenerated, relative, f"{relative} (regenerated)"))
    for orphan in orphaned:
        unchanged = planning.is_unchanged_output(root, orphan, recorded)
        edited = "" if unchanged else " (edited by hand: regenerate leaves it, as a file of your own)"
        console.say(f"{orphan.relative_to(root)}: its spec file is gone{edited}", "red")


def _explain_manifest(root: Path, expected: str, console) -> None:
    relative = manifest.path_in(root).as_posix()
    path = root / relative
    current = digests.lenient_text(path).splitlines(keepends=True) if path.exists() else []
    console.say(f"{relative}: {'stale: it does not record what regenerate wrote' if current else 'missing'}", "red")
    regenerated = expected.splitlines(keepends=True)
    console.out.writelines(difflib.unified_diff(current, regenerated, relative, f"{relative} (regenerated)"))


REASONS = {"missing": "missing", "stale": "stale", "edited": "edited by hand"}


def same_output_fix(root: Path) -> str:
    return f"regenerate updates only {manifest.path_in(root).as_posix()}"


def cmd_diff(args, console) -> int:
    from generator import process
    from generator.review import diff, formats, sides

    root = args.root
    if args.against_torch:
        # The stale notice comes first, but its title names the reference, which the spec says.
        refs, locations = sides.load_builders(root, args.backends)
        old, new = sides.reference_title(refs), "generated"
        if _stale_notice(sides.Side(root, None), args.format, old, new, console):
            return DIFFERENT
        with progress.Progress("diff") as shown:
            compared = [ref.label for ref in refs if ref.reference is not None]
            shown.step(f"building {len(compared)} backend(s) and their reference builders")
            advance = shown.counter("compared", len(compared))
            results = []
            for result in diff.against_torch(root, refs, locations):
                advance(result.backend)
                results.append(result)
        uncompared = sides.unreferenced(refs)
        if not results:  # nothing has a reference: say so, and that is no difference
            console.out.write(formats.render(args.format, results, old, new, uncompared))
            return OK
    else:
        uncompared = []
        old_side, new_side = sides.parse_revisions(root, args.rev)
        for side in (old_side, new_side):
            sides.require_generated(side)
        old, new = old_side.title, new_side.title
        if _stale_notice(new_side, args.format, old, new, console):
            return DIFFERENT
        # Other revisions' generated modules are user code: they run in a child process of their own.
        lost = functools.partial(sides.lost_building, old_side, new_side)
        results = process.isolated(_revision_diff, old_side, new_side, args.backends, lost=lost)
    if not results:
        raise errors.NothingToCompareError("nothing to compare: no backend on either side")
    console.out.write(formats.render(args.format, results, old, new, uncompared))
    return DIFFERENT if any(r.status != "same" for r in results) else OK


def _revision_diff(old_side, new_side, backends: list[str]) -> list:
    from generator.review import diff

    return list(diff.against_revision(old_side, new_side, backends))


def cmd_verify(args, console) -> int:
    """Each generated builder equals its reference builder, and runs through torch's FX flows (review/verify.py)."""
    from generator.review import sides, verify

    root = args.root
    refs, locations = sides.load_builders(root, args.backends)
    stale = sides.stale_files(sides.Side(root, None))
    if stale:
        stale = _content_changes(root, stale, console)
    # A generated module that is not what spec/ says is verified as it is (the proof is of what is imported),
    # and fails the run: each such file is a failure line.
    unfresh = [f"{f.file}: {REASONS[f.state]}" + (f": {'; '.join(f.reasons)}" if f.reasons else "") for f in stale]
    verdicts = []
    with progress.Progress("verify") as shown:
        shown.step(f"verifying {len(refs)} backend(s): their reference builders and FX flows")
        advance = shown.counter("verified", len(refs))
        for verdict in verify.verify(root, refs, locations, args.timeout):
            advance(verdict.label)
            verdicts.append(verdict)
    for line in unfresh:
        console.err.write(console.paint(line, "red", console.err) + "\n")
    for verdict in verdicts:
        for line in verdict.failures:
            console.err.write(console.paint(line, "red", console.err) + "\n")
    for verdict in verdicts:
        console.say(verdict.summary(), None if verdict.ok else "red")
    declared = [line for verdict in verdicts for line in verdict.declared]
    if declared:
        console.say("declared differences (deliberate, see the spec):")
        for line in declared:
            console.say(f"  {line}")
    failing = [verdict.label for verdict in verdicts if not verdict.ok]
    if unfresh:
        console.say(f"verify: generated/ is not what spec/ says ({len(unfresh)} file(s)); fix: {FIX_COMMAND}", "red")
    if failing:
        count = sum(len(verdict.failures) for verdict in verdicts)
        console.say(f"verify: {len(failing)} of {len(verdicts)} backend(s) fail ({count} failure(s)): "
                    f"{', '.join(failing)}", "red")  # fmt: skip
        return DIFFERENT
    if unfresh:
        return DIFFERENT
    console.say(f"verify: all {len(verdicts)} backend(s) hold", "green")
    return OK


def _stale_notice(side, fmt: str, old: str, new: str, console) -> bool:
    """Say, in the diff's format, when the side's generated/ is not what its spec says; True when so.

    A diff of such a generated/ would mislead: it would not show the spec's change.
    """
    from generator.review import formats, sides

    stale = sides.stale_files(side)
    if stale and side.revision is None:
        stale = _content_changes(side.root, stale, console)
    if not stale:
        return False
    fix = FIX_COMMAND
    if side.revision is not None:
        fix = f"check out {side.revision}, run {FIX_COMMAND} and commit the result"
    console.out.write(formats.stale(fmt, stale, old, new, fix))
    return True


def _content_changes(root: Path, stale: list, console) -> list:
    """Of the working tree's stale files, those whose text regenerate would change.

    A file whose inputs changed but whose text would not (a comment in the spec) is
    what the spec says, so the diff is right; only the manifest is behind, as check says.
    """
    if any(found.state != "stale" for found in stale):
        return stale
    targets = [t for t in planning.plan(root) if t.relative in {found.file for found in stale}]
    # As regenerate would build them: the unedited spec files' loads come from the model cache.
    _, texts = build_with_progress("diff", root, targets, 1, reuse=True, keep=True)
    unchanged = {t.relative for t in targets if manifest.digest_of(t.output) == digests.text_digest(texts[t.name])}
    if unchanged:
        console.warn(f"inputs changed, content unchanged: {', '.join(sorted(unchanged))}; {same_output_fix(root)}")
    return [found for found in stale if found.file not in unchanged]


def cmd_import(args, console) -> int:
    """The builder, and everything that runs its code (reading, analysis, compaction, the proof), run in a child
    process of their own (generator.process.isolated): nothing it does (exit, atexit, threads, fork) reaches this
    process, which writes the spec it sends back, once."""
    from generator import process
    from generator.importer import reading

    root = args.root
    name = args.name or reading.default_name(reading.split_target(args.target)[1])
    _refuse_a_spec_name(name)
    path = project.spec_folder(root) / f"{name}.py"
    lost = functools.partial(_import_lost, args.target, root)
    with progress.Progress("import") as shown:
        shown.step(f"calling {args.target}")  # shown here, so that leaving erases what the child shows after it
        text, count, report = process.isolated(_imported, args, root, path, shown, lost=lost)
    if text is None:
        console.say(f"{'unchanged':9} {path.relative_to(root)}: it already builds exactly what {args.target} returns")
        console.say(f"next: {FIX_COMMAND}")
        return OK
    files.write_if_changed(path, text)
    console.say(f"{'written':9} {path.relative_to(root)}: {count} pattern{'' if count == 1 else 's'}", "green")
    for line in report:
        console.say(line)
    console.say(f"next: {FIX_COMMAND}")
    return OK


def _imported(args, root: Path, path: Path, shown) -> tuple[str | None, int, list[str]]:
    """In import's child process: (the spec's text, its pattern count, the dependency report), or (None, 0, [])
    when the existing spec already builds what the builder returns."""
    from generator import user_code
    from generator.importer import dependencies, reading, round_trip, sections, spec_writer, validation
    from generator.loading import load_server

    try:
        if path.exists() and not args.force:
            reading.find_builder(args.target, root)  # a misspelt module or function is said first
            raise errors.SpecExistsError(f"{path.relative_to(root)} exists; give --force to overwrite it or --name")
        builder, module, backend_config, globals_before = reading.load_builder(args.target, root)
        # Reading the config calls the builder's own callables (fuser methods): an exit there must not end the run.
        with user_code.running(errors.BuilderCallError, f"reading {args.target}()", root, exceptions=False):
            shown.step("comparing with the existing spec")
            existing = round_trip.existing_spec(root, path)
            if round_trip.spec_already_builds(root, existing, backend_config):
                return None, 0, []
            round_trip.refuse_to_drop_backends(existing, backend_config)
            round_trip.refuse_to_drop_declarations(existing)
            shown.step(f"reading {len(backend_config.configs)} pattern configs")
            templates = project.templates(root)
            spec = reading.read_backend_config(path.stem, args.target, builder, module, backend_config, templates)
            spec = round_trip.recover(spec, existing)
            spec = sections.place(spec, root, path)
            if not args.no_compact:
                from generator.importer import compaction

                shown.step(f"compacting {len(spec.backend.configs)} patterns with spec/_common.py's op groups")
                spec = compaction.compact(spec, root)
        shown.step("checking the spec regenerates")
        spec = _with_a_free_label(root, path, spec)
        dependencies.refuse_rebound(spec.backend, globals_before, args.target)
        text = spec_writer.spec_source(spec)
        validation.refuse_unless_proven_equal(root, path, text, spec.backend, backend_config, args.target)
        return text, len(spec.backend.configs), list(dependencies.report(spec.backend))
    finally:
        load_server.stop()  # the load servers this process started end with it


def _import_lost(target: str, root: Path) -> errors.GeneratorError:

    return errors.BuilderCallError(
        f"importing {target}: its process ended without a result (a builder, and the code it calls, must not end "
        "its process, fork or leave threads that exit: raise an Exception instead)",
        _builder_location(target, root),
    )


def _builder_location(target: str, root: Path) -> SourceLocation | None:
    """Where MODULE:FUNCTION is defined, found without running any code: the module's file as the path finder
    finds it (the project root first, as import runs it), the line of the function's `def` (else 1)."""
    import ast
    import sys
    from importlib.machinery import PathFinder

    from generator import user_code
    from generator.importer import reading

    module_name, function = reading.split_target(target)
    search, found, parts = [str(root), *sys.path], None, module_name.split(".")
    for index in range(len(parts)):
        found = PathFinder.find_spec(".".join(parts[: index + 1]), search)
        if found is None:
            return None
        search = list(found.submodule_search_locations or [])
    try:
        tree = ast.parse(Path(found.origin).read_bytes())
    except (OSError, SyntaxError, ValueError, TypeError):
        return None
    name = function.rpartition(".")[2]
    defined = (n.lineno for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name)
    return SourceLocation(user_code.shown(found.origin, root), next(defined, 1))


def _refuse_a_spec_name(name: str) -> None:
    """--name (or the builder's name) must name a spec file regenerate reads and a module it may write."""
    from generator.building.naming import PACKAGE_FILES
    from generator.importer import reading

    if name.startswith("_"):
        raise errors.ImportNameError(
            f"{name!r} cannot name a backend's spec file: a leading underscore makes spec/{name}.py a helper "
            "module that regenerate does not read as a backend; give --name without it"
        )
    if not reading.valid_spec_name(name):
        raise errors.ImportNameError(
            f"{name!r} cannot name a spec file: use a lower-case identifier that is not a Python keyword (--name)"
        )
    if name in PACKAGE_FILES:
        raise errors.ImportNameError(
            f"{name!r} cannot name a spec file: generated/{name}.py is a file of the generated/ package itself; "
            "give --name another name"
        )


def _with_a_free_label(root: Path, path: Path, spec):
    """regenerate requires backend labels unique across spec/: the imported backend gets one no other
    spec file's backend has (`round_trip.with_a_free_label`), or nothing is written."""
    from generator.importer import round_trip
    from generator.loading import loader

    try:
        others = loader.load_modules(root, exclude=path, reuse=True)  # as regenerate will load them
    except errors.GeneratorError:
        return spec  # the other spec files are broken already: regenerate names that, whatever import writes
    return round_trip.with_a_free_label(spec, [b for m in others for b in m.backends])


def cmd_init(args, console) -> int:
    """A working start (generator/starting.py): every file planned before any is written, none overwritten."""
    from generator import starting

    options = {"specs": args.specs, "generated": args.generated, "package": args.package}
    start = starting.plan(args.root, options, Path.cwd(), root_given=args.root_given)
    for line in starting.write(args.root, start):
        console.say(line, "green" if line.startswith("written") else None)
    console.say(f"next: {start.next_command}")
    return OK
