"""Import: names for the callables a BackendConfig holds (fuser methods and node getters).

A callable is named, in this order: a public torch name (`fusers.fuse_conv_bn`) or an
import path (a module-level function of the user's own code is imported, not copied);
a `_sequential_wrapper2(X)` closure as `sequential(X)`; a callable made by a factory as
the call that makes it (`factories`); anything else as one of the project's function
templates, rendered with candidate parameters and proven equal by the comparator's code
or behaviour check. What none of these names is an error.
"""

from __future__ import annotations

import itertools
import re
import types

from generator import dsl, model
from generator.errors import UnnamedCallableError
from generator.importer import factories
from generator.importer.object_paths import home_of, object_path, path_ref, readable_name, refuse_unimportable
from generator.project import Templates

# Values of template parameters that are not torch objects, by parameter name.
SCALAR_CHOICES = {"side": ("left", "right"), "with_bn": (False, True), "relu": (False, True)}


class CallableNamer:
    """Names each fuser method or node getter the way a spec can write it."""

    def __init__(self, templates: Templates):
        self.templates = _Templates(templates)
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
            refuse_unimportable(path, label, field)
            return model.TorchRef(path)
        fused = _sequential_argument(value)
        if fused is not None:
            class_name = getattr(fused, "__name__", "module")
            return model.FunctionDef(
                dsl.sequential_fuser_name(class_name), "sequential", (("fused_module", path_ref(fused, label, field)),)
            )
        reason, local = None, False
        if factories.is_made(value):
            try:
                return factories.made_call(value, attribute, config)
            except factories.CannotName as error:
                reason, local = str(error), error.local  # a template may still name it; else this is why not
        match = self.templates.match(value, attribute, config, label)
        if match is None:
            if isinstance(value, types.MethodType) and not _defined_in_its_class(value):
                raise UnnamedCallableError(_bound_method_refusal(value, label, field))
            if local:
                raise UnnamedCallableError(
                    f"pattern {label}: cannot name {field} {readable_name(value)}: {reason}; define it at module "
                    f"level of {home_of(value)}"
                )
            if reason is not None:
                raise UnnamedCallableError(
                    f"pattern {label}: cannot name {field} {readable_name(value)}: {reason}; define it"
                    f"{' with def' if getattr(value, '__name__', '') == '<lambda>' else ''}, or the "
                    f"factory that makes it and each argument it is given, at module level of {home_of(value)}"
                )
            raise UnnamedCallableError(
                f"pattern {label}: cannot name {field} {readable_name(value)}: it is not a public torch name, "
                "not importable by path and matches no template in templates/functions/; define it "
                f"{'with def ' if getattr(value, '__name__', '') == '<lambda>' else ''}(or bind the object) at "
                f"module level of {home_of(value)}"
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


def _defined_in_its_class(method: types.MethodType) -> bool:
    """A method its class defines (`def fuse(self, ...)`), not a function kept as a class attribute."""
    qualname = getattr(method.__func__, "__qualname__", "")
    return any(qualname.startswith(f"{c.__qualname__}.") for c in type(method.__self__).__mro__)


def _bound_method_refusal(method: types.MethodType, label: str, field: str) -> str:
    """Why a function kept as a class attribute and read through an instance the builder made
    (`self._fuser_method` in torch's test) has no name, and what to register instead: the function read from
    the class, or the object bound at module level."""
    function, owner = method.__func__, method.__self__
    fused = _sequential_argument(function)
    what = f"_sequential_wrapper2({object_path(fused) or readable_name(fused)})" if fused is not None else None
    attribute = next((n for c in type(owner).__mro__ for n, v in vars(c).items() if v is function), None)
    read = f"{type(owner).__qualname__}.{attribute}" if attribute else readable_name(function)
    return (
        f"pattern {label}: cannot name {field} {what or readable_name(function)}: it is bound as a method of the "
        f"{type(owner).__name__} object the builder read it through (self.{attribute or function.__name__}), "
        f"which has no import path, and a bound method passes that object as its first argument; register the "
        f"function itself, read from the class ({read}), or bind the object at module level of {home_of(type(owner))}"
    )


def _sequential_argument(value):
    """X for a closure made by torch's `_sequential_wrapper2(X)`, else None."""
    from torch.ao.quantization.fuser_method_mappings import _sequential_wrapper2

    probe = _sequential_wrapper2(object)
    if not isinstance(value, types.FunctionType) or value.__code__ is not probe.__code__:
        return None
    return value.__closure__[0].cell_contents


class _Templates:
    """The project's function templates, tried with candidate parameters."""

    def __init__(self, templates: Templates):
        from generator.building.rendering import make_environment, searched

        templates = searched(templates)
        self.env = make_environment(templates)
        self.compiled: dict[str, object] = {}
        self.rendered: dict[tuple, str] = {}
        names = [n.removeprefix("functions/") for n in templates.every() if n.startswith("functions/")]
        self.names = sorted(n.removesuffix(".py.j2") for n in names if "/" not in n and n.endswith(".py.j2"))

    def parameters(self, template: str) -> list[str]:
        from generator.building.rendering import template_parameters

        return sorted(template_parameters(self.env, template) - {"name"})

    def match(self, value, attribute: str, config, label: str):
        """(template, params) of the first candidate with equivalent code, else with the same behaviour."""
        if not isinstance(value, types.FunctionType):
            return None
        objects = _related_objects(value, config)
        # Several templates can be code-equivalent (a getter that returns the middle of three
        # nodes); the one whose name reads like the function and its pattern is tried first.
        hint = f"{value.__name__} {label}".lower()
        templates = sorted(self.names, key=lambda t: (-sum(word in hint for word in t.split("_")), t))
        candidates = [c for c in self._candidates(templates, objects) if self._same_signature(c, value)]
        from generator.review.callables import callables_match, equivalent_functions

        for _template, group in itertools.groupby(candidates, key=lambda c: c[0]):
            equivalent = [c for c in group if equivalent_functions(self._function(c), value)]
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
            from generator.building.rendering import render_function

            template, params = candidate
            self.rendered[candidate] = render_function(self.env, model.FunctionDef("_candidate", template, params))
        return self.rendered[candidate]

    def _function(self, candidate):
        text = self._render(candidate)
        if text not in self.compiled:
            from generator.building.expansion import torch_refs
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
