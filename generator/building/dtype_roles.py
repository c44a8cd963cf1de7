"""Dtypes torch's flows can use where a spec puts them, and bounds within their dtype's range.

torch stores any dtype and any bound a BackendConfig is given; its flows then fail, or
quietly ignore the pattern, far from the spec line that wrote it. Refused here instead,
at that line:

- the weight of a pattern for torch's FX flow (a pattern of modules and functions, not of
  aten operators, which the PT2E flow matches): the FX flow's reference weighted modules
  quantize weights to torch.quint8, torch.qint8, torch.quint4x2 or torch.qint32 only
  (torch/ao/nn/quantized/reference/modules/utils.py), or keep them floating point
  (float16 for dynamic fp16, float32 for float configs); torch.int8 and torch.uint8 are
  the PT2E flow's dtypes (torch.qint8 is FX's);
- `quant_min_lower_bound` / `quant_max_upper_bound` outside the range of the integer values
  of their DTypeWithConstraints' dtype (torch.qint8 -128..127, torch.quint8 0..255, ...).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from generator.errors import SpecFieldError
from generator.loading.locations import at_argument
from generator.model import DTypeConfig, DTypeWithConstraints, FixedQParams, PatternConfig, TorchRef

FX_WEIGHT_DTYPES = frozenset(
    f"torch.{name}" for name in ("quint8", "qint8", "quint4x2", "qint32", "float16", "half", "float", "float32")
)
_PT2E_FOR = {"torch.int8": "torch.qint8", "torch.uint8": "torch.quint8"}  # what FX calls the same integers
# The integer values of each quantized (or plain integer) dtype: torch.ao.quantization.utils's bounds.
QVALUE_RANGES = {
    "torch.quint8": (0, 255),
    "torch.qint8": (-128, 127),
    "torch.qint32": (-(2**31), 2**31 - 1),
    "torch.quint4x2": (0, 15),
    "torch.quint2x4": (0, 3),
    "torch.uint8": (0, 255),
    "torch.int8": (-128, 127),
    "torch.uint16": (0, 2**16 - 1),
    "torch.int16": (-(2**15), 2**15 - 1),
    "torch.int32": (-(2**31), 2**31 - 1),
}


def check_pattern_config(config: PatternConfig, root: Path | None) -> None:
    """Refuse a dtype the pattern's flow cannot use in its role, or a bound outside its dtype's range."""
    fx = not _matches_aten_operators(config.pattern) and not _matches_aten_operators(config.pattern_complex_format)
    for dtype_config in config.dtype_configs:
        base = dtype_config.base if isinstance(dtype_config, FixedQParams) else dtype_config
        if isinstance(dtype_config, FixedQParams):
            check_bounds(dtype_config.constraints, root)
        for side in (base.input_dtype, base.output_dtype, base.weight_dtype):
            if isinstance(side, DTypeWithConstraints):
                check_bounds(side, root)
        if fx:
            _check_fx_weight(base, root)


def check_bounds(constraints: DTypeWithConstraints, root: Path | None) -> None:
    dtype = constraints.dtype.path if isinstance(constraints.dtype, TorchRef) else None
    if dtype not in QVALUE_RANGES:
        return
    low, high = QVALUE_RANGES[dtype]
    for bound in ("quant_min_lower_bound", "quant_max_upper_bound"):
        value = getattr(constraints, bound)
        if value is not None and not low <= value <= high:
            raise SpecFieldError(
                f"{bound}={value!r} is outside the values of {dtype} ({low}..{high})",
                at_argument(constraints.location, bound, root),
            )


def _check_fx_weight(dtype_config: DTypeConfig, root: Path | None) -> None:
    weight = dtype_config.weight_dtype
    constrained = isinstance(weight, DTypeWithConstraints)
    ref = weight.dtype if constrained else weight
    if not isinstance(ref, TorchRef) or ref.path in FX_WEIGHT_DTYPES:
        return
    fx_name = _PT2E_FOR.get(ref.path)
    instead = f" (torch.int8 and torch.uint8 are PT2E's: for FX write {fx_name})" if fx_name else ""
    where = weight.location if constrained else dtype_config.location
    raise SpecFieldError(
        f"weight_dtype={ref.path} is no weight dtype torch's FX flow can use: torch.qint8, torch.quint8, "
        f"torch.quint4x2, torch.qint32, torch.float16 or torch.float{instead}",
        at_argument(where, "dtype" if constrained else "weight_dtype", root),
    )


def _matches_aten_operators(pattern) -> bool:
    """Whether a pattern names aten operator overloads (torch.ops.aten...): one for the PT2E flow."""
    return any(ref.path.startswith("torch.ops.") for ref in _refs(pattern))


def _refs(pattern) -> Iterator[TorchRef]:
    if isinstance(pattern, TorchRef):
        yield pattern
    elif isinstance(pattern, tuple):
        for item in pattern:
            yield from _refs(item)
