"""FX flows for `verify`: a generated BackendConfig driving torch's FX quantization on small models of its patterns.

A backend's patterns that can be made into layers (module classes such as nn.Linear,
nn.Conv2d, nn.BatchNorm2d and elementwise activations; elementwise and binary functions
such as F.relu or operator.add) become one small model, one branch per pattern
(`branches`), each branch quantized with observers that its own static int8 dtype
config accepts (`qconfig`). The flows: "ptq" (prepare_fx, calibration,
convert_to_reference_fx and convert_fx), "qat" (prepare_qat_fx, one training step, the
reference conversion) where QAT modules exist, and "fuse" (fuse_fx) where fusions exist.

- With a reference builder: each flow runs with the generated config and with the
  reference's, and must agree step by step, but where a declared difference of the spec
  is the cause (`generator.review.flow_comparison`).
- Without one (`check`): the flows must run, and show the backend's patterns taking
  effect (fused, QAT and reference quantized modules; finite outputs of the right shape).

Every flow run is bounded in time (`bounded`: SIGALRM, in the main thread). torch is
imported inside the functions only. tests/support/backend_checks.py and
tests/test_fx_flows.py use these pieces too (`branches`, `run_flows`, `no_stack_traces`, ...).
"""

from __future__ import annotations

import contextlib
import copy
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

    def make(self):
        import torch.nn as nn

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
    """The two module classes a model is made of (made once torch is imported)."""
    import torch.nn as nn

    class Applied(nn.Module):
        """A function of the pattern as a layer: FX traces through it to a call_function node."""

        def __init__(self, function, binary: bool):
            super().__init__()
            self.function, self.binary = function, binary

        def forward(self, x):
            return self.function(x, x) if self.binary else self.function(x)

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

    return Applied, Branches


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
    applied, _ = _module_classes()
    return applied(item, item in _binary_functions())


def _makeable(item) -> bool:
    import torch.nn as nn

    if isinstance(item, type):
        return issubclass(item, nn.Module) and not item.__module__.startswith("torch.ao.nn")
    try:
        return item in _unary_functions() or item in _binary_functions()
    except TypeError:  # an unhashable pattern part
        return False


def _input_shape(first) -> tuple[int, ...] | None:
    import torch.nn as nn

    dims = {nn.Conv1d: 1, nn.Conv2d: 2, nn.Conv3d: 3, nn.BatchNorm2d: 2, nn.BatchNorm3d: 3}
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
        if config.pattern is None:
            continue
        pattern = config.pattern if isinstance(config.pattern, tuple) else (config.pattern,)
        if not all(_makeable(p) for p in pattern):
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
                   effective.reference_quantized_module, pattern_label(config), keys)
        )
    return found


def static_int8(dtype_config) -> bool:
    import torch

    activation = dtype_config.input_dtype_with_constraints
    return (
        not dtype_config.is_dynamic
        and activation.dtype in (torch.quint8, torch.qint8)
        and activation.scale_exact_match is None
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
    if qat:
        return FakeQuantize.with_args(observer=MinMaxObserver, **settings)
    return MinMaxObserver.with_args(**settings)


def model_and_inputs(found: list[Branch], seed: int = 0):
    import torch

    torch.default_generator.manual_seed(seed)  # the CPU generator: torch.manual_seed costs ms
    _, model_class = _module_classes()
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
# The flows
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class FlowResult:
    """What a flow produced: the graph code of each stage, the modules, and the outputs."""

    codes: list[str]
    modules: list[str]
    outputs: list


def wanted_flows(found: list[Branch]) -> tuple[str, ...]:
    """ptq always; qat where a branch has a QAT module; fuse where one fuses."""
    return ("ptq",) + (("qat",) if any(b.qat_module for b in found) else ()) + (
        ("fuse",) if any(b.fused_module for b in found) else ()
    )


def run_flows(found: list[Branch], backend_config) -> dict[str, tuple[FlowResult, object]]:
    """{flow: (result, final model)} for ptq, and qat and fuse where the patterns call for them."""
    steps = {"ptq": _ptq, "qat": _qat, "fuse": _fuse}
    with no_stack_traces():
        return {flow: steps[flow](found, backend_config) for flow in wanted_flows(found)}


def calibrated(found, backend_config):
    import torch
    from torch.ao.quantization.quantize_fx import prepare_fx

    model, inputs = model_and_inputs(found)
    prepared = prepare_fx(model.eval(), qconfig_mapping(found, qat=False), (inputs,), backend_config=backend_config)
    for seed in range(3):
        torch.default_generator.manual_seed(100 + seed)
        prepared([torch.randn(b.input_shape) for b in found])
    return prepared, inputs


def _ptq(found, backend_config):
    from torch.ao.quantization.quantize_fx import convert_to_reference_fx

    prepared, inputs = calibrated(found, backend_config)
    converted = convert_to_reference_fx(copy.deepcopy(prepared), backend_config=backend_config)
    return _result([prepared, converted], converted, inputs), converted


def trained(found, backend_config):
    import torch
    from torch.ao.quantization.quantize_fx import prepare_qat_fx

    model, inputs = model_and_inputs(found)
    prepared = prepare_qat_fx(model.train(), qconfig_mapping(found, qat=True), (inputs,), backend_config=backend_config)
    loss = sum(out.sum() for out in prepared(inputs))
    loss.backward()
    with torch.no_grad():  # one plain SGD step (torch.optim's first use imports torch._dynamo: seconds)
        for parameter in prepared.parameters():
            if parameter.grad is not None:
                parameter -= 0.01 * parameter.grad
    return prepared, inputs


def _qat(found, backend_config):
    from torch.ao.quantization.quantize_fx import convert_to_reference_fx

    prepared, inputs = trained(found, backend_config)
    converted = convert_to_reference_fx(copy.deepcopy(prepared).eval(), backend_config=backend_config)
    result = _result([prepared, converted], converted, inputs)
    result.modules.insert(0, str(prepared))
    return result, prepared


def _fuse(found, backend_config):
    from torch.ao.quantization.quantize_fx import fuse_fx

    model, inputs = model_and_inputs(found)
    fused = fuse_fx(model.eval(), backend_config=backend_config)
    return _result([fused], fused, inputs), fused


def _result(stages, final, inputs) -> FlowResult:
    import torch

    with torch.no_grad():
        outputs = [out.detach() for out in final(inputs)]
    return FlowResult([stage.code for stage in stages], [str(stage) for stage in stages], outputs)


# ---------------------------------------------------------------------------
# Without a reference: the flows must run and show the patterns taking effect
# ---------------------------------------------------------------------------


def flow_problems(backend_config, found: list[Branch] | None = None) -> list[str]:
    """What the FX flows show going wrong with the config's own patterns ([] when they work)."""
    import torch

    found = branches(backend_config) if found is None else found
    if not found:
        return ["no pattern of this backend could be made into a model to run FX flows on"]
    problems = []
    results = run_flows(found, backend_config)
    float_model, inputs = model_and_inputs(found)
    with torch.no_grad():
        expected = float_model.eval()(inputs)
    ptq, converted = results["ptq"]
    if "quantize_per_tensor" not in ptq.codes[-1]:
        problems.append("ptq: convert_to_reference_fx inserted no quantize_per_tensor")
    for index, branch in enumerate(found):
        problems += _branch_problems(index, branch, results)
    for name, (result, _) in results.items():
        for out, want in zip(result.outputs, expected, strict=True):
            if out.shape != want.shape or not torch.isfinite(out).all():
                problems.append(f"{name}: output {tuple(out.shape)} against {tuple(want.shape)} or not finite")
    if "fuse" in results and not all(torch.equal(a, b) for a, b in zip(results["fuse"][0].outputs, expected)):
        problems.append("fuse: the fused model does not compute what the float model computes")
    return problems


def _branch_problems(index: int, branch: Branch, results) -> list[str]:
    import torch.nn as nn

    wanted = [("ptq", branch.reference_module), ("qat", branch.qat_module), ("fuse", branch.fused_module)]
    problems = []
    for flow, cls in wanted:
        if cls is None or flow not in results:
            continue
        model = results[flow][1]
        held = [m for name, m in model.named_modules() if name.startswith(f"b{index}.") or name == f"b{index}"]
        if any(isinstance(m, cls) for m in held):
            continue
        if flow == "fuse" and any(p in _batch_norms() for p in branch.pattern):
            # fuse_fx in eval mode folds a BatchNorm into the module before it (a plain Conv2d, not a ConvBn2d)
            if not any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in held):
                continue
        problems.append(f"{flow}: branch b{index} {branch.label or branch.pattern} holds no {cls.__name__}")
    return problems


def _batch_norms() -> tuple:
    import torch.nn as nn

    return (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)
