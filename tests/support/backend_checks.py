"""Generic checks for any generated builder, above all one with no reference builder to equal.

Without a reference, a generated builder is checked against what it is made from
and what it is for:
- it imports and builds in a fresh interpreter, and every call returns fresh objects;
- the BackendConfig it builds equals the spec's own expansion, field by field, read
  back from the built objects (names resolved to torch objects, dtype configs to the
  module's named constants, template functions to the module's functions);
- real FX flows run with it on a small seeded model made from its own patterns:
  prepare_fx, calibration and convert_to_reference_fx; prepare_qat_fx with a training
  step where QAT modules exist; fuse_fx where fusions exist. Each flow must show the
  backend's patterns taking effect (fused, QAT and reference quantized modules).

`tests/test_custom_backends.py` runs these on the spec's backends, and
`tests/test_tutorial_backend.py` on the backend of PyTorch's BackendConfig tutorial,
laid over a copy of the project from `tests/custom_backends/tutorial/` (the folder holds
the custom backends' spec files, data for the tests).
"""

import copy
import os
import subprocess
import sys
from dataclasses import dataclass

import torch
from torch import nn
from torch.ao.quantization import (
    FakeQuantize,
    MinMaxObserver,
    PlaceholderObserver,
    QConfig,
    QConfigMapping,
)
from torch.ao.quantization.backend_config import ObservationType
from torch.ao.quantization.quantize_fx import convert_to_reference_fx, fuse_fx, prepare_fx, prepare_qat_fx

from generator.importer import factories
from generator.model import CONSTRAINT_BOUNDS, Call, FunctionDef, TorchRef
from generator.review import callables
from generator.review.divergence import torch_key

# ---------------------------------------------------------------------------
# Fresh interpreter and fresh objects
# ---------------------------------------------------------------------------


def fresh_interpreter_failures(builders) -> dict[str, str]:
    """{builder id: stderr} of the builders that fail to import and build in a new interpreter."""
    runs = {}
    for b in builders:
        program = (
            f"from generated.{b.module} import {b.function} as build\n"
            "config = build()\n"
            "assert type(config).__name__ == 'BackendConfig' and config.configs, config\n"
        )
        env = dict(os.environ, PYTHONPATH=str(b.root))
        runs[b.id] = subprocess.Popen(
            [sys.executable, "-c", program], cwd=b.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )
    return {name: run.communicate()[1] for name, run in runs.items() if run.wait() != 0}


def shared_objects(builder) -> list[str]:
    """Mutable objects two calls share: pattern configs, their dtype config lists and dicts."""
    first, second = builder.ours()(), builder.ours()()
    shared = []
    for a, b in zip(first.configs, second.configs, strict=True):
        for attribute in (None, "dtype_configs", "_num_tensor_args_to_observation_type", "_input_type_to_index"):
            if (getattr(a, attribute) if attribute else a) is (getattr(b, attribute) if attribute else b):
                shared.append(f"{a.pattern or a._pattern_complex_format}: {attribute or 'the config'}")
    return shared


# ---------------------------------------------------------------------------
# The built BackendConfig against the spec's own expansion
# ---------------------------------------------------------------------------

CONSTRAINT_FIELDS = CONSTRAINT_BOUNDS


def expansion_differences(builder) -> list[str]:
    """Where the built BackendConfig differs from the spec's expansion of its backend ([] when equal)."""
    module, built, expected = builder.generated_module(), builder.ours()(), builder.expanded.backend
    found = []
    if built.name != expected.name:
        found.append(f"name: {built.name!r} != {expected.name!r}")
    if len(built.configs) != len(expected.configs):
        found.append(f"{len(built.configs)} patterns != {len(expected.configs)} in the spec's expansion")
    for index, (got, want) in enumerate(zip(built.configs, expected.configs)):
        found += [f"pattern {index} ({want.key}): {d}" for d in _pattern_differences(got, want, module)]
    return found


def _pattern_differences(got, want, module):
    expected = {
        "pattern": _resolved(want.pattern),
        "_pattern_complex_format": _resolved(want.pattern_complex_format),
        "observation_type": ObservationType[want.observation_type],
        "_num_tensor_args_to_observation_type": {
            count: ObservationType[name] for count, name in want.num_tensor_args_to_observation_type
        },
        "_input_type_to_index": dict(want.input_type_to_index),
    }
    for field in ("root_module", "qat_module", "reference_quantized_module", "fused_module", "fuser_method"):
        expected[field] = _resolved_callable(getattr(want, field), module)
    for field in ("root_node_getter", "extra_inputs_getter"):
        expected[f"_{field}"] = _resolved_callable(getattr(want, field), module)
    for field, value in expected.items():
        actual = getattr(got, field)
        if isinstance(value, Made):  # a fresh closure or partial: equal by code, arguments and closure
            same = callables.equivalent_functions(actual, value.made)
        else:
            same = actual == value if isinstance(value, dict | tuple | str) else actual is value
        if not same:
            yield f"{field}: {actual!r} != {value!r}"
    if len(got.dtype_configs) != len(want.dtype_configs):
        yield f"dtype_configs: {len(got.dtype_configs)} != {len(want.dtype_configs)}"
    for got_dc, want_dc in zip(got.dtype_configs, want.dtype_configs):
        yield from (f"dtype config {want_dc.name}: {d}" for d in _dtype_config_differences(got_dc, want_dc, module))


def _dtype_config_differences(got, want, module):
    if got is not getattr(module, want.name, None):
        yield f"not the module's constant {want.name}"
    for side in ("input_dtype", "output_dtype", "weight_dtype"):
        spec_value = getattr(want, side)
        constraints = getattr(got, f"{side}_with_constraints")
        dtype = spec_value.dtype if hasattr(spec_value, "bounds") else spec_value
        if constraints.dtype is not _resolved(dtype):
            yield f"{side}: {constraints.dtype} != {dtype}"
        bounds = spec_value.bounds if hasattr(spec_value, "bounds") else {}
        for field in CONSTRAINT_FIELDS:
            if getattr(constraints, field) != bounds.get(field):
                yield f"{side}.{field}: {getattr(constraints, field)!r} != {bounds.get(field)!r}"
    if got.bias_dtype is not _resolved(want.bias_dtype):
        yield f"bias_dtype: {got.bias_dtype} != {want.bias_dtype}"
    if got.is_dynamic is not want.is_dynamic:
        yield f"is_dynamic: {got.is_dynamic} != {want.is_dynamic}"


def _resolved(value):
    """A model value with its torch names imported (None stays None)."""
    return None if value is None else torch_key(value)


@dataclass(frozen=True)
class Made:
    """What a call() or partial() of the spec makes: a new object on every call of the builder."""

    made: object


def _resolved_callable(value, module):
    if isinstance(value, FunctionDef):
        return getattr(module, value.name)  # written out in the generated module itself
    if isinstance(value, Call):
        return Made(factories.build(value))
    return _resolved(value) if isinstance(value, TorchRef) or value is None else value


# ---------------------------------------------------------------------------
# FX flows on a model made from the backend's own patterns
# ---------------------------------------------------------------------------

ELEMENTWISE = (nn.ReLU, nn.ReLU6, nn.Hardswish, nn.ELU, nn.LeakyReLU, nn.Sigmoid, nn.Tanh, nn.Identity, nn.Dropout)
FEATURES, CHANNELS = 8, 3


@dataclass(frozen=True)
class Branch:
    """One pattern of the backend as a small Sequential, and what its configs say should happen to it."""

    pattern: tuple
    input_shape: tuple[int, ...]
    qconfig_dtypes: object  # the torch DTypeConfig the branch's qconfig is made for
    fused_module: type | None
    qat_module: type | None
    reference_module: type | None

    def make(self) -> nn.Sequential:
        return nn.Sequential(*(_layer(cls, self.input_shape) for cls in self.pattern))


def _layer(cls, input_shape):
    if cls is nn.Linear:
        return nn.Linear(FEATURES, FEATURES)
    if cls in (nn.Conv1d, nn.Conv2d, nn.Conv3d):
        return cls(CHANNELS, CHANNELS, 3, padding=1)
    if cls in (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d):
        return cls(input_shape[1])
    return cls()


def _input_shape(first) -> tuple[int, ...] | None:
    dims = {nn.Conv1d: 1, nn.Conv2d: 2, nn.Conv3d: 3, nn.BatchNorm2d: 2, nn.BatchNorm3d: 3}
    if first in dims:
        return (2, CHANNELS) + (6,) * dims[first]
    if first in (nn.Linear, nn.BatchNorm1d) or first in ELEMENTWISE:
        return (4, FEATURES)
    return None


def branches(backend_config) -> list[Branch]:
    """A branch per pattern made of module classes this file knows how to build, with a static int8 dtype config."""
    by_pattern = {c.pattern: c for c in backend_config.configs if c.pattern is not None}
    found = []
    for config in backend_config.configs:
        pattern = config.pattern if isinstance(config.pattern, tuple) else (config.pattern,)
        if not all(isinstance(p, type) and issubclass(p, nn.Module) for p in pattern):
            continue
        shape = _input_shape(pattern[0])
        dtype_config = next((dc for dc in config.dtype_configs if _static_int8(dc)), None)
        if shape is None or dtype_config is None or any(p.__module__.startswith("torch.ao.nn") for p in pattern):
            continue
        # What the quantized branch holds: the config of the fused module when the pattern fuses.
        effective = by_pattern.get(config.fused_module, config) if config.fused_module else config
        found.append(
            Branch(pattern, shape, dtype_config, config.fused_module, effective.qat_module,
                   effective.reference_quantized_module)
        )
    return found


def _static_int8(dtype_config) -> bool:
    activation = dtype_config.input_dtype_with_constraints
    return (
        not dtype_config.is_dynamic
        and activation.dtype in (torch.quint8, torch.qint8)
        and activation.scale_exact_match is None
        and dtype_config.weight_dtype in (None, torch.float, torch.qint8, torch.quint8)
    )


def qconfig(dtype_config, qat: bool) -> QConfig:
    """Observers that satisfy the dtype config's constraints (range, minimum scale)."""
    activation = _observer(dtype_config.input_dtype_with_constraints, torch.per_tensor_affine, qat)
    weight_constraints = dtype_config.weight_dtype_with_constraints
    if weight_constraints.dtype in (torch.qint8, torch.quint8):
        weight = _observer(weight_constraints, torch.per_tensor_symmetric, qat)
    else:
        weight = PlaceholderObserver.with_args(dtype=torch.float)
    return QConfig(activation=activation, weight=weight)


def _observer(constraints, qscheme, qat: bool):
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


class Branches(nn.Module):
    """b0, b1, ...: one branch per pattern, each on its own input."""

    def __init__(self, made: list[nn.Module]):
        super().__init__()
        self.count = len(made)
        for index, branch in enumerate(made):
            self.add_module(f"b{index}", branch)

    def forward(self, inputs: list[torch.Tensor]):
        # indexed, not iterated: FX traces `inputs` as one value of unknown length
        return [getattr(self, f"b{index}")(inputs[index]) for index in range(self.count)]


def model_and_inputs(found: list[Branch], seed: int = 0):
    torch.default_generator.manual_seed(seed)
    model = Branches([b.make() for b in found])
    inputs = [torch.randn(b.input_shape) for b in found]
    return model, inputs


def qconfig_mapping(found: list[Branch], qat: bool) -> QConfigMapping:
    mapping = QConfigMapping()
    for index, branch in enumerate(found):
        mapping.set_module_name(f"b{index}", qconfig(branch.qconfig_dtypes, qat))
    return mapping


@dataclass
class FlowResult:
    """What a flow produced: the graph code of each stage, the modules, and the outputs."""

    codes: list[str]
    modules: list[str]
    outputs: list[torch.Tensor]


def run_flows(found: list[Branch], backend_config) -> dict[str, tuple[FlowResult, nn.Module]]:
    """{flow: (result, final model)} for ptq, and qat and fuse where the patterns call for them.

    FX traces without recording each node's Python stack: nothing compared shows it (gm.code is not
    verbose), and the first stack recorded imports torch._inductor to symbolize it (seconds a process).
    """
    previous = torch.fx.config.do_not_emit_stack_traces
    torch.fx.config.do_not_emit_stack_traces = True
    try:
        results = {"ptq": _ptq(found, backend_config)}
        if any(b.qat_module for b in found):
            results["qat"] = _qat(found, backend_config)
        if any(b.fused_module for b in found):
            results["fuse"] = _fuse(found, backend_config)
    finally:
        torch.fx.config.do_not_emit_stack_traces = previous
    return results


def _ptq(found, backend_config):
    model, inputs = model_and_inputs(found)
    example = (inputs,)
    prepared = prepare_fx(model.eval(), qconfig_mapping(found, qat=False), example, backend_config=backend_config)
    for seed in range(3):
        torch.default_generator.manual_seed(100 + seed)  # the CPU generator: torch.manual_seed costs ms
        prepared([torch.randn(b.input_shape) for b in found])
    converted = convert_to_reference_fx(copy.deepcopy(prepared), backend_config=backend_config)
    return _result([prepared, converted], converted, inputs), converted


def _qat(found, backend_config):
    model, inputs = model_and_inputs(found)
    prepared = prepare_qat_fx(model.train(), qconfig_mapping(found, qat=True), (inputs,), backend_config=backend_config)
    loss = sum(out.sum() for out in prepared(inputs))
    loss.backward()
    with torch.no_grad():  # one plain SGD step (torch.optim's first use imports torch._dynamo: seconds)
        for parameter in prepared.parameters():
            if parameter.grad is not None:
                parameter -= 0.01 * parameter.grad
    converted = convert_to_reference_fx(copy.deepcopy(prepared).eval(), backend_config=backend_config)
    result = _result([prepared, converted], converted, inputs)
    result.modules.insert(0, str(prepared))
    return result, prepared


def _fuse(found, backend_config):
    model, inputs = model_and_inputs(found)
    fused = fuse_fx(model.eval(), backend_config=backend_config)
    return _result([fused], fused, inputs), fused


def _result(stages, final, inputs) -> FlowResult:
    with torch.no_grad():
        outputs = [out.detach() for out in final(inputs)]
    return FlowResult([stage.code for stage in stages], [str(stage) for stage in stages], outputs)


def flow_problems(builder) -> list[str]:
    """What the FX flows show going wrong with the builder's own patterns ([] when they work)."""
    config = builder.ours()()
    found = branches(config)
    if not found:
        return [f"{builder.id}: no pattern of this backend could be made into a model to run FX flows on"]
    problems = []
    results = run_flows(found, config)
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
    wanted = [("ptq", branch.reference_module)]
    wanted += [("qat", branch.qat_module), ("fuse", branch.fused_module)]
    problems = []
    for flow, cls in wanted:
        if cls is None or flow not in results:
            continue
        model = results[flow][1]
        held = [m for name, m in model.named_modules() if name.startswith(f"b{index}.") or name == f"b{index}"]
        if not any(isinstance(m, cls) for m in held):
            problems.append(f"{flow}: branch b{index} {branch.pattern} holds no {cls.__name__}")
    return problems
