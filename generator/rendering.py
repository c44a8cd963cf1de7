"""Stage 3: render an expanded module to Python source through Jinja2 templates.

Templates live in templates/ (module.py.j2, and one file per kind of generated
function in templates/functions/). Rendering is strict: an undefined template
variable is an error, never an empty string. Torch objects are written with the
aliases torch's own sources use (`nn.`, `F.`, `nni.`, ...), and the imports are
derived from the references the module actually contains.
"""

from __future__ import annotations

from pathlib import Path

import jinja2

from generator.errors import TemplateRenderError
from generator.expansion import ExpandedModule, torch_refs
from generator.model import (
    DEFAULT_OBSERVATION_TYPE,
    DTypeConfig,
    DTypeWithConstraints,
    FunctionDef,
    SourceLocation,
    TorchRef,
)

# Modules imported under an alias: `import torch.nn as nn` renders torch.nn.X as nn.X.
MODULE_ALIASES = {
    "operator": "operator",
    "torch": "torch",
    "torch.nn": "nn",
    "torch.nn.functional": "F",
    "torch.ao.nn.intrinsic": "nni",
    "torch.ao.nn.intrinsic.qat": "nniqat",
    "torch.ao.nn.qat": "nnqat",
    "torch.ao.nn.quantized.reference": "nnqr",
}
# Modules whose members are imported by name: `from M import fuse_conv_bn`.
FROM_IMPORT_MODULES = (
    "torch.ao.quantization.backend_config",
    "torch.ao.quantization.fuser_method_mappings",
    "torch.ao.quantization.utils",
)


def split_ref(path: str) -> tuple[str, str, bool]:
    """(module, rest, imported by name?) for the longest known module prefix of a path."""
    for module in sorted(list(MODULE_ALIASES) + list(FROM_IMPORT_MODULES), key=len, reverse=True):
        if path.startswith(module + "."):
            return module, path[len(module) + 1 :], module in FROM_IMPORT_MODULES
    raise TemplateRenderError(f"no import is known for {path}; add its module to generator/rendering.py")


def ref_source(ref: TorchRef) -> str:
    module, rest, by_name = split_ref(ref.path)
    return rest if by_name else f"{MODULE_ALIASES[module]}.{rest}"


def import_lines(refs, extra_names: dict[str, set[str]]) -> list[str]:
    """Sorted import statements for the given references plus names imported by name."""
    plain: set[str] = set()
    by_name: dict[str, set[str]] = {m: set(n) for m, n in extra_names.items()}
    for ref in refs:
        module, rest, imported_by_name = split_ref(ref.path)
        if imported_by_name:
            by_name.setdefault(module, set()).add(rest.split(".")[0])
        else:
            alias = MODULE_ALIASES[module]
            plain.add(f"import {module}" if alias == module else f"import {module} as {alias}")
    lines = sorted(plain, key=lambda line: line.split(" as ")[0])
    for module in sorted(by_name):
        lines.append(f"from {module} import {', '.join(sorted(by_name[module]))}")
    return lines


def python_source(value) -> str:
    """A Python expression that evaluates to `value`, for values of the model."""
    if isinstance(value, TorchRef):
        return ref_source(value)
    if isinstance(value, (DTypeConfig, DTypeWithConstraints, FunctionDef)):
        return value.name
    if isinstance(value, tuple):
        items = [python_source(v) for v in value]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    raise TemplateRenderError(f"cannot write {value!r} as Python source")


def docstring(text: str) -> str:
    """A docstring literal for spec text, falling back to repr when quoting needs it."""
    if '"""' in text or "\\" in text or text.endswith('"'):
        return repr(text)
    return f'"""{text}"""'


def make_environment(templates_dir: Path) -> jinja2.Environment:
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
    env.globals["DEFAULT_OBSERVATION_TYPE"] = DEFAULT_OBSERVATION_TYPE
    return env


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
        location = _undefined_location(error)
    return TemplateRenderError(f"template error: {error}", location)


def _undefined_location(error: jinja2.UndefinedError) -> SourceLocation | None:
    """Jinja reports undefined names without a line; find it in the traceback."""
    tb = error.__traceback__
    location = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename.endswith(".j2"):
            location = SourceLocation(str(Path("templates") / Path(filename).name), tb.tb_lineno)
            if "functions" in Path(filename).parts:
                location = SourceLocation(str(Path("templates/functions") / Path(filename).name), tb.tb_lineno)
        tb = tb.tb_next
    return location
