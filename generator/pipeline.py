"""The pipeline, end to end: spec -> model -> expansion -> rendering -> formatting -> writing.

`plan` finds the generated modules and their input digests without executing
anything, which is what makes `check` fast and lets `regenerate` skip modules
whose inputs did not change. `build` runs the full pipeline for some modules.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
from dataclasses import dataclass
from pathlib import Path

from generator import digests, lint, resolution, spec_loading
from generator.expansion import ExpandedModule, expand_module
from generator.formatting import format_source
from generator.rendering import render_module


@dataclass(frozen=True)
class Target:
    """A generated module: its spec file, output path and current input digest."""

    name: str
    spec_file: str
    output: Path
    inputs: str


def plan(root: Path) -> list[Target]:
    targets = []
    for spec_file in spec_loading.spec_files(root):
        name = spec_loading.module_name(spec_file)
        relative = str(spec_file.relative_to(root))
        targets.append(Target(name, relative, root / "generated" / f"{name}.py", digests.inputs_digest(root, relative)))
    return targets


def freshness(target: Target) -> str:
    """'fresh', 'missing', 'stale' (inputs changed) or 'edited' (body or header changed by hand)."""
    if not target.output.exists():
        return "missing"
    header, body = digests.split_generated(target.output.read_text())
    if header is None or digests.body_digest(body) != header.body:
        return "edited"
    return "fresh" if header.inputs == target.inputs else "stale"


def orphans(root: Path, targets: list[Target]) -> list[Path]:
    """Generated modules whose spec file is gone."""
    expected = {t.output for t in targets}
    found = []
    for path in sorted((root / "generated").glob("*.py")):
        if path not in expected and path.read_text().startswith(digests.GENERATED_LINE):
            found.append(path)
    return found


def load(root: Path, validate: bool) -> tuple[list[ExpandedModule], list[lint.LintWarning]]:
    """Load and expand every spec module; `validate` checks torch names (may import torch)."""
    modules = spec_loading.load_modules(root)
    if validate:
        resolution.validate(modules, root)
    expanded = [expand_module(m) for m in modules]
    return expanded, lint.lint(expanded)


def build(root: Path, modules: list[ExpandedModule], jobs: int = 2) -> dict[str, str]:
    """Full text (header included) of each given module, formatted in parallel."""
    rendered = [(m, render_module(m, root / "templates")) for m in modules]
    outputs = [m.spec.output for m, _ in rendered]
    sources = [source for _, source in rendered]
    formatted = _format_all(sources, outputs, jobs)
    texts = {}
    for (module, _), body in zip(rendered, formatted):
        inputs = digests.inputs_digest(root, module.spec.spec_file)
        texts[module.spec.name] = digests.header_text(module.spec.spec_file, inputs, digests.body_digest(body)) + body
    return texts


def _format_all(sources: list[str], outputs: list[str], jobs: int) -> list[str]:
    if jobs <= 1 or len(sources) <= 1:
        return [format_source(s, o) for s, o in zip(sources, outputs)]
    # fork: the workers inherit the imported black instead of importing it again.
    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(min(jobs, len(sources)), mp_context=context) as pool:
        return list(pool.map(format_source, sources, outputs))
