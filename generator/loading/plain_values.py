"""A loaded spec holds plain values: each str, number, bytes or container in its model is of that very type.

A spec may pass an instance of its own subclass of str (or int, float, tuple, ...), whose methods
are spec code: its `__eq__`, `__hash__` or `__repr__` would run in later stages (expansion,
rendering, the checks), outside the guard that runs spec code (generator/user_code.py), where
what it prints reaches standard output and what it raises is no located error, and in
whichever of a build's processes handles that module. Loading refuses such a value, at the
spec line of the value that holds it, before anything else sees it. So does it any value of another
type than the model's own classes (a spec may build those by hand around objects of its own
classes, or subclass them): its methods would run as late.
"""

from __future__ import annotations

import dataclasses
import io
import operator
import pickle

from generator import model
from generator.errors import SpecFieldError
from generator.model import ModuleSpec, SourceLocation

_PLAIN = frozenset({str, int, float, bool, bytes, type(None), SourceLocation})  # a location is the generator's
_CONTAINERS = frozenset({tuple, list, frozenset, set})
_BUILTIN_BASES = (bool, str, int, float, bytes, tuple, list, dict, frozenset, set)
# The model's own classes, by exact type: a spec's subclass of one is spec code like any other class.
_MODEL = frozenset(
    kind for kind in vars(model).values()
    if isinstance(kind, type) and kind.__module__ == model.__name__ and dataclasses.is_dataclass(kind)
)  # fmt: skip
_fields: dict[type, object] = {}


def require_plain(module: ModuleSpec) -> None:
    """Raise SpecFieldError for the first value in `module` whose type subclasses a built-in one
    or is none of the model's own classes (frozen dataclasses, gone through field by field)."""
    if _all_plain(module):
        return
    found = _first_odd(module, located=True)  # rare: only then is the walk made, keeping locations
    if found is None:
        return
    kind, where = found
    name = _TYPE_NAME.__get__(kind)  # not kind.__name__: a spec's metaclass could run its code
    base = next((b.__name__ for b in _BUILTIN_BASES if issubclass(kind, b)), None)
    if base is None:
        message = (
            f"{name} is not a value the DSL makes, and its own code would run long after the spec; "
            "give torch names, numbers, strings, tuples and the DSL's own values"
        )
    else:
        message = (
            f"{name} is a subclass of {base}, whose own code would run long after the spec; "
            f"give a plain {base} ({base}(value))"
        )
    raise SpecFieldError(message, where)


_TYPE_NAME = vars(type)["__name__"]


def _all_plain(module: ModuleSpec) -> bool:
    """Whether every value in `module` is plain: the walk of _first_odd, made by pickle.

    A spec model is thousands of objects. The C pickler goes through containers and exact built-in
    values itself and hands every other object to `reducer_override`, which sees its type and goes
    on into a model class's fields: three times faster than walking in Python. What it writes is
    thrown away. If pickling fails for any other reason, the walk decides.
    """
    try:
        _Walker(_Discarded(), protocol=pickle.HIGHEST_PROTOCOL).dump(module)
    except _Odd:
        return False
    except Exception:  # noqa: BLE001 - whatever stops the pickler, the walk in Python answers instead
        return _first_odd(module) is None
    return True


class _Odd(Exception):
    """A value whose type subclasses a built-in type."""


class _Discarded:
    def write(self, data) -> int:
        return len(data)


class _Walker(pickle.Pickler):
    def reducer_override(self, value):
        if value is tuple:
            return NotImplemented  # the callable of each reduction below, written by name
        kind = type(value)  # type(), not isinstance: a spec class's __class__ could run its code
        if kind not in _MODEL:
            raise _Odd  # exact built-in values never come here: the pickler writes them itself
        return (tuple, (_fields_of(kind)(value),))


def _fields_of(kind: type):
    """A function giving the field values of one of the model's classes as a tuple (none for a
    location, plain by construction)."""
    if kind not in _fields:
        if kind is SourceLocation:
            _fields[kind] = lambda item: ()
        else:
            names = tuple(f.name for f in dataclasses.fields(kind))
            _fields[kind] = operator.attrgetter(*names) if len(names) > 1 else (
                lambda item, name=names[0]: (getattr(item, name),))  # fmt: skip
    return _fields[kind]


def _first_odd(module: ModuleSpec, located: bool = False):
    """The type of the first value that is not plain (with the location of what holds it, when
    `located`), or None."""
    walked: set[int] = set()
    stack: list = [(module, module.location)] if located else [module]
    while stack:
        value, where = stack.pop() if located else (stack.pop(), None)
        kind = type(value)  # type(), not isinstance: a spec class's __class__ could run its code
        if kind in _PLAIN:
            continue
        if kind not in _CONTAINERS and kind is not dict and kind not in _MODEL:
            return kind, where
        if id(value) in walked:
            continue
        walked.add(id(value))
        if kind in _CONTAINERS:
            items = value
        elif kind is dict:
            items = [item for pair in value.items() for item in pair]
        else:
            items = _fields_of(kind)(value)
            where = getattr(value, "location", None) or where if located else None
        stack.extend(((item, where) for item in items) if located else items)
    return None


def unpickled(data: bytes):
    """What `data` pickles, made of the model's own classes and the built-in values pickle spells by
    opcode, never anything else: a kept entry or a load's answer is data, never code to run."""
    return _ModelUnpickler(io.BytesIO(data)).load()


class _ModelUnpickler(pickle.Unpickler):
    def find_class(self, module_name: str, name: str):
        found = getattr(model, name, None) if module_name == model.__name__ else None
        if isinstance(found, type) and found in _MODEL:
            return found
        raise pickle.UnpicklingError(f"{module_name}.{name} is not a class of the model")
