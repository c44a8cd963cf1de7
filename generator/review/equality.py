"""Semantic comparison of quantization BackendConfigs.

``compare_backend_configs`` proves that a generated BackendConfig equals the one
torch builds: same name, same patterns in the same order, and for every pattern
the same observation type, dtype configs (down to each constraint), modules,
dicts and callables.  Every difference is reported as a ``Difference``; an
empty list means equal.

Callables (fuser methods, root-node getters, extra-inputs getters) cannot be
compared by identity alone, because torch creates fresh closures on every call
(``_sequential_wrapper2(nni.ConvReLU1d)``) and generated code may define its
own copies.  They count as equal when they are identical, when their code is
equivalent (same bytecode, constants, referenced globals and closure contents),
or when they behave the same on real arguments built from the pattern: trial
calls with ``is_qat`` False and True, modules in train, eval and mixed modes,
of the exact pattern types and of subclasses, must raise the same exception or
build modules equal in everything they hold (children, training flags, stored
callables such as ``ConvAdd2d.add``, parameters and buffers).

``backend_diff`` is the reviewer's view: a keyed diff that lists added,
removed, moved and changed patterns and changed dtype configs (``BackendDiff``);
``diff_backend_configs`` gives its short readable lines.
"""

from __future__ import annotations

import builtins
import dataclasses
import difflib
import functools
import itertools
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch

# Importing backend_config.utils first avoids an AttributeError when building
# configs in a fresh interpreter.
import torch.ao.quantization.backend_config.utils
import torch.nn.functional as F
from torch import nn
from torch.ao.quantization.backend_config import (
    BackendConfig,
    BackendPatternConfig,
    DTypeConfig,
    DTypeWithConstraints,
)
from torch.ao.quantization.backend_config.utils import (
    _get_pattern_in_reversed_nested_tuple_format,
)
from torch.ao.quantization.utils import MatchAllNode

from generator.build.torch_names import describe_pattern, short_name
from generator.model import CONSTRAINT_BOUNDS, DTYPE_SIDES
from generator.review.results import BackendDiff, DTypeConfigChange, FieldChange, PatternChange

# Every attribute of a BackendPatternConfig, in comparison order.  Attributes
# outside this list are reported, so a field torch adds later is not skipped.
PATTERN_FIELDS = (
    "pattern",
    "_pattern_complex_format",
    "observation_type",
    "dtype_configs",
    "root_module",
    "qat_module",
    "reference_quantized_module",
    "fused_module",
    "fuser_method",
    "_root_node_getter",
    "_extra_inputs_getter",
    "_num_tensor_args_to_observation_type",
    "_input_type_to_index",
)
CALLABLE_FIELDS = ("fuser_method", "_root_node_getter", "_extra_inputs_getter")
DICT_FIELDS = ("_num_tensor_args_to_observation_type", "_input_type_to_index")
VALUE_FIELDS = tuple(
    f
    for f in PATTERN_FIELDS
    if f not in CALLABLE_FIELDS + DICT_FIELDS and f != "dtype_configs"
)

# DTYPE_SIDES (from the model) name DTypeConfig's constrained dtypes as its
# constructor does; the attribute is f"{side}_with_constraints".
DTYPE_CONFIG_FIELDS = ("bias_dtype", "is_dynamic")
CONSTRAINT_FIELDS = ("dtype", *CONSTRAINT_BOUNDS)
_DTYPE_CONFIG_ATTRIBUTES = frozenset(
    [f"{side}_with_constraints" for side in DTYPE_SIDES] + list(DTYPE_CONFIG_FIELDS)
)
_BACKEND_CONFIG_ATTRIBUTES = frozenset({"name", "_pattern_complex_format_to_config"})

# (field, detail) pairs; the public functions add backend and pattern.
_Finding = tuple[str, str]


@dataclasses.dataclass(frozen=True)
class Difference:
    """One way in which our config differs from torch's."""

    backend: str
    pattern: str
    field: str
    detail: str

    def __str__(self) -> str:
        parts = (self.backend, self.pattern, self.field, self.detail)
        return ": ".join(part for part in parts if part)


# ---------------------------------------------------------------------------
# Whole backend configs
# ---------------------------------------------------------------------------


def compare_backend_configs(
    backend: str, ours: BackendConfig, theirs: BackendConfig
) -> list[Difference]:
    """Compare two BackendConfigs completely; [] means they are equal."""
    findings = _attribute_findings(
        "attributes", ours, theirs, _BACKEND_CONFIG_ATTRIBUTES
    )
    if not _same(ours.name, theirs.name):
        findings.append(("name", _mismatch(ours.name, theirs.name)))
    differences = [Difference(backend, "", f, d) for f, d in findings]
    differences += _stale_key_differences(backend, "ours", ours)
    differences += _stale_key_differences(backend, "theirs", theirs)
    differences += _pattern_list_differences(backend, ours.configs, theirs.configs)
    return differences


def _pattern_list_differences(
    backend: str,
    ours: list[BackendPatternConfig],
    theirs: list[BackendPatternConfig],
) -> list[Difference]:
    """Report missing, extra and moved patterns, then compare matching pairs.

    Patterns are matched by key rather than by position, and only patterns
    outside the longest in-order run count as moved, so that one inserted
    pattern does not make every later position look different.
    """
    ours_by_key = _configs_by_key(ours)
    theirs_by_key = _configs_by_key(theirs)
    differences = []
    if len(ours) != len(theirs):
        detail = f"{len(ours)} patterns != {len(theirs)} patterns"
        differences.append(Difference(backend, "", "configs", detail))
    for key, (index, config) in theirs_by_key.items():
        if key not in ours_by_key:
            detail = f"missing from ours (torch has it at position {index})"
            differences.append(Difference(backend, _label(config), "configs", detail))
    for key, (index, config) in ours_by_key.items():
        if key not in theirs_by_key:
            detail = f"extra in ours at position {index} (not in torch)"
            differences.append(Difference(backend, _label(config), "configs", detail))
    for key in _moved_keys(theirs_by_key, ours_by_key):
        index, config = ours_by_key[key]
        detail = f"out of order: at position {index} != {theirs_by_key[key][0]}"
        differences.append(Difference(backend, _label(config), "position", detail))
    for key, (_, config) in theirs_by_key.items():
        if key in ours_by_key:
            differences += compare_pattern_configs(backend, ours_by_key[key][1], config)
    return differences


def _configs_by_key(
    configs: list[BackendPatternConfig],
) -> dict[Any, tuple[int, BackendPatternConfig]]:
    return {_pattern_key(config): (i, config) for i, config in enumerate(configs)}


def _pattern_key(config: BackendPatternConfig) -> Any:
    """The reversed-nested-tuple pattern torch itself keys configs by."""
    if config.pattern is None and config._pattern_complex_format is None:
        return ("<no pattern>", id(config))
    return _get_pattern_in_reversed_nested_tuple_format(config)


def _stale_key_differences(
    backend: str, side: str, config: BackendConfig
) -> list[Difference]:
    """FX reads the internal dict keys, so they must match their configs."""
    return [
        Difference(
            backend,
            _label(pattern_config),
            "_pattern_complex_format_to_config",
            f"{side} keys it under {describe_pattern(key)}",
        )
        for key, pattern_config in config._pattern_complex_format_to_config.items()
        if not _same(key, _pattern_key(pattern_config))
    ]


# ---------------------------------------------------------------------------
# One pattern config
# ---------------------------------------------------------------------------


def compare_pattern_configs(
    backend: str, ours: BackendPatternConfig, theirs: BackendPatternConfig
) -> list[Difference]:
    """Compare two BackendPatternConfigs field by field."""
    findings = list(_pattern_config_findings(ours, theirs))
    if not findings:
        return []
    label = _label(theirs)
    return [Difference(backend, label, field, detail) for field, detail in findings]


def _pattern_config_findings(
    ours: BackendPatternConfig, theirs: BackendPatternConfig
) -> Iterator[_Finding]:
    if type(ours) is not type(theirs):
        yield "type", _mismatch(type(ours), type(theirs))
        return
    yield from _attribute_findings(
        "attributes", ours, theirs, frozenset(PATTERN_FIELDS)
    )
    for field in VALUE_FIELDS:
        ours_value, theirs_value = getattr(ours, field), getattr(theirs, field)
        if not _same(ours_value, theirs_value):
            yield field, _mismatch(ours_value, theirs_value)
    yield from _dtype_config_list_findings(ours.dtype_configs, theirs.dtype_configs)
    for field in CALLABLE_FIELDS:
        yield from _callable_findings(field, ours, theirs)
    for field in DICT_FIELDS:
        yield from _dict_findings(field, getattr(ours, field), getattr(theirs, field))


def _label(config: BackendPatternConfig) -> str:
    """The pattern as the config's author wrote it."""
    if config.pattern is not None:
        return describe_pattern(config.pattern)
    return describe_pattern(config._pattern_complex_format)


def _attribute_findings(
    field: str, ours: Any, theirs: Any, expected: frozenset[str]
) -> list[_Finding]:
    findings = []
    for side, obj in (("ours", ours), ("theirs", theirs)):
        keys = set(vars(obj))
        if keys != expected:
            detail = (
                f"{side} has unexpected {sorted(keys - expected)} "
                f"and lacks {sorted(expected - keys)}"
            )
            findings.append((field, detail))
    return findings


def _dict_findings(field: str, ours: Any, theirs: Any) -> Iterator[_Finding]:
    if not (isinstance(ours, dict) and isinstance(theirs, dict)):
        if not _same(ours, theirs):
            yield field, _mismatch(ours, theirs)
        return
    for key in theirs:
        if key not in ours:
            yield field, f"lacks key {short_name(key)}"
        elif not _same(ours[key], theirs[key]):
            yield field, f"[{short_name(key)}]: {_mismatch(ours[key], theirs[key])}"
    for key in ours:
        if key not in theirs:
            yield field, f"has extra key {short_name(key)}"
    if set(ours) == set(theirs) and list(ours) != list(theirs):
        # Not used semantically by FX, but generated code should mirror torch.
        yield field, f"key order {short_name(list(ours))} != {short_name(list(theirs))}"


# ---------------------------------------------------------------------------
# Dtype configs
# ---------------------------------------------------------------------------


def _dtype_config_list_findings(ours: Any, theirs: Any) -> Iterator[_Finding]:
    if not (isinstance(ours, list) and isinstance(theirs, list)):
        yield "dtype_configs", _mismatch(type(ours), type(theirs))
        return
    if len(ours) != len(theirs):
        yield "dtype_configs", f"{len(ours)} dtype configs != {len(theirs)}"
    for index, (ours_dc, theirs_dc) in enumerate(zip(ours, theirs)):
        yield from _dtype_config_findings(f"dtype_configs[{index}]", ours_dc, theirs_dc)


def _dtype_config_findings(prefix: str, ours: Any, theirs: Any) -> Iterator[_Finding]:
    if not (type(ours) is type(theirs) is DTypeConfig):
        yield prefix, _mismatch(type(ours), type(theirs))
        return
    if ours is theirs:
        return  # one object on both sides (a config compared with its copy): nothing in it differs
    yield from _attribute_findings(prefix, ours, theirs, _DTYPE_CONFIG_ATTRIBUTES)
    for side in DTYPE_SIDES:
        attribute = f"{side}_with_constraints"
        yield from _constraint_findings(
            f"{prefix}.{side}", getattr(ours, attribute), getattr(theirs, attribute)
        )
    for field in DTYPE_CONFIG_FIELDS:
        ours_value, theirs_value = getattr(ours, field), getattr(theirs, field)
        if not _same(ours_value, theirs_value):
            yield f"{prefix}.{field}", _mismatch(ours_value, theirs_value)


def _constraint_findings(prefix: str, ours: Any, theirs: Any) -> Iterator[_Finding]:
    if not (type(ours) is type(theirs) is DTypeWithConstraints):
        yield prefix, _mismatch(type(ours), type(theirs))
        return
    if ours is theirs:
        return  # one object on both sides: nothing in it differs
    yield from _attribute_findings(prefix, ours, theirs, frozenset(CONSTRAINT_FIELDS))
    for field in CONSTRAINT_FIELDS:
        ours_value, theirs_value = getattr(ours, field), getattr(theirs, field)
        if not _same(ours_value, theirs_value):
            yield f"{prefix}.{field}", _mismatch(ours_value, theirs_value)


# ---------------------------------------------------------------------------
# Plain values
# ---------------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
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
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float):
        return a.hex() == b.hex()
    if isinstance(a, (str, int, bytes, frozenset, set)):
        return a == b
    return False


def _mismatch(ours: Any, theirs: Any) -> str:
    ours_name, theirs_name = short_name(ours), short_name(theirs)
    if ours_name == theirs_name:
        # e.g. two distinct classes sharing a qualname
        return f"{ours_name} != {theirs_name} (different objects with the same name)"
    return f"{ours_name} != {theirs_name}"


# ---------------------------------------------------------------------------
# Callables
# ---------------------------------------------------------------------------


def _callable_findings(
    field: str, ours: BackendPatternConfig, theirs: BackendPatternConfig
) -> Iterator[_Finding]:
    ours_fn, theirs_fn = getattr(ours, field), getattr(theirs, field)
    if ours_fn is None or theirs_fn is None:
        if ours_fn is not theirs_fn:
            yield field, _mismatch(ours_fn, theirs_fn)
        return
    equal, how = callables_match(field, ours_fn, theirs_fn, theirs)
    if not equal:
        yield field, f"{short_name(ours_fn)} != {short_name(theirs_fn)} ({how})"


def callables_match(
    field: str, ours: Callable, theirs: Callable, config: BackendPatternConfig
) -> tuple[bool, str]:
    """Decide whether two callables of ``field`` are interchangeable.

    Returns (equal, how): how is "identical", "equivalent code" or "same
    behaviour" when equal, otherwise the first behavioural difference found.
    ``config`` (torch's) supplies the pattern used to build real arguments.
    """
    if ours is theirs:
        return True, "identical"
    if _equivalent_functions(ours, theirs, depth=0):
        return True, "equivalent code"
    if not (callable(ours) and callable(theirs)):
        return False, "not callable"
    if len(_BEHAVIOUR_VERDICTS) >= _MAX_BEHAVIOUR_VERDICTS:
        _BEHAVIOUR_VERDICTS.clear()
        _REPRESENTATIVES.clear()
    ours_seen, theirs_seen = _representative(ours), _representative(theirs)
    # The trials build their arguments from the pattern in the form the config gives it.
    complex_format = config._pattern_complex_format is not None
    key = (field, id(ours_seen), id(theirs_seen), _pattern_key(config), complex_format)
    if key not in _BEHAVIOUR_VERDICTS:
        if field == "fuser_method":
            difference = _fuser_behaviour_difference(ours, theirs, config)
        else:
            difference = _getter_behaviour_difference(ours, theirs, config)
        # The callables are kept with the verdict so that their ids stay theirs.
        _BEHAVIOUR_VERDICTS[key] = (ours_seen, theirs_seen, difference)
    difference = _BEHAVIOUR_VERDICTS[key][2]
    return (True, "same behaviour") if difference is None else (False, difference)


# Behavioural trials cost milliseconds, and comparing many configs repeats the
# same pairs: mutation tests compare each pattern dozens of times, and each
# backend of a diff builds its own copies of the same fuser methods (a module's
# functions, torch's fresh closures). A callable is a function of its arguments,
# so one verdict per pair and pattern stands, and a callable equivalent to one
# seen before (same code, defaults, closure contents and globals, as
# equivalent_functions decides) stands for it.
_BEHAVIOUR_VERDICTS: dict[tuple, tuple[Callable, Callable, str | None]] = {}
_MAX_BEHAVIOUR_VERDICTS = 4096
# The first callable seen of each kind of equivalent ones, by bytecode.
_REPRESENTATIVES: dict[object, list[Callable]] = {}


def _representative(func: Callable) -> Callable:
    """The first callable seen that is equivalent to `func` (`func` itself when none is)."""
    code = _bytecode(func)
    if code is None:
        return func
    seen = _REPRESENTATIVES.setdefault(code, [])
    for candidate in seen:
        if candidate is func or _equivalent_functions(candidate, func, depth=0):
            return candidate
    seen.append(func)
    return func


def _bytecode(func: Any) -> bytes | None:
    """What two equivalent callables share: the bytecode of the function (a partial's function)."""
    if type(func) is functools.partial:
        func = func.func
    return func.__code__.co_code if isinstance(func, types.FunctionType) else None


_SEMANTIC_CODE_FLAGS = (
    0x04  # CO_VARARGS
    | 0x08  # CO_VARKEYWORDS
    | 0x20  # CO_GENERATOR
    | 0x80  # CO_COROUTINE
    | 0x100  # CO_ITERABLE_COROUTINE
    | 0x200  # CO_ASYNC_GENERATOR
)
_MISSING = object()
# Closures can capture functions that capture functions; cap the recursion.
_MAX_CLOSURE_DEPTH = 8


def equivalent_functions(a: Any, b: Any) -> bool:
    """Same code, defaults, referenced globals and closure contents (partials: function and arguments)."""
    return _equivalent_functions(a, b, depth=0)


def _equivalent_functions(a: Any, b: Any, depth: int) -> bool:
    """Same code, defaults, referenced globals and closure contents."""
    if a is b:
        return True
    if depth > _MAX_CLOSURE_DEPTH:
        return False
    if type(a) is functools.partial and type(b) is functools.partial:
        # A partial is its function and its bound arguments (functions among them by code).
        return _same_closure_value((a.func, a.args), (b.func, b.args), depth) and _same_closure_value(
            tuple(a.keywords.items()), tuple(b.keywords.items()), depth
        )
    if not (isinstance(a, types.FunctionType) and isinstance(b, types.FunctionType)):
        return False
    return (
        _equivalent_code(a.__code__, b.__code__)
        and _same_closure_value(a.__defaults__, b.__defaults__, depth)
        and _same_closure_value(a.__kwdefaults__, b.__kwdefaults__, depth)
        and _same_closures(a, b, depth)
        and _same_globals(a, b)
    )


def _equivalent_code(a: types.CodeType, b: types.CodeType) -> bool:
    # Names of locals, line numbers and file names do not change behaviour;
    # co_code already encodes locals by index.
    return (
        a.co_code == b.co_code
        and a.co_names == b.co_names
        and a.co_argcount == b.co_argcount
        and a.co_posonlyargcount == b.co_posonlyargcount
        and a.co_kwonlyargcount == b.co_kwonlyargcount
        and a.co_nlocals == b.co_nlocals
        and len(a.co_cellvars) == len(b.co_cellvars)
        and len(a.co_freevars) == len(b.co_freevars)
        and a.co_flags & _SEMANTIC_CODE_FLAGS == b.co_flags & _SEMANTIC_CODE_FLAGS
        and len(a.co_consts) == len(b.co_consts)
        and all(map(_equivalent_constant, a.co_consts, b.co_consts))
    )


def _equivalent_constant(a: Any, b: Any) -> bool:
    if isinstance(a, types.CodeType) and isinstance(b, types.CodeType):
        return _equivalent_code(a, b)
    return _same(a, b)


def _same_closures(a: types.FunctionType, b: types.FunctionType, depth: int) -> bool:
    a_cells, b_cells = a.__closure__ or (), b.__closure__ or ()
    if len(a_cells) != len(b_cells):
        return False
    return all(
        _same_closure_value(_cell_value(x), _cell_value(y), depth)
        for x, y in zip(a_cells, b_cells)
    )


def _cell_value(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell: the variable was never assigned
        return _MISSING


def _same_closure_value(a: Any, b: Any, depth: int) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(
            _same_closure_value(x, y, depth) for x, y in zip(a, b)
        )
    if isinstance(a, (types.FunctionType, functools.partial)):
        return _equivalent_functions(a, b, depth + 1)
    return _same(a, b)


def _same_globals(a: types.FunctionType, b: types.FunctionType) -> bool:
    """Every name the code may look up globally resolves to the same object."""
    names = _global_names(a.__code__)
    if names != _global_names(b.__code__):
        return False
    return all(_global_value(a, name) is _global_value(b, name) for name in names)


def _global_names(code: types.CodeType) -> frozenset[str]:
    # Nested functions share the outer function's globals.
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return frozenset(names)


def _global_value(func: types.FunctionType, name: str) -> Any:
    # co_names also holds attribute names; those usually resolve to _MISSING
    # on both sides, which is harmless.
    if name in func.__globals__:
        return func.__globals__[name]
    func_builtins = func.__builtins__
    if isinstance(func_builtins, types.ModuleType):
        func_builtins = vars(func_builtins)
    return func_builtins.get(name, getattr(builtins, name, _MISSING))


# ---------------------------------------------------------------------------
# Behaviour of callables on real arguments
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Sentinel:
    """A labelled stand-in for a graph node (MatchAllNode or a getter input)."""

    label: str

    def __repr__(self) -> str:
        return f"<{self.label}>"


@dataclasses.dataclass(frozen=True)
class _Outcome:
    """What a call did: returned ``value`` or raised ``error``."""

    value: Any = None
    error: BaseException | None = None

    def describe(self) -> str:
        if self.error is not None:
            return f"raised {type(self.error).__name__}: {self.error}"
        return f"returned {_describe_result(self.value)}"


def _call(func: Callable, *args: Any) -> _Outcome:
    # Exceptions are part of a callable's behaviour, so they are recorded,
    # not propagated; fusion helpers may also warn, which is noise here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return _Outcome(value=func(*args))
        except Exception as error:
            return _Outcome(error=error)


def _fuser_behaviour_difference(
    ours: Callable, theirs: Callable, config: BackendPatternConfig
) -> str | None:
    """Call both fuser methods on real modules built from torch's pattern.

    The trials cover where torch's fuser methods branch: ``is_qat`` False and
    True; all modules in train mode, all in eval mode, and mixed modes (torch
    asserts that they agree); modules of the exact pattern type and of a
    subclass (torch looks fused classes up by exact type).  The first argument
    set is what torch's DefaultFuseHandler passes.  When the pattern has
    functional ops with a module twin (F.leaky_relu, torch.tanh), another set
    passes the twin module instead: torch hands the bare function to the
    fuser, which makes every such fuser fail alike and would let any two of
    them look equal.
    """
    pattern = _fuser_pattern(config)
    if pattern is None:
        return "torch's config has no pattern to build arguments from"
    variants = [False] + ([True] if _has_module_twins(pattern) else [])
    for as_modules, subclassed, is_qat in itertools.product(
        variants, (False, True), (False, True)
    ):
        for mode in _modes(pattern, as_modules):
            trial = _Trial(is_qat, mode, as_modules, subclassed)
            difference = _trial_difference(ours, theirs, pattern, trial)
            if difference is not None:
                return f"{trial}: {difference}"
    return None


@dataclasses.dataclass(frozen=True)
class _Trial:
    """One way of calling a fuser method: its flag and how modules are built."""

    is_qat: bool
    mode: str  # "train", "eval" or "mixed" (modules alternate, first in train)
    as_modules: bool  # functional ops replaced by their module twins
    subclassed: bool  # every module is an instance of a subclass of its type

    def training(self, index: int) -> bool:
        """Training flag of the index-th module argument (depth first)."""
        return self.mode == "train" or (self.mode == "mixed" and index % 2 == 0)

    def __str__(self) -> str:
        twins = ", functional ops as modules" if self.as_modules else ""
        subclass = ", subclassed modules" if self.subclassed else ""
        return f"is_qat={self.is_qat}, {self.mode} mode{twins}{subclass}"


def _modes(pattern: tuple, as_modules: bool) -> tuple[str, ...]:
    # Mixed modes need two modules to mix.
    if _module_argument_count(pattern, as_modules) < 2:
        return ("train", "eval")
    return ("train", "eval", "mixed")


def _module_argument_count(item: Any, as_modules: bool) -> int:
    if isinstance(item, tuple):
        return sum(_module_argument_count(sub, as_modules) for sub in item)
    return int(_argument_module_class(item, as_modules) is not None)


def _trial_difference(
    ours: Callable, theirs: Callable, pattern: tuple, trial: _Trial
) -> str | None:
    outcomes = []
    for func in (ours, theirs):
        # Separate but identical arguments: in-place changes made by one
        # callable cannot leak into the other's inputs.
        args = _fuser_arguments(pattern, trial)
        if isinstance(args, str):
            return args
        outcomes.append(_call(func, trial.is_qat, *args))
    return _outcome_difference(*outcomes)


def _getter_behaviour_difference(
    ours: Callable, theirs: Callable, config: BackendPatternConfig
) -> str | None:
    """Call both node getters on a node pattern of labelled sentinels."""
    if config.pattern is None and config._pattern_complex_format is None:
        return "torch's config has no pattern to build arguments from"
    node_pattern = _sentinel_pattern(
        _get_pattern_in_reversed_nested_tuple_format(config), "node"
    )
    return _outcome_difference(_call(ours, node_pattern), _call(theirs, node_pattern))


def _sentinel_pattern(pattern: Any, label: str) -> Any:
    if isinstance(pattern, tuple):
        return tuple(
            _sentinel_pattern(item, f"{label}[{i}]") for i, item in enumerate(pattern)
        )
    return _Sentinel(f"{label}={short_name(pattern)}")


def _fuser_pattern(config: BackendPatternConfig) -> tuple | None:
    """The pattern whose elements become the fuser method's arguments.

    Simple-format patterns give the arguments in forward order (the fuser
    method's own convention); complex-format patterns give them nested,
    exactly as DefaultFuseHandler.fuse passes them.
    """
    pattern = config._pattern_complex_format
    if pattern is None:
        pattern = config.pattern
    if pattern is None:
        return None
    return pattern if isinstance(pattern, tuple) else (pattern,)


def _fuser_arguments(pattern: tuple, trial: _Trial) -> tuple | str:
    """Freshly seeded arguments, or the reason they cannot be built."""
    with torch.random.fork_rng(devices=[]):
        # The CPU generator alone, as torch.manual_seed seeds it: manual_seed also queues a
        # seeding of every accelerator, with a captured stack each time (milliseconds a call).
        torch.default_generator.manual_seed(0)
        try:
            return _fuser_argument(pattern, trial, "arg", itertools.count())
        except Exception as error:
            return f"cannot build arguments for {describe_pattern(pattern)}: {error!r}"


def _fuser_argument(
    item: Any, trial: _Trial, label: str, module_index: Iterator[int]
) -> Any:
    if isinstance(item, tuple):
        return tuple(
            _fuser_argument(sub, trial, f"{label}[{i}]", module_index)
            for i, sub in enumerate(item)
        )
    if item is MatchAllNode:
        return _Sentinel(f"{label}=MatchAllNode")
    cls = _argument_module_class(item, trial.as_modules)
    if cls is None:
        return item
    if trial.subclassed:
        cls = _subclass(cls)
    return _build_module(cls).train(trial.training(next(module_index)))


def _argument_module_class(item: Any, as_modules: bool) -> type[nn.Module] | None:
    """The module class a fuser receives for a pattern element, if any."""
    if item is F.relu:
        # DefaultFuseHandler swaps functional relu for a ReLU module.
        return nn.ReLU
    if as_modules and _module_twin(item) is not None:
        return _module_twin(item)
    if isinstance(item, type) and issubclass(item, nn.Module):
        return item
    return None


_SUBCLASSES: dict[type, type] = {}


def _subclass(cls: type[nn.Module]) -> type[nn.Module]:
    # One subclass per class, so that both sides' results have the same type.
    if cls not in _SUBCLASSES:
        namespace = {"__module__": __name__, "__qualname__": f"Subclass{cls.__name__}"}
        _SUBCLASSES[cls] = type(f"Subclass{cls.__name__}", (cls,), namespace)
    return _SUBCLASSES[cls]


def _module_twin(item: Any) -> type[nn.Module] | None:
    # Identity lookup: patterns may hold unhashable or oddly-comparing objects.
    for function, module in _MODULE_TWINS:
        if item is function:
            return module
    return None


def _has_module_twins(pattern: Any) -> bool:
    if isinstance(pattern, tuple):
        return any(_has_module_twins(item) for item in pattern)
    return _module_twin(pattern) is not None


# Functional activations and the module a fuser would expect in their place.
_MODULE_TWINS = (
    (F.leaky_relu, nn.LeakyReLU),
    (torch.tanh, nn.Tanh),
    (F.tanh, nn.Tanh),
    (torch.relu, nn.ReLU),
    (F.relu6, nn.ReLU6),
    (F.hardtanh, nn.Hardtanh),
    (F.elu, nn.ELU),
    (F.hardswish, nn.Hardswish),
    (torch.sigmoid, nn.Sigmoid),
    (F.sigmoid, nn.Sigmoid),
    (F.gelu, nn.GELU),
    (F.silu, nn.SiLU),
)


def _build_module(cls: type[nn.Module]) -> nn.Module:
    """A small instance with every parameter and buffer randomised."""
    if issubclass(cls, nn.modules.conv._ConvNd):
        module = cls(3, 3, 1)
    elif issubclass(cls, nn.modules.batchnorm._BatchNorm):
        module = cls(3)
    elif issubclass(cls, nn.Linear):
        module = cls(3, 3)
    elif issubclass(cls, nn.LeakyReLU):
        module = cls(0.01)
    else:
        module = cls()
    _randomise_batchnorm(module)
    return module


def _randomise_batchnorm(module: nn.Module) -> None:
    # Default running stats (0 and 1) and affine params (1 and 0) would let a
    # fuser that ignores batchnorm look correct.
    if not isinstance(module, nn.modules.batchnorm._BatchNorm):
        return
    with torch.no_grad():
        module.running_mean.uniform_(-1.0, 1.0)
        module.running_var.uniform_(0.5, 2.0)
        module.weight.uniform_(0.5, 2.0)
        module.bias.uniform_(-1.0, 1.0)


# ---------------------------------------------------------------------------
# Comparing outcomes of calls
# ---------------------------------------------------------------------------


def _outcome_difference(ours: _Outcome, theirs: _Outcome) -> str | None:
    if ours.error is not None or theirs.error is not None:
        same_error = (
            ours.error is not None
            and theirs.error is not None
            and type(ours.error) is type(theirs.error)
            and str(ours.error) == str(theirs.error)
        )
        return None if same_error else f"{ours.describe()} vs {theirs.describe()}"
    return _result_difference(ours.value, theirs.value, "result")


def _result_difference(a: Any, b: Any, path: str) -> str | None:
    if type(a) is not type(b):
        return f"{path}: {_describe_result(a)} vs {_describe_result(b)}"
    if isinstance(a, nn.Module):
        return _module_difference(a, b, path)
    if isinstance(a, (tuple, list)):
        if len(a) != len(b):
            return f"{path}: {len(a)} items vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            difference = _result_difference(x, y, f"{path}[{i}]")
            if difference is not None:
                return difference
        return None
    if isinstance(a, torch.Tensor):
        return None if _same_tensor(a, b) else f"{path}: tensors differ"
    if isinstance(a, _Sentinel):
        return None if a == b else f"{path}: {a!r} vs {b!r}"
    if _same(a, b):
        return None
    return f"{path}: {_describe_result(a)} vs {_describe_result(b)}"


def _module_difference(a: nn.Module, b: nn.Module, path: str) -> str | None:
    """Equal in everything they hold: settings, training flags, tensors, child
    modules, hooks and stored callables (ConvAdd2d keeps its ``add``)."""
    a_vars, b_vars = vars(a), vars(b)
    if list(a_vars) != list(b_vars):
        return f"{path}: attributes {list(a_vars)} vs {list(b_vars)}"
    if a.extra_repr() != b.extra_repr():
        return f"{path}: {a.extra_repr()!r} vs {b.extra_repr()!r}"
    for name, value in a_vars.items():
        # Parameters, buffers and children are dicts named by their attribute.
        inner = path if name in _MODULE_DICTS else f"{path}.{name}"
        difference = _held_difference(value, b_vars[name], inner, a, b)
        if difference is not None:
            return difference
    return None


_MODULE_DICTS = frozenset({"_parameters", "_buffers", "_modules"})


def _held_difference(
    x: Any, y: Any, path: str, owner_x: nn.Module, owner_y: nn.Module
) -> str | None:
    """Compare one value a module holds with its counterpart."""
    if type(x) is not type(y):
        return f"{path}: {_describe_result(x)} vs {_describe_result(y)}"
    if isinstance(x, (nn.Module, torch.Tensor)):
        return _result_difference(x, y, path)
    if isinstance(x, dict):
        if list(x) != list(y):
            return f"{path}: keys {list(x)} vs {list(y)}"
        for key in x:
            inner = f"{path}.{key}" if isinstance(key, str) else f"{path}[{key!r}]"
            difference = _held_difference(x[key], y[key], inner, owner_x, owner_y)
            if difference is not None:
                return difference
        return None
    if isinstance(x, (tuple, list)):
        if len(x) != len(y):
            return f"{path}: {len(x)} items vs {len(y)}"
        for i, (u, v) in enumerate(zip(x, y)):
            difference = _held_difference(u, v, f"{path}[{i}]", owner_x, owner_y)
            if difference is not None:
                return difference
        return None
    if isinstance(x, types.MethodType):
        # Bound to the module itself (hooks): same function, same owner.
        same_owner = x.__self__ is owner_x and y.__self__ is owner_y
        same = x.__func__ is y.__func__ and (same_owner or x.__self__ is y.__self__)
        return None if same else f"{path}: {short_name(x)} vs {short_name(y)}"
    if _same(x, y) or _equivalent_functions(x, y, depth=0):
        return None
    return f"{path}: {_describe_result(x)} vs {_describe_result(y)}"


def _same_tensor(a: torch.Tensor, b: torch.Tensor) -> bool:
    if (a.dtype, a.shape, a.requires_grad) != (b.dtype, b.shape, b.requires_grad):
        return False
    # Compare bits so -0.0 vs 0.0 and NaN payloads count.
    a_bits = a.detach().reshape(-1).contiguous().view(torch.uint8)
    b_bits = b.detach().reshape(-1).contiguous().view(torch.uint8)
    return torch.equal(a_bits, b_bits)


def _describe_result(value: Any) -> str:
    if isinstance(value, nn.Module):
        return short_name(type(value))
    if isinstance(value, _Sentinel):
        return repr(value)
    return short_name(value)


# ---------------------------------------------------------------------------
# Reviewer diff
# ---------------------------------------------------------------------------


def diff_backend_configs(
    backend: str,
    old: BackendConfig,
    new: BackendConfig,
    names: dict[int, str] | None = None,
) -> list[str]:
    """Readable lines describing how ``new`` differs from ``old`` (see ``backend_diff``)."""
    return backend_diff(backend, old, new, names).lines()


def backend_diff(
    backend: str,
    old: BackendConfig | None,
    new: BackendConfig | None,
    names: dict[int, str] | None = None,
    locations: tuple[dict[str, str], dict[str, str]] = ({}, {}),
) -> BackendDiff:
    """How ``new`` differs from ``old``; either may be None (a backend added or removed).

    Patterns are matched by their complex-format key and ordered by position
    (removed patterns by their old position, everything else by the new one).
    ``names`` maps id(dtype config) to its name: named dtype configs are matched
    by name, and one whose content changed is reported once, by field.
    ``locations`` maps pattern labels to spec lines, on the old and the new side.
    """
    names = names or {}
    if old is None or new is None:
        config, change = (new, "added") if old is None else (old, "removed")
        where = locations[1] if old is None else locations[0]
        patterns = tuple(
            _whole_pattern(change, i, c, names, where) for i, c in enumerate(config.configs)
        )
        return BackendDiff(backend, change, patterns=patterns)
    entries: list[tuple[int, int, PatternChange]] = []
    shared = _used_names(old.configs, names).keys() & _used_names(new.configs, names).keys()
    old_by_key, new_by_key = _configs_by_key(old.configs), _configs_by_key(new.configs)
    for key, (index, config) in old_by_key.items():
        if key not in new_by_key:
            entries.append((index, 0, _whole_pattern("removed", index, config, names, locations[0])))
    for key, (index, config) in new_by_key.items():
        if key not in old_by_key:
            entries.append((index, 1, _whole_pattern("added", index, config, names, locations[1])))
            continue
        fields = tuple(_changed_fields(old_by_key[key][1], config, names, shared))
        if fields:
            label = _label(config)
            entries.append((index, 2, PatternChange("changed", label, index, fields, location=locations[1].get(label))))
    for key in _moved_keys(old_by_key, new_by_key):
        old_index, new_index = old_by_key[key][0], new_by_key[key][0]
        label = _label(new_by_key[key][1])
        moved = (FieldChange("position", str(old_index), str(new_index)),)
        where = locations[1].get(label)
        entries.append((new_index, 3, PatternChange("moved", label, new_index, moved, location=where)))
    patterns = tuple(change for _, _, change in sorted(entries, key=lambda e: (e[0], e[1])))
    name = None if _same(old.name, new.name) else FieldChange("name", repr(old.name), repr(new.name))
    dtype_configs = _dtype_config_changes(old.configs, new.configs, names)
    changed = bool(patterns or name or dtype_configs)
    return BackendDiff(backend, "changed" if changed else "same", name, dtype_configs, patterns)


def _whole_pattern(change: str, index: int, config: BackendPatternConfig, names, locations) -> PatternChange:
    label = _label(config)
    dtype_configs = tuple(_dtype_config_name(dc, names) for dc in config.dtype_configs)
    return PatternChange(change, label, index, dtype_configs=dtype_configs, location=locations.get(label))


def _moved_keys(old_by_key: dict, new_by_key: dict) -> list[Any]:
    """Patterns outside the longest run of common patterns kept in order."""
    old_order = [key for key in old_by_key if key in new_by_key]
    new_order = [key for key in new_by_key if key in old_by_key]
    matcher = difflib.SequenceMatcher(None, old_order, new_order, autojunk=False)
    kept = set()
    for block in matcher.get_matching_blocks():
        kept.update(range(block.b, block.b + block.size))
    return [key for i, key in enumerate(new_order) if i not in kept]


def _changed_fields(
    old: BackendPatternConfig, new: BackendPatternConfig, names: dict[int, str], shared
) -> Iterator[FieldChange]:
    for field, detail in _attribute_findings(
        "attributes", new, old, frozenset(PATTERN_FIELDS)
    ):
        yield FieldChange(field, "", detail)
    for field in PATTERN_FIELDS:
        if field == "dtype_configs":
            yield from _dtype_config_list_changes(
                old.dtype_configs, new.dtype_configs, names, shared
            )
        elif field in CALLABLE_FIELDS:
            if next(_callable_findings(field, new, old), None) is not None:
                yield _change(field, getattr(old, field), getattr(new, field))
        elif not _same(getattr(old, field), getattr(new, field)):
            yield _change(field, getattr(old, field), getattr(new, field))


def _change(field: str, old: Any, new: Any) -> FieldChange:
    return FieldChange(field, short_name(old), short_name(new))


def _dtype_config_list_changes(
    old: list[DTypeConfig], new: list[DTypeConfig], names: dict[int, str], shared
) -> Iterator[FieldChange]:
    # A dtype config named alike on both sides is the same entry whatever its
    # content: a content change is reported once, by _dtype_config_changes.
    def key(dtype_config):
        name = names.get(id(dtype_config))
        return name if name in shared else _dtype_config_key(dtype_config)

    old_keys, new_keys = [key(dc) for dc in old], [key(dc) for dc in new]
    if old_keys == new_keys:  # what the matcher would find, without it: nothing but equal runs
        return
    matcher = difflib.SequenceMatcher(None, old_keys, new_keys, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for dtype_config in old[i1:i2]:
            yield FieldChange("dtype_configs", _dtype_config_name(dtype_config, names), "")
        for dtype_config in new[j1:j2]:
            yield FieldChange("dtype_configs", "", _dtype_config_name(dtype_config, names))


def _dtype_config_changes(
    old: list[BackendPatternConfig], new: list[BackendPatternConfig], names: dict[int, str]
) -> tuple[DTypeConfigChange, ...]:
    """Named dtype configs used on both sides whose content differs, field by field."""
    old_used, new_used = _used_names(old, names), _used_names(new, names)
    changes = []
    for name in sorted(old_used.keys() & new_used.keys()):
        fields = tuple(_dtype_config_fields(old_used[name], new_used[name]))
        if fields:
            changes.append(DTypeConfigChange(name, fields))
    return tuple(changes)


def _used_names(configs: list[BackendPatternConfig], names: dict[int, str]) -> dict[str, DTypeConfig]:
    return {names[id(dc)]: dc for c in configs for dc in c.dtype_configs if id(dc) in names}


def _dtype_config_fields(old: DTypeConfig, new: DTypeConfig) -> Iterator[FieldChange]:
    for side in DTYPE_SIDES:
        before = getattr(old, f"{side}_with_constraints")
        after = getattr(new, f"{side}_with_constraints")
        for field in CONSTRAINT_FIELDS:
            a, b = getattr(before, field), getattr(after, field)
            if repr(a) != repr(b):
                yield _change(side if field == "dtype" else f"{side}.{field}", a, b)
    for field in DTYPE_CONFIG_FIELDS:
        a, b = getattr(old, field), getattr(new, field)
        if repr(a) != repr(b):
            yield _change(field, a, b)


def _dtype_config_key(dtype_config: DTypeConfig) -> tuple:
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


def _dtype_config_name(dtype_config: DTypeConfig, names: dict[int, str]) -> str:
    if id(dtype_config) in names:
        return names[id(dtype_config)]
    parts = []
    for side in DTYPE_SIDES:
        constraints = getattr(dtype_config, f"{side}_with_constraints")
        if constraints.dtype is None and _constraint_extras(constraints) == "":
            continue
        parts.append(
            f"{side.removesuffix('_dtype')}={short_name(constraints.dtype)}"
            + _constraint_extras(constraints)
        )
    for field in DTYPE_CONFIG_FIELDS:
        value = getattr(dtype_config, field)
        if value is not None:
            parts.append(f"{field.removesuffix('_dtype')}={short_name(value)}")
    return f"DTypeConfig({', '.join(parts)})"


def _constraint_extras(constraints: DTypeWithConstraints) -> str:
    extras = [
        f"{field}={short_name(getattr(constraints, field))}"
        for field in CONSTRAINT_FIELDS[1:]
        if getattr(constraints, field) is not None
    ]
    return "{" + ", ".join(extras) + "}" if extras else ""
