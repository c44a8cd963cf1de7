"""When two callables of a pattern config are interchangeable: the same object, equivalent code, or the same behaviour.

Callables (fuser methods, root-node getters, extra-inputs getters) cannot be compared
by identity alone, because torch creates fresh closures on every call
(``_sequential_wrapper2(nni.ConvReLU1d)``) and generated code may define its own copies.
They count as equal when they are identical, when their code is equivalent (same
bytecode, constants, referenced globals and closure contents; bound methods: the same
object bound, ``equivalent_functions``), or when they behave the same on real arguments
built from the pattern: trial calls with ``is_qat`` False and True, modules in train,
eval and mixed modes, of the exact pattern types and of subclasses, must raise the same
exception or build modules equal in everything they hold (children, training flags,
stored callables such as ``ConvAdd2d.add``, parameters and buffers).  ``callables_match``
decides, and keeps one verdict per pair and pattern.
"""

from __future__ import annotations

import builtins
import dataclasses
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
from torch.ao.quantization.backend_config import BackendPatternConfig
from torch.ao.quantization.backend_config.utils import (
    _get_pattern_in_reversed_nested_tuple_format,
)
from torch.ao.quantization.utils import MatchAllNode

from generator.building.torch_names import describe_pattern, short_name
from generator.review.identity import pattern_key, same


def callables_match(field: str, ours: Callable, theirs: Callable, config: BackendPatternConfig) -> tuple[bool, str]:
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
    key = (field, id(ours_seen), id(theirs_seen), pattern_key(config), complex_format)
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
    if type(a) is types.MethodType and type(b) is types.MethodType:  # Class.a_classmethod read twice: ==, not is
        return a.__self__ is b.__self__ and _equivalent_functions(a.__func__, b.__func__, depth + 1)
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
    return same(a, b)


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
    return same(a, b)


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
    if same(a, b):
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
        alike = x.__func__ is y.__func__ and (same_owner or x.__self__ is y.__self__)
        return None if alike else f"{path}: {short_name(x)} vs {short_name(y)}"
    if same(x, y) or _equivalent_functions(x, y, depth=0):
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

