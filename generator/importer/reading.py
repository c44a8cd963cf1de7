"""Import: read an existing dynamic builder's BackendConfig into the spec to write.

`python -m generator import MODULE:FUNCTION` calls the builder once and turns what it
returns into the model the spec stages already use (`model.DTypeConfig`,
`model.PatternConfig`, `model.FunctionDef`, `model.TorchRef`), plus the names a
reader needs: dtype configs, constraints and shared dtype-config lists named by
`dtype_names`, callables named by `callable_names`, every other object by its path
(`object_paths`). `spec_writer` writes that model as a spec file.

A BackendConfig shows only its final state: a pattern registered twice appears once,
at its first position with the later content. That is exactly what the builder
returns, so writing it that way loses nothing the equality proof compares.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import importlib
import keyword
import os
import pkgutil
import re
import sys
import types
import weakref
from dataclasses import dataclass
from pathlib import Path

from generator import model, user_code
from generator.errors import (
    BuilderCallError,
    BuilderImportError,
    NotABackendConfigError,
    UnusablePatternConfigError,
)
from generator.importer import pattern_order
from generator.importer.callable_names import CallableNamer
from generator.importer.dtype_names import DTypeNamer, GlobalNames, shared_lists, used_dtype_configs
from generator.importer.object_paths import home_of, path_ref
from generator.project import Templates

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
# generated modules import from any folder must too (`validation`).
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


def find_builder(target: str, root: Path):
    """(builder, module) for MODULE:FUNCTION, the module imported, the builder not called: one line
    for a missing or misspelt module or function, with the close name where there is one."""
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
            hint = _close_module(error, module_name, root)
            raise BuilderImportError(f"cannot import {module_name}: {type(error).__name__}: {error}{hint}") from None
    with user_code.running(BuilderImportError, f"looking up {function_name} in {module_name}", root):
        # A module's __getattr__ is user code: it may raise, or exit.
        builder = _attribute(module, function_name)
        if builder is not None and not callable(builder):
            raise BuilderImportError(
                f"{module_name}.{function_name} is a {type(builder).__name__}, not a function; name the function "
                "that returns the BackendConfig"
            )
        if not callable(builder):
            hint = _close_function(module, function_name)
            raise BuilderImportError(f"{module_name} has no function {function_name!r}{hint}")
    return builder, module


def load_builder(target: str, root: Path):
    """(builder function, module, the BackendConfig it returns, the legacy modules' globals before the call)
    for MODULE:FUNCTION."""
    from generator.importer.dependencies import module_globals

    builder, module = find_builder(target, root)
    before = module_globals()
    with user_code.running(BuilderCallError, f"{target}()", root):
        try:
            backend_config, local_names = _called_keeping_its_locals(builder)
        except Exception as error:
            advice = _what_to_do(error, builder, split_target(target)[1], root)
            raise BuilderCallError(f"{target}() raised {type(error).__name__}: {error}{advice}") from None
    from torch.ao.quantization.backend_config import BackendConfig

    if not isinstance(backend_config, BackendConfig):
        raise NotABackendConfigError(f"{target}() returned {type(backend_config).__name__}, not a BackendConfig")
    if type(backend_config) is not BackendConfig:
        raise NotABackendConfigError(
            f"{target}() returned a {type(backend_config).__name__}, a subclass of BackendConfig that may answer "
            "otherwise than torch's; a spec builds torch's own class: return a BackendConfig"
        )
    BUILDER_LOCALS[backend_config] = local_names
    unstable = pattern_order.iterated_sets(module, local_names)
    ORDER_NOTES[backend_config] = pattern_order.fix_order(backend_config, unstable) if unstable else None
    return builder, module, backend_config, before


def order_notes(backend_config) -> list[str]:
    """What import says once of a builder whose pattern order varies between runs (`pattern_order`)."""
    note = ORDER_NOTES.get(backend_config)
    return [note] if note else []


# A BackendConfig load_builder returned -> the note on the order the spec fixes, if its builder's varies.
ORDER_NOTES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# A BackendConfig load_builder returned -> the builder's local variables when it returned ((name, value), in
# the order it bound them): the names its author gave the dtype configs it made there (`weighted_int8 = ...`).
BUILDER_LOCALS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _called_keeping_its_locals(builder):
    """(what builder() returns, the local variables of the function it runs as that returns). Only the frame
    called from here is read (a partial's or a method's function too), not the helpers it calls."""
    here = sys._getframe()
    found: list[tuple[str, object]] = []
    previous = sys.getprofile()

    def profile(frame, event, argument):
        if event == "return" and frame.f_back is here and not found:
            found.append((frame.f_code, dict(frame.f_locals)))

    sys.setprofile(profile)
    try:
        result = builder()
    finally:
        sys.setprofile(previous)
    if not found:
        return result, []
    code, local_values = found[0]
    names = _names_bound_once(code)
    return result, [(n, v) for n, v in local_values.items() if n in names]


def _names_bound_once(code) -> set[str]:
    """The local names the function's own statements bind once, outside loops: a name a loop rebinds holds
    only its last value, which would name one of several constants for all of them."""
    import ast
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(code)))
    except (OSError, TypeError, SyntaxError, ValueError):  # no source: no names taken from it
        return set()
    function = tree.body[0] if tree.body and isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    if function is None:
        return set()
    counts: dict[str, int] = {}
    looped: set[str] = set()

    def visit(statements, in_loop: bool) -> None:
        for statement in statements:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            loop = in_loop or isinstance(statement, (ast.For, ast.AsyncFor, ast.While))
            if isinstance(statement, (ast.Assign, ast.AnnAssign)):
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        counts[target.id] = counts.get(target.id, 0) + 1
                        if loop:
                            looped.add(target.id)
            for field in ("body", "orelse", "finalbody", "handlers"):
                visit(getattr(statement, field, []) or [], loop)

    visit(function.body, False)
    return {name for name, count in counts.items() if count == 1 and name not in looped}


def _close_module(error: Exception, module_name: str, root: Path) -> str:
    """" (did you mean pkg.backend_config?)" when the module missing is the one named (or a package of it)."""
    missing = getattr(error, "name", None) if isinstance(error, ModuleNotFoundError) else None
    if not missing or not (module_name == missing or module_name.startswith(missing + ".")):
        return ""  # a module the builder's own code imports is missing: the message names it
    package, _, last = missing.rpartition(".")
    paths = getattr(sys.modules.get(package), "__path__", None) if package else [str(root)]
    names = [m.name for m in pkgutil.iter_modules(paths)] if paths is not None else []
    close = difflib.get_close_matches(last, names, n=1)
    if not close:
        return ""
    return f" (did you mean {package + '.' if package else ''}{close[0]}{module_name[len(missing):]}?)"


def _close_function(module, function_name: str) -> str:
    first = function_name.split(".")[0]
    names = [n for n, value in vars(module).items() if not n.startswith("_") and callable(value)]
    close = difflib.get_close_matches(first, names, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _what_to_do(error: Exception, builder, function_name: str, root: Path) -> str:
    """Where the builder raised and what to do: import calls it with no arguments from the project root."""
    traceback = error.__traceback__
    while traceback is not None and traceback.tb_frame.f_code.co_filename == __file__:
        traceback = traceback.tb_next  # import's own frames (load_builder, _called_keeping_its_locals)
    if error.__traceback__ is not None and traceback is None:  # the call itself: its arguments
        return (
            f"; import calls {function_name}() with no arguments: define a function that calls it with them at "
            f"module level of {home_of(builder)}, and import that"
        )
    where = user_code.user_line(error, root)
    if where is not None and os.path.isabs(where.file) and not os.path.relpath(where.file).startswith(".."):
        where = model.SourceLocation(os.path.relpath(where.file), where.line)  # a builder outside the project
    at = f" (at {where})" if where is not None else ""
    return f"{at}; import calls it with no arguments from the project root: make it return its BackendConfig there"


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


def read_backend_config(name: str, target: str, builder, module, backend_config, templates: Templates) -> ImportedSpec:
    for config in backend_config.configs:
        _refuse_values_torch_cannot_use(config, _describe(config))
    names = GlobalNames.of(module, BUILDER_LOCALS.get(backend_config, ()))
    dtypes = DTypeNamer(names, used_dtype_configs(backend_config))
    callables = CallableNamer(templates)
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


def _pattern_config(config, dtypes: DTypeNamer, callables: CallableNamer) -> model.PatternConfig:
    label = _describe(config)
    dtype_configs = tuple(dtypes.name(dc) for dc in _dtype_configs(config, label))
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
        dtype_configs=dtype_configs,
        observation_type=config.observation_type.name,
        num_tensor_args_to_observation_type=tuple(
            (count, kind.name) for count, kind in config._num_tensor_args_to_observation_type.items()
        ),
        input_type_to_index=tuple(config._input_type_to_index.items()),
        **settings,
    )


def _refuse_values_torch_cannot_use(config, label: str) -> None:
    """torch's setters store what they are given unchecked; a value its flow cannot read is one line here."""
    from torch.ao.quantization.backend_config import BackendPatternConfig, ObservationType

    if type(config) is not BackendPatternConfig:
        raise UnusablePatternConfigError(
            f"pattern {label}: a {type(config).__name__}, a subclass of BackendPatternConfig; a spec builds "
            "torch's own class: register BackendPatternConfig itself"
        )
    if not isinstance(config.observation_type, ObservationType):
        raise UnusablePatternConfigError(
            f"pattern {label}: observation_type is {config.observation_type!r}, not an ObservationType; give "
            "set_observation_type a member such as ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT"
        )
    for count, kind in config._num_tensor_args_to_observation_type.items():
        if not isinstance(kind, ObservationType) or not isinstance(count, int) or isinstance(count, bool):
            raise UnusablePatternConfigError(
                f"pattern {label}: num_tensor_args_to_observation_type maps {count!r} to {kind!r}; give it "
                "int counts mapped to ObservationType members"
            )
    for dtype_config in _dtype_configs(config, label):
        _refuse_unusable_dtypes(dtype_config, label)


def _refuse_unusable_dtypes(dtype_config, label: str) -> None:
    import torch
    from torch.ao.quantization.backend_config import DTypeConfig

    if type(dtype_config) is not DTypeConfig:
        raise UnusablePatternConfigError(
            f"pattern {label}: a {type(dtype_config).__name__}, a subclass of DTypeConfig; a spec builds "
            "torch's own class: use DTypeConfig itself"
        )
    fields = [(f"{side}_dtype", getattr(dtype_config, f"{side}_dtype_with_constraints").dtype)
              for side in ("input", "output", "weight")]
    fields.append(("bias_dtype", dtype_config.bias_dtype))
    for field, value in fields:
        if value is not None and not isinstance(value, torch.dtype):
            raise UnusablePatternConfigError(
                f"pattern {label}: a dtype config's {field} is {value!r}, not a torch dtype; give a dtype such as "
                "torch.quint8" + (" (bias_dtype takes no constraints)" if field == "bias_dtype" else "")
            )
    if dtype_config.is_dynamic not in (None, True, False):
        raise UnusablePatternConfigError(
            f"pattern {label}: a dtype config's is_dynamic is {dtype_config.is_dynamic!r}; give True, False or None"
        )


def _dtype_configs(config, label: str) -> list:
    """The pattern's dtype configs: a list of DTypeConfigs, as torch's flow reads and a spec writes them.

    torch's set_dtype_configs stores whatever it is given; one DTypeConfig there makes its flow
    fail (it iterates the value), and a tuple or other container is not what a spec writes.
    """
    from torch.ao.quantization.backend_config import DTypeConfig

    value = config.dtype_configs
    if isinstance(value, DTypeConfig):
        raise UnusablePatternConfigError(
            f"pattern {label}: dtype_configs is one DTypeConfig, not a list of them: torch stores it, but its "
            "quantization flow iterates it and fails; give set_dtype_configs a list ([dtype_config])"
        )
    if not isinstance(value, list):
        raise UnusablePatternConfigError(
            f"pattern {label}: dtype_configs is a {type(value).__name__}, not a list of DTypeConfigs: torch's "
            "flow may iterate it, but a generated module builds a list and the equality proof compares the "
            "container's type too, so no spec could be proven equal; give set_dtype_configs a list"
        )
    for item in value:
        if not isinstance(item, DTypeConfig):
            raise UnusablePatternConfigError(
                f"pattern {label}: dtype_configs holds a {type(item).__name__}, not a DTypeConfig; "
                "give set_dtype_configs a list of DTypeConfigs"
            )
    return value


def _describe(config) -> str:
    from generator.building.torch_names import describe_pattern

    pattern = config.pattern if config.pattern is not None else config._pattern_complex_format
    return describe_pattern(pattern)


def _pattern(value, label: str):
    if isinstance(value, tuple):
        return tuple(_pattern(item, label) for item in value)
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return value
    return path_ref(value, label, "pattern")


def _ref_or_none(value, label: str, field: str):
    return None if value is None else path_ref(value, label, field)


_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")


def valid_spec_name(name: str) -> bool:
    """A spec file name regenerate will read: a lower-case identifier, not a keyword, not starting with `_`."""
    return bool(_IDENTIFIER.fullmatch(name)) and not name.startswith("_") and not keyword.iskeyword(name)


def builder_location(target: str, root: Path) -> model.SourceLocation | None:
    """Where MODULE:FUNCTION is defined, found without running any code: the module's file as the path finder
    finds it (the project root first, as import runs it), the line of the function's `def` (else 1)."""
    import ast
    from importlib.machinery import PathFinder

    module_name, function = split_target(target)
    search, found, parts = [str(root), *sys.path], None, module_name.split(".")
    for index in range(len(parts)):
        found = PathFinder.find_spec(".".join(parts[: index + 1]), search)
        if found is None:
            return None
        search = list(found.submodule_search_locations or [])
    try:
        tree = ast.parse(Path(found.origin).read_bytes())
    except (OSError, SyntaxError, ValueError, TypeError):
        return None
    name = function.rpartition(".")[2]
    defined = (n.lineno for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name)
    return model.SourceLocation(user_code.shown(found.origin, root), next(defined, 1))
