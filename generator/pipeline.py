"""The pipeline, end to end: spec -> model -> expansion -> rendering -> formatting -> writing.

`load` executes and expands the spec; `build` renders and formats the targets
that `planning` found to be out of date. Writing is left to the caller.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
from pathlib import Path

from generator import digests, resolution, spec_loading
from generator.expansion import ExpandedModule, expand_module
from generator.formatting import format_source
from generator.matrix import support_matrix
from generator.planning import Target
from generator.rendering import render_matrix, render_module


def load(root: Path, validate: bool) -> list[ExpandedModule]:
    """Load and expand every spec module; `validate` checks torch names (may import torch)."""
    modules = spec_loading.load_modules(root)
    if validate:
        resolution.validate(modules, root)
    return [expand_module(m) for m in modules]


def build(root: Path, modules: list[ExpandedModule], targets: list[Target], jobs: int = 2) -> dict[str, str]:
    """Full text (header included) of each target, modules formatted in parallel.

    `modules` must be every expanded module: the matrix is made from all of them.
    """
    by_name = {m.spec.name: m for m in modules}
    wanted = [t for t in targets if not t.is_matrix]
    bodies = _module_bodies(root, [by_name[t.name] for t in wanted], jobs)
    texts = {t.name: _with_header(t, body) for t, body in zip(wanted, bodies)}
    for target in targets:
        if target.is_matrix:
            body = render_matrix(support_matrix(modules), root / "templates")
            texts[target.name] = _with_header(target, body)
    return texts


def _module_bodies(root: Path, modules: list[ExpandedModule], jobs: int) -> list[str]:
    sources = [render_module(m, root / "templates") for m in modules]
    return _format_all(sources, [m.spec.output for m in modules], jobs)


def _with_header(target: Target, body: str) -> str:
    style = digests.comment_style(target.output)
    return digests.header_text(target.source, target.inputs, digests.body_digest(body), style) + body


def _format_all(sources: list[str], outputs: list[str], jobs: int) -> list[str]:
    if jobs <= 1 or len(sources) <= 1:
        return [format_source(s, o) for s, o in zip(sources, outputs)]
    # fork: the workers inherit the imported black instead of importing it again.
    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(min(jobs, len(sources)), mp_context=context) as pool:
        return list(pool.map(format_source, sources, outputs))
