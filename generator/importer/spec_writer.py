"""Write an imported builder (`reading.ImportedSpec`) as spec source, formatted with black.

The spec reads like the hand-written ones: torch names through the DSL's aliases
(`nn.Conv2d`, `F.relu`, `fusers.fuse_conv_bn`), dtype configs and constraints as
named constants, shared dtype-config lists named once, one `config(...)` per
pattern in the builder's order, or, where `import` compacted a run of them, the
`spec/_common.py` op-group call that builds it (`native_layout(...)`, `conv_configs(...)`).
Names the DSL has no alias for (a backend's own modules or fuser methods) are written
`importable("package.module.name")`.
"""

from __future__ import annotations

import math
from pathlib import Path

from generator import dsl, model, project
from generator.importer.compaction import GroupCall
from generator.importer.op_lists import Loop, LoopVariable, Numbered
from generator.importer.reading import ImportedSpec
from generator.spelling import bound_source, infinity_source

# Dotted path -> DSL name, for the lazy names the DSL exports (nn, F, fusers, MatchAllNode, ...).
DSL_ALIASES = {
    getattr(dsl, name)._path: name for name in dsl.__all__ if isinstance(getattr(dsl, name), dsl.Ref)
}
DEFAULT_LINE_LENGTH = 120  # the width of the generator's own spec files and generated modules
_LONGEST_FIRST = sorted(DSL_ALIASES, key=len, reverse=True)
_MODULE_FIELDS = ("root_module", "qat_module", "reference_quantized_module", "fused_module")
_CALLABLE_FIELDS = ("fuser_method", "root_node_getter", "extra_inputs_getter")


class _Writer:
    """Spells model values, remembering which DSL names the spec must import."""

    def __init__(self, shared_lists):
        self.used: set[str] = {"Backend", "Module"}
        self.common: set[str] = set()  # op groups imported from spec._common
        self.lists = {members: name for name, members in shared_lists}

    def ref(self, ref: model.TorchRef) -> str:
        for prefix in _LONGEST_FIRST:
            if ref.path == prefix or ref.path.startswith(prefix + "."):
                self.used.add(DSL_ALIASES[prefix])
                rest = ref.path[len(prefix) + 1 :].split(".") if ref.path != prefix else []
                return DSL_ALIASES[prefix] + "".join(f".{p}" if p.isidentifier() else f"[{p!r}]" for p in rest)
        self.used.add("importable")
        return f"importable({ref.path!r})"

    def value(self, value) -> str:
        if isinstance(value, LoopVariable):
            return value.name
        if isinstance(value, Numbered):
            return self.numbered(value)
        if isinstance(value, model.TorchRef):
            return self.ref(value)
        if isinstance(value, (model.DTypeConfig, model.DTypeWithConstraints)):
            return value.name
        if isinstance(value, model.FunctionDef):
            return self.function(value)
        if isinstance(value, model.Call):
            return self.call(value)
        if isinstance(value, tuple):
            items = [self.value(v) for v in value]
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        return infinity_source(value) if isinstance(value, float) and math.isinf(value) else repr(value)

    def numbered(self, value: Numbered) -> str:
        """`nn[f"Conv{d}d"]` for a torch name numbered by the loop's variable, `f"conv{d}d"` for a string."""
        if not value.is_ref:
            return "f" + repr(value.template.replace("{d}", "{" + value.variable.name + "}"))
        module, _, last = value.template.rpartition(".")
        return f"{self.ref(model.TorchRef(module))}[f{last.replace('{d}', '{' + value.variable.name + '}')!r}]"

    def function(self, function: model.FunctionDef) -> str:
        params = dict(function.params)
        if function.template == "sequential":
            self.used.add("sequential")
            return f"sequential({self.value(params['fused_module'])})"
        self.used.add("function")
        arguments = "".join(f", {key}={self.value(value)}" for key, value in function.params)
        return f"function({function.template!r}, {function.name!r}{arguments})"

    def call(self, call: model.Call) -> str:
        """`partial(f, ...)` for functools.partial, else `call(factory, ...)`."""
        arguments = [self.value(v) for v in call.args] + [f"{k}={self.value(v)}" for k, v in call.keywords]
        if call.function.path == model.PARTIAL:
            self.used.add("partial")
            return f"partial({', '.join(arguments)})"
        self.used.add("call")
        return f"call({', '.join([self.ref(call.function), *arguments])})"

    def observation_type(self, name: str) -> str:
        self.used.add("ObservationType")
        return f"ObservationType.{name}"

    def dtype_configs(self, dtype_configs) -> str:
        members = tuple(dc.name for dc in dtype_configs)
        return self.lists.get(members) or f"[{', '.join(members)}]"

    def entry(self, entry) -> str:
        """One item of the backend's configs: a pattern config or an op-group call."""
        if isinstance(entry, model.PatternConfig):
            return self.config(entry)
        if isinstance(entry, Loop):
            return self.loop(entry)
        self.common.add(entry.function)
        arguments = [f"{key}=" * (key is not None) + self.argument(value) for key, value in entry.arguments]
        return ",\n".join([f"{entry.function}({', '.join(arguments)})", *(self.config(c) for c in entry.overrides)])

    def loop(self, loop: Loop) -> str:
        """`[body for variables in op list]`; a body of several configs is a list of them."""
        body = [self.config(c) for c in loop.body]
        item = body[0] if len(body) == 1 else f"[{', '.join(body)}]"
        targets = ", ".join(v.name for v in loop.variables)
        return f"[{item} for {targets} in {loop.list_name or self.value(loop.op_list)}]"

    def argument(self, value) -> str:
        if isinstance(value, tuple) and value and isinstance(value[0], model.DTypeConfig):
            return self.dtype_configs(value)
        if isinstance(value, tuple) and value and isinstance(value[0], model.PatternConfig):
            return f"[{', '.join(self.config(c) for c in value)}]"
        return repr(value)

    def config(self, config: model.PatternConfig) -> str:
        self.used.add("config")
        if config.pattern is not None:
            arguments = [self.value(config.pattern), self.dtype_configs(config.dtype_configs)]
        else:
            arguments = [
                f"pattern_complex_format={self.value(config.pattern_complex_format)}",
                f"dtype_configs={self.dtype_configs(config.dtype_configs)}",
            ]
        if config.observation_type != model.DEFAULT_OBSERVATION_TYPE:
            arguments.append(f"observation_type={self.observation_type(config.observation_type)}")
        for field in _MODULE_FIELDS + _CALLABLE_FIELDS:
            if getattr(config, field) is not None:
                arguments.append(f"{field}={self.value(getattr(config, field))}")
        if config.section:
            arguments.append(f"section={self.value(config.section)}")
        if config.overrides:
            arguments.append(f"overrides={config.overrides!r}")
        if config.num_tensor_args_to_observation_type:
            items = ", ".join(f"{n}: {self.observation_type(t)}" for n, t in config.num_tensor_args_to_observation_type)
            arguments.append(f"num_tensor_args_to_observation_type={{{items}}}")
        if config.input_type_to_index:
            items = ", ".join(f"{k!r}: {v!r}" for k, v in config.input_type_to_index)
            arguments.append(f"input_type_to_index={{{items}}}")
        return f"config({', '.join(arguments)})"

    def constraints(self, c: model.DTypeWithConstraints) -> str:
        self.used.add("DTypeWithConstraints")
        bounds = "".join(f", {key}={bound_source(c, key)}" for key in c.bounds)
        return f"{c.name} = DTypeWithConstraints(dtype={self.value(c.dtype)}{bounds})"

    def dtype_config(self, dc: model.DTypeConfig) -> str:
        self.used.add("DTypeConfig")
        fields = ("input_dtype", "output_dtype", "weight_dtype", "bias_dtype", "is_dynamic")
        arguments = ", ".join(f"{f}={self.value(getattr(dc, f))}" for f in fields if getattr(dc, f) is not None)
        return f"{dc.name} = DTypeConfig({arguments})"


def spec_source(spec: ImportedSpec, line_length: int = DEFAULT_LINE_LENGTH) -> str:
    """The spec file's text, black-formatted at `line_length` (the project's: `line_length`)."""
    writer = _Writer(spec.shared_lists)
    backend = spec.backend
    body = [writer.constraints(c) for c in spec.constraints]
    body += [writer.dtype_config(dc) for dc in spec.dtype_configs]
    lists = [f"{name} = [{', '.join(members)}]" for name, members in spec.shared_lists]
    op_lists = {loop.list_name: loop.op_list for loop in spec.entries if isinstance(loop, Loop) and loop.list_name}
    op_lists_source = [f"{name} = [{', '.join(writer.value(op) for op in ops)}]" for name, ops in op_lists.items()]
    configs = "".join(f"{writer.entry(e)},\n" for e in spec.entries or backend.configs)
    label = f"label={backend.given_label!r}, " if backend.given_label else ""  # the project's name, not name=
    # Patterns and loops written out read best at module level; a few op-group calls stay in Backend(...).
    module_level = not spec.entries or not all(isinstance(e, GroupCall) for e in spec.entries)
    configs_name = _configs_name(spec) if module_level else f"[\n{configs}]"
    module = (f"{configs_name} = [\n{configs}]\n\n" if module_level else "\n") + f"""MODULE = Module(
    doc={spec.module_doc or f"BackendConfig imported from {backend.reference}."!r},
    backends=[
        Backend(
            {label}name={backend.name!r},
            builder={backend.builder!r},
            doc={backend.doc!r},
            reference={backend.reference!r},
            configs={configs_name},
        )
    ],
)
"""
    header = (
        f'"""{backend.label}: imported by `python -m generator import`\nfrom {spec.target}.\n\n'
        "Edit freely: `python -m generator regenerate` writes the generated module, and\n"
        f'`python -m generator verify` proves it equals {backend.reference}."""\n'
    )
    sections = [
        header,
        f"from generator.dsl import {', '.join(sorted(writer.used, key=_import_order))}\n"
        + (f"from spec._common import {', '.join(sorted(writer.common))}\n" if writer.common else ""),
        "\n".join(body) + "\n",
    ]
    if lists:
        sections.append("# Dtype-config lists that several patterns share.\n" + "\n".join(lists) + "\n")
    if op_lists_source:
        sections.append("# Op lists the patterns loop over.\n" + "\n".join(op_lists_source) + "\n")
    sections.append(module)
    return _format("\n".join(sections), line_length)


def _configs_name(spec: ImportedSpec) -> str:
    """The module-level name of the backend's configs list: `configs`, unless the spec defines that."""
    taken = {dc.name for dc in spec.dtype_configs} | {c.name for c in spec.constraints}
    taken |= {name for name, _ in spec.shared_lists}
    name = "configs"
    while name in taken:
        name = f"backend_{name}"
    return name


def _import_order(name: str) -> tuple:
    # ruff's isort order: constants, then classes, then functions and lower-case names.
    return (0 if name.isupper() and len(name) > 1 else 1 if name[0].isupper() else 2, name)


def line_length(root: Path) -> int:
    """The width the project's black writes its code at: `[tool.black] line-length` of its pyproject.toml,
    else `[tool.ruff] line-length` (ruff format's), else the generator's own width. The spec is the team's
    code from now on, so their formatter must leave it as import wrote it. A value black would refuse
    (not a positive int) is not ours to judge: the generator's width."""
    try:
        document = project.toml_reader().loads((root / project.PYPROJECT).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):  # no pyproject.toml, or not TOML: not ours to judge
        return DEFAULT_LINE_LENGTH
    tools = document.get("tool", {}) if isinstance(document.get("tool"), dict) else {}
    for tool in ("black", "ruff"):
        table = tools.get(tool)
        width = table.get("line-length") if isinstance(table, dict) else None
        if isinstance(width, int) and not isinstance(width, bool) and width > 0:
            return width
    return DEFAULT_LINE_LENGTH


def _format(source: str, width: int) -> str:
    import black

    return black.format_str(source, mode=black.Mode(line_length=width))
