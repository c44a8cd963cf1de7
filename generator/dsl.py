"""The vocabulary spec files are written in.

Spec files read like torch's own backend_config sources: `nn.Conv2d`, `F.relu`,
`torch.quint8`, `DTypeConfig(input_dtype=...)`. The names here are lazy: `nn.Conv2d`
builds a reference to the dotted path `torch.nn.Conv2d` without importing torch,
so loading the spec stays fast. Every value records the spec line that wrote it,
so later errors point there. Constructors check what they can check without
torch and turn spec values into the frozen model of `generator.model`.

The words are here; what they are made of is in `generator.loading`: the values and
their checks (`spec_values`), patterns and declared differences (`patterns`), and the
spec line a value was written at and the name it is assigned to (`locations`).
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import inspect
import itertools
import re
from dataclasses import replace
from types import SimpleNamespace

from generator import model
from generator.errors import EmptyAxisError, SpecFieldError
from generator.loading import reads, spellings
from generator.loading.locations import assigned_name, at_argument, blame, project_root, spec_location
from generator.loading.patterns import Declared, declared_divergence, to_pattern
from generator.loading.spec_values import (
    ModuleValue,
    Ref,
    describe,
    identifier,
    one_line,
    spec_function,
    suggest,
    suggest_keyword,
    text,
    to_dtype,
    to_observation_type,
    to_ref,
)
from generator.model import SourceLocation

__all__ = [
    "Backend",
    "DTypeConfig",
    "DTypeWithConstraints",
    "F",
    "MatchAllNode",
    "Module",
    "ObservationType",
    "added",
    "call",
    "changed",
    "config",
    "fixed_qparams",
    "function",
    "fusers",
    "importable",
    "nn",
    "nni",
    "nniqat",
    "nnqat",
    "nnqr",
    "operator",
    "partial",
    "product",
    "removed",
    "sequential",
    "torch",
]


def _naming_code(argument: str):
    """For a call that names code by import path in `argument` (importable(path), Backend(reference=...)):
    the project modules it names are inputs of the load under way, although the load does not import them.
    They are noted before the call runs, whenever its arguments bind (see generator/loading/reads.py)."""

    def decorate(function):
        signature = inspect.signature(function)

        @functools.wraps(function)
        def naming(*args, **kwargs):
            with contextlib.suppress(TypeError):  # the call itself reports a wrong call
                dotted = signature.bind_partial(*args, **kwargs).arguments.get(argument)
                if isinstance(dotted, str):
                    reads.note_module(dotted)
            return function(*args, **kwargs)

        return naming

    return decorate


# ---------------------------------------------------------------------------
# Torch names
# ---------------------------------------------------------------------------


torch = Ref("torch")
nn = Ref("torch.nn")
F = Ref("torch.nn.functional")
nni = Ref("torch.ao.nn.intrinsic")
nniqat = Ref("torch.ao.nn.intrinsic.qat")
nnqat = Ref("torch.ao.nn.qat")
nnqr = Ref("torch.ao.nn.quantized.reference")
operator = Ref("operator")
fusers = Ref("torch.ao.quantization.fuser_method_mappings")
MatchAllNode = Ref("torch.ao.quantization.utils.MatchAllNode")


_DOTTED_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")


@_naming_code("path")
def importable(path: str) -> Ref:
    """Any module-level object by its import path, e.g. a backend's own fuser method:
    `importable("my_backend.fusers.fuse_linear_relu")`. The generated module imports it
    by name (`from my_backend.fusers import fuse_linear_relu`) instead of copying it."""
    if not isinstance(path, str) or not _DOTTED_PATH.fullmatch(path):
        message = f"importable() needs a dotted path like 'package.module.name', not {path!r}"
        raise SpecFieldError(message, spec_location())
    return Ref(path, spec_location())


class _ObservationTypes:
    """`ObservationType.X`, checked against the members torch defines."""

    def __getattr__(self, name: str) -> str:
        if name not in model.OBSERVATION_TYPES:
            hint = suggest(name, model.OBSERVATION_TYPES).replace("(did you mean ", "(did you mean ObservationType.")
            raise SpecFieldError(f"unknown observation type ObservationType.{name}{hint}", spec_location())
        return name


ObservationType = _ObservationTypes()


# ---------------------------------------------------------------------------
# Dtype configs
# ---------------------------------------------------------------------------


_BOUNDS = list(model.CONSTRAINT_BOUNDS)
_ORDERED_BOUNDS = (
    ("quant_min_lower_bound", "quant_max_upper_bound"),
    ("scale_min_lower_bound", "scale_max_upper_bound"),
)


@spec_function
def DTypeWithConstraints(dtype=None, **bounds) -> model.DTypeWithConstraints:
    """Like torch's DTypeWithConstraints; assign it to a name to name its constant."""
    location = spec_location()
    for key, value in bounds.items():
        if key not in _BOUNDS:
            hint = suggest_keyword(key, _BOUNDS)
            raise SpecFieldError(f"DTypeWithConstraints() has no argument {key}={hint}", location)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise SpecFieldError(f"{key} must be a number, not {describe(value)}", location)
    for low, high in _ORDERED_BOUNDS:
        if low in bounds and high in bounds and bounds[low] > bounds[high]:
            raise SpecFieldError(f"{low}={bounds[low]!r} is above {high}={bounds[high]!r}", location)
    return model.DTypeWithConstraints(
        name=assigned_name("DTypeWithConstraints", location),
        dtype=to_dtype(dtype, "dtype", constraints_allowed=False),
        location=location,
        spellings=_spellings(location, bounds),
        **bounds,
    )


def _spellings(location: SourceLocation | None, bounds: dict) -> tuple[tuple[str, str], ...]:
    """How the spec spells the bounds (`2**-12`), proven equal to their values; see spellings."""
    root = project_root()
    if location is None or root is None:
        return ()
    return spellings.bound_spellings(root, location.file, location.line, bounds)


@spec_function
def DTypeConfig(
    input_dtype=None, output_dtype=None, weight_dtype=None, bias_dtype=None, is_dynamic=None
) -> model.DTypeConfig:
    """Like torch's DTypeConfig; assign it to a name to name its constant."""
    location = spec_location()
    if is_dynamic is not None and not isinstance(is_dynamic, bool):
        raise SpecFieldError(f"is_dynamic must be True, False or None, not {describe(is_dynamic)}", location)
    return model.DTypeConfig(
        name=assigned_name("DTypeConfig", location),
        input_dtype=to_dtype(input_dtype, "input_dtype", constraints_allowed=True),
        output_dtype=to_dtype(output_dtype, "output_dtype", constraints_allowed=True),
        weight_dtype=to_dtype(weight_dtype, "weight_dtype", constraints_allowed=True),
        bias_dtype=to_dtype(bias_dtype, "bias_dtype", constraints_allowed=False),
        is_dynamic=is_dynamic,
        location=location,
    )


@spec_function
def fixed_qparams(dtype_configs, constraints, suffix: str) -> list[model.FixedQParams]:
    """The dtype configs torch derives for fixed-qparams ops, named `<base>_<suffix>`."""
    if not isinstance(constraints, model.DTypeWithConstraints):
        message = f"constraints must be a DTypeWithConstraints, not {describe(constraints)}"
        raise SpecFieldError(message, blame(constraints))
    if not isinstance(suffix, str) or not re.fullmatch(r"\w+", suffix):
        message = f"suffix must be letters, digits and underscores such as '0to1', not {describe(suffix)}"
        raise SpecFieldError(message, spec_location())
    return [model.FixedQParams(dc, constraints, suffix) for dc in _dtype_config_group(dtype_configs)]


def _dtype_config_group(value) -> tuple:
    """A list of dtype configs, as every pattern config takes them."""
    if not isinstance(value, (list, tuple)):
        hint = f" (write [{value.name}])" if isinstance(value, model.DTypeConfig) else ""
        message = f"dtype_configs must be a list of dtype configs, not {describe(value)}{hint}"
        raise SpecFieldError(message, blame(value))
    for item in value:
        if not isinstance(item, (model.DTypeConfig, model.FixedQParams)):
            raise SpecFieldError(
                f"dtype_configs must hold dtype configs made with DTypeConfig(...), not {describe(item)}",
                blame(value),
            )
    return tuple(value)


# ---------------------------------------------------------------------------
# Pattern configs
# ---------------------------------------------------------------------------

_MODULE_FIELDS = ("root_module", "qat_module", "reference_quantized_module", "fused_module")
_CALLABLE_FIELDS = ("fuser_method", "root_node_getter", "extra_inputs_getter")
_OTHER_FIELDS = (
    "pattern_complex_format",
    "observation_type",
    "num_tensor_args_to_observation_type",
    "input_type_to_index",
    "section",
)
# Not torch's: says that this config replaces an earlier one for the same pattern on
# purpose, and why (the spec lint then stays quiet about it).
_SPEC_FIELDS = ("overrides",)
CONFIG_FIELDS = _MODULE_FIELDS + _CALLABLE_FIELDS + _OTHER_FIELDS + _SPEC_FIELDS
INPUT_TYPES = ("input", "weight", "bias")


def config(pattern=None, dtype_configs=None, **settings) -> model.PatternConfig:
    """One BackendPatternConfig. Settings use torch's names (fuser_method, root_module, ...)."""
    location = spec_location()
    for key in settings:
        if key not in CONFIG_FIELDS:
            raise SpecFieldError(f"config() has no argument {key}={suggest_keyword(key, CONFIG_FIELDS)}", location)
    complex_format = settings.pop("pattern_complex_format", None)
    if (pattern is None) == (complex_format is None):
        raise SpecFieldError("a pattern config needs exactly one of pattern and pattern_complex_format", location)
    declared = pattern if isinstance(pattern, Declared) else complex_format
    if isinstance(declared, Declared):
        pattern, complex_format = declared.unwrap(pattern, complex_format)
        if declared.kind == "removed":
            section = one_line(settings.get("section", ""), "section", location)
            return declared.removal(complex_format is not None, section)
    if dtype_configs is None:
        raise SpecFieldError("a pattern config needs dtype_configs", location)
    values = {key: to_ref(settings.pop(key, None), key, "nni.ConvReLU2d") for key in _MODULE_FIELDS}
    values.update({key: _to_callable(settings.pop(key, None), key) for key in _CALLABLE_FIELDS})
    observation_type = settings.pop("observation_type", model.DEFAULT_OBSERVATION_TYPE)
    return model.PatternConfig(
        pattern=None if pattern is None else to_pattern(pattern),
        pattern_complex_format=None if complex_format is None else to_pattern(complex_format, "pattern_complex_format"),
        dtype_configs=_dtype_config_group(dtype_configs),
        observation_type=to_observation_type(observation_type, "observation_type", observation_type),
        num_tensor_args_to_observation_type=_observation_types(settings.pop("num_tensor_args_to_observation_type", {})),
        input_type_to_index=_input_type_to_index(settings.pop("input_type_to_index", {})),
        section=one_line(settings.pop("section", ""), "section", location),
        overrides=_reason(settings.pop("overrides", None), location),
        divergence=declared.divergence if isinstance(declared, Declared) else None,
        location=location,
        **values,
    )


def _observation_types(value) -> tuple[tuple[int, str], ...]:
    what = "num_tensor_args_to_observation_type"
    if not isinstance(value, dict):
        raise SpecFieldError(f"{what} must be a dict {{count: ObservationType.X}}, not {describe(value)}", blame(value))
    for count, observation_type in value.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            message = f"{what}: the keys are tensor argument counts (0, 1, 2, ...), not {count!r}"
            raise SpecFieldError(message, blame(value))
        to_observation_type(observation_type, f"{what}[{count}]", value)
    return tuple(value.items())


def _input_type_to_index(value) -> tuple[tuple[str, int], ...]:
    what = "input_type_to_index"
    if not isinstance(value, dict):
        message = f'{what} must be a dict such as {{"weight": 1, "bias": 2}}, not {describe(value)}'
        raise SpecFieldError(message, blame(value))
    for input_type, index in value.items():
        if input_type not in INPUT_TYPES:
            close = difflib.get_close_matches(input_type, INPUT_TYPES, n=1) if isinstance(input_type, str) else []
            hint = f' (did you mean "{close[0]}"?)' if close else ""
            message = f'{what}: the keys are "input", "weight" and "bias", not {input_type!r}{hint}'
            raise SpecFieldError(message, blame(value))
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise SpecFieldError(
                f"{what}[{input_type!r}] must be an argument index (0, 1, 2, ...), not {index!r}", blame(value)
            )
    return tuple(value.items())


def _reason(value, location) -> str | None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise SpecFieldError(
            'overrides= takes the reason a reviewer reads, e.g. overrides="torch registers this twice"', location
        )
    return value


def _to_callable(value, what: str):
    if value is None or isinstance(value, (model.FunctionDef, model.Call)):
        return value
    if isinstance(value, Ref):
        return value.to_model()
    raise SpecFieldError(
        f"{what} must be a function: a torch name such as fusers.fuse_conv_bn, sequential(...), function(...), "
        "call(...) or partial(...), "
        f"not {describe(value)}",
        blame(value),
    )


@spec_function
def function(template: str, name: str, **params) -> model.FunctionDef:
    """A callable written out from templates/functions/<template>.py.j2 with these params."""
    identifier(name, "function name", spec_location())
    converted = tuple((key, _param(key, value)) for key, value in params.items())
    return model.FunctionDef(name, template, converted, spec_location())


def _param(key: str, value):
    """A template parameter: a torch name, a pattern, a plain constant, or a spec value with a name."""
    if isinstance(value, Ref):
        return value.to_model()
    if isinstance(value, tuple):
        return to_pattern(value)
    if value is None or isinstance(value, (bool, int, float, str, model.FunctionDef, model.DTypeConfig)):
        return value
    message = f"function() parameter {key}= must be a torch name, a pattern, a number, a string, True, False or None, "
    raise SpecFieldError(message + f"not {describe(value)}", blame(value))


def call(factory: Ref, *args, **keywords) -> model.Call:
    """The callable `factory(*args, **keywords)` returns, e.g. a fuser made by a factory:
    `call(importable("my_backend.fusers.make_fuser"), nni.ConvReLU2d)`. The generated module
    writes the same call; arguments are torch names, plain constants, tuples and other calls."""
    location = spec_location()
    if not isinstance(factory, Ref):
        example = 'importable("my_backend.fusers.make_fuser")'
        raise SpecFieldError(f"call()'s factory must be a name such as {example}, not {describe(factory)}", location)
    function = factory.to_model()
    converted = tuple(_call_argument(value, "call()") for value in args)
    named = tuple((key, _call_argument(value, f"call() argument {key}=")) for key, value in keywords.items())
    return model.Call(function, converted, named, location)


def partial(function: Ref, *args, **keywords) -> model.Call:
    """`functools.partial(function, *args, **keywords)`, written as that call in the generated module."""
    return call(Ref(model.PARTIAL, spec_location()), function, *args, **keywords)


def _call_argument(value, what: str):
    if isinstance(value, Ref):
        return value.to_model()
    if isinstance(value, (tuple, list)):
        return tuple(_call_argument(v, what) for v in value)
    if value is None or isinstance(value, (bool, int, float, str, model.Call)):
        return value
    message = f"{what} arguments must be torch names, numbers, strings, True, False, None, tuples or call(...)"
    raise SpecFieldError(f"{message}, not {describe(value)}", spec_location())


@spec_function
def sequential(fused_module: Ref) -> model.FunctionDef:
    """torch's `_sequential_wrapper2(fused)`: a fuser that wraps two modules in `fused`."""
    ref = to_ref(fused_module, "sequential()'s fused module", "nni.ConvReLU2d")
    class_name = ref.path.rsplit(".", 1)[-1]
    return model.FunctionDef(sequential_fuser_name(class_name), "sequential", (("fused_module", ref),), spec_location())


def sequential_fuser_name(class_name: str) -> str:
    """The name of the fuser sequential(fused) writes: `_fuse_conv_relu2d` for nni.ConvReLU2d."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", class_name.replace("ReLU", "Relu"))
    return f"_fuse_{words.lower()}"


@spec_function
def product(**axes) -> list[SimpleNamespace]:
    """Every combination of the axes, first axis slowest, as rows with attribute access."""
    location = spec_location()
    for axis, values in axes.items():
        if not isinstance(values, (list, tuple)):
            raise SpecFieldError(f"fusion combinator axis {axis!r} must be a list, not {describe(values)}", location)
        if len(values) == 0:
            raise EmptyAxisError(f"fusion combinator axis {axis!r} has no values", location)
    names = list(axes)
    return [SimpleNamespace(**dict(zip(names, combo))) for combo in itertools.product(*axes.values())]


# ---------------------------------------------------------------------------
# Declared differences from the reference builder
# ---------------------------------------------------------------------------


def added(pattern, reason: str) -> Declared:
    """A pattern the reference builder does not register: `config(added(nn.Mish, "why"), ...)`."""
    _only_patterns("added", pattern)
    return Declared("added", pattern, reason)


def changed(pattern, reason: str):
    """A pattern both register, configured differently here: `config(changed(nn.Linear, "why"), ...)`.

    Around a dtype config or a DTypeWithConstraints, `x = changed(DTypeConfig(...), "why")`
    declares that its content differs from the reference's (see `_changed_dtype_config`).
    """
    if isinstance(pattern, (model.DTypeConfig, model.DTypeWithConstraints)):
        return _changed_dtype_config(pattern, reason)
    return Declared("changed", pattern, reason)


def removed(pattern, reason: str) -> Declared:
    """A reference pattern this backend drops: stands in a backend's configs or where config(...) gets it."""
    _only_patterns("removed", pattern)
    return Declared("removed", pattern, reason)


def _changed_dtype_config(value, reason):
    """A dtype config (or constraint) whose content differs from the reference's on purpose.

    Each backend with a reference that uses it (or, for a DTypeWithConstraints, a dtype
    config holding it) reports the change as declared; where its content turns out to
    equal the reference's, the declaration is stale.
    """
    location = spec_location()
    example = f'{value.name} = changed({type(value).__name__}(...), "why")'
    divergence = declared_divergence("changed", reason, example, location)
    made_here = location is None or (value.location is not None and value.location.file == location.file
                                     and value.location.line >= location.line)  # fmt: skip
    if value.divergence is not None or not made_here:
        # Wrapping a dtype config made elsewhere would leave two versions of one named constant.
        message = f"changed() wraps the {type(value).__name__}(...) call itself, e.g. {example}, not {describe(value)}"
        raise SpecFieldError(message, location)
    return replace(value, divergence=divergence)


def _only_patterns(kind: str, value) -> None:
    if isinstance(value, (model.DTypeConfig, model.DTypeWithConstraints)):
        example = 'x = changed(DTypeConfig(...), "why")'
        message = f"{kind}() wraps a pattern; a dtype config can only be declared changed(), e.g. {example}"
        raise SpecFieldError(message, spec_location())


# ---------------------------------------------------------------------------
# Backends and modules
# ---------------------------------------------------------------------------


def flatten(configs, call: SourceLocation | None = None) -> tuple[model.PatternConfig | model.Removal, ...]:
    """Sections may nest lists of pattern configs (and declared removals); the order is kept.

    `call` is the Backend(...) line: a value written in the call is blamed at its `configs=` line.
    """

    def where():
        blamed = blame(configs)
        return at_argument(call, "configs") if call is not None and blamed == call else blamed

    if not isinstance(configs, (list, tuple)):
        raise SpecFieldError(f"configs must be a list of config(...), not {describe(configs)}", where())
    flat = []
    for item in configs:
        if isinstance(item, Declared) and item.kind == "removed":
            item = item.removal(complex_format=False)
        if isinstance(item, (model.PatternConfig, model.Removal)):
            flat.append(item)
        elif isinstance(item, Declared):
            raise SpecFieldError(
                f"{item.kind}() wraps the pattern inside config(...), e.g. config({item.kind}(nn.Mish, ...), dtypes)",
                item.location,
            )
        elif isinstance(item, (list, tuple)):
            flat.extend(flatten(item, call))
        else:
            message = f"a backend's configs must be config(...) values, not {describe(item)}"
            raise SpecFieldError(message, where())
    return tuple(flat)


@_naming_code("reference")
@spec_function
def Backend(
    name: str, builder: str, doc: str, configs, dict_builder=None, reference=None, torch_builder=None, label=None
):
    """One BackendConfig, returned by the generated function `builder`.

    `name` is the name the BackendConfig has (torch's default "" included, or one another
    backend's builder returns too); `label` is the project's name for the backend (`diff`,
    `--name`, the support matrix), unique across spec/, by default `name` or the builder's.
    `reference` (or its older name `torch_builder`) is the dotted import path of a dynamic
    builder that the generated one must equal, torch's or the user's own.
    """
    location = spec_location()
    if reference is not None and torch_builder is not None:
        raise SpecFieldError("give reference= or its older name torch_builder=, not both", location)
    if not isinstance(name, str):
        message = f"a backend's name must be a string (the name its BackendConfig has), not {describe(name)}"
        raise SpecFieldError(message, at_argument(location, "name"))
    if label is not None and not (isinstance(label, str) and model.LABEL.fullmatch(label)):
        message = f"a backend's label must be a lower-case name such as my_backend, not {describe(label)}"
        raise SpecFieldError(message, at_argument(location, "label"))
    reference_location = at_argument(location, "reference" if torch_builder is None else "torch_builder")
    reference = reference if reference is not None else torch_builder
    dotted = isinstance(reference, str) and all(part.isidentifier() for part in reference.split("."))
    if reference is not None and not dotted:
        message = f"reference must be a dotted import path written as a string, not {describe(reference)}"
        raise SpecFieldError(message, reference_location)
    flat = flatten(configs, location)
    return model.Backend(
        name=name,
        builder=identifier(builder, "builder", at_argument(location, "builder")),
        doc=text(doc, "doc", at_argument(location, "doc")),
        configs=tuple(c for c in flat if isinstance(c, model.PatternConfig)),
        removals=tuple(c for c in flat if isinstance(c, model.Removal)),
        dict_builder=None if dict_builder is None else identifier(
            dict_builder, "dict_builder", at_argument(location, "dict_builder")
        ),
        reference=reference,
        location=location,
        reference_location=reference_location if reference is not None else None,
        given_label=label,
    )


@spec_function
def Module(doc: str, backends, exports=(), dtype_configs=(), name=None):
    """The generated module a spec file describes, named after the file unless `name` says."""
    location = spec_location()
    for what, value in (("backends", backends), ("exports", exports), ("dtype_configs", dtype_configs)):
        # A generator would be used up by the checks below and leave the module empty.
        if not isinstance(value, (list, tuple)):
            where = blame(value)
            where = at_argument(location, what) if where == location else where
            raise SpecFieldError(f"Module()'s {what} must be a list, not {describe(value)}", where)
    for backend in backends:
        if not isinstance(backend, model.Backend):
            message = f"backends must hold Backend(...) values, not {describe(backend)}"
            raise SpecFieldError(message, at_argument(location, "backends"))
    for export in exports:
        identifier(export, "an exported name", at_argument(location, "exports"))
    for dtype_config in dtype_configs:
        if not isinstance(dtype_config, model.DTypeConfig):
            message = f"dtype_configs must hold DTypeConfig values, not {describe(dtype_config)}"
            raise SpecFieldError(message, at_argument(location, "dtype_configs"))
    if name is not None:
        identifier(name, "a module name", at_argument(location, "name"), "my_backend")
    return ModuleValue(
        name=name,
        doc=text(doc, "doc", at_argument(location, "doc")),
        backends=tuple(backends),
        exports=tuple(exports),
        dtype_configs=tuple(dtype_configs),
        location=location,
    )
