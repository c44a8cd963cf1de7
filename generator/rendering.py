"""Stage 3: render an expanded module to Python source through Jinja2 templates.

Templates live in templates/ (module.py.j2, and one file per kind of generated
function in templates/functions/). Rendering is strict: an undefined template
variable is an error, never an empty string. How each value is spelt in Python
is decided in source_spelling.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import jinja2

from generator.errors import TemplateRenderError
from generator.expansion import ExpandedModule, torch_refs
from generator.formatting import BLOCK_MARKER
from generator.matrix import SupportMatrix
from generator.model import (
    DEFAULT_OBSERVATION_TYPE,
    FunctionDef,
    SourceLocation,
)
from generator.source_spelling import docstring, import_lines, python_source


@functools.cache
def make_environment(templates_dir: Path) -> jinja2.Environment:
    """One environment per templates folder, so each template is compiled once per process.

    Jinja2 checks a template file's modification time before reusing it, so an
    edited template is recompiled.
    """
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["py"] = python_source
    env.filters["docstring"] = docstring
    env.filters["md_code"] = markdown_code
    env.globals["DEFAULT_OBSERVATION_TYPE"] = DEFAULT_OBSERVATION_TYPE
    env.globals["BLOCK_MARKER"] = BLOCK_MARKER
    return env


def markdown_code(text: str) -> str:
    """Inline code for a Markdown table cell: pipes escaped, fenced by more backticks than it holds."""
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    padded = f" {text} " if text.startswith("`") or text.endswith("`") else text
    return fence + padded.replace("|", "\\|") + fence


def preload(templates_dir: Path) -> None:
    """Compile every template now, e.g. before forking workers that would each compile them."""
    env = make_environment(templates_dir)
    for name in env.list_templates(extensions=["j2"]):
        env.get_template(name)


def render_module(module: ExpandedModule, templates_dir: Path) -> str:
    """The module's source text, before formatting and without the digest header."""
    env = make_environment(templates_dir)
    try:
        functions = [render_function(env, f) for f in module.functions]
        return env.get_template("module.py.j2").render(
            module=module,
            imports=import_lines(_module_refs(module), _names_imported(module)),
            exports=_exports(module),
            functions=functions,
        )
    except jinja2.TemplateError as error:
        raise _template_error(error, templates_dir) from None


def render_matrix(matrix: SupportMatrix, templates_dir: Path) -> str:
    """The support matrix document, without the digest header."""
    env = make_environment(templates_dir)
    try:
        return env.get_template("docs/support-matrix.md.j2").render(matrix=matrix)
    except jinja2.TemplateError as error:
        raise _template_error(error, templates_dir) from None


def render_function(env: jinja2.Environment, function: FunctionDef) -> str:
    template = env.get_template(f"functions/{function.template}.py.j2")
    return template.render(name=function.name, **dict(function.params))


def _module_refs(module: ExpandedModule):
    yield from torch_refs([b.backend.configs for b in module.backends])
    yield from torch_refs(module.dtype_configs)
    yield from torch_refs(module.constraints)
    yield from torch_refs(module.functions)


def _names_imported(module: ExpandedModule) -> dict[str, set[str]]:
    names = {"BackendConfig", "BackendPatternConfig", "DTypeConfig"}
    if module.constraints:
        names.add("DTypeWithConstraints")
    configs = [c for b in module.backends for c in b.backend.configs]
    if any(c.observation_type != DEFAULT_OBSERVATION_TYPE or c.num_tensor_args_to_observation_type for c in configs):
        names.add("ObservationType")
    return {"torch.ao.quantization.backend_config": names}


def _exports(module: ExpandedModule) -> list[str]:
    names = []
    for expanded in module.backends:
        names.append(expanded.backend.builder)
        if expanded.backend.dict_builder:
            names.append(expanded.backend.dict_builder)
    return names + [n for n in module.spec.exports if n not in names]


def _template_error(error: jinja2.TemplateError, templates_dir: Path) -> TemplateRenderError:
    name = getattr(error, "name", None) or getattr(error, "filename", None)
    line = getattr(error, "lineno", None)
    location = None
    if name and line:
        location = SourceLocation(str(Path("templates") / name), line)
    elif isinstance(error, jinja2.UndefinedError):
        location = _undefined_location(error, templates_dir)
    return TemplateRenderError(f"template error: {error}", location)


def _undefined_location(error: jinja2.UndefinedError, templates_dir: Path) -> SourceLocation | None:
    """Jinja reports undefined names without a line; find it in the traceback."""
    tb = error.__traceback__
    location = None
    while tb is not None:
        filename = Path(tb.tb_frame.f_code.co_filename)
        if filename.suffix == ".j2" and templates_dir in filename.parents:
            location = SourceLocation(str(Path("templates") / filename.relative_to(templates_dir)), tb.tb_lineno)
        tb = tb.tb_next
    return location
