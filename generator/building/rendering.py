"""Stage 3: render an expanded module to Python source through Jinja2 templates.

Templates live in templates/ (module.py.j2, and one file per kind of generated
function in templates/functions/): the project's own folder first, then the ones
the tool ships (generator.project.templates). Rendering is strict: an undefined template
variable is an error, never an empty string. How each value is spelt in Python
is decided in generator/spelling.py.
"""

from __future__ import annotations

import contextvars
import difflib
import functools
import re
from pathlib import Path

import jinja2
import jinja2.meta

from generator.building.expansion import ExpandedModule, torch_refs
from generator.building.formatting import BLOCK_MARKER, ENTRY_MARKER
from generator.building.import_names import import_aliases
from generator.building.matrix import SupportMatrix
from generator.building.output_check import check_imports
from generator.building.template_cache import TemplateBytecodeCache
from generator.errors import SpecFieldError, TemplateRenderError
from generator.model import (
    DEFAULT_OBSERVATION_TYPE,
    FunctionDef,
    SourceLocation,
)
from generator.project import Templates
from generator.spelling import bound_source, docstring, import_lines, python_source


def searched(templates: Templates | Path) -> Templates:
    """The templates search path; a folder alone is that folder (labelled templates/)."""
    return templates if isinstance(templates, Templates) else Templates((Path(templates),), ("templates",))


def make_environment(templates: Templates | Path) -> jinja2.Environment:
    """One environment per templates search path (project.templates; or one folder), so each template is
    compiled once per process.

    Jinja2 checks a template file's modification time before reusing it, so an
    edited template is recompiled.
    """
    return _environment(searched(templates))


@functools.cache
def _environment(templates: Templates) -> jinja2.Environment:
    env = jinja2.Environment(
        # followlinks: a symlinked folder (templates/functions) holds templates, as project.Templates.every says
        loader=jinja2.FileSystemLoader([str(folder) for folder in templates.folders], followlinks=True),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["py"] = _python_source
    env.filters["docstring"] = docstring
    env.filters["bound"] = bound_source
    env.filters["md_code"] = markdown_code
    env.globals["DEFAULT_OBSERVATION_TYPE"] = DEFAULT_OBSERVATION_TYPE
    env.globals["BLOCK_MARKER"] = BLOCK_MARKER
    env.globals["ENTRY_MARKER"] = ENTRY_MARKER
    return env


# The aliases of the module being rendered (building/import_names.py), which the `py` filter spells
# its objects with, in its function templates too.
_ALIASES: contextvars.ContextVar[dict[tuple[str, str], str] | None] = contextvars.ContextVar("aliases", default=None)


def _python_source(value) -> str:
    """The `py` filter; an undefined variable fails as itself, so its template line is reported."""
    if isinstance(value, jinja2.Undefined):
        value._fail_with_undefined_error()
    return python_source(value, _ALIASES.get())


def markdown_code(text: str) -> str:
    """Inline code for a Markdown table cell: pipes escaped, fenced by more backticks than it holds."""
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    padded = f" {text} " if text.startswith("`") or text.endswith("`") else text
    return fence + padded.replace("|", "\\|") + fence


def preload(templates: Templates | Path, cache_root: Path | None = None) -> None:
    """Compile every template now, or load it from the cache of the project at `cache_root` (see template_cache)
    when given."""
    env = make_environment(templates)
    if cache_root is not None:
        env.bytecode_cache = TemplateBytecodeCache(cache_root)
    for name in env.list_templates(extensions=["j2"]):
        try:
            env.get_template(name)
        except jinja2.TemplateError as error:  # a project's own template that does not compile
            raise _template_error(error, templates) from None


def render_module(module: ExpandedModule, templates: Templates | Path) -> str:
    """The module's source text, before formatting and without the digest header."""
    templates = searched(templates)
    env = make_environment(templates)
    refs = list(_module_refs(module))
    aliases = import_aliases(module, (ref.path for ref in refs))
    imports = import_lines(refs, _names_imported(module), aliases)
    check_imports(imports, module.spec.output)
    token = _ALIASES.set(aliases)
    try:
        functions = [render_function(env, f) for f in module.functions]
        return env.get_template("module.py.j2").render(
            module=module,
            imports=imports,
            exports=_exports(module),
            functions=functions,
        )
    except jinja2.TemplateError as error:
        raise _template_error(error, templates) from None
    finally:
        _ALIASES.reset(token)


def render_matrix(matrix: SupportMatrix, templates: Templates | Path) -> str:
    """The support matrix document, without the digest header."""
    templates = searched(templates)
    env = make_environment(templates)
    try:
        return env.get_template("docs/support-matrix.md.j2").render(matrix=matrix)
    except jinja2.TemplateError as error:
        raise _template_error(error, templates) from None


def render_function(env: jinja2.Environment, function: FunctionDef) -> str:
    _check_function(env, function)
    template = env.get_template(f"functions/{function.template}.py.j2")
    return template.render(name=function.name, **dict(function.params))


def _check_function(env: jinja2.Environment, function: FunctionDef) -> None:
    """function("template", name, **params) names a template in templates/functions/ and gives
    the parameters it reads. Extra ones are allowed (specs pass one dict of params to several
    templates), but one that misspells a parameter the template reads is an error here."""
    templates = sorted(n[len("functions/") : -len(".py.j2")] for n in env.list_templates(filter_func=_is_function))
    if function.template not in templates:
        close = difflib.get_close_matches(str(function.template), templates, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"there are {', '.join(map(repr, templates))}"
        message = f"function(): no template templates/functions/{function.template}.py.j2 ({hint})"
        raise SpecFieldError(message, function.location)
    # A parameter the template reads and the spec does not give is the template's fault
    # (rendering reports its line), unless the spec gives a misspelling of it.
    wanted = template_parameters(env, function.template) - {"name"}
    unknown = sorted({key for key, _ in function.params} - wanted)
    for missing in sorted(wanted - {key for key, _ in function.params}):
        close = difflib.get_close_matches(missing, unknown, n=1)
        if close:
            message = f"function({function.template!r}, ...) has no parameter {close[0]}= (did you mean {missing}=?)"
            raise SpecFieldError(message, function.location)


def _is_function(name: str) -> bool:
    return name.startswith("functions/") and name.endswith(".py.j2")


def template_parameters(env: jinja2.Environment, template: str) -> frozenset[str]:
    """The variables a function template reads that the environment does not define."""
    source = env.loader.get_source(env, f"functions/{template}.py.j2")[0]
    return _undeclared_variables(env, source)


@functools.lru_cache(maxsize=1024)
def _undeclared_variables(env: jinja2.Environment, source: str) -> frozenset[str]:
    # Keyed by the template's text, so an edited template is parsed again; `import` asks
    # for the same few templates thousands of times while it tries candidates.
    return frozenset(jinja2.meta.find_undeclared_variables(env.parse(source)) - set(env.globals))


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


def _template_error(error: jinja2.TemplateError, templates: Templates | Path) -> TemplateRenderError:
    """The error at the template file it is about: the project's own (templates/x.j2) or the shipped one."""
    templates = searched(templates)
    name = getattr(error, "name", None) or getattr(error, "filename", None)
    line = getattr(error, "lineno", None)
    location = None
    if name and line:
        found = templates.found(name)
        location = SourceLocation(found[1] if found else str(Path("templates") / name), line)
    elif isinstance(error, jinja2.UndefinedError):
        location = _undefined_location(error, templates)
    return TemplateRenderError(f"template error: {error}", location)


def _undefined_location(error: jinja2.UndefinedError, templates: Templates) -> SourceLocation | None:
    """Jinja reports undefined names without a line; find it in the traceback."""
    tb = error.__traceback__
    location = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        label = templates.label_of(filename) if filename.endswith(".j2") else None
        if label is not None:
            location = SourceLocation(label, tb.tb_lineno)
        tb = tb.tb_next
    return location
