"""The vocabulary spec files are written in.

Spec files read like torch's own backend_config sources: `nn.Conv2d`, `F.relu`,
`torch.quint8`, `DTypeConfig(input_dtype=...)`. The names here are lazy: `nn.Conv2d`
builds a reference to the dotted path `torch.nn.Conv2d` without importing torch,
so loading the spec stays fast. Every value records the spec line that wrote it,
so later errors point there. Constructors check what they can check without
torch and turn spec values into the frozen model of `generator.model`.
"""

from __future__ import annotations

import ast
import difflib
import functools
import itertools
import re
import sys
from dataclasses import fields
from pathlib import Path
from types import SimpleNamespace

from generator import model
from generator.errors import EmptyAxisError, SpecFieldError
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
    "changed",
    "config",
    "fixed_qparams",
    "function",
    "fusers",
    "nn",
    "nni",
    "nniqat",
    "nnqat",
    "nnqr",
    "operator",
    "product",
    "removed",
    "sequential",
    "torch",
]

# Set by the spec loader: locations are reported relative to the project root.
_project_root: Path | None = None


def set_project_root(root: Path | None) -> None:
    global _project_root
    _project_root = root.resolve() if root is not None else None


def spec_location() -> SourceLocation | None:
    """The innermost stack frame that runs a spec file, as a spec location."""
    if _project_root is None:
        return None
    frame = sys._getframe(1)
    while frame is not None:
        relative = _spec_relative(frame.f_code.co_filename, _project_root)
        if relative is not None:
            return SourceLocation(relative, frame.f_lineno)
        frame = frame.f_back
    return None


@functools.cache
def _spec_relative(filename: str, root: Path) -> str | None:
    """`spec/x.py` for a file in the project's spec folder, else None (cached: called per name)."""
    if not filename.startswith(str(root / "spec")):
        return None
    return str(Path(filename).relative_to(root))


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


class _ObservationTypes:
    """`ObservationType.X`, checked against the members torch defines."""

    def __getattr__(self, name: str) -> str:
        if name not in model.OBSERVATION_TYPES:
            raise SpecFieldError(
                f"unknown observation type ObservationType.{name}{_suggest(name, model.OBSERVATION_TYPES)}",
                spec_location(),
            )
        return name


ObservationType = _ObservationTypes()


def _suggest(name: str, choices) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def to_pattern(value, what: str = "pattern") -> model.Pattern:
    """Turn a spec pattern (Refs, method-name strings, tuples) into a model pattern."""
    if isinstance(value, Ref):
        return value.to_model()
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and what == "pattern_complex_format":
        return value  # e.g. the index in (operator.getitem, max_pool2d_with_indices, 0)
    if isinstance(value, tuple) and len(value) >= 2:
        return tuple(to_pattern(element, what) for element in value)
    if isinstance(value, Declared):
        raise SpecFieldError(f"{value.kind}() must wrap a whole pattern, not a part of one", value.location)
    raise SpecFieldError(
        f"{what} must be a torch name, a method-name string or a tuple of 2+ of those, "
        f"not {value!r}",
        spec_location(),
    )


def _to_ref(value, what: str) -> model.TorchRef | None:
    if value is None:
        return None
    if isinstance(value, Ref):
        return value.to_model()
    raise SpecFieldError(f"{what} must be a torch name such as nn.Conv2d, not {value!r}", spec_location())


# ---------------------------------------------------------------------------
# Dtype configs
# ---------------------------------------------------------------------------


@functools.cache
def _assignments(filename: str) -> tuple[tuple[int, int, str], ...]:
    """(first line, last line, target name) of each `name = call(...)` in a spec file."""
    tree = ast.parse(Path(filename).read_text(), filename)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and isinstance(node.value, ast.Call):
                found.append((node.value.lineno, node.value.end_lineno, target.id))
    return tuple(found)


def _assigned_name(kind: str, location: SourceLocation | None) -> str:
    """The variable a dtype config is assigned to: that is its name in generated code."""
    if location is None or _project_root is None:
        raise SpecFieldError(f"{kind} must be created in a spec file", location)
    for first, last, name in _assignments(str(_project_root / location.file)):
        if first <= location.line <= last:
            return name
    raise SpecFieldError(
        f"{kind} must be assigned to a module-level name, e.g. `x_dtype_config = {kind}(...)`; "
        "that name becomes its constant in the generated module",
        location,
    )


def _to_dtype(value, what: str, constraints_allowed: bool):
    if value is None:
        return None
    if isinstance(value, Ref):
        return value.to_model()
    if constraints_allowed and isinstance(value, model.DTypeWithConstraints):
        return value
    raise SpecFieldError(f"{what} must be a torch dtype such as torch.quint8, not {value!r}", spec_location())


def DTypeWithConstraints(dtype=None, **bounds) -> model.DTypeWithConstraints:
    """Like torch's DTypeWithConstraints; assign it to a name to name its constant."""
    location = spec_location()
    allowed = [f.name for f in fields(model.DTypeWithConstraints)][2:-1]
    for key, value in bounds.items():
        if key not in allowed:
            raise SpecFieldError(f"unknown DTypeWithConstraints field {key!r}{_suggest(key, allowed)}", location)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise SpecFieldError(f"{key} must be a number, not {value!r}", location)
    return model.DTypeWithConstraints(
        name=_assigned_name("DTypeWithConstraints", location),
        dtype=_to_dtype(dtype, "dtype", constraints_allowed=False),
        location=location,
        **bounds,
    )


def DTypeConfig(
    input_dtype=None, output_dtype=None, weight_dtype=None, bias_dtype=None, is_dynamic=None
) -> model.DTypeConfig:
    """Like torch's DTypeConfig; assign it to a name to name its constant."""
    location = spec_location()
    if is_dynamic is not None and not isinstance(is_dynamic, bool):
        raise SpecFieldError(f"is_dynamic must be True, False or None, not {is_dynamic!r}", location)
    return model.DTypeConfig(
        name=_assigned_name("DTypeConfig", location),
        input_dtype=_to_dtype(input_dtype, "input_dtype", constraints_allowed=True),
        output_dtype=_to_dtype(output_dtype, "output_dtype", constraints_allowed=True),
        weight_dtype=_to_dtype(weight_dtype, "weight_dtype", constraints_allowed=True),
        bias_dtype=_to_dtype(bias_dtype, "bias_dtype", constraints_allowed=False),
        is_dynamic=is_dynamic,
        location=location,
    )


def fixed_qparams(dtype_configs, constraints, suffix: str) -> list[model.FixedQParams]:
    """The dtype configs torch derives for fixed-qparams ops, named `<base>_<suffix>`."""
    return [model.FixedQParams(_check_dtype_config(dc), constraints, suffix) for dc in dtype_configs]


def _check_dtype_config(value):
    if isinstance(value, (model.DTypeConfig, model.FixedQParams)):
        return value
    raise SpecFieldError(f"dtype_configs must hold DTypeConfig values, not {value!r}", spec_location())


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
CONFIG_FIELDS = _MODULE_FIELDS + _CALLABLE_FIELDS + _OTHER_FIELDS


def config(pattern=None, dtype_configs=None, **settings) -> model.PatternConfig:
    """One BackendPatternConfig. Settings use torch's names (fuser_method, root_module, ...)."""
    location = spec_location()
    for key in settings:
        if key not in CONFIG_FIELDS:
            raise SpecFieldError(f"unknown pattern config field {key!r}{_suggest(key, CONFIG_FIELDS)}", location)
    complex_format = settings.pop("pattern_complex_format", None)
    if (pattern is None) == (complex_format is None):
        raise SpecFieldError("a pattern config needs exactly one of pattern and pattern_complex_format", location)
    declared = pattern if isinstance(pattern, Declared) else complex_format
    if isinstance(declared, Declared):
        pattern, complex_format = declared.unwrap(pattern, complex_format)
        if declared.kind == "removed":
            return declared.removal(complex_format is not None, settings.get("section", ""))
    if dtype_configs is None:
        raise SpecFieldError("a pattern config needs dtype_configs", location)
    values = {key: _to_ref(settings.pop(key, None), key) for key in _MODULE_FIELDS}
    values.update({key: _to_callable(settings.pop(key, None), key) for key in _CALLABLE_FIELDS})
    return model.PatternConfig(
        pattern=None if pattern is None else to_pattern(pattern),
        pattern_complex_format=None if complex_format is None else to_pattern(complex_format, "pattern_complex_format"),
        dtype_configs=tuple(_check_dtype_config(dc) for dc in dtype_configs),
        observation_type=settings.pop("observation_type", model.DEFAULT_OBSERVATION_TYPE),
        num_tensor_args_to_observation_type=tuple(settings.pop("num_tensor_args_to_observation_type", {}).items()),
        input_type_to_index=tuple(settings.pop("input_type_to_index", {}).items()),
        section=settings.pop("section", ""),
        divergence=declared.divergence if isinstance(declared, Declared) else None,
        location=location,
        **values,
    )


def _to_callable(value, what: str):
    if value is None or isinstance(value, model.FunctionDef):
        return value
    return _to_ref(value, what)


def function(template: str, name: str, **params) -> model.FunctionDef:
    """A callable written out from templates/functions/<template>.py.j2 with these params."""
    converted = tuple((key, _param(value)) for key, value in params.items())
    return model.FunctionDef(name, template, converted, spec_location())


def _param(value):
    if isinstance(value, Ref):
        return value.to_model()
    if isinstance(value, tuple):
        return to_pattern(value)
    return value


def sequential(fused_module: Ref) -> model.FunctionDef:
    """torch's `_sequential_wrapper2(fused)`: a fuser that wraps two modules in `fused`."""
    ref = _to_ref(fused_module, "fused module")
    class_name = ref.path.rsplit(".", 1)[-1]
    return model.FunctionDef(
        f"_fuse_{_snake_case(class_name)}", "sequential", (("fused_module", ref),), spec_location()
    )


def _snake_case(class_name: str) -> str:
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", class_name.replace("ReLU", "Relu"))
    return words.lower()


def product(**axes) -> list[SimpleNamespace]:
    """Every combination of the axes, first axis slowest, as rows with attribute access."""
    location = spec_location()
    for axis, values in axes.items():
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
        if not isinstance(reason, str) or not reason.strip() or "\n" in reason.strip():
            example = f'{kind}(nn.Mish, "why")'
            raise SpecFieldError(f"{kind}() needs a short one-line reason, e.g. {example}", self.location)
        self.kind = kind
        self.pattern = pattern
        self.divergence = model.Divergence(kind, reason.strip(), self.location)

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
    return Declared("added", pattern, reason)


def changed(pattern, reason: str) -> Declared:
    """A pattern both register, configured differently here: `config(changed(nn.Linear, "why"), ...)`."""
    return Declared("changed", pattern, reason)


def removed(pattern, reason: str) -> Declared:
    """A reference pattern this backend drops: stands in a backend's configs or where config(...) gets it."""
    return Declared("removed", pattern, reason)


# ---------------------------------------------------------------------------
# Backends and modules
# ---------------------------------------------------------------------------


def flatten(configs) -> tuple[model.PatternConfig | model.Removal, ...]:
    """Sections may nest lists of pattern configs (and declared removals); the order is kept."""
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
            flat.extend(flatten(item))
        else:
            raise SpecFieldError(f"a backend's configs must be pattern configs, not {item!r}", spec_location())
    return tuple(flat)


def Backend(name: str, builder: str, doc: str, configs, dict_builder=None, reference=None, torch_builder=None):
    """One BackendConfig, returned by the generated function `builder`.

    `reference` (or its older name `torch_builder`) is the dotted import path of a dynamic
    builder that the generated one must equal, torch's or the user's own.
    """
    if reference is not None and torch_builder is not None:
        raise SpecFieldError("give reference= or its older name torch_builder=, not both", spec_location())
    flat = flatten(configs)
    return model.Backend(
        name=name,
        builder=builder,
        doc=doc,
        configs=tuple(c for c in flat if isinstance(c, model.PatternConfig)),
        removals=tuple(c for c in flat if isinstance(c, model.Removal)),
        dict_builder=dict_builder,
        reference=reference if reference is not None else torch_builder,
        location=spec_location(),
    )


def Module(doc: str, backends, exports=(), dtype_configs=(), name=None):
    """The generated module a spec file describes, named after the file unless `name` says."""
    return SimpleNamespace(
        name=name,
        doc=doc,
        backends=tuple(backends),
        exports=tuple(exports),
        dtype_configs=tuple(dtype_configs),
        location=spec_location(),
    )
