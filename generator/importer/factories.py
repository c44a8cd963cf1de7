"""Import: a callable made by a factory, named as the call that makes it.

Builders written for torch 1.13, and many vendors' helpers, make fusers with factories:
`reverse2(fuse_conv_bn)`, `reverse_sequential_wrapper2(nni.ConvReLU2d)`, a backend's
own `make_fuser(cls)`. What such a builder returns is a closure whose qualified name
(`reverse2.<locals>.reversed`) names its factory and whose cells hold the arguments
the factory was called with. When the factory is a module-level function that can be
imported and each argument can be named (a public torch name, an import path, a plain
constant, a tuple of those, or again a callable made by a factory), the spec writes
`call(factory, arguments...)`; a `functools.partial` of nameable parts is written
`partial(function, arguments...)`.

A name is a claim: the call is made again and the callable it returns must equal the
builder's by the comparator (same code and closure contents, or same behaviour), like
every other callable `import` names. What cannot be named raises `CannotName` with
the reason, for `callable_names` to put in its one-line refusal.
"""

from __future__ import annotations

import functools
import inspect
import math
import sys
import types

from generator import model
from generator.errors import GeneratorError
from generator.importer.object_paths import object_path, unimportable_reason

# Closures of closures of ...: a real factory nests one or two levels.
MAX_DEPTH = 4
_PLAIN = (bool, int, float, str, type(None))
LIST = "builtins.list"


class CannotName(Exception):
    """Why a made callable cannot be written as the call that makes it. `local`: it is no factory's result
    but a function's local (the fix is to define it at module level, not to name a factory)."""

    def __init__(self, reason: str, local: bool = False):
        super().__init__(reason)
        self.local = local


def is_made(value) -> bool:
    """A closure of some function, or a functools.partial: what this module names."""
    if type(value) is functools.partial:
        return True
    return isinstance(value, types.FunctionType) and "<locals>" in value.__qualname__


def made_call(value, attribute: str, config) -> model.Call:
    """The call that makes `value`, proven to make an equal callable; CannotName otherwise."""
    from generator.review.callables import callables_match

    call = _call(value, depth=0)
    try:
        made = build(call)
    except Exception as error:  # the factory is user code: any failure means no name
        raise CannotName(f"calling {_spelling(call)} again raised {type(error).__name__}: {error}") from None
    if not callable(made):
        raise CannotName(f"it is local to {_spelling(call)}, which returns a {type(made).__name__}, not a callable")
    equal, how = callables_match(attribute, made, value, config)
    if not equal:
        raise CannotName(f"{_spelling(call)} makes a different callable ({how})")
    return call


def _call(value, depth: int) -> model.Call:
    if depth > MAX_DEPTH:
        raise CannotName("it is made by factories nested too deep")
    if type(value) is functools.partial:
        function = _argument(value.func, depth + 1)
        args = tuple(_argument(a, depth + 1) for a in value.args)
        keywords = tuple((k, _argument(v, depth + 1)) for k, v in value.keywords.items())
        return model.Call(model.TorchRef(model.PARTIAL), (function, *args), keywords)
    return _closure_call(value, depth)


def _closure_call(value: types.FunctionType, depth: int) -> model.Call:
    factory_name = value.__qualname__.rpartition(".<locals>.")[0]
    if "<locals>" in factory_name:
        raise CannotName(f"it is made by {factory_name}, which is itself a local function")
    factory = _module_attribute(value.__module__, factory_name)
    if not isinstance(factory, types.FunctionType) or not _makes(factory.__code__, value.__code__):
        raise CannotName(f"its factory {value.__module__}.{factory_name} is not a module-level function")
    path = object_path(factory)
    if path is None:
        raise CannotName(f"its factory {value.__module__}.{factory_name} cannot be imported by a generated module")
    cells = dict(zip(value.__code__.co_freevars, value.__closure__ or ()))
    args, keywords = [], []
    for parameter in inspect.signature(factory).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise CannotName(f"its factory {path} takes *{parameter.name}, which a closure does not record")
        if parameter.name not in cells:
            if parameter.default is parameter.empty and not _returns(factory, value.__name__):
                # a function that defines it for its own use (a test method, a builder), not a factory
                raise CannotName(f"it is local to {factory_name}(), which does not return it", local=True)
            if parameter.default is parameter.empty:
                raise CannotName(f"its factory {path}'s argument {parameter.name} is not kept by the closure")
            continue  # left to its default; the proof below checks that the default was used
        try:
            named = _argument(cells[parameter.name].cell_contents, depth + 1)
        except ValueError:
            raise CannotName(f"its factory {path}'s argument {parameter.name} is unset") from None
        if parameter.kind is parameter.KEYWORD_ONLY:
            keywords.append((parameter.name, named))
        else:
            args.append(named)
    return model.Call(model.TorchRef(path), tuple(args), tuple(keywords))


def _argument(value, depth: int):
    """A factory argument as the spec writes it; CannotName if it has no name."""
    if isinstance(value, float) and math.isnan(value):
        raise CannotName(f"it holds {value!r}, which equals nothing, so no comparison can prove a call made again")
    if isinstance(value, _PLAIN):
        return value
    if type(value) is tuple:
        return tuple(_argument(item, depth) for item in value)
    if type(value) is list:  # `partial(f, [a, b])`: written as the call that makes an equal list, list((a, b))
        return model.Call(model.TorchRef(LIST), (tuple(_argument(item, depth) for item in value),))
    path = object_path(value)
    if path is not None and unimportable_reason(path) is not None:
        raise CannotName(f"it holds {path}: {unimportable_reason(path)}")
    if path is not None:
        return model.TorchRef(path)
    if is_made(value):
        return _call(value, depth)
    raise CannotName(f"it holds {_describe(value)}, which has no import path")


def _returns(function: types.FunctionType, name: str) -> bool:
    """Whether `function` returns its local function `name`, as a factory does (`return inner`, a lambda,
    `return wraps(f)(inner)`), not merely passes it on (`return config.set_fuser_method(inner)`); True where
    its source cannot be read."""
    import ast
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError, ValueError):
        return True

    def made(value) -> bool:
        if isinstance(value, ast.Name):
            return value.id == name
        if isinstance(value, ast.Lambda):
            return True
        return isinstance(value, ast.Call) and not isinstance(value.func, ast.Attribute) and any(
            made(argument) for argument in value.args
        )

    return any(made(node.value) for node in ast.walk(tree) if isinstance(node, ast.Return) and node.value)


def _module_attribute(module_name: str, qualname: str):
    target = sys.modules.get(module_name)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    return target


def _makes(factory: types.CodeType, made: types.CodeType) -> bool:
    """`made` is the code of a function defined inside `factory` (at any depth)."""
    for const in factory.co_consts:
        if isinstance(const, types.CodeType) and (const is made or _makes(const, made)):
            return True
    return False


def build(call: model.Call):
    """The object `call` stands for: its factory imported and called with its arguments."""
    from generator.building.resolution import load_object

    function = load_object(call.function)
    return function(*(_value(a) for a in call.args), **{k: _value(v) for k, v in call.keywords})


def _value(argument):
    if isinstance(argument, model.TorchRef):
        from generator.building.resolution import load_object

        return load_object(argument)
    if isinstance(argument, model.Call):
        return build(argument)
    if isinstance(argument, tuple):
        return tuple(_value(a) for a in argument)
    return argument


def _spelling(call: model.Call) -> str:
    from generator.spelling import python_source

    try:
        return python_source(call)
    except GeneratorError:  # a path no import is known for: its dotted name still says what it is
        return call.function.path + "(...)"


def _describe(value) -> str:
    name = getattr(value, "__qualname__", None)
    if isinstance(name, str):
        return f"{getattr(value, '__module__', '?')}.{name}"
    return f"a {type(value).__name__}"
