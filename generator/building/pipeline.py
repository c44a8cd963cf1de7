"""The pipeline, end to end: spec -> model -> expansion -> rendering -> formatting -> writing.

`load` executes and expands the spec; `build` renders, formats and statically
checks the targets that `planning` found to be out of date. Writing is left to
the caller.
"""

from __future__ import annotations

import contextlib
import types
import warnings
from collections.abc import Callable
from pathlib import Path

from generator import digests, process, project
from generator.building import check_memo, formatting, import_names, naming, rendering, resolution
from generator.building.expansion import ExpandedModule, check_dtype_config_declarations, expand_module
from generator.building.formatting import Formatter
from generator.building.matrix import support_matrix
from generator.building.output_check import check_bindings, check_module
from generator.building.rendering import render_matrix, render_module
from generator.errors import GeneratorError
from generator.freshness.planning import Target
from generator.loading import loader
from generator.project import Templates


def load(root: Path, validate: bool, reuse: bool = False, cache_of: Path | None = None) -> list[ExpandedModule]:
    """Load and expand every spec module; `validate` checks torch names (may import torch); `reuse`
    takes unchanged spec files' loads from the model cache (of `cache_of`, when given: see
    loader.load_modules)."""
    modules = loader.load_modules(root, reuse=reuse, cache_of=cache_of)
    if validate:
        resolution.validate(modules, root)
    expanded = [expand_module(m, root) for m in modules]
    check_dtype_config_declarations(expanded)
    naming.check_module_names(root, expanded)
    return expanded


def load_and_build(
    root: Path,
    targets: list[Target],
    jobs: int,
    loads: loader.Loads,
    built: Callable[[str], None] | None = None,
    validate: bool = True,
) -> tuple[list[ExpandedModule], dict[str, str]]:
    """Load the spec, validating its torch names, and build the given targets (`built` hears of each).

    Validation may import torch (seconds, for a name never seen before): it starts
    in a child process as soon as the spec is loaded, and expansion, rendering and
    black go on meanwhile; names already known are checked while black runs. Its
    errors still come first: a wrong torch name is reported rather than anything
    it caused in expansion or rendering, and before anything is written.
    `loads` are the spec's loads, begun (loader.start_loads). Without `validate`, torch names are not checked:
    what the texts are does not depend on them (check, proving the bytes of a tree regenerate wrote, needs no torch).
    """
    with Formatter(jobs, root) as formatter:
        specs = loads.modules()
        unchecked = types.SimpleNamespace(check_known=lambda: None, finish=lambda: None)
        with resolution.Validation(specs, root) if validate else contextlib.nullcontext(unchecked) as validation:
            try:
                modules = [expand_module(m, root) for m in specs]
                check_dtype_config_declarations(modules)
                naming.check_module_names(root, modules)
                texts = build(root, modules, targets, formatter, built, while_formatting=validation.check_known)
            except Exception:
                validation.finish()
                raise
            validation.finish()
            return modules, texts


def build(
    root: Path,
    modules: list[ExpandedModule],
    targets: list[Target],
    formatter: Formatter | None = None,
    built: Callable[[str], None] | None = None,
    while_formatting: Callable[[], None] = lambda: None,
):
    """Full text (header included) of each target; black runs in parallel while rendering goes on.

    `modules` must be every expanded module: the matrix is made from all of them.
    Without a `formatter`, black runs in this process. `built` is called with
    each target's output path as its text is done (the progress line);
    `while_formatting` runs once every module has been handed to the formatter,
    before its results are awaited.
    """
    if formatter is None:
        with Formatter(1, root) as inline:
            return build(root, modules, targets, inline, built, while_formatting)
    built = built or (lambda relative: None)
    by_name = {m.spec.name: m for m in modules}
    wanted = [t for t in targets if not t.is_matrix]
    largest_first = sorted(wanted, key=lambda t: -_pattern_count(by_name[t.name]))
    templates = project.templates(root)
    if wanted:  # before forking black's workers, which would each compile them; the matrix needs only its own
        rendering.preload(templates, root)
    pending, checked = _handed_to_the_formatter(root, [by_name[t.name] for t in largest_first], templates, formatter)
    texts = {}
    while_formatting()
    for target in targets:
        if target.is_matrix:
            texts[target.name] = _with_header(target, render_matrix(support_matrix(modules), templates))
            built(target.relative)
    for target in wanted:
        texts[target.name] = _with_header(target, pending[target.name]())
        if target.name not in checked:
            check_module(texts[target.name], by_name[target.name].spec.output)  # before anything is written
            naming.check_spec_names(root, by_name[target.name], texts[target.name])
            check_bindings(texts[target.name], by_name[target.name].spec.output)  # a spec's clash is named first
        built(target.relative)
    return texts


def _handed_to_the_formatter(
    root: Path, largest_first: list[ExpandedModule], templates: Templates, formatter: Formatter
) -> tuple[dict[str, Callable[[], str]], set[str]]:
    """Render each module and hand it to the formatter: (each module's pending result, the names of those
    whose rendered text passed the static checks). The first error is raised as rendering the modules
    one after the other would raise it.

    Half the modules (by patterns) are rendered and checked in a forked child meanwhile, when there
    are enough to be worth a process (see _child_share). black changes the layout, never the code, so
    the checks pass on its text when they pass on the rendered one: they run on that while black works.
    A module they refuse is checked again once formatted, so that what black says of broken code comes
    first and messages name black's lines.
    """
    pending = {}
    theirs = _child_share(largest_first) if formatter.jobs > 1 else []
    mine = [m for m in largest_first if id(m) not in {id(other) for other in theirs}]
    with process.Forked(_rendered_and_checked_there, root, theirs) if theirs else contextlib.nullcontext() as child:
        outcomes = _rendered(mine, templates)
        for module in mine:
            if isinstance(outcomes.get(module.spec.name), str):
                pending[module.spec.name] = formatter.submit(outcomes[module.spec.name], module.spec.output)
        checked = {m.spec.name for m in mine if isinstance(outcomes.get(m.spec.name), str)
                   and _passes_checks(root, m.spec.name, m, outcomes[m.spec.name])}  # fmt: skip
        if child is not None:
            their_outcomes, their_checked = child.result()
            failed = next((i for i, m in enumerate(theirs) if their_outcomes.get(m.spec.name, "") is None), None)
            if failed is not None:  # not with a GeneratorError: rendered here from there on, to raise it in order
                their_outcomes, their_checked = _rendered_and_checked(root, theirs[failed:])
            outcomes.update(their_outcomes)
            checked |= their_checked
    for module in largest_first:  # the first error, as rendering them one after the other would raise it
        if isinstance(outcomes.get(module.spec.name), Exception):
            raise outcomes[module.spec.name]
    for module in largest_first:
        if module.spec.name not in pending:
            pending[module.spec.name] = formatter.submit(outcomes[module.spec.name], module.spec.output)
    return pending, checked


# A child process renders part of the modules only when they hold this many patterns in all: below
# it, forking and sending the texts back cost about what rendering them does.
_PATTERNS_WORTH_A_CHILD = 600


def _child_share(largest_first: list[ExpandedModule]) -> list[ExpandedModule]:
    """The modules a child renders: about half the patterns, the largest module staying here."""
    if len(largest_first) < 2 or sum(map(_pattern_count, largest_first)) < _PATTERNS_WORTH_A_CHILD:
        return []
    here = there = 0
    share = []
    for module in largest_first:
        if here <= there:
            here += _pattern_count(module)
        else:
            there += _pattern_count(module)
            share.append(module)
    return share


def _rendered(modules: list[ExpandedModule], templates: Templates) -> dict[str, str | Exception]:
    """Each module's rendered text by name, in order, up to the first error, which takes its place.

    An exception that is not a GeneratorError (a template's bug) is kept too: raised in order, it
    neither hides a spec error in a module rendered before it nor is hidden by one rendered after it.
    """
    outcomes: dict[str, str | Exception] = {}
    for module in modules:
        try:
            outcomes[module.spec.name] = render_module(module, templates)
        except Exception as error:
            outcomes[module.spec.name] = error
            break
    return outcomes


def _rendered_and_checked(root: Path, modules: list[ExpandedModule]) -> tuple[dict, set[str]]:
    """In a child process: _rendered, and the names of the texts that pass the static checks."""
    outcomes = _rendered(modules, project.templates(root))
    checked = {m.spec.name for m in modules if isinstance(outcomes.get(m.spec.name), str)
               and _passes_checks(root, m.spec.name, m, outcomes[m.spec.name])}  # fmt: skip
    return outcomes, checked


def _rendered_and_checked_there(root: Path, modules: list[ExpandedModule]) -> tuple[dict, set[str]]:
    """_rendered_and_checked, with None for an exception that is not a GeneratorError: it may not pickle,
    and its traceback must come from the process that raises it (build renders that module again)."""
    outcomes, checked = _rendered_and_checked(root, modules)
    return {name: None if isinstance(o, Exception) and not isinstance(o, GeneratorError) else o
            for name, o in outcomes.items()}, checked  # fmt: skip


def _passes_checks(root: Path, name: str, module: ExpandedModule, text: str) -> bool:
    digest = check_memo.key(text, module.spec.output, import_names.chosen_names(module))
    if check_memo.passed(root, name, digest):
        return True  # this very text passed both checks with these names (see generator/building/check_memo.py)
    entry_lines = sum(len(b.backend.configs) + 1 for b in module.backends if b.backend.configs)
    try:
        # Silent: compile() warns of the text (`x is 1`) only on a cache miss, and part of the modules
        # are checked in a child whose output comes after this process's.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_module(text, module.spec.output)
            bindings = formatting.without_entries(text, entry_lines)  # all of the module-level ones
            naming.check_spec_names(root, module, bindings)
            check_bindings(bindings, module.spec.output)
    except Exception:  # noqa: BLE001 - checked again on black's text, which says what is wrong (compile's
        # RecursionError on a huge expression too: raised there, in order, by this process)
        return False
    check_memo.remember(root, name, digest)
    return True


def _pattern_count(module: ExpandedModule) -> int:
    return sum(len(b.backend.configs) for b in module.backends)


def _with_header(target: Target, body: str) -> str:
    style = digests.comment_style(target.output)
    return digests.header_text(target.source, style) + body
