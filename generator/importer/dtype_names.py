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

from generator import dsl, model
from generator.errors import UnspellableBoundError
from generator.importer.number_spellings import NumberSpellings, name_text
from generator.importer.object_paths import object_path

# A dtype-config list used by at least this many patterns gets a name of its own.
SHARED_LIST_MIN_USES = 2
_DSL_NAMES = set(dsl.__all__)  # a local name the spec's own words take is not a constant's
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
    def of(cls, module, local_names=()) -> GlobalNames:
        """The names of `module` and of the modules it imports from, then the builder's `local_names` (a global
        name its author gave an object comes first)."""
        modules = [module]
        for value in vars(module).values():
            source = value if isinstance(value, types.ModuleType) else sys.modules.get(getattr(value, "__module__", ""))
            if isinstance(source, types.ModuleType) and source not in modules and _is_plain_module(source):
                modules.append(source)
        bindings = [(n, v) for m in modules for n, v in vars(m).items() if not n.startswith("__")]
        bindings += [(n, v) for n, v in local_names if n.isidentifier() and n not in _DSL_NAMES]
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
    Names are planned over all the dtype configs the builder uses (`dtype_configs`), so
    that two which differ are named by how they differ (see `_plan`); a number in a
    constraint is spelt as the builder's source spells it (`number_spellings`).
    """

    def __init__(self, names: GlobalNames, dtype_configs=()):
        self.names = names
        self.spellings = names.dtype_spellings()
        self.numbers = NumberSpellings.of(names.modules)
        self.configs: dict[tuple, model.DTypeConfig] = {}
        self.constraints: dict[tuple, model.DTypeWithConstraints] = {}
        self.taken: set[str] = set()
        self.planned: dict[tuple, str] = {}  # dtype config key -> its name, where planned
        self._plan(dtype_configs)

    def name(self, dtype_config) -> model.DTypeConfig:
        key = _dtype_config_key(dtype_config)
        if key not in self.configs:
            sides = {s: self._dtype(getattr(dtype_config, f"{s}_with_constraints")) for s in _SIDES}
            bias = None if dtype_config.bias_dtype is None else self._spelt(dtype_config.bias_dtype)
            name = self.planned.get(key) or self._unique(
                self.names.by_identity(dtype_config)
                or self.names.by_content(dtype_config, _dtype_config_key)
                or _derived_config_name(sides, bias, dtype_config.is_dynamic, self.configs.values())
            )
            self.configs[key] = model.DTypeConfig(name, bias_dtype=bias, is_dynamic=dtype_config.is_dynamic, **sides)
        return self.configs[key]

    def _plan(self, dtype_configs) -> None:
        """Name every dtype config up front: a global's name where the builder's module binds one
        (or a fixed-qparams copy of such, `<base>_<constraints>`); the others by what they hold,
        their dtypes (`quint8_weight_qint8_bias_float`), and where several hold the same dtypes,
        the constraint bounds by which they differ (`..._output_0_to_127`)."""
        unique = {}
        for dtype_config in dtype_configs:
            unique.setdefault(_dtype_config_key(dtype_config), dtype_config)
        derived: dict[tuple, model.DTypeConfig] = {}  # key -> its model value, named "" for now
        for key, dtype_config in unique.items():
            if self._global_name(dtype_config):
                self.name(dtype_config)
            else:
                derived[key] = self._unnamed(dtype_config)
        copies = {key: self._copy_name(config) for key, config in derived.items()}
        groups: dict[str, list[tuple]] = {}
        for key, config in derived.items():
            if copies[key] is None:
                groups.setdefault(_base_name(config), []).append(key)
        for base, keys in groups.items():
            for key in keys:
                self.planned[key] = self._unique(_qualified(base, derived[key], [derived[k] for k in keys]))
        for key, name in copies.items():
            if name is not None:
                self.planned[key] = self._unique(name)
        for dtype_config in unique.values():
            self.name(dtype_config)
        self.configs = {key: self.configs[key] for key in unique}  # first-use order, globals or not

    def _global_name(self, dtype_config) -> bool:
        found = self.names.by_identity(dtype_config) or self.names.by_content(dtype_config, _dtype_config_key)
        return found is not None and found not in self.taken

    def _unnamed(self, dtype_config) -> model.DTypeConfig:
        sides = {s: self._dtype(getattr(dtype_config, f"{s}_with_constraints")) for s in _SIDES}
        bias = None if dtype_config.bias_dtype is None else self._spelt(dtype_config.bias_dtype)
        return model.DTypeConfig("", bias_dtype=bias, is_dynamic=dtype_config.is_dynamic, **sides)

    def _copy_name(self, config: model.DTypeConfig) -> str | None:
        """`<base>_<constraints>` for a fixed-qparams copy of a dtype config named by a global."""
        sides = {s: getattr(config, s) for s in _SIDES}
        name = _derived_config_name(sides, config.bias_dtype, config.is_dynamic, self.configs.values())
        return name if name != _dtypes_config_name(sides, config.bias_dtype, config.is_dynamic) else None

    def _dtype(self, constraints):
        dtype = None if constraints.dtype is None else self._spelt(constraints.dtype)
        bounds = {f: getattr(constraints, f) for f in _CONSTRAINT_FIELDS[1:] if getattr(constraints, f) is not None}
        if not bounds:
            return dtype
        for field, bound in bounds.items():
            if isinstance(bound, bool) or not isinstance(bound, int | float) or math.isnan(bound):
                raise UnspellableBoundError(
                    f"a DTypeWithConstraints of {_short(dtype)} has {field}={bound!r}, which a spec cannot write: "
                    "a bound is an int or a float that equals itself (nan does not, so no comparison can prove it); "
                    "change what the builder returns"
                )
        key = _constraint_key(constraints)
        if key not in self.constraints:
            spellings = self.numbers.spellings(bounds)
            found = self.names.by_identity(constraints) or self.names.by_content(constraints, _constraint_key)
            derived = f"{_short(dtype)}_{_bounds_text(bounds, dict(spellings))}"
            if derived in self.taken:  # another constraint with bounds of the same text: 0 and 0.0, -0.0
                derived = f"{_short(dtype)}_{_bounds_text(bounds, dict(spellings), exact=True)}"
            name = self._unique(found if found and found not in self.taken else derived)
            self.constraints[key] = model.DTypeWithConstraints(name, dtype, **bounds, spellings=spellings)
        return self.constraints[key]

    def _spelt(self, dtype) -> model.TorchRef:
        path = object_path(dtype)
        return model.TorchRef(self.spellings.get(path, path))

    def _unique(self, name: str) -> str:
        """The name, or where another value has it already (two spellings of one number), `<name>_alt`."""
        candidate = name
        while candidate in self.taken:
            stem = candidate.removesuffix("_dtype_config")
            candidate = f"{stem}_alt" + candidate[len(stem) :]
        self.taken.add(candidate)
        return candidate


def used_dtype_configs(backend_config) -> list:
    """The dtype configs of a BackendConfig's patterns, in first-use order (a pattern whose dtype_configs
    is not a list is left to the reading of that pattern to refuse)."""
    found = []
    for config in backend_config.configs:
        if isinstance(config.dtype_configs, (list, tuple)):
            found += config.dtype_configs
    return found


def _short(dtype) -> str:
    if isinstance(dtype, model.DTypeWithConstraints):
        return dtype.name.strip("_").lower().removesuffix("_constraints")
    return "none" if dtype is None else dtype.path.rsplit(".", 1)[-1]


def _plain(dtype) -> str | None:
    """A side's dtype, without its constraints."""
    if isinstance(dtype, model.DTypeWithConstraints):
        return _short(dtype.dtype)
    return None if dtype is None else _short(dtype)


def _bound_slots(constraints, spellings: dict[str, str], exact: bool = False) -> dict[str, str]:
    """Slot -> text of the bounds a constraint sets: the quantization range (`0_to_127`, `min_0`),
    `scale_min_2_neg_12`, `scale_max_...`, a fixed `scale_1_over_256` and `zero_point_0`."""
    bounds = constraints if isinstance(constraints, dict) else constraints.bounds if constraints is not None else {}

    def text(bound):
        return name_text(bounds[bound], spellings.get(bound), exact)

    slots = {}
    low, high = "quant_min_lower_bound" in bounds, "quant_max_upper_bound" in bounds
    if low or high:
        slots["range"] = (
            f"{text('quant_min_lower_bound')}_to_{text('quant_max_upper_bound')}"
            if low and high
            else f"min_{text('quant_min_lower_bound')}"
            if low
            else f"max_{text('quant_max_upper_bound')}"
        )
    for bound, prefix in _BOUND_PREFIXES.items():
        if bound in bounds:
            slots[bound] = f"{prefix}_{text(bound)}"
    return slots


_BOUND_PREFIXES = {
    "scale_min_lower_bound": "scale_min",
    "scale_max_upper_bound": "scale_max",
    "scale_exact_match": "scale",
    "zero_point_exact_match": "zero_point",
}


def _bounds_text(bounds: dict, spellings: dict[str, str], exact: bool = False) -> str:
    return "_".join(_bound_slots(bounds, spellings, exact).values())


def _side_slots(dtype, exact: bool = False) -> dict[str, str]:
    if not isinstance(dtype, model.DTypeWithConstraints):
        return {}
    return _bound_slots(dtype, dict(dtype.spellings), exact)


def _base_name(config: model.DTypeConfig) -> str:
    """What a dtype config holds, constraints aside: `quint8_weight_qint8_bias_float`, `quint8_to_float_...`."""
    sides = {s: getattr(config, s) for s in _SIDES}
    return _dtypes_config_name(sides, config.bias_dtype, config.is_dynamic).removesuffix("_dtype_config")


def _dtypes_config_name(sides: dict, bias, is_dynamic) -> str:
    given, out, weight = (_plain(sides[s]) for s in _SIDES)
    parts = [given if given == out else f"{given or 'none'}_to_{out or 'none'}"] if given or out else []
    parts += [f"weight_{weight}"] if weight else []
    parts += [f"bias_{_short(bias)}"] if bias is not None else []
    parts += ["dynamic" if is_dynamic else "static"] if is_dynamic is not None else []
    return "_".join(parts or ["no_dtypes"]) + "_dtype_config"


def _qualified(base: str, config: model.DTypeConfig, group: list[model.DTypeConfig]) -> str:
    """The base name plus, per side, the bounds in which the group's dtype configs differ (that this one sets);
    exact texts (`0p0`, `neg_0p0`) where the short ones do not tell the group apart."""
    exact = len({_qualified_by(base, c, group, False) for c in group}) < len(group)
    return _qualified_by(base, config, group, exact)


def _qualified_by(base: str, config: model.DTypeConfig, group: list[model.DTypeConfig], exact: bool) -> str:
    parts = [base]
    texts = {}
    for side in _SIDES:
        slots = [_side_slots(getattr(c, side), exact) for c in group]
        every = dict.fromkeys(slot for found in slots for slot in found)
        differing = [slot for slot in every if len({found.get(slot) for found in slots}) > 1]
        own = _side_slots(getattr(config, side), exact)
        texts[side] = "_".join(own[slot] for slot in differing if slot in own)
    if texts["input_dtype"] and texts["input_dtype"] == texts["output_dtype"]:
        parts.append(f"input_output_{texts.pop('input_dtype')}")
        texts.pop("output_dtype")
    parts += [f"{side.removesuffix('_dtype')}_{text}" for side, text in texts.items() if text]
    return "_".join(parts) + "_dtype_config"


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
    return _dtypes_config_name(sides, bias, is_dynamic)


def shared_lists(uses: list[tuple[str, ...]], taken: set[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """A name for each dtype-config list (by member names) used at least SHARED_LIST_MIN_USES
    times, none of them in `taken` or a member's name; a list of one dtype config only where its name is no
    longer than the list written out (`fbgemm_default_op_quint8_dtype_configs`, not `int8_dtype_configs`)."""
    counts: dict[tuple[str, ...], int] = {}
    for members in uses:
        counts[members] = counts.get(members, 0) + 1
    shared, taken = [], set(taken) | {name for members in uses for name in members}
    for members, count in counts.items():
        if count >= SHARED_LIST_MIN_USES and len(members) > 0:
            name = _list_name(members)
            if len(members) == 1 and len(name) > len(members[0]) + 2:
                continue  # `[int8]` reads as well as a name, and is shorter than `int8_dtype_configs`
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
