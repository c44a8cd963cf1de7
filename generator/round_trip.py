"""Import over an existing spec: keep it when it already builds exactly what the builder returns.

A BackendConfig carries less than a spec says: sections, how a dtype is spelt
(`torch.float` and `torch.float32` are one object), docstrings, declared differences
from a reference builder (`added`/`removed`/`changed`), loops and op groups are gone
from what a builder returns. So `import --force` of a builder over the spec file it
would replace first builds that spec as regenerate would (load, expand, render, run
the rendered module) and compares each of its backends with what the builder returned,
with the comparator the equality tests use. When one equals it, the spec file is
already a lossless description of the builder and is kept byte for byte; only a
builder that returns something else gets a freshly written spec.
"""

from __future__ import annotations

from pathlib import Path

from generator.errors import GeneratorError


def spec_already_builds(root: Path, path: Path, backend_config) -> str | None:
    """The builder name of the backend in spec `path` that builds exactly `backend_config`, else None."""
    if not path.is_file():
        return None
    from generator import spec_loading
    from generator.expansion import expand_module
    from generator.rendering import render_module

    try:
        modules = spec_loading.load_modules(root)
        (module,) = [m for m in modules if (root / m.spec_file).resolve() == path.resolve()]
        expanded = expand_module(module)
        text = render_module(expanded, root / "templates")
    except (GeneratorError, ValueError):
        return None  # a spec that does not load (or is not this file's) is replaced, as before
    for backend in module.backends:
        if backend.name == backend_config.name and _builds(text, backend.builder, backend_config, module.spec_file):
            return backend.builder
    return None


def _builds(text: str, builder: str, backend_config, spec_file: str) -> bool:
    from generator.compare import compare_backend_configs

    namespace: dict = {"__name__": "_import_round_trip"}
    try:
        exec(compile(text, f"<{spec_file} as regenerate renders it>", "exec"), namespace)
        built = namespace[builder]()
    except Exception:  # the spec's own user code may fail; then it is not kept
        return False
    return compare_backend_configs(builder, built, backend_config) == []
