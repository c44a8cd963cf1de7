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
  backend's patterns taking effect (fused, QAT and reference quantized modules). These are
  the generator's own (generator/review/flows.py): `python -m generator verify` runs them.

`tests/test_custom_backends.py` runs these on the spec's backends, and
`tests/test_tutorial_backend.py` on the backend of PyTorch's BackendConfig tutorial,
laid over a copy of the project from `tests/custom_backends/tutorial/` (the folder holds
the custom backends' spec files, data for the tests).
"""

import os
import subprocess
import sys
import types
from dataclasses import dataclass

from torch.ao.quantization.backend_config import ObservationType

from generator.importer import factories
from generator.model import CONSTRAINT_BOUNDS, Call, FunctionDef, TorchRef
from generator.review import callables, flow_comparison, flows
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
            same = actual == value if isinstance(value, dict | tuple | str) else _same_object(actual, value)
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


def _same_object(actual, expected) -> bool:
    """`actual is expected`; a bound method (a user's `Block.fuser_method`, a classmethod) is made anew on every
    read of it, so it is the same when it binds the same function to the same object."""
    if type(actual) is types.MethodType and type(expected) is types.MethodType:
        return actual.__func__ is expected.__func__ and actual.__self__ is expected.__self__
    return actual is expected


def _resolved_callable(value, module):
    if isinstance(value, FunctionDef):
        return getattr(module, value.name)  # written out in the generated module itself
    if isinstance(value, Call):
        return Made(factories.build(value))
    return _resolved(value) if isinstance(value, TorchRef) or value is None else value


# ---------------------------------------------------------------------------
# FX flows on a model made from the backend's own patterns: the generator's own (generator/review/flows.py,
# what `python -m generator verify` runs on a backend without a reference)
# ---------------------------------------------------------------------------

branches, record_flow, same = flows.branches, flow_comparison.record_flow, flow_comparison.same


def flow_problems(builder) -> list[str]:
    """What the FX flows show going wrong with the builder's own patterns ([] when they work)."""
    config = builder.ours()()
    found = flows.branches(config)
    if not found:
        return [f"{builder.id}: no pattern of this backend could be made into a model to run FX flows on"]
    with flows.quiet_flows():
        failures, _ = flow_comparison.against_float(config, found, None)
    return [failure.line(builder.id) for failure in failures]
