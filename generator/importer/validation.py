"""Import: the spec about to be written is read as regenerate would read it, first.

`import` builds its spec from what a builder returns, and a builder can return what
no spec may say (a name that is not an identifier, a builder name that is a keyword,
...). Rather than write a file regenerate then refuses, the text is laid into a
temporary copy of spec/ (its `_` helper modules, such as spec/_common.py, and the new
file alone), loaded with the real spec loader, its torch names validated, expanded and
rendered, and every name it imports checked to import from any folder (without the project
root that `import` put on sys.path to reach the builder). Any refusal becomes import's own
one-line refusal, and nothing is written.

Then import proves what it is about to write (`refuse_unless_proven_equal`): the module just
rendered runs in this process, beside the builder it came from, and the BackendConfig its
builder returns is compared with the builder's by the equality proof the tests use (every
field, callables included). Whatever differs, because of a bug of import's or a builder it
misreads, nothing is written and one line names the first differing pattern and field.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from generator import cache, project
from generator.errors import GeneratorError, ImportedSpecRefusedError


def refuse_what_regenerate_refuses(root: Path, path: Path, text: str) -> str:
    """Raise ImportedSpecRefusedError unless regenerate would accept spec `path` with this text;
    return the module regenerate renders of it (unformatted)."""
    from generator.building import importability, resolution
    from generator.building.expansion import expand_module
    from generator.building.rendering import render_module
    from generator.importer import reading
    from generator.loading import loader

    with tempfile.TemporaryDirectory(prefix="generator-import-") as temporary:
        copy = Path(temporary)
        specs = project.config(root).specs
        if (root / project.PYPROJECT).is_file():  # the same layout: the spec package's name, the generated folder
            shutil.copy2(root / project.PYPROJECT, copy / project.PYPROJECT)
        _helpers_of(root / specs, copy / specs)
        (copy / specs / path.name).write_text(text, encoding="utf-8")
        _names_cache_of(root, copy)
        try:
            modules = loader.load_modules(copy)
            resolution.validate(modules, copy)
            expanded = [expand_module(module) for module in modules]
            rendered = {module.spec.spec_file: render_module(module, project.templates(root)) for module in expanded}
            with reading.without_the_root_import_added():
                importability.require_importable_anywhere(expanded)
        except GeneratorError as error:
            raise ImportedSpecRefusedError(
                f"not written: regenerate would refuse {path.relative_to(root)} as import made it ({error}); "
                "change what the builder returns, or report the builder that led here"
            ) from None
    return next(text for spec_file, text in rendered.items() if Path(spec_file).name == path.name)


def refuse_unless_proven_equal(root: Path, path: Path, text: str, backend, backend_config, target: str) -> None:
    """Raise ImportedSpecRefusedError unless spec `path` with this text regenerates a module whose
    builder returns what `target` returned (`backend_config`), by the equality proof."""
    from generator import user_code
    from generator.importer.round_trip import build_rendered
    from generator.review.equality import compare_backend_configs

    rendered = refuse_what_regenerate_refuses(root, path, text)
    spec_file = str(path.relative_to(root))
    where = f"not written: {spec_file} as import made it regenerates a {backend.builder}() that"
    # The rendered module runs user code (the builder's modules, factories it calls): its prints
    # go to stderr, and whatever it raises is one line.
    with user_code.running(ImportedSpecRefusedError, where, root, exceptions=False):
        try:
            built = build_rendered(rendered, backend.builder, spec_file)
        except Exception as error:
            raise ImportedSpecRefusedError(
                f"{where} raises {user_code.describe(error)}; report the builder that led here"
            ) from None
        differences = compare_backend_configs(backend.builder, built, backend_config)
    if differences:
        first = differences[0]
        what = f"pattern {first.pattern}: {first.field}" if first.pattern else first.field
        more = f" (and {len(differences) - 1} more differences)" if len(differences) > 1 else ""
        raise ImportedSpecRefusedError(
            f"{where} differs from {target}(): {what}: "
            f"{first.detail} (generated != builder's){more}; report the builder that led here"
        )


def _helpers_of(spec: Path, copy: Path) -> None:
    """spec/'s package files and `_` helper modules, which the new spec may import."""
    copy.mkdir(parents=True)
    for item in spec.iterdir():
        if not item.name.startswith("_") or item.name == "__pycache__":
            continue
        if item.is_dir():
            shutil.copytree(item, copy / item.name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(item, copy / item.name)


def _names_cache_of(root: Path, copy: Path) -> None:
    """The project's torch-names cache, so that validating the copy imports only new names."""
    cache.Cache(root, cache.TORCH_NAMES).copy_to(copy)
