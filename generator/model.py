"""The model: small frozen dataclasses that describe backend configs without torch.

Everything the spec declares becomes one of these values, and every later stage
(expansion, lint, rendering) reads them. They name torch objects by dotted path
(`TorchRef`) instead of holding them, so the generator can run without importing
torch, which takes seconds. A value carries the spec location it came from so that
errors and lint warnings can point at the spec line; locations never take part in
equality, so two spellings of the same pattern compare equal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

DEFAULT_OBSERVATION_TYPE = "OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT"
OBSERVATION_TYPES = (
    "OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT",
    "OUTPUT_SHARE_OBSERVER_WITH_INPUT",
    "INPUT_OUTPUT_NOT_OBSERVED",
)


@dataclass(frozen=True)
class SourceLocation:
    """A line in a spec file, as a path relative to the project root."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class TorchRef:
    """A torch (or stdlib) object named by its full dotted import path."""

    path: str
    location: SourceLocation | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return self.path


# A pattern is a torch object, a Tensor method name, or a tuple of patterns.
Pattern = TorchRef | str | int | tuple


def reversed_nested(pattern: Pattern) -> Pattern:
    """A simple-format pattern in torch's reversed nested tuple format: torch's key for it."""
    if not isinstance(pattern, tuple):
        return pattern
    if len(pattern) == 2:
        first, second = pattern
        return (second, first)
    first, second, third = pattern
    return (third, (second, first))


DIVERGENCE_KINDS = ("added", "removed", "changed")


@dataclass(frozen=True)
class Divergence:
    """A deliberate difference from the backend's reference builder, declared where it is made."""

    kind: str  # one of DIVERGENCE_KINDS, relative to the reference builder
    reason: str
    location: SourceLocation | None = field(default=None, compare=False, repr=False)


# torch's DTypeWithConstraints fields after `dtype`, and DTypeConfig's constrained sides, in torch's order.
CONSTRAINT_BOUNDS = (
    "quant_min_lower_bound",
    "quant_max_upper_bound",
    "scale_min_lower_bound",
    "scale_max_upper_bound",
    "scale_exact_match",
    "zero_point_exact_match",
)
DTYPE_SIDES = ("input_dtype", "output_dtype", "weight_dtype")


@dataclass(frozen=True)
class DTypeWithConstraints:
    """Mirror of torch's DTypeWithConstraints; `name` is the module-level constant."""

    name: str | None
    dtype: TorchRef | None
    quant_min_lower_bound: int | float | None = None
    quant_max_upper_bound: int | float | None = None
    scale_min_lower_bound: int | float | None = None
    scale_max_upper_bound: int | float | None = None
    scale_exact_match: float | None = None
    zero_point_exact_match: int | None = None
    location: SourceLocation | None = field(default=None, compare=False, repr=False)
    # changed(DTypeWithConstraints(...), "reason"): every dtype config holding it differs from the reference's.
    divergence: Divergence | None = field(default=None, compare=False, repr=False)
    # (bound, source spelling) where the spec spells a bound otherwise than its repr, e.g.
    # ("scale_min_lower_bound", "2**-12"); the value above is what counts (see generator/loading/spellings.py).
    spellings: tuple[tuple[str, str], ...] = field(default=(), compare=False, repr=False)

    @property
    def bounds(self) -> dict[str, int | float]:
        """The constraint fields that are set, in torch's field order."""
        return {n: getattr(self, n) for n in CONSTRAINT_BOUNDS if getattr(self, n) is not None}


DTypeSpec = TorchRef | DTypeWithConstraints | None


@dataclass(frozen=True)
class DTypeConfig:
    """Mirror of torch's DTypeConfig; `name` is the module-level constant."""

    name: str
    input_dtype: DTypeSpec = None
    output_dtype: DTypeSpec = None
    weight_dtype: DTypeSpec = None
    bias_dtype: TorchRef | None = None
    is_dynamic: bool | None = None
    location: SourceLocation | None = field(default=None, compare=False, repr=False)
    # changed(DTypeConfig(...), "reason"): its content differs from the reference's on purpose.
    divergence: Divergence | None = field(default=None, compare=False, repr=False)

    @property
    def declared_change(self) -> Divergence | None:
        """The declared change of this dtype config: its own, else that of a constrained side it holds."""
        if self.divergence is not None:
            return self.divergence
        sides = (self.input_dtype, self.output_dtype, self.weight_dtype)
        return next((s.divergence for s in sides if isinstance(s, DTypeWithConstraints) and s.divergence), None)


@dataclass(frozen=True)
class FunctionDef:
    """A callable written out in the generated module from templates/functions/<template>."""

    name: str
    template: str
    params: tuple[tuple[str, object], ...] = ()
    location: SourceLocation | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Call:
    """A callable made by calling a function with nameable arguments, written as that call:
    a closure of a module-level factory (`reverse2(fuse_conv_bn)`, a backend's own
    `make_fuser(nni.ConvReLU2d)`) or `functools.partial(f, ...)`. An argument is a TorchRef,
    a plain constant, a tuple of arguments or another Call."""

    function: TorchRef
    args: tuple = ()
    keywords: tuple[tuple[str, object], ...] = ()
    location: SourceLocation | None = field(default=None, compare=False, repr=False)


PARTIAL = "functools.partial"

CallableSpec = TorchRef | FunctionDef | Call | None


@dataclass(frozen=True)
class FixedQParams:
    """A dtype config that torch derives for fixed-qparams ops (sigmoid, tanh, ...).

    torch deep-copies the base config and pins its activation constraints; the
    expansion stage turns this into a named DTypeConfig.
    """

    base: DTypeConfig
    constraints: DTypeWithConstraints
    suffix: str


@dataclass(frozen=True)
class PatternConfig:
    """One BackendPatternConfig: a pattern and how the backend quantizes it."""

    pattern: Pattern | None
    dtype_configs: tuple[DTypeConfig | FixedQParams, ...]
    pattern_complex_format: Pattern | None = None
    observation_type: str = DEFAULT_OBSERVATION_TYPE
    root_module: TorchRef | None = None
    qat_module: TorchRef | None = None
    reference_quantized_module: TorchRef | None = None
    fused_module: TorchRef | None = None
    fuser_method: CallableSpec = None
    root_node_getter: CallableSpec = None
    extra_inputs_getter: CallableSpec = None
    num_tensor_args_to_observation_type: tuple[tuple[int, str], ...] = ()
    input_type_to_index: tuple[tuple[str, int], ...] = ()
    section: str = ""
    # The spec's reason for replacing an earlier config of the same pattern on purpose.
    overrides: str | None = field(default=None, compare=False, repr=False)
    divergence: Divergence | None = None  # declared "added" or "changed" relative to the reference
    location: SourceLocation | None = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> Pattern:
        """The pattern in torch's reversed nested tuple format: torch's duplicate key."""
        if self.pattern_complex_format is not None:
            return self.pattern_complex_format
        return reversed_nested(self.pattern)


@dataclass(frozen=True)
class Removal:
    """A pattern the reference builder registers and this backend deliberately does not."""

    pattern: Pattern
    divergence: Divergence
    complex_format: bool = False  # `pattern` is already in reversed nested tuple format
    section: str = ""
    location: SourceLocation | None = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> Pattern:
        return self.pattern if self.complex_format else reversed_nested(self.pattern)


@dataclass(frozen=True)
class Backend:
    """One BackendConfig and the builder function(s) that return it."""

    name: str
    builder: str
    doc: str
    configs: tuple[PatternConfig, ...]
    dict_builder: str | None = None
    reference: str | None = None  # dotted path of the dynamic builder this one must equal
    removals: tuple[Removal, ...] = ()  # reference patterns this backend declares it drops
    location: SourceLocation | None = field(default=None, compare=False, repr=False)
    reference_location: SourceLocation | None = field(default=None, compare=False, repr=False)  # of reference=
    # Backend(label=...): the project's name for it where the one derived from `name` and `builder` does not
    # serve (the builder returns torch's default empty name, or a name another backend returns too).
    given_label: str | None = None

    @property
    def label(self) -> str:
        """The one name users see and type (`diff`, `--name`, the support matrix), unique across spec/:
        Backend(label=...), else `default_label`. `name` is only what the builder returns."""
        return self.given_label or default_label(self.name, self.builder)

    @property
    def label_is_given(self) -> bool:
        """Whether the label is not the one a generated module's builder tells (`default_label`), so the
        module must record it (`__backend_labels__`)."""
        return self.label != default_label(self.name, self.builder)


LABEL = re.compile(r"[a-z][a-z0-9_]*")


def default_label(name: str, builder: str) -> str:
    """A backend's label unless the spec gives one: the BackendConfig name when it reads as a plain
    identifier (fbgemm, my_backend), else the builder's name without get_/_backend_config (torch's
    `_native_and_fp16` is `test_only_legacy_native`; a builder returning the empty name gets its own)."""
    if LABEL.fullmatch(name):
        return name
    return builder.removeprefix("get_").removesuffix("_backend_config")


@dataclass(frozen=True)
class ModuleSpec:
    """One generated module: the backends that one spec file declares."""

    name: str
    spec_file: str
    doc: str
    backends: tuple[Backend, ...]
    exports: tuple[str, ...] = ()
    extra_dtype_configs: tuple[DTypeConfig, ...] = ()
    location: SourceLocation | None = field(default=None, compare=False, repr=False)
    # The project files its load read, (path, digest): what the manifest records it was made from.
    read: tuple[tuple[str, str], ...] = field(default=(), compare=False, repr=False)
    # The project's generated folder (pyproject.toml's [tool.backend-config-generator] generated), set by the loader.
    generated: str = "generated"

    @property
    def output(self) -> str:
        return f"{self.generated}/{self.name}.py"
