"""The vocabulary spec files are written in.

Spec files read like torch's own backend_config sources: `nn.Conv2d`, `F.relu`,
`torch.quint8`, `DTypeConfig(input_dtype=...)`. The names here are lazy: `nn.Conv2d`
builds a reference to the dotted path `torch.nn.Conv2d` without importing torch,
so loading the spec stays fast. Every value records the spec line that wrote it,
so later errors point there. Constructors check what they can check without
torch and turn spec values into the frozen model of `generator.model`.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import inspect
import itertools
import keyword
import re
import unicodedata
from dataclasses import replace
from types import SimpleNamespace

from generator import model
from generator.errors import EmptyAxisError, GeneratorError, SpecFieldError
from generator.loading import reads, spellings
from generator.loading.locations import assigned_name, at_argument, blame, project_root, spec_location
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


def describe(value) -> str:
    """A spec value in the spec's own words, for error messages."""
    if isinstance(value, Ref):
        return _spelling(value._path)
    if isinstance(value, model.TorchRef):
        return _spelling(value.path)
    if isinstance(value, model.DTypeConfig):
        return f"the dtype config {value.name}"
    if isinstance(value, model.DTypeWithConstraints):
        return f"the DTypeWithConstraints {value.name}"
    if isinstance(value, model.FixedQParams):
        return f"the dtype config {value.base.name}"
    if isinstance(value, model.PatternConfig):
        return "a config(...)"
    if isinstance(value, model.FunctionDef):
        return f"the function {value.name}"
    if isinstance(value, model.Call):
        return f"the call {_spelling(value.function.path)}(...)"
    if isinstance(value, list):
        return f"[{', '.join(describe(v) for v in value)}]"
    if isinstance(value, tuple):
        return f"({', '.join(describe(v) for v in value)})"
    if isinstance(value, dict):
        return "a dict"
    if type(value) is ModuleValue:  # not isinstance: a spec class's __class__ could claim to be one
        return "a Module(...)"
    if isinstance(value, model.Backend):
        return f"the Backend(name={value.name!r}, ...)"
    if inspect.isgenerator(value):
        return "a generator expression (write a list: [... for ...])"
    text = repr(value)
    # A default repr (`<x object at 0x7f...>`) changes from run to run and means nothing to a user.
    return f"a value of type {type(value).__name__}" if " at 0x" in text else text


def _spelling(path: str) -> str:
    from generator.spelling import ref_source

    try:
        return ref_source(model.TorchRef(path))
    except GeneratorError:
        return path


def spec_function(function):
    """Checks a spec function's arguments before it runs: a misspelt keyword gets a "did you mean"."""
    signature = inspect.signature(function)
    keywords = [n for n, p in signature.parameters.items() if p.kind is not p.VAR_KEYWORD]

    @functools.wraps(function)
    def checked(*args, **kwargs):
        has_var_keyword = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
        for key in kwargs:
            if key not in keywords and not has_var_keyword:
                raise SpecFieldError(
                    f"{function.__name__}() has no argument {key}={_suggest_keyword(key, keywords)}",
                    spec_location(),
                )
        try:
            signature.bind(*args, **kwargs)
        except TypeError as error:
            raise SpecFieldError(f"{function.__name__}(): {error}", spec_location()) from None
        return function(*args, **kwargs)

    return checked


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


def _suggest_keyword(key: str, keywords) -> str:
    close = difflib.get_close_matches(key, list(keywords), n=1)
    return f" (did you mean {close[0]}=?)" if close else f" (it takes {', '.join(keywords)})"


# ---------------------------------------------------------------------------
# Torch names
# ---------------------------------------------------------------------------


class Ref:
    """A lazy dotted name: attribute access extends the path, nothing is imported."""

    __slots__ = ("_location", "_path")

    def __init__(self, path: str, location: SourceLocation | None = None):
        self._path = path
        self._location = location

    def __getattr__(self, name: str) -> Ref:
        if name.startswith("__"):
            raise AttributeError(name)
        return Ref(f"{self._path}.{name}", spec_location())

    def __getitem__(self, name: str) -> Ref:
        """`nn[f"Conv{d}d"]`: a computed attribute name."""
        return Ref(f"{self._path}.{name}", spec_location())

    def __repr__(self) -> str:
        return f"Ref({self._path!r})"

    def to_model(self) -> model.TorchRef:
        return model.TorchRef(self._path, self._location)


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
            hint = _suggest(name, model.OBSERVATION_TYPES).replace("(did you mean ", "(did you mean ObservationType.")
            raise SpecFieldError(f"unknown observation type ObservationType.{name}{hint}", spec_location())
        return name


ObservationType = _ObservationTypes()


def _suggest(name: str, choices) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def _observation_type(value, what: str, where) -> str:
    """An ObservationType.X value (the spec gets its member's name as a string)."""
    if isinstance(value, str) and value in model.OBSERVATION_TYPES:
        return value
    hint = _suggest(value, model.OBSERVATION_TYPES) if isinstance(value, str) else ""
    if hint:
        hint = hint.replace("(did you mean ", "(did you mean ObservationType.")
    else:
        hint = f" (it is one of ObservationType.{', ObservationType.'.join(model.OBSERVATION_TYPES)})"
    raise SpecFieldError(f"{what} {describe(value)} is not an ObservationType{hint}", blame(where))


def to_pattern(value, what: str = "pattern", nested: bool = False) -> model.Pattern:
    """Turn a spec pattern (Refs, method-name strings, tuples) into a model pattern.

    A simple pattern is one op or a tuple of 2 or 3 ops (torch's fusion patterns);
    only pattern_complex_format nests tuples, as `_complex_pattern` checks.
    """
    complex_format = what == "pattern_complex_format"
    if complex_format and not nested:
        _check_depth(value)
        _complex_pattern(value, value)
    if isinstance(value, Ref):
        return value.to_model()
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and complex_format:
        return value  # e.g. the index in (operator.getitem, max_pool2d_with_indices, 0)
    if isinstance(value, Declared):
        raise SpecFieldError(f"{value.kind}() must wrap a whole pattern, not a part of one", value.location)
    if isinstance(value, tuple) and not complex_format and nested:
        raise SpecFieldError(
            f"pattern element {describe(value)} is a tuple inside the pattern's tuple; a pattern is one op "
            "or a tuple of 2 or 3 ops (write nested patterns as pattern_complex_format=)",
            blame(value),
        )
    if isinstance(value, tuple) and (len(value) in (2, 3) or (complex_format and len(value) >= 2)):
        return tuple(to_pattern(element, what, nested=True) for element in value)
    if isinstance(value, tuple):
        raise SpecFieldError(f"a {what} tuple holds 2 or 3 ops, not {len(value)}", blame(value))
    raise SpecFieldError(
        f"{what} elements must be modules, functions, operator overloads, method-name strings "
        f"or tuples of those, not {describe(value)}",
        blame(value),
    )


# torch's own patterns nest a few levels; far deeper ones exhaust the Python parser
# that compiles the generated module (about 200 levels), so they are refused here.
MAX_PATTERN_DEPTH = 32


def _check_depth(whole) -> None:
    """Refuse a pattern nested deeper than MAX_PATTERN_DEPTH (counted without recursion)."""
    depth, level = 0, [whole]
    while level and depth <= MAX_PATTERN_DEPTH:
        depth += 1
        level = [item for value in level if isinstance(value, tuple) for item in value]
        level = [item for item in level if isinstance(item, tuple)]
    if depth > MAX_PATTERN_DEPTH:
        raise SpecFieldError(
            f"pattern_complex_format is nested more than {MAX_PATTERN_DEPTH} tuples deep, more than a generated "
            "module can spell; split it into patterns that nest less",
            blame(whole),
        )


def _complex_pattern(value, whole, argument: bool = False) -> None:
    """torch's reversed nested tuple format, as its matcher (fx/match_utils.py `_is_match`) reads it:

        pattern  = op | (op, argument, ...)      argument = pattern | an int the argument equals

    The first element of every tuple is the op whose output the (sub)pattern matches;
    only arguments may nest. A tuple standing first never matches any node (torch compares
    node.target with it), an int anywhere but in an argument matches nothing either, and
    torch asserts that a getattr pattern has exactly one argument.
    """
    if isinstance(value, int) and not isinstance(value, bool) and argument:
        return
    if not isinstance(value, tuple):
        if isinstance(value, int) and not isinstance(value, bool):
            message = (
                f"pattern_complex_format {describe(whole)}: {value!r} stands where an op belongs; "
                "only an argument can be a number, as in (operator.getitem, op, 0)"
            )
            raise SpecFieldError(message, blame(whole))
        return  # ops are checked by to_pattern (and their kinds against torch later)
    head = value[0] if value else None
    if isinstance(head, tuple):
        raise SpecFieldError(
            f"pattern_complex_format {describe(whole)} nests {describe(head)} too deeply: the first element of each "
            "tuple is the op whose output it matches, never a tuple; only its arguments nest, "
            "as in (nn.ReLU, (nn.BatchNorm2d, nn.Conv2d))",
            blame(whole),
        )
    if isinstance(head, Ref) and head._path in ("getattr", "builtins.getattr") and len(value) != 2:
        message = f"pattern_complex_format {describe(whole)}: a getattr pattern is (getattr, attribute name)"
        raise SpecFieldError(message, blame(whole))
    _complex_pattern(head, whole)
    for item in value[1:]:
        _complex_pattern(item, whole, argument=True)


def _to_ref(value, what: str, example: str = "nn.Conv2d") -> model.TorchRef | None:
    if value is None:
        return None
    if isinstance(value, Ref):
        return value.to_model()
    raise SpecFieldError(f"{what} must be a torch name such as {example}, not {describe(value)}", blame(value))


# ---------------------------------------------------------------------------
# Dtype configs
# ---------------------------------------------------------------------------


def _to_dtype(value, what: str, constraints_allowed: bool):
    if value is None:
        return None
    if isinstance(value, Ref):
        return value.to_model()
    if constraints_allowed and isinstance(value, model.DTypeWithConstraints):
        return value
    alternative = " or a DTypeWithConstraints" if constraints_allowed else ""
    raise SpecFieldError(
        f"{what} must be a torch dtype such as torch.quint8{alternative}, not {describe(value)}", blame(value)
    )


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
            hint = _suggest_keyword(key, _BOUNDS)
            raise SpecFieldError(f"DTypeWithConstraints() has no argument {key}={hint}", location)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise SpecFieldError(f"{key} must be a number, not {describe(value)}", location)
    for low, high in _ORDERED_BOUNDS:
        if low in bounds and high in bounds and bounds[low] > bounds[high]:
            raise SpecFieldError(f"{low}={bounds[low]!r} is above {high}={bounds[high]!r}", location)
    return model.DTypeWithConstraints(
        name=assigned_name("DTypeWithConstraints", location),
        dtype=_to_dtype(dtype, "dtype", constraints_allowed=False),
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
        input_dtype=_to_dtype(input_dtype, "input_dtype", constraints_allowed=True),
        output_dtype=_to_dtype(output_dtype, "output_dtype", constraints_allowed=True),
        weight_dtype=_to_dtype(weight_dtype, "weight_dtype", constraints_allowed=True),
        bias_dtype=_to_dtype(bias_dtype, "bias_dtype", constraints_allowed=False),
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
            raise SpecFieldError(f"config() has no argument {key}={_suggest_keyword(key, CONFIG_FIELDS)}", location)
    complex_format = settings.pop("pattern_complex_format", None)
    if (pattern is None) == (complex_format is None):
        raise SpecFieldError("a pattern config needs exactly one of pattern and pattern_complex_format", location)
    declared = pattern if isinstance(pattern, Declared) else complex_format
    if isinstance(declared, Declared):
        pattern, complex_format = declared.unwrap(pattern, complex_format)
        if declared.kind == "removed":
            section = _one_line(settings.get("section", ""), "section", location)
            return declared.removal(complex_format is not None, section)
    if dtype_configs is None:
        raise SpecFieldError("a pattern config needs dtype_configs", location)
    values = {key: _to_ref(settings.pop(key, None), key, "nni.ConvReLU2d") for key in _MODULE_FIELDS}
    values.update({key: _to_callable(settings.pop(key, None), key) for key in _CALLABLE_FIELDS})
    observation_type = settings.pop("observation_type", model.DEFAULT_OBSERVATION_TYPE)
    return model.PatternConfig(
        pattern=None if pattern is None else to_pattern(pattern),
        pattern_complex_format=None if complex_format is None else to_pattern(complex_format, "pattern_complex_format"),
        dtype_configs=_dtype_config_group(dtype_configs),
        observation_type=_observation_type(observation_type, "observation_type", observation_type),
        num_tensor_args_to_observation_type=_observation_types(settings.pop("num_tensor_args_to_observation_type", {})),
        input_type_to_index=_input_type_to_index(settings.pop("input_type_to_index", {})),
        section=_one_line(settings.pop("section", ""), "section", location),
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
        _observation_type(observation_type, f"{what}[{count}]", value)
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


def _text(value, what: str, location) -> str:
    if not isinstance(value, str):
        raise SpecFieldError(f"{what} must be a string, not {describe(value)}", location)
    return value


def _one_line(value, what: str, location) -> str:
    """Text the generated module writes as a comment: a line break would end the comment there."""
    text = _text(value, what, location)
    if "\n" in text or "\r" in text:
        message = f'{what} must be one line (it is written as a comment), e.g. {what}="conv + relu"'
        raise SpecFieldError(message, location)
    return text


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
    ref = _to_ref(fused_module, "sequential()'s fused module", "nni.ConvReLU2d")
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


class Declared:
    """A pattern wrapped in added()/changed()/removed(): a deliberate difference, with its reason.

    It stands where the pattern stands (in config(...) or in a list of ops that a
    helper passes to config), so the declaration sits at the line that makes the change.
    """

    __slots__ = ("divergence", "kind", "location", "pattern")

    def __init__(self, kind: str, pattern, reason):
        self.location = spec_location()
        self.kind = kind
        self.pattern = pattern
        self.divergence = _divergence(kind, reason, f'{kind}(nn.Mish, "why")', self.location)

    def unwrap(self, pattern, complex_format):
        """config()'s pattern and pattern_complex_format with this wrapper taken off."""
        if pattern is self:
            return self.pattern, complex_format
        return pattern, self.pattern

    def removal(self, complex_format: bool, section: str = "") -> model.Removal:
        what = "pattern_complex_format" if complex_format else "pattern"
        pattern = to_pattern(self.pattern, what)
        return model.Removal(pattern, self.divergence, complex_format, section, self.location)

    def __repr__(self) -> str:
        return f"{self.kind}({self.pattern!r})"


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
    divergence = _divergence("changed", reason, example, location)
    made_here = location is None or (value.location is not None and value.location.file == location.file
                                     and value.location.line >= location.line)  # fmt: skip
    if value.divergence is not None or not made_here:
        # Wrapping a dtype config made elsewhere would leave two versions of one named constant.
        message = f"changed() wraps the {type(value).__name__}(...) call itself, e.g. {example}, not {describe(value)}"
        raise SpecFieldError(message, location)
    return replace(value, divergence=divergence)


def _divergence(kind: str, reason, example: str, location) -> model.Divergence:
    """A declaration's difference, with the short one-line reason a reviewer reads."""
    if not isinstance(reason, str) or not reason.strip() or any(c in reason.strip() for c in "\n\r"):
        raise SpecFieldError(f"{kind}() needs a short one-line reason, e.g. {example}", location)
    return model.Divergence(kind, reason.strip(), location)


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


def identifier(value, what: str, location, example: str = "get_my_backend_config") -> str:
    """`value`, checked to be a name Python reads as itself (a builder's, an export's, a generated module's)."""
    if not isinstance(value, str) or not value.isidentifier() or keyword.iskeyword(value):
        message = f"{what} must be a Python identifier such as {example}, not {value!r}"
        raise SpecFieldError(message, location)
    read_as = unicodedata.normalize("NFKC", value)
    if read_as != value:  # Python reads `get_ｘ` as `get_x`: the module would not define the name it exports
        message = f"{what} {value!r} is read by Python as {read_as!r} (Unicode NFKC); write {read_as!r}"
        raise SpecFieldError(message, location)
    return value


@_naming_code("reference")
@spec_function
def Backend(name: str, builder: str, doc: str, configs, dict_builder=None, reference=None, torch_builder=None):
    """One BackendConfig, returned by the generated function `builder`.

    `reference` (or its older name `torch_builder`) is the dotted import path of a dynamic
    builder that the generated one must equal, torch's or the user's own.
    """
    location = spec_location()
    if reference is not None and torch_builder is not None:
        raise SpecFieldError("give reference= or its older name torch_builder=, not both", location)
    if not isinstance(name, str) or not name:
        message = f"a backend's name must be a non-empty string, not {describe(name)}"
        raise SpecFieldError(message, at_argument(location, "name"))
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
        doc=_text(doc, "doc", at_argument(location, "doc")),
        configs=tuple(c for c in flat if isinstance(c, model.PatternConfig)),
        removals=tuple(c for c in flat if isinstance(c, model.Removal)),
        dict_builder=None if dict_builder is None else identifier(
            dict_builder, "dict_builder", at_argument(location, "dict_builder")
        ),
        reference=reference,
        location=location,
        reference_location=reference_location if reference is not None else None,
    )


class ModuleValue(SimpleNamespace):
    """What Module(...) returns: the one value a spec file's MODULE may hold."""


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
        doc=_text(doc, "doc", at_argument(location, "doc")),
        backends=tuple(backends),
        exports=tuple(exports),
        dtype_configs=tuple(dtype_configs),
        location=location,
    )
