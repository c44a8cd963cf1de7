"""Import: names for the dtype configs, constraints and shared dtype-config lists a spec defines.

A reader of the spec should meet the names the builder's author chose: each dtype
config and constraint is named after the module-level global it is bound to (by
identity, else by equal content) in the builder's module or the modules it imports
from, else spelt from its dtypes. Equal content is one constant. A dtype-config list
that several patterns use gets a name of its own (`shared_lists`), and a dtype with
two torch names is spelt as the builder's source mostly spells it.
"""

from __future__ import annotations

import inspect
import math
import re
import sys
import types

from generator import model
from generator.errors import UnspellableBoundError
from generator.importer.object_paths import object_path

# A dtype-config list used by at least this many patterns gets a name of its own.
SHARED_LIST_MIN_USES = 2
# torch dtypes with two names: the spec spells each as the builder's source mostly does.
DTYPE_ALIASES = {
    "torch.float32": "torch.float",
    "torch.float64": "torch.double",
    "torch.float16": "torch.half",
    "torch.int32": "torch.int",
    "torch.int64": "torch.long",
    "torch.int16": "torch.short",
}


class GlobalNames:
    """Module-level names of the builder's module and of the modules it imports from."""

    def __init__(self, bindings: list[tuple[str, object]], modules: list | None = None):
        self.bindings = bindings
        self.modules = modules or []

    @classmethod
    def of(cls, module) -> GlobalNames:
        modules = [module]
        for value in vars(module).values():
            source = value if isinstance(value, types.ModuleType) else sys.modules.get(getattr(value, "__module__", ""))
            if isinstance(source, types.ModuleType) and source not in modules and _is_plain_module(source):
                modules.append(source)
        bindings = [(n, v) for m in modules for n, v in vars(m).items() if not n.startswith("__")]
        return cls(bindings, modules)

    def dtype_spellings(self) -> dict[str, str]:
        """Public dtype path -> the other name of that dtype (`torch.float32` -> `torch.float`), where
        the builder's module and the modules its dtype configs are bound in use that name more."""
        from torch.ao.quantization.backend_config import DTypeConfig, DTypeWithConstraints

        texts = []
        for index, module in enumerate(self.modules):
            if index == 0 or any(isinstance(v, (DTypeConfig, DTypeWithConstraints)) for v in vars(module).values()):
                try:
                    texts.append(inspect.getsource(module))
                except (OSError, TypeError):  # no source (a C extension, a module built at run time)
                    pass
        text = "\n".join(texts)
        return {
            public: other
            for public, other in DTYPE_ALIASES.items()
            if len(re.findall(rf"\b{re.escape(other)}\b", text)) > len(re.findall(rf"\b{re.escape(public)}\b", text))
        }

    def by_identity(self, value) -> str | None:
        return next((n for n, v in self.bindings if v is value), None)

    def by_content(self, value, key) -> str | None:
        return next((n for n, v in self.bindings if type(v) is type(value) and key(v) == key(value)), None)


def _is_plain_module(module) -> bool:
    # torch itself and its C extension hold no names a builder's author chose.
    return module.__name__ not in ("torch", "builtins", "operator", "itertools", "copy")


def _constraint_key(constraints) -> tuple:
    return tuple(repr(getattr(constraints, f)) for f in _CONSTRAINT_FIELDS)


def _dtype_config_key(dtype_config) -> tuple:
    sides = tuple(_constraint_key(getattr(dtype_config, f"{s}_with_constraints")) for s in _SIDES)
    return sides + (repr(dtype_config.bias_dtype), repr(dtype_config.is_dynamic))


_SIDES = model.DTYPE_SIDES
_CONSTRAINT_FIELDS = ("dtype", *model.CONSTRAINT_BOUNDS)


class DTypeNamer:
    """One named model value per distinct dtype config (and constraint), in first-use order.

    Equal content means one constant: torch deep-copies dtype configs for fixed-qparams
    ops on every call, and those copies should not become constants of their own.
    """

    def __init__(self, names: GlobalNames):
        self.names = names
        self.spellings = names.dtype_spellings()
        self.configs: dict[tuple, model.DTypeConfig] = {}
        self.constraints: dict[tuple, model.DTypeWithConstraints] = {}
        self.taken: set[str] = set()

    def name(self, dtype_config) -> model.DTypeConfig:
        key = _dtype_config_key(dtype_config)
        if key not in self.configs:
            sides = {s: self._dtype(getattr(dtype_config, f"{s}_with_constraints")) for s in _SIDES}
            bias = None if dtype_config.bias_dtype is None else self._spelt(dtype_config.bias_dtype)
            name = self._unique(
                self.names.by_identity(dtype_config)
                or self.names.by_content(dtype_config, _dtype_config_key)
                or _derived_config_name(sides, bias, dtype_config.is_dynamic, self.configs.values())
            )
            self.configs[key] = model.DTypeConfig(name, bias_dtype=bias, is_dynamic=dtype_config.is_dynamic, **sides)
        return self.configs[key]

    def _dtype(self, constraints):
        dtype = None if constraints.dtype is None else self._spelt(constraints.dtype)
        bounds = {f: getattr(constraints, f) for f in _CONSTRAINT_FIELDS[1:] if getattr(constraints, f) is not None}
        if not bounds:
            return dtype
        for field, bound in bounds.items():
            if isinstance(bound, bool) or not isinstance(bound, int | float) or not _finite(bound):
                raise UnspellableBoundError(
                    f"a DTypeWithConstraints of {_short(dtype)} has {field}={bound!r}, which a spec cannot write: "
                    "a bound is a finite int or float; change what the builder returns"
                )
        key = _constraint_key(constraints)
        if key not in self.constraints:
            found = self.names.by_identity(constraints) or self.names.by_content(constraints, _constraint_key)
            name = self._unique(found or f"{_short(dtype)}_with_constraints")
            self.constraints[key] = model.DTypeWithConstraints(name, dtype, **bounds)
        return self.constraints[key]

    def _spelt(self, dtype) -> model.TorchRef:
        path = object_path(dtype)
        return model.TorchRef(self.spellings.get(path, path))

    def _unique(self, name: str) -> str:
        candidate, number = name, 2
        while candidate in self.taken:
            candidate, number = f"{name}_{number}", number + 1
        self.taken.add(candidate)
        return candidate


def _finite(number: int | float) -> bool:
    return isinstance(number, int) or math.isfinite(number)


def _short(dtype) -> str:
    if isinstance(dtype, model.DTypeWithConstraints):
        return dtype.name.strip("_").lower().removesuffix("_constraints")
    return "none" if dtype is None else dtype.path.rsplit(".", 1)[-1]


def _derived_config_name(sides: dict, bias, is_dynamic, named) -> str:
    """A fixed-qparams copy is `<base>_<constraints>`; anything else is spelt from its dtypes."""
    for other in named:
        plain = {s: getattr(other, s) for s in _SIDES}
        changed = [s for s in _SIDES if plain[s] != sides[s]]
        if changed and other.bias_dtype == bias and other.is_dynamic == is_dynamic:
            constrained = {sides[s] for s in changed}
            if len(constrained) == 1 and isinstance(next(iter(constrained)), model.DTypeWithConstraints):
                base = next(iter(constrained))
                if all(_short(plain[s]) == _short(base.dtype) for s in changed):
                    return f"{other.name.removesuffix('_dtype_config')}_{_short(base)}_dtype_config"
    parts = [f"{s.removesuffix('_dtype')}_{_short(sides[s])}" for s in _SIDES if sides[s] is not None]
    parts += [f"bias_{_short(bias)}"] if bias is not None else []
    parts += ["dynamic"] if is_dynamic else []
    return "_".join(parts) + "_dtype_config"


def shared_lists(uses: list[tuple[str, ...]], taken: set[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """A name for each dtype-config list (by member names) used at least SHARED_LIST_MIN_USES
    times, none of them in `taken` or a member's name."""
    counts: dict[tuple[str, ...], int] = {}
    for members in uses:
        counts[members] = counts.get(members, 0) + 1
    shared, taken = [], set(taken) | {name for members in uses for name in members}
    for members, count in counts.items():
        if count >= SHARED_LIST_MIN_USES and len(members) > 0:
            name = _list_name(members)
            while name in taken:
                name += "_"
            taken.add(name)
            shared.append((name, members))
    return tuple(shared)


def _list_name(members: tuple[str, ...]) -> str:
    stems = [m.removesuffix("_dtype_config").strip("_") for m in members]
    if len(stems) > 2:
        stems = [stems[0], f"{len(stems) - 1}_more"]
    return "_and_".join(stems) + "_dtype_configs"
