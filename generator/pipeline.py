"""The pipeline, end to end: spec -> model -> expansion -> rendering -> formatting -> writing.

`load` executes and expands the spec; `build` renders, formats and statically
checks the targets that `planning` found to be out of date. Writing is left to
the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from generator import check_memo, digests, formatting, naming, rendering, resolution, spec_loading
from generator.errors import GeneratorError
from generator.expansion import ExpandedModule, check_dtype_config_declarations, expand_module
from generator.formatting import Formatter
from generator.matrix import support_matrix
from generator.output_check import check_module
from generator.planning import Target
from generator.rendering import render_matrix, render_module


def load(root: Path, validate: bool) -> list[ExpandedModule]:
    """Load and expand every spec module; `validate` checks torch names (may import torch)."""
    modules = spec_loading.load_modules(root)
    if validate:
        resolution.validate(modules, root)
    expanded = [expand_module(m) for m in modules]
    check_dtype_config_declarations(expanded)
    naming.check_module_names(root, expanded)
    return expanded


def load_and_build(
    root: Path,
    targets: list[Target],
    jobs: int,
    built: Callable[[str], None] | None = None,
    reuse: bool = False,
    keep: bool = False,
) -> tuple[list[ExpandedModule], dict[str, str]]:
    """Load the spec, validating its torch names, and build the given targets (`built` hears of each).

    Validation may import torch (seconds, for a name never seen before): it starts
    in a child process as soon as the spec is loaded, and expansion, rendering and
    black go on meanwhile; names already known are checked while black runs. Its
    errors still come first: a wrong torch name is reported rather than anything
    it caused in expansion or rendering, and before anything is written.
    `reuse` takes unchanged spec files' loads from the model cache, `keep` keeps those made there
    (spec_loading.load_modules).
    """
    with Formatter(jobs, cache_folder(root)) as formatter:
        specs = spec_loading.load_modules(root, reuse=reuse, keep=keep)
        with resolution.Validation(specs, root) as validation:
            try:
                modules = [expand_module(m) for m in specs]
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
        with Formatter(1, cache_folder(root)) as inline:
            return build(root, modules, targets, inline, built, while_formatting)
    built = built or (lambda relative: None)
    by_name = {m.spec.name: m for m in modules}
    wanted = [t for t in targets if not t.is_matrix]
    largest_first = sorted(wanted, key=lambda t: -_pattern_count(by_name[t.name]))
    templates = root / "templates"
    if wanted:  # before forking black's workers, which would each compile them; the matrix needs only its own
        rendering.preload(templates, cache_folder(root))
    texts = {}
    pending = {}
    rendered = {}
    for target in largest_first:
        module = by_name[target.name]
        rendered[target.name] = render_module(module, templates)
        pending[target.name] = formatter.submit(rendered[target.name], module.spec.output)
    while_formatting()
    for target in targets:
        if target.is_matrix:
            texts[target.name] = _with_header(target, render_matrix(support_matrix(modules), templates))
            built(target.relative)
    # black changes the layout, never the code, so the checks pass on its text when they pass on the
    # rendered one: they run on that while black works. A module they refuse is checked again once
    # formatted, so that what black says of broken code comes first and messages name black's lines.
    checked = {name for name, text in rendered.items() if _passes_checks(root, name, by_name[name], text)}
    del rendered
    for target in wanted:
        texts[target.name] = _with_header(target, pending[target.name]())
        if target.name not in checked:
            check_module(texts[target.name], by_name[target.name].spec.output)  # before anything is written
            naming.check_spec_names(root, by_name[target.name], texts[target.name])
        built(target.relative)
    return texts


def _passes_checks(root: Path, name: str, module: ExpandedModule, text: str) -> bool:
    digest = check_memo.key(text, module.spec.output, naming.chosen_names(module))
    if check_memo.passed(cache_folder(root), name, digest):
        return True  # this very text passed both checks with these names (see generator/check_memo.py)
    entry_lines = sum(len(b.backend.configs) + 1 for b in module.backends if b.backend.configs)
    try:
        check_module(text, module.spec.output)
        naming.check_spec_names(root, module, formatting.without_entries(text, entry_lines))
    except (GeneratorError, SyntaxError):  # checked again on black's text, which says what is wrong
        return False
    check_memo.remember(cache_folder(root), name, digest)
    return True


def cache_folder(root: Path) -> Path:
    """Where formatted pieces are kept between runs (see formatting.FormatCache)."""
    return root / ".cache" / "generator"


def _pattern_count(module: ExpandedModule) -> int:
    return sum(len(b.backend.configs) for b in module.backends)


def _with_header(target: Target, body: str) -> str:
    style = digests.comment_style(target.output)
    return digests.header_text(target.source, style) + body
