"""What counts as the same across two BackendConfigs: plain values, and the keys configs are matched by.

``same`` is exact structural equality of plain values (types must match, floats
bit for bit, anything else the very object). ``pattern_key`` is the key torch
itself files a pattern config under, so two configs' patterns are matched by it
(``configs_by_key``) rather than by position; ``dtype_config_key`` is a dtype
config's content, every field of it (``CONSTRAINT_FIELDS`` of each of the model's
``DTYPE_SIDES``, and ``DTYPE_CONFIG_FIELDS``). The equality proof (`equality`),
the behaviour trials of callables (`callables`), the reviewer's changes
(`changes`) and the declared differences (`divergence`) rest on these.
"""

from __future__ import annotations

from typing import Any

from torch.ao.quantization.backend_config import BackendPatternConfig, DTypeConfig
from torch.ao.quantization.backend_config.utils import (
    _get_pattern_in_reversed_nested_tuple_format,
)

from generator.model import CONSTRAINT_BOUNDS, DTYPE_SIDES

# DTYPE_SIDES (from the model) name DTypeConfig's constrained dtypes as its
# constructor does; the attribute is f"{side}_with_constraints".
DTYPE_CONFIG_FIELDS = ("bias_dtype", "is_dynamic")
CONSTRAINT_FIELDS = ("dtype", *CONSTRAINT_BOUNDS)


def same(a: Any, b: Any) -> bool:
    """Exact structural equality.

    Types must match (0 is not 0.0 or False) and floats must be bit-identical;
    classes, functions, dtypes, enum members and operator overloads are
    singletons, so anything else must be the very same object.
    """
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, float):
        return a.hex() == b.hex()
    if isinstance(a, (str, int, bytes, frozenset, set)):
        return a == b
    return False


def pattern_key(config: BackendPatternConfig) -> Any:
    """The reversed-nested-tuple pattern torch itself keys configs by."""
    if config.pattern is None and config._pattern_complex_format is None:
        return ("<no pattern>", id(config))
    return _get_pattern_in_reversed_nested_tuple_format(config)


def configs_by_key(
    configs: list[BackendPatternConfig],
) -> dict[Any, tuple[int, BackendPatternConfig]]:
    """{pattern_key: (position, config)} of each pattern config."""
    return {pattern_key(config): (i, config) for i, config in enumerate(configs)}


def dtype_config_key(dtype_config: DTypeConfig) -> tuple:
    """Every field of the dtype config, as a key: equal keys, equal content."""
    # repr keeps types apart (0 vs 0.0) and floats exact.
    constraints = tuple(
        tuple(
            repr(getattr(getattr(dtype_config, f"{side}_with_constraints"), field))
            for field in CONSTRAINT_FIELDS
        )
        for side in DTYPE_SIDES
    )
    return constraints + tuple(
        repr(getattr(dtype_config, f)) for f in DTYPE_CONFIG_FIELDS
    )
