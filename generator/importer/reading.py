"""Import: read an existing dynamic builder's BackendConfig into the spec to write.

`python -m generator import MODULE:FUNCTION` calls the builder once and turns what it
returns into the model the spec stages already use (`model.DTypeConfig`,
`model.PatternConfig`, `model.FunctionDef`, `model.TorchRef`), plus the names a
reader needs: dtype configs and constraints named after the globals they are bound
to in the builder's module (or the modules it imports from), and dtype-config lists
that several patterns share. `spec_source` writes that model as a spec file.

A BackendConfig shows only its final state: a pattern registered twice appears once,
at its first position with the later content. That is exactly what the builder
returns, so writing it that way loses nothing the equality proof compares.

Callables are named, in this order: a public torch name (`fusers.fuse_conv_bn`); a
`_sequential_wrapper2(X)` closure as `sequential(X)`; a module-level function of the
user's own code by its import path (imported, not copied); anything else as one of the
project's function templates, rendered with candidate parameters and proven equal by
the comparator's code or behaviour check. What none of these names is an error.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import itertools
import keyword
import math
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path

from generator import dsl, model, user_code
from generator.errors import (
    BuilderCallError,
    BuilderImportError,
    NotABackendConfigError,
    UnnamedBackendConfigError,
    UnnamedCallableError,
    UnspellableBoundError,
)
from generator.importer import factories

# torch's builder modules: a generated module must not import from them.
TORCH_BUILDERS_PACKAGE = "torch.ao.quantization.backend_config"
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
# Values of template parameters that are not torch objects, by parameter name.
SCALAR_CHOICES = {"side": ("left", "right"), "with_bn": (False, True), "relu": (False, True)}
_CALLABLE_FIELDS = (
    ("fuser_method", "fuser_method"),
    ("root_node_getter", "_root_node_getter"),
    ("extra_inputs_getter", "_extra_inputs_getter"),
)


@dataclass(frozen=True)
class ImportedSpec:
    """What `import` writes: one spec module with one backend."""

    name: str  # spec/<name>.py, generated/<name>.py
    target: str  # MODULE:FUNCTION as given
    backend: model.Backend
    constraints: tuple[model.DTypeWithConstraints, ...]
    dtype_configs: tuple[model.DTypeConfig, ...]
    shared_lists: tuple[tuple[str, tuple[str, ...]], ...]  # (list name, dtype config names)
    # What the spec lists in the backend's configs: its patterns, or (compacted) op-group
    # calls of spec/_common.py among them (`compaction.GroupCall`); empty means the patterns.
    entries: tuple = ()
    module_doc: str = ""  # the replaced spec's, when `round_trip.recover` found one


# ---------------------------------------------------------------------------
# Loading the builder
# ---------------------------------------------------------------------------


def split_target(target: str) -> tuple[str, str]:
    """(module, function) of MODULE:FUNCTION."""
    module_name, _, function_name = target.partition(":")
    if not module_name or not function_name:
        raise BuilderImportError(f"{target!r}: expected MODULE:FUNCTION, e.g. my_backend.config:get_backend_config")
    return module_name, function_name


# sys.path entries load_builder added: regenerate runs without them, so the check that
# generated modules import from any folder must too (import_validation).
_ROOT_ENTRIES_ADDED: list[str] = []


@contextlib.contextmanager
def without_the_root_import_added():
    """sys.path as regenerate has it: without the project root load_builder put first."""
    saved = list(sys.path)
    sys.path[:] = [entry for entry in sys.path if entry not in _ROOT_ENTRIES_ADDED]
    try:
        yield
    finally:
        sys.path[:] = saved


def load_builder(target: str, root: Path):
    """(builder function, module, the BackendConfig it returns) for MODULE:FUNCTION."""
    module_name, function_name = split_target(target)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
        _ROOT_ENTRIES_ADDED.append(str(root))
    # torch 2.13's builders fail in a fresh interpreter unless this module is imported first.
    import torch.ao.quantization.backend_config.utils  # noqa: F401

    with user_code.running(BuilderImportError, f"importing {module_name}", root):
        try:
            module = importlib.import_module(module_name)
        except Exception as error:  # any failure of user code must become one line
            raise BuilderImportError(f"cannot import {module_name}: {type(error).__name__}: {error}") from None
    builder = _attribute(module, function_name)
    if not callable(builder):
        raise BuilderImportError(f"{module_name} has no function {function_name!r}")
    with user_code.running(BuilderCallError, f"{target}()", root):
        try:
            backend_config = builder()
        except Exception as error:
            raise BuilderCallError(f"{target}() raised {type(error).__name__}: {error}") from None
    from torch.ao.quantization.backend_config import BackendConfig

    if not isinstance(backend_config, BackendConfig):
        raise NotABackendConfigError(f"{target}() returned {type(backend_config).__name__}, not a BackendConfig")
    return builder, module, backend_config


def _attribute(module, function_name: str):
    """The builder: a module-level name, or a dotted one (`Vendor.get_config`, a staticmethod)."""
    target = module
    for part in function_name.split("."):
        target = getattr(target, part, None)
    return target


def default_name(function_name: str) -> str:
    """get_fbgemm_backend_config -> fbgemm: the builder's own name for its backend."""
    function_name = function_name.rsplit(".", 1)[-1]
    return function_name.removeprefix("get_").removesuffix("_backend_config").strip("_") or function_name


# ---------------------------------------------------------------------------
# Reading a BackendConfig
# ---------------------------------------------------------------------------


def read_backend_config(name: str, target: str, builder, module, backend_config, templates_dir: Path) -> ImportedSpec:
    if not backend_config.name:
        raise UnnamedBackendConfigError(
            f"{target}() returns a BackendConfig with torch's default empty name, which a spec cannot give "
            'a backend; name it in the builder: BackendConfig("my_backend")'
        )
    names = _GlobalNames.of(module)
    dtypes = _DTypeNamer(names)
    callables = _CallableNamer(templates_dir)
    configs = tuple(_pattern_config(c, dtypes, callables) for c in backend_config.configs)
    # The builder is named as the target names it, whatever it is (a function, a partial,
    # a lambda, a callable object, a staticmethod): that name is what a generated module
    # and its equality test import.
    function_name = split_target(target)[1]
    backend = model.Backend(
        name=backend_config.name,
        builder=function_name.rsplit(".", 1)[-1],
        doc=_builder_doc(builder, function_name),
        configs=configs,
        reference=f"{module.__name__}.{function_name}",
    )
    return ImportedSpec(
        name=name,
        target=target,
        backend=backend,
        constraints=tuple(dtypes.constraints.values()),
        dtype_configs=tuple(dtypes.configs.values()),
        shared_lists=shared_lists([tuple(dc.name for dc in c.dtype_configs) for c in configs], set()),
    )


def _builder_doc(builder, function_name: str) -> str:
    while isinstance(builder, functools.partial):
        builder = builder.func
    # A class's or an instance's docstring describes the object, not what calling it returns.
    own = isinstance(builder, (types.FunctionType, types.MethodType, types.BuiltinFunctionType))
    doc = (builder.__doc__ or "").strip().split("\n\n")[0] if own else ""
    return " ".join(doc.split()) or f"Return the `BackendConfig` that {function_name} returns."


def _pattern_config(config, dtypes: _DTypeNamer, callables: _CallableNamer) -> model.PatternConfig:
    label = _describe(config)
    settings = {}
    for field in ("root_module", "qat_module", "reference_quantized_module", "fused_module"):
        settings[field] = _ref_or_none(getattr(config, field), label, field)
    for field, attribute in _CALLABLE_FIELDS:
        settings[field] = callables.name(getattr(config, attribute), attribute, config, label, field)
    return model.PatternConfig(
        pattern=None if config.pattern is None else _pattern(config.pattern, label),
        pattern_complex_format=(
            None if config._pattern_complex_format is None else _pattern(config._pattern_complex_format, label)
        ),
        dtype_configs=tuple(dtypes.name(dc) for dc in config.dtype_configs),
        observation_type=config.observation_type.name,
        num_tensor_args_to_observation_type=tuple(
            (count, kind.name) for count, kind in config._num_tensor_args_to_observation_type.items()
        ),
        input_type_to_index=tuple(config._input_type_to_index.items()),
        **settings,
    )


def _describe(config) -> str:
    from generator.build.torch_names import describe_pattern

    pattern = config.pattern if config.pattern is not None else config._pattern_complex_format
    return describe_pattern(pattern)


def _pattern(value, label: str):
    if isinstance(value, tuple):
        return tuple(_pattern(item, label) for item in value)
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return value
    return _ref(value, label, "pattern")


def _ref_or_none(value, label: str, field: str):
    return None if value is None else _ref(value, label, field)


def _ref(value, label: str, field: str) -> model.TorchRef:
    path = object_path(value)
    if path is None:
        raise UnnamedCallableError(f"pattern {label}: {field} {_name_of(value)} has no import path")
    return model.TorchRef(path)


def object_path(value) -> str | None:
    """The dotted path a spec can name `value` by: its public torch name, else where it is defined."""
    from generator.build.torch_names import public_path

    path = public_path(value)
    if path is not None:
        return path
    module_name, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if not isinstance(qualname, str) and not isinstance(value, type | types.FunctionType | types.BuiltinFunctionType):
        return _global_path(value)  # an object (a callable instance): by the global it is bound to
    if not isinstance(module_name, str) or not isinstance(qualname, str) or "<" in qualname:
        return None
    if not _importable_module(module_name):
        return None
    target = sys.modules.get(module_name)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    return f"{module_name}.{qualname}" if target is value else None


def _importable_module(module_name: str) -> bool:
    # __main__ is not importable by a generated module; torch's builder modules must not be imported.
    return module_name != "__main__" and not module_name.startswith(TORCH_BUILDERS_PACKAGE + ".")


def _global_path(value) -> str | None:
    """`module.NAME` for an object bound to a module-level name of its class's module, public names first."""
    module_name = getattr(type(value), "__module__", None)
    module = sys.modules.get(module_name) if isinstance(module_name, str) else None
    if module is None or not _importable_module(module_name):
        return None
    names = sorted((name for name, bound in vars(module).items() if bound is value), key=lambda n: (n[0] == "_", n))
    return f"{module_name}.{names[0]}" if names else None


def _name_of(value) -> str:
    module_name, qualname = getattr(value, "__module__", "?"), getattr(value, "__qualname__", None)
    return f"{module_name}.{qualname}" if qualname else repr(value)


# ---------------------------------------------------------------------------
# Names of dtype configs, constraints and shared lists
# ---------------------------------------------------------------------------


class _GlobalNames:
    """Module-level names of the builder's module and of the modules it imports from."""

    def __init__(self, bindings: list[tuple[str, object]], modules: list | None = None):
        self.bindings = bindings
        self.modules = modules or []

    @classmethod
    def of(cls, module) -> _GlobalNames:
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


class _DTypeNamer:
    """One named model value per distinct dtype config (and constraint), in first-use order.

    Equal content means one constant: torch deep-copies dtype configs for fixed-qparams
    ops on every call, and those copies should not become constants of their own.
    """

    def __init__(self, names: _GlobalNames):
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


# ---------------------------------------------------------------------------
# Callables
# ---------------------------------------------------------------------------


class _CallableNamer:
    """Names each fuser method or node getter the way a spec can write it."""

    def __init__(self, templates_dir: Path):
        self.templates = _Templates(templates_dir)
        self.by_id: dict[int, tuple[object, object]] = {}  # id -> (callable, spec value): keeps ids alive
        self.defs: dict[str, model.FunctionDef] = {}

    def name(self, value, attribute: str, config, label: str, field: str):
        if value is None:
            return None
        known = self.by_id.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        named = self._classify(value, attribute, config, label, field)
        self.by_id[id(value)] = (value, named)
        return named

    def _classify(self, value, attribute, config, label, field):
        path = object_path(value)
        if path is not None:
            return model.TorchRef(path)
        fused = _sequential_argument(value)
        if fused is not None:
            class_name = getattr(fused, "__name__", "module")
            return model.FunctionDef(
                dsl.sequential_fuser_name(class_name), "sequential", (("fused_module", _ref(fused, label, field)),)
            )
        reason = None
        if factories.is_made(value):
            try:
                return factories.made_call(value, attribute, config)
            except factories.CannotName as error:
                reason = str(error)  # a template may still name it; else this is why not
        match = self.templates.match(value, attribute, config)
        if match is None:
            if reason is not None:
                raise UnnamedCallableError(
                    f"pattern {label}: cannot name {field} {_name_of(value)}: {reason}; define it, or the "
                    "factory that makes it and each argument it is given, at module level of an importable module"
                )
            raise UnnamedCallableError(
                f"pattern {label}: cannot name {field} {_name_of(value)}: it is not a public torch name, "
                "not importable by path and matches no template in templates/functions/; define it (or bind "
                "the object) at module level of an importable module"
            )
        template, params = match
        return self._function(template, params, getattr(value, "__name__", ""), field)

    def _function(self, template: str, params: tuple, own_name: str, field: str) -> model.FunctionDef:
        for existing in self.defs.values():
            if existing.template == template and existing.params == params:
                return existing
        base = own_name if own_name.isidentifier() else f"_{field}"
        name, number = base, 2
        while name in self.defs:
            name, number = f"{base}_{number}", number + 1
        self.defs[name] = model.FunctionDef(name, template, params)
        return self.defs[name]


def _sequential_argument(value):
    """X for a closure made by torch's `_sequential_wrapper2(X)`, else None."""
    from torch.ao.quantization.fuser_method_mappings import _sequential_wrapper2

    probe = _sequential_wrapper2(object)
    if not isinstance(value, types.FunctionType) or value.__code__ is not probe.__code__:
        return None
    return value.__closure__[0].cell_contents


class _Templates:
    """The project's function templates, tried with candidate parameters."""

    def __init__(self, templates_dir: Path):
        from generator.build.rendering import make_environment

        self.env = make_environment(templates_dir)
        self.compiled: dict[str, object] = {}
        self.rendered: dict[tuple, str] = {}
        folder = templates_dir / "functions"
        self.names = sorted(p.name.removesuffix(".py.j2") for p in folder.glob("*.py.j2"))

    def parameters(self, template: str) -> list[str]:
        from generator.build.rendering import _template_parameters

        return sorted(_template_parameters(self.env, template) - {"name"})

    def match(self, value, attribute: str, config):
        """(template, params) of the first candidate with equivalent code, else with the same behaviour."""
        if not isinstance(value, types.FunctionType):
            return None
        objects = _related_objects(value, config)
        # Several templates can be code-equivalent (a getter that returns the middle of three
        # nodes); the one whose name reads like the function and its pattern is tried first.
        hint = f"{value.__name__} {_describe(config)}".lower()
        templates = sorted(self.names, key=lambda t: (-sum(word in hint for word in t.split("_")), t))
        candidates = [c for c in self._candidates(templates, objects) if self._same_signature(c, value)]
        from generator.review.equality import _equivalent_functions, callables_match

        for _template, group in itertools.groupby(candidates, key=lambda c: c[0]):
            equivalent = [c for c in group if _equivalent_functions(self._function(c), value, depth=0)]
            if equivalent:
                # Parameters that only rename locals (with_bn in an extra-inputs getter) leave the
                # code equivalent: keep the rendering that reads most like the function's source.
                return self._minimal(max(equivalent, key=lambda c: _similarity(self._render(c), value)))
        if not _torchs_own(value):
            return None
        for candidate in candidates:
            if callables_match(attribute, self._function(candidate), value, config)[0]:
                # Behaviour is checked on one pattern only, so scalar parameters may not tell
                # variants apart; among those that also match, keep the closest source.
                variants = [c for c in candidates if _same_objects(c, candidate)]
                matching = [c for c in variants if callables_match(attribute, self._function(c), value, config)[0]]
                return self._minimal(max(matching, key=lambda c: _similarity(self._render(c), value)))
        return None

    def _candidates(self, templates: list[str], objects: list[tuple[object, str]]):
        for template in templates:
            parameters = self.parameters(template)
            domains = [SCALAR_CHOICES.get(p) or [model.TorchRef(path) for _, path in objects] for p in parameters]
            for values in itertools.product(*domains):
                yield template, tuple(zip(parameters, values))

    def _render(self, candidate) -> str:
        # Each candidate is rendered for its signature, its code and its similarity: once is enough.
        if candidate not in self.rendered:
            from generator.build.rendering import render_function

            template, params = candidate
            self.rendered[candidate] = render_function(self.env, model.FunctionDef("_candidate", template, params))
        return self.rendered[candidate]

    def _function(self, candidate):
        text = self._render(candidate)
        if text not in self.compiled:
            from generator.build.expansion import torch_refs
            from generator.spelling import import_lines

            namespace: dict = {}
            refs = list(torch_refs([v for _, v in candidate[1]]))
            exec("\n".join(import_lines(refs, {})) + "\n" + text, namespace)  # our own template's output
            self.compiled[text] = namespace["_candidate"]
        return self.compiled[text]

    def _same_signature(self, candidate, value) -> bool:
        try:
            code = self._function(candidate).__code__
        except Exception:
            return False  # e.g. a candidate spelling that does not import
        return (code.co_argcount, code.co_flags & 0x0C) == (value.__code__.co_argcount, value.__code__.co_flags & 0x0C)

    def _minimal(self, candidate):
        """Drop parameters the rendered function does not depend on (fuse_conv_bn_eval without bn)."""
        from jinja2 import UndefinedError

        from generator.errors import TemplateRenderError

        template, params = candidate
        text = self._render(candidate)
        for index in reversed(range(len(params))):
            fewer = params[:index] + params[index + 1 :]
            try:
                if self._render((template, fewer)) == text:
                    params = fewer
            except (UndefinedError, TemplateRenderError):
                pass  # the function needs this parameter
        return template, params


def _torchs_own(value: types.FunctionType) -> bool:
    """Whether a template may stand for `value` by behaviour, not only by equivalent code.

    Behaviour is tried on a few real modules and sentinel patterns: enough for torch's
    own fusers and getters, which the templates transcribe, but a user's function may
    branch on what the trials never build (`if conv.groups > 1`), and a template that
    matches the trials would then be "proven equal" yet differ. So a user's function
    becomes a template only with equivalent code; else it is named by its import path
    or refused.
    """
    return (value.__module__ or "").partition(".")[0] == "torch"


def _same_objects(candidate, other) -> bool:
    """Same template and object parameters; scalar parameters may differ."""
    return candidate[0] == other[0] and all(
        value == other_value
        for (key, value), (_, other_value) in zip(candidate[1], other[1])
        if key not in SCALAR_CHOICES
    )


def _similarity(text: str, value: types.FunctionType) -> float:
    """Shared identifiers between a rendering and the function's source (0 without source)."""
    import inspect

    try:
        source = inspect.getsource(value)
    except (OSError, TypeError):
        return 0.0
    ours, theirs = set(_WORD.findall(text)), set(_WORD.findall(source))
    return len(ours & theirs) / len(ours | theirs)


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _related_objects(value: types.FunctionType, config) -> list[tuple[object, str]]:
    """Objects a template parameter may stand for, with their paths: the config's modules and
    pattern, what the function's closure holds and what its code reaches through globals."""
    found: list[tuple[object, str]] = []

    def add(obj):
        if any(obj is seen for seen, _ in found) or isinstance(obj, (types.ModuleType, str, int, float, bool)):
            return
        path = object_path(obj) if obj is not None else None
        if path is not None:
            found.append((obj, path))

    for field in ("fused_module", "root_module", "qat_module", "reference_quantized_module"):
        add(getattr(config, field))
    for cell in value.__closure__ or ():
        try:
            add(cell.cell_contents)
        except ValueError:
            pass
    names = _code_names(value.__code__)
    for name in names:
        if name in value.__globals__:
            _reach(value.__globals__[name], names, add, depth=0)
    pattern = config.pattern if config.pattern is not None else config._pattern_complex_format
    for element in _flatten(pattern):
        add(element)
    return found


def _reach(obj, names: list[str], add, depth: int) -> None:
    if not isinstance(obj, types.ModuleType):
        add(obj)
        return
    if depth < 3:
        for name in names:
            if name in vars(obj):
                _reach(vars(obj)[name], names, add, depth + 1)


def _code_names(code: types.CodeType) -> list[str]:
    names = list(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names += [n for n in _code_names(const) if n not in names]
    return names


def _flatten(pattern):
    if isinstance(pattern, tuple):
        for item in pattern:
            yield from _flatten(item)
    elif pattern is not None:
        yield pattern


_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")


def valid_spec_name(name: str) -> bool:
    """A spec file name regenerate will read: a lower-case identifier, not a keyword, not starting with `_`."""
    return bool(_IDENTIFIER.fullmatch(name)) and not name.startswith("_") and not keyword.iskeyword(name)
