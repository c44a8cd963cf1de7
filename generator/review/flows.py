"""FX flows for `verify`: a generated BackendConfig driving torch's FX quantization on small models of its patterns.

A backend's patterns that can be made into layers (module classes such as nn.Linear,
nn.Conv2d, nn.BatchNorm2d and elementwise activations; elementwise and binary functions
such as F.relu or operator.add) become one small model, one branch per pattern
(`branches`), each branch quantized with observers that its own static int8 dtype
config accepts (`qconfig`). The flows (`STEPS`, named by torch's calls): "ptq"
(prepare_fx with calibration, convert_to_reference_fx, convert_fx), "qat" (prepare_qat_fx
with one training step, convert_to_reference_fx) where QAT modules exist, and "fuse"
(fuse_fx) where fusions exist. `generator.review.flow_comparison` records them and holds
them against the reference's flows, or the float model's outputs; what it finds is a
`Finding` on a pattern. The patterns no flow runs on are listed with the reason
(`unexercised`), so that a report says what it did not check.

Every flow run is bounded in time (`bounded`: SIGALRM, in the main thread). torch is
imported inside the functions only. tests/support/backend_checks.py and
tests/test_fx_flows.py use these pieces too (`branches`, `no_stack_traces`, ...).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import operator
import signal
import threading
import warnings

FEATURES, CHANNELS = 8, 3
DEFAULT_TIMEOUT = 60.0  # seconds for one flow run (prepare, calibrate, convert) on one config


# ---------------------------------------------------------------------------
# Bounds and settings around a flow
# ---------------------------------------------------------------------------


class FlowTimeout(Exception):
    """A flow run took longer than its bound."""


@contextlib.contextmanager
def bounded(seconds: float | None):
    """Raise FlowTimeout in the block once `seconds` have passed (not bounded off the main thread, or for None)."""
    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expired(signum, frame):
        raise FlowTimeout(f"timed out after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def no_stack_traces():
    """FX tracing without recording each node's Python stack: nothing compared shows it, and the first one
    recorded imports torch._inductor to symbolize it (seconds a process)."""
    import torch

    previous = torch.fx.config.do_not_emit_stack_traces
    torch.fx.config.do_not_emit_stack_traces = True
    try:
        yield
    finally:
        torch.fx.config.do_not_emit_stack_traces = previous


@contextlib.contextmanager
def quantized_engine(engine: str | None):
    """Run under `engine` if this torch build has it: only convert_fx's lowering needs its kernels."""
    import torch

    previous = torch.backends.quantized.engine
    if engine is not None and engine in torch.backends.quantized.supported_engines:
        torch.backends.quantized.engine = engine
    try:
        yield
    finally:
        torch.backends.quantized.engine = previous


@contextlib.contextmanager
def quiet_flows():
    """torch.ao.quantization warns that it is deprecated, on every flow: the same words, nothing about the config."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# ---------------------------------------------------------------------------
# A small model made from the backend's own patterns
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Branch:
    """One pattern of the backend as a small Sequential, and what its configs say should happen to it."""

    pattern: tuple
    input_shape: tuple[int, ...]
    qconfig_dtypes: object  # the torch DTypeConfig the branch's qconfig is made for
    fused_module: type | None
    qat_module: type | None
    reference_module: type | None
    label: str = ""  # the pattern as the diff and the equality proof name it
    keys: tuple = ()  # the pattern keys of the configs that decide the branch (its own, its fused module's)
    nested: tuple | None = None  # a pattern in torch's nested format (`pattern`: its parts, inputs first)

    def make(self):
        import torch.nn as nn

        if self.nested is not None:
            return _module_classes()[2](self.nested, self.input_shape)
        return nn.Sequential(*(_layer(item, self.input_shape) for item in self.pattern))


@functools.cache
def _unary_functions() -> frozenset:
    import torch
    import torch.nn.functional as F

    return frozenset({
        F.relu, torch.relu, F.relu6, F.hardswish, F.elu, F.leaky_relu, F.hardtanh, F.dropout, torch.sigmoid,
        torch.tanh, F.sigmoid, F.tanh, F.hardsigmoid, F.silu, F.mish, F.gelu,
    })


@functools.cache
def _binary_functions() -> frozenset:
    import torch

    return frozenset({operator.add, operator.mul, torch.add, torch.mul})


@functools.cache
def _module_classes():
    """The module classes a model is made of (made once torch is imported)."""
    import torch
    import torch.nn as nn

    class Applied(nn.Module):
        """A function of the pattern as a layer: FX traces through it to a call_function node."""

        def __init__(self, function, binary: bool):
            super().__init__()
            self.function, self.binary = function, binary

        def forward(self, x):
            if self.binary:
                return self.function(x, x)
            if self.function is _dropout():  # F.dropout drops in eval mode too unless told
                return self.function(x, training=self.training)
            return self.function(x)

    class Branches(nn.Module):
        """b0, b1, ...: one branch per pattern, each on its own input."""

        def __init__(self, made):
            super().__init__()
            self.count = len(made)
            for index, branch in enumerate(made):
                self.add_module(f"b{index}", branch)

        def forward(self, inputs):
            # indexed, not iterated: FX traces `inputs` as one value of unknown length
            return [getattr(self, f"b{index}")(inputs[index]) for index in range(self.count)]

    class Nested(nn.Module):
        """A pattern in torch's nested format, (op, *inputs), as layers: MatchAllNode is the branch's input,
        so (torch.add, nn.Conv2d, MatchAllNode) computes torch.add(conv(x), x)."""

        def __init__(self, pattern, input_shape):
            super().__init__()
            self.tree = self._built(pattern, input_shape)

        def _built(self, part, input_shape):
            if isinstance(part, tuple):
                return ("apply", self._built(part[0], input_shape), [self._built(p, input_shape) for p in part[1:]])
            if _is_match_all(part):
                return ("input",)
            if isinstance(part, type):
                name = f"m{len(self._modules)}"
                self.add_module(name, _layer(part, input_shape))
                return ("module", name)
            return ("function", part)

        def forward(self, x):
            return self._run(self.tree, x)

        def _run(self, node, x):
            if node[0] == "input":
                return x
            if node[0] == "apply":
                values = [self._run(argument, x) for argument in node[2]]
                head = node[1]
                return getattr(self, head[1])(*values) if head[0] == "module" else head[1](*values)
            return getattr(self, node[1])(x) if node[0] == "module" else node[1](x)

    class Weighted(nn.Module):
        """F.linear or F.conv* as a layer with its own weight and bias (a conv's padded to keep the shape)."""

        def __init__(self, function, weight_shape):
            super().__init__()
            self.function, self.dims = function, len(weight_shape) - 2
            self.weight = nn.Parameter(torch.randn(weight_shape) * 0.3)
            self.bias = nn.Parameter(torch.randn(weight_shape[0]) * 0.1)

        def forward(self, x):
            if not self.dims:
                return self.function(x, self.weight, self.bias)
            ones = (1,) * self.dims  # stride, padding (keeping the shape), dilation; then groups
            return self.function(x, self.weight, self.bias, ones, ones, ones, 1)

    return Applied, Branches, Nested, Weighted


def _dropout():
    import torch.nn.functional as F

    return F.dropout


def _elementwise_modules() -> tuple:
    import torch.nn as nn

    return (nn.ReLU, nn.ReLU6, nn.Hardswish, nn.ELU, nn.LeakyReLU, nn.Sigmoid, nn.Tanh, nn.Identity, nn.Dropout)


def _layer(item, input_shape):
    import torch.nn as nn

    if item is nn.Linear:
        return nn.Linear(FEATURES, FEATURES)
    if item in (nn.Conv1d, nn.Conv2d, nn.Conv3d):
        return item(CHANNELS, CHANNELS, 3, padding=1)
    if item in (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d):
        return item(input_shape[1])
    if isinstance(item, type):
        return item()
    if item in _weighted_functions():
        return _module_classes()[3](item, _weighted_functions()[item])
    applied, _, _, _ = _module_classes()
    return applied(item, item in _binary_functions())


@functools.cache
def _weighted_functions() -> dict:
    """F.linear and F.conv*: {function: its weight's shape}; a layer of one holds its weight and bias."""
    import torch.nn.functional as F

    return {F.linear: (FEATURES, FEATURES), **{
        getattr(F, f"conv{d}d"): (CHANNELS, CHANNELS) + (3,) * d for d in (1, 2, 3)
    }}  # fmt: skip


def _makeable(item) -> bool:
    import torch.nn as nn

    if isinstance(item, type):
        return issubclass(item, nn.Module) and not item.__module__.startswith("torch.ao.nn")
    try:
        return item in _unary_functions() or item in _binary_functions() or item in _weighted_functions()
    except TypeError:  # an unhashable pattern part
        return False


def _input_shape(first) -> tuple[int, ...] | None:
    import torch.nn as nn

    dims = {nn.Conv1d: 1, nn.Conv2d: 2, nn.Conv3d: 3, nn.BatchNorm2d: 2, nn.BatchNorm3d: 3}
    if not isinstance(first, type) and first in _weighted_functions():
        dims = {first: len(_weighted_functions()[first]) - 2}
        return (4, FEATURES) if dims[first] == 0 else (2, CHANNELS) + (6,) * dims[first]
    if first in dims:
        return (2, CHANNELS) + (6,) * dims[first]
    if first in (nn.Linear, nn.BatchNorm1d) or first in _elementwise_modules():
        return (4, FEATURES)
    if not isinstance(first, type) and _makeable(first):
        return (4, FEATURES)
    return None


def branches(backend_config) -> list[Branch]:
    """A branch per pattern made of layers this module knows how to build, with a static int8 dtype config."""
    from generator.review.equality import pattern_label
    from generator.review.identity import pattern_key

    by_pattern = {c.pattern: c for c in backend_config.configs if c.pattern is not None}
    found = []
    for config in backend_config.configs:
        nested = None if config.pattern is not None else config._pattern_complex_format
        pattern = _parts(nested) if nested is not None else (
            config.pattern if isinstance(config.pattern, tuple) else (config.pattern,)
        )
        if not pattern or not all(_makeable(p) for p in pattern):
            continue
        if nested is not None and not all(_shape_keeping(p) for p in pattern):
            continue
        shape = _input_shape(pattern[0])
        dtype_config = next((dc for dc in config.dtype_configs if static_int8(dc)), None)
        if shape is None or dtype_config is None:
            continue
        # What the quantized branch holds: the config of the fused module when the pattern fuses.
        effective = by_pattern.get(config.fused_module, config) if config.fused_module else config
        keys = (pattern_key(config),) + ((pattern_key(effective),) if effective is not config else ())
        found.append(
            Branch(pattern, shape, dtype_config, config.fused_module, effective.qat_module,
                   effective.reference_quantized_module, pattern_label(config), keys, nested)
        )
    return found


def _parts(nested) -> tuple:
    """A nested pattern's parts, inputs before the op that takes them; MatchAllNode left out."""
    if isinstance(nested, tuple) and nested:
        return tuple(p for part in nested[1:] for p in _parts(part)) + _parts(nested[0])
    return () if _is_match_all(nested) else (nested,)


def _is_match_all(part) -> bool:
    from torch.ao.quantization.utils import MatchAllNode

    return part is MatchAllNode


def _shape_keeping(part) -> bool:
    """A part whose layer keeps its input's shape, so that the branch's input can meet its output in an add."""
    import torch.nn as nn

    keeping = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d, *batch_norms(), *_elementwise_modules())
    return part in keeping or not isinstance(part, type)


def static_int8(dtype_config) -> bool:
    import torch

    activation = dtype_config.input_dtype_with_constraints
    return (
        not dtype_config.is_dynamic
        and activation.dtype in (torch.quint8, torch.qint8)
        and dtype_config.weight_dtype in (None, torch.float, torch.qint8, torch.quint8)
    )


def qconfig(dtype_config, qat: bool):
    """Observers that satisfy the dtype config's constraints (range, minimum scale)."""
    import torch
    from torch.ao.quantization import PlaceholderObserver, QConfig

    activation = _observer(dtype_config.input_dtype_with_constraints, torch.per_tensor_affine, qat)
    weight_constraints = dtype_config.weight_dtype_with_constraints
    if weight_constraints.dtype in (torch.qint8, torch.quint8):
        weight = _observer(weight_constraints, torch.per_tensor_symmetric, qat)
    else:
        weight = PlaceholderObserver.with_args(dtype=torch.float)
    return QConfig(activation=activation, weight=weight)


def _observer(constraints, qscheme, qat: bool):
    import torch
    from torch.ao.quantization import FakeQuantize, MinMaxObserver

    info = torch.iinfo(torch.uint8 if constraints.dtype == torch.quint8 else torch.int8)
    low = constraints.quant_min_lower_bound
    high = constraints.quant_max_upper_bound
    settings = {
        "dtype": constraints.dtype,
        "qscheme": qscheme,
        "quant_min": info.min if low is None else max(low, info.min),
        "quant_max": info.max if high is None else min(high, info.max),
        "eps": max(constraints.scale_min_lower_bound or 0, torch.finfo(torch.float32).eps),
    }
    if constraints.scale_exact_match is not None:  # a fixed-qparams op (sigmoid, tanh): observers of its qparams
        from torch.ao.quantization import FixedQParamsFakeQuantize, FixedQParamsObserver

        del settings["eps"]
        fixed = FixedQParamsObserver.with_args(
            scale=constraints.scale_exact_match, zero_point=constraints.zero_point_exact_match or 0, **settings
        )
        return FixedQParamsFakeQuantize.with_args(observer=fixed) if qat else fixed
    if qat:
        return FakeQuantize.with_args(observer=MinMaxObserver, **settings)
    return MinMaxObserver.with_args(**settings)


def model_and_inputs(found: list[Branch], seed: int = 0):
    import torch

    torch.default_generator.manual_seed(seed)  # the CPU generator: torch.manual_seed costs ms
    model_class = _module_classes()[1]
    model = model_class([b.make() for b in found])
    inputs = [torch.randn(b.input_shape) for b in found]
    return model, inputs


def qconfig_mapping(found: list[Branch], qat: bool):
    from torch.ao.quantization import QConfigMapping

    mapping = QConfigMapping()
    for index, branch in enumerate(found):
        mapping.set_module_name(f"b{index}", qconfig(branch.qconfig_dtypes, qat))
    return mapping


# ---------------------------------------------------------------------------
# The flows: their steps in torch's words, and what verify found in them
# ---------------------------------------------------------------------------

# Each flow's steps, named by the torch call that makes each one; "ptq" calibrates in its first step.
STEPS = {
    "ptq": ("prepare_fx", "convert_to_reference_fx", "convert_fx"),
    "qat": ("prepare_qat_fx", "convert_to_reference_fx"),
    "fuse": ("fuse_fx",),
}


def step_title(flow: str, step: str) -> str:
    """A step as the calls that lead to it: `prepare_qat_fx`, `prepare_qat_fx, then convert_to_reference_fx`."""
    first = STEPS[flow][0]
    return first if step == first else f"{first}, then {step}"


def wanted_flows(found: list[Branch]) -> tuple[str, ...]:
    """ptq always; qat where a branch has a QAT module; fuse where one fuses."""
    return ("ptq",) + (("qat",) if any(b.qat_module for b in found) else ()) + (
        ("fuse",) if any(b.fused_module for b in found) else ()
    )


def flow_branches(flow: str, found: list[Branch]) -> list[Branch]:
    """The branches a flow runs on: all, but for "qat" those with a QAT module or a fusion (for the others
    prepare_qat_fx decides what prepare_fx does, with fake quantizers for observers)."""
    if flow == "qat":
        return [b for b in found if b.qat_module is not None or b.fused_module is not None]
    return found


@dataclasses.dataclass(frozen=True)
class Finding:
    """What a flow showed on one pattern (or on the whole model: pattern ""), in torch's and the author's words."""

    pattern: str
    step: str  # step_title(): the torch calls that lead to it
    detail: str
    causes: tuple = ()  # the declarations (generator.building.expansion.Declaration) of the pattern
    failure: bool = True  # False: a difference that the declarations explain

    def line(self, label: str, location: str | None = None) -> str:
        where = f"{self.pattern} ({location}): " if self.pattern and location else (
            f"{self.pattern}: " if self.pattern else ""
        )
        cause = "; ".join(
            f"caused by the declared difference: {d.kind} {d.pattern} ({d.location}): {d.reason}" for d in self.causes
        )
        return f"{label}: {where}{self.step}: {self.detail}" + (f"; {cause}" if cause else "")


def calibrated(found, backend_config):
    import torch
    from torch.ao.quantization.quantize_fx import prepare_fx

    model, inputs = model_and_inputs(found)
    prepared = prepare_fx(model.eval(), qconfig_mapping(found, qat=False), (inputs,), backend_config=backend_config)
    for seed in range(3):
        torch.default_generator.manual_seed(100 + seed)
        prepared([torch.randn(b.input_shape) for b in found])
    return prepared, inputs


def trained(found, backend_config):
    import torch
    from torch.ao.quantization.quantize_fx import prepare_qat_fx

    model, inputs = model_and_inputs(found)
    prepared = prepare_qat_fx(model.train(), qconfig_mapping(found, qat=True), (inputs,), backend_config=backend_config)
    loss = sum(out.sum() for out in prepared(inputs))
    if loss.requires_grad:  # a model of functions alone has no parameter to train
        loss.backward()
    with torch.no_grad():  # one plain SGD step (torch.optim's first use imports torch._dynamo: seconds)
        for parameter in prepared.parameters():
            if parameter.grad is not None:
                parameter -= 0.01 * parameter.grad
    return prepared, inputs


def batch_norms() -> tuple:
    import torch.nn as nn

    return (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)


# ---------------------------------------------------------------------------
# Coverage: the patterns no flow runs on, each with the reason
# ---------------------------------------------------------------------------


def unexercised(backend_config, found: list[Branch]) -> list[tuple[str, str]]:
    """(pattern, why no flow exercises it) for each pattern that is no branch and that no branch makes.

    A fused or QAT module (nni.ConvReLU2d, nnqat.Linear) is exercised when a branch's fusion or
    prepare_qat_fx makes it.
    """
    from generator.review.equality import pattern_label

    made = {b.label for b in found}
    reached = {m for b in found for m in (b.fused_module, b.qat_module) if m is not None}
    listed = []
    for config in backend_config.configs:
        label = pattern_label(config)
        if label in made or config.pattern in reached:
            continue
        listed.append((label, _why_not(config)))
    return listed


def _why_not(config) -> str:
    if config.pattern is None:
        return "a pattern in torch's nested format (an op and its inputs): verify makes no model of it"
    pattern = config.pattern if isinstance(config.pattern, tuple) else (config.pattern,)
    for part in pattern:
        if isinstance(part, type) and part.__module__.startswith("torch.ao.nn"):
            return "a fused or QAT module that no fusion or QAT swap among the exercised patterns makes"
        if not _makeable(part):
            return "a function, method or module verify makes no layer of"
    if _input_shape(pattern[0]) is None:
        return "a module verify makes no input for"
    return (
        "no static int8 dtype config (dynamic, weight-only or float16): verify's flows quantize with static int8 "
        "observers"
    )
