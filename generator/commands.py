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
import re
from pathlib import Path

from generator import cache, digests, errors, files, progress, project
from generator.annotations import workflow_command
from generator.freshness import manifest, planning, proofs

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


def report_lint(console, findings: list[str], strict: bool, fmt: str = "text") -> None:
    if strict and findings:
        raise errors.LintError(f"{findings[0]} (--strict; {len(findings)} lint finding(s))")
    for finding in findings:
        if fmt == "github":  # an annotation at the spec line, on standard output with the other findings
            file, line, message = located(finding)
            console.out.write(workflow_command("warning", message, file=file, line=line) + "\n")
        else:
            console.warn(finding)


_LOCATED = re.compile(r"(?P<file>[^:\s][^:]*\.\w+):(?P<line>\d+): (?P<message>.*)", re.DOTALL)


def located(text: str) -> tuple[str | None, int | None, str]:
    """(file, line, message) of a finding or error printed as `spec/x.py:12: message`; (None, None, text) else."""
    match = _LOCATED.fullmatch(text)
    return (match["file"], int(match["line"]), match["message"]) if match else (None, None, text)


def cmd_regenerate(args, console) -> int:
    with files.project_lock(cache.lock_file(args.root), functools.partial(_say_waiting, console)):
        return _regenerate(args, console)


def _say_waiting(console) -> None:
    console.warn("another regenerate or matrix is running in this project; waiting for it to finish")


def _regenerate(args, console) -> int:
    root = args.root
    recorded = manifest.read(root)
    targets = planning.plan(root, recorded)
    # The files whose inputs changed are built even when proven: a manifest that is rewritten records them anew.
    settled = {t.name: proofs.settled(t, recorded) for t in targets}
    stale = [t for t in targets if args.force or settled[t.name].state != "fresh" or settled[t.name].reasons]
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
    _keep_proofs(root, targets, texts)
    return OK


def _keep_proofs(root: Path, observed, texts: dict[str, str]) -> None:
    """Keep this environment's proof of each file just built that now holds its text, under its inputs as the
    next run plans them (from the manifest as now written)."""
    if not texts:
        return
    planned = {t.name: t for t in planning.plan(root)}
    for target in observed:
        if target.name in texts and target.name in planned and digests.same_text(target.output, texts[target.name]):
            proofs.keep(planned[target.name], target, texts[target.name])


def cmd_matrix(args, console) -> int:
    if args.stdout or args.backends:  # writes nothing
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
    if args.backends:  # a narrowed view, printed: the committed page always holds every backend
        return _narrowed_matrix(root, matrix, args.backends, console)
    if args.stdout or args.force or proofs.settled(matrix[0], manifest.read(root)).state != "fresh":
        modules, texts = build_with_progress("matrix", root, matrix, jobs=1)
        every = _observed(every, modules)
        matrix = [t for t in every if t.is_matrix]
    if args.stdout:
        console.out.write(texts[planning.MATRIX])
    else:
        _report(console, manifest.write_outputs(root, matrix, texts, every=every))
        _keep_proofs(root, matrix, texts)
    return OK


def _narrowed_matrix(root: Path, matrix: list, wanted: list[str], console) -> int:
    """`matrix --backend NAME ...`: the matrix of those backends only (label, BackendConfig name or module)."""
    from generator.building.matrix import support_matrix
    from generator.building.rendering import render_matrix
    from generator.review.references import choose

    modules, _ = build_with_progress("matrix", root, matrix, jobs=1)
    known = [(e.backend.label, {e.backend.label, e.backend.name, m.spec.name}) for m in modules for e in m.backends]
    chosen = frozenset(choose(wanted, known))
    console.out.write(render_matrix(support_matrix(modules, chosen), project.templates(root)))
    return OK


def build_with_progress(
    command: str, root: Path, targets, jobs: int, reuse: bool = False, keep: bool = False, validate: bool = True
):
    """pipeline.load_and_build, with a progress line on a terminal: seconds when torch or black start cold.

    `reuse`: trust the recorded reads of unchanged spec files, as a plain regenerate trusts the
    manifest; --force and check --full execute every spec file. `keep`: keep the loads made for
    later runs (regenerate, --force included: it fills the caches). `validate`: check torch names (see
    pipeline.load_and_build) and that the names the modules import import from anywhere.
    """
    from generator.loading import loader

    with progress.Progress(command) as shown:
        shown.step(f"loading spec/ to build {len(targets)} file(s)")
        loads = loader.start_loads(root, reuse=reuse, keep=keep)  # they run while the building stages import
        from generator.building import importability, pipeline

        built = shown.counter("built", len(targets))
        modules, texts = pipeline.load_and_build(root, targets, jobs, loads, built=built, validate=validate)
    if validate:
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
    report_lint(console, lint_findings(root, targets, modules), args.strict, args.format)
    statuses = {t.name: proofs.settled(t, recorded) for t in targets}
    unproven = [t for t in targets if statuses[t.name].state == proofs.UNPROVEN]
    if texts is None and unproven:  # rendered once in this environment, to prove the bytes on disk
        # Without torch where only the environment changed; a project input that changed (a module an importable()
        # names) may have changed a name too, so its names are checked as regenerate checks them.
        names = any(statuses[t.name].reasons for t in unproven)
        modules, texts = build_with_progress("check", root, unproven, args.jobs, reuse=True, keep=True, validate=names)
    if texts is not None:
        statuses = _compared(root, targets, _observed(targets, modules), texts, statuses)
    problems = {name: status for name, status in statuses.items() if status.state != "fresh"}
    orphaned = planning.orphans(root, targets, recorded)
    manifest_problem = None if problems else _manifest_problem(root, targets, recorded)
    if not problems and not orphaned and manifest_problem is None:
        up_to_date = f"{len(targets)} generated files are up to date"
        if args.format == "github":  # standard output holds findings only
            console.err.write(up_to_date + "\n")
        else:
            console.say(up_to_date, "green")
        return OK
    # The slow path (torch names, black) runs only once something is wrong, to show the fix; a file the proof
    # rendered without checking torch names is built again with them, so that a wrong name is said first.
    wrong = [t for t in targets if t.name in problems and (t.name not in (texts or {}) or t in unproven)]
    if wrong:
        _, more = build_with_progress("check", root, wrong, args.jobs, reuse=True, keep=True)
        texts = {**(texts or {}), **more}
    if args.format == "github":
        for line in _github_findings(root, targets, problems, orphaned, texts or {}, recorded, manifest_problem):
            console.out.write(line + "\n")
        return DIFFERENT
    _explain(root, targets, problems, orphaned, console, texts or {}, recorded)
    if manifest_problem is not None:
        _explain_manifest(root, manifest_problem, console)
    console.say(f"fix: {FIX_COMMAND}", "bold")
    return DIFFERENT


def _github_findings(root, targets, problems, orphaned, texts: dict[str, str], recorded, manifest_problem):
    """One `::error` per file check refuses: at the spec file whose change makes it stale where one did,
    else at the generated file's first line that regenerate would change."""
    from generator.review.sides import stale_cause

    fix = f"fix: {FIX_COMMAND}"
    manifest_file = manifest.path_in(root).as_posix()
    for target in targets:
        if target.name not in problems:
            continue
        status = problems[target.name]
        current = digests.lenient_text(target.output) if target.output.exists() else None
        reasons = f": {'; '.join(status.reasons)}" if status.reasons else ""
        if current is not None and current == texts.get(target.name):  # only the manifest is behind
            message = f"{target.relative}: content unchanged ({status.state}{reasons}); {same_output_fix(root)}"
            yield workflow_command("error", message, file=manifest_file, title="check: manifest behind")
            continue
        message = f"{target.relative}: {REASONS[status.state]}{reasons}; {fix}"
        cause = stale_cause(target, recorded) if status.state == "stale" else None
        if cause is not None:
            yield workflow_command("error", message, file=cause, title=f"check: {target.relative} stale")
        elif current is None:  # at the spec file that asks for it
            file = target.relative if target.is_matrix else target.source
            yield workflow_command("error", message, file=file, title=f"check: {target.relative} missing")
        else:
            line = _first_changed_line(current, texts.get(target.name, ""))
            title = f"check: {target.relative} {REASONS[status.state]}"
            yield workflow_command("error", message, file=target.relative, line=line, title=title)
    for orphan in orphaned:
        relative = orphan.relative_to(root).as_posix()
        yield workflow_command("error", f"{relative}: its spec file is gone; {fix}", file=relative)
    if manifest_problem is not None:
        yield workflow_command("error", f"{manifest_file}: does not record what regenerate wrote; {fix}",
                               file=manifest_file)  # fmt: skip


def _first_changed_line(current: str, regenerated: str) -> int:
    for number, (mine, theirs) in enumerate(zip(current.splitlines(), regenerated.splitlines()), 1):
        if mine != theirs:
            return number
    return min(len(current.splitlines()), len(regenerated.splitlines())) + 1


def _compared(root: Path, targets, observed, texts: dict[str, str], statuses: dict) -> dict:
    """Byte comparison of the files rendered in this run: one the manifest records that holds what this environment
    renders is fresh (and proven, for the next run); one that does not is stale, or edited when the manifest holds."""
    found = dict(statuses)
    observed = {t.name: t for t in observed}
    for target in targets:
        status = statuses[target.name]
        if target.name not in texts or not status.as_recorded:
            continue  # missing, edited, or not recorded: as the manifest says
        if digests.same_text(target.output, texts[target.name]):
            proofs.keep(target, observed[target.name], texts[target.name])
            found[target.name] = planning.Status("fresh", status.reasons, as_recorded=True)
        elif not status.reasons:
            found[target.name] = planning.Status("stale", (_writers(root, target),))
        else:
            found[target.name] = planning.Status("stale", status.reasons)
    return found


def _writers(root: Path, target) -> str:
    """Why a file whose recorded inputs are as they were would change: an environment variable it reads (recorded
    whatever its value) is set otherwise here, or this tool (or black, or Jinja2) writes it otherwise."""
    variables = sorted(n[len(digests.ENVIRONMENT) :] for n, _ in target.made_from if n.startswith(digests.ENVIRONMENT))
    if variables:
        said = "the environment" if "*" in variables else f"environment variable {', '.join(variables)}"
        return f"{said}, as set here, gives another output"
    recorded = manifest.read(root)
    wrote = recorded.written_by if recorded is not None and recorded.written_by else "an older tool"
    return f"this environment writes it otherwise (written by {wrote}; installed: {manifest.WRITER})"


def _manifest_problem(root: Path, targets, recorded) -> str | None:
    """The manifest regenerate would write, when it differs from the one on disk (all outputs fresh)."""
    expected = manifest.updated(recorded, {t.relative: dict(t.made_from) for t in targets}, {})
    return None if recorded is not None and expected.text() == recorded.text() else expected.text()


def _explain(root, targets, problems, orphaned, console, texts: dict[str, str], recorded) -> None:
    for target in targets:
        if target.name not in problems:
            continue
        relative = str(target.output.relative_to(root))
        status = problems[target.name]
        current_text = digests.lenient_text(target.output) if target.output.exists() else None
        known = recorded is not None and target.relative in recorded.outputs
        if status.state == "edited" and current_text == texts[target.name]:
            # Not a hand edit: a regenerate killed between writing the files and the manifest.
            unfinished = "what regenerate writes, not yet recorded (an unfinished run?)"
            console.say(f"{relative}: {unfinished}: {same_output_fix(root)}")
            continue
        reasons = list(status.reasons)
        if status.state == "stale" and known and not any(r.startswith("this environment") for r in reasons):
            reasons.append(f"written by {recorded.written_by or 'an older tool'}; installed: {manifest.WRITER}")
        shown = f": {'; '.join(reasons)}" if reasons else ""
        console.say(f"{relative}: {REASONS[status.state]}{shown}", "red")
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
    from generator.review import diff, formats, references, sides

    root = args.root
    if args.against_torch:
        # The stale notice comes first, but its title names the reference, which the spec says.
        refs, locations = references.load_builders(root, args.backends)
        old, new = references.reference_title(refs), "generated"
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
        uncompared = references.unreferenced(refs)
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
        # Other revisions' generated modules are user code, built in a child of their own (none when none differs).
        compared = (old_side, new_side, args.backends, (old_side.sources(), new_side.sources()))
        lost = functools.partial(sides.lost_building, old_side, new_side)
        same = compared[3][0] == compared[3][1]
        results = _revision_diff(*compared) if same else process.isolated(_revision_diff, *compared, lost=lost)
    if not results:
        raise errors.NothingToCompareError("nothing to compare: no backend on either side")
    console.out.write(formats.render(args.format, results, old, new, uncompared, drift=args.against_torch))
    return DIFFERENT if any(r.status != "same" for r in results) else OK


def _revision_diff(old_side, new_side, backends: list[str], sources: tuple) -> list:
    from generator.review import diff

    return list(diff.against_revision(old_side, new_side, backends, sources))


def cmd_verify(args, console) -> int:
    """Each generated builder equals its reference builder, and runs through torch's FX flows (review/verify.py)."""
    from generator.review import references, sides, verify

    root = args.root
    refs, locations = references.load_builders(root, args.backends)
    stale = sides.stale_files(sides.Side(root, None))
    if stale:
        stale = _content_changes(root, stale, console)
    # A generated module that is not what spec/ says is verified as it is (the proof is of what is imported),
    # and fails the run: each such file is a failure line.
    unfresh = [verify.Line(f"{f.file}: {REASONS[f.state]}" + (f": {'; '.join(f.reasons)}" if f.reasons else ""),
                           f.file) for f in stale]  # fmt: skip
    verdicts = []
    with progress.Progress("verify") as shown:
        shown.step(f"verifying {len(refs)} backend(s): their reference builders and FX flows")
        advance = shown.counter("verified", len(refs))
        for verdict in verify.verify(root, refs, locations, args.timeout):
            advance(verdict.label)
            verdicts.append(verdict)
    report = verify.Report(verdicts, unfresh, fix=FIX_COMMAND)
    if args.format == "github":
        for line in report.github(verify.repository_prefix(root)):
            console.out.write(line + "\n")
    else:
        for line in report.errors():
            console.err.write(console.paint(line, "red", console.err) + "\n")
        for line, color in report.text():
            console.say(line, color)
    return OK if report.ok else DIFFERENT


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
    what the spec says, so the diff is right, and no file needs a commit: check says the same.
    """
    if any(found.state != "stale" for found in stale):
        return stale
    recorded = manifest.read(root)
    targets = [t for t in planning.plan(root, recorded) if t.relative in {found.file for found in stale}]
    unproven = [t for t in targets if proofs.settled(t, recorded).state != "fresh"]
    unchanged = {t.relative for t in targets} - {t.relative for t in unproven}
    if unproven:  # as regenerate would build them: the unedited spec files' loads come from the model cache
        modules, texts = build_with_progress("diff", root, unproven, 1, reuse=True, keep=True)
        for target in _observed(unproven, modules):
            if manifest.digest_of(target.output) == digests.text_digest(texts[target.name]):
                unchanged.add(target.relative)
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
        for line in report:
            console.say(line)
        console.say(f"next: {FIX_COMMAND}")
        return OK
    files.write_if_changed(path, text)
    console.say(f"{'written':9} {path.relative_to(root)}: {count} pattern{'' if count == 1 else 's'}", "green")
    for line in report:
        console.say(line)
    console.say(f"next: {FIX_COMMAND}")
    return OK


def _imported(args, root: Path, path: Path, shown) -> tuple[str | None, int, list[str]]:
    """In import's child process: (the spec's text, its pattern count, the notes: the builder's unstable order and
    the dependency report), or (None, 0, the order notes) when the existing spec already builds what it returns."""
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
                return None, 0, list(reading.order_notes(backend_config))
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
        text = spec_writer.spec_source(spec, spec_writer.line_length(root))
        validation.refuse_unless_proven_equal(root, path, text, spec.backend, backend_config, args.target)
        notes = [*reading.order_notes(backend_config), *dependencies.report(spec.backend)]
        return text, len(spec.backend.configs), notes
    finally:
        load_server.stop()  # the load servers this process started end with it


def _import_lost(target: str, root: Path) -> errors.GeneratorError:
    from generator.importer import reading

    return errors.BuilderCallError(
        f"importing {target}: its process ended without a result (a builder, and the code it calls, must not end "
        "its process, fork or leave threads that exit: raise an Exception instead)",
        reading.builder_location(target, root),
    )


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
    start = starting.plan(args.root, options, Path.cwd(), root_given=args.root_given, install=args.install)
    for line in starting.write(args.root, start):
        console.say(line, "green" if line.startswith("written") else None)
    console.say(f"next: {start.next_command}")
    return OK
