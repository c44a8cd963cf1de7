"""The values spec code hands the vocabulary, and how the vocabulary checks each and names a wrong one.

A torch name in a spec is a lazy `Ref` (`nn.Conv2d` imports nothing), and Module(...)
returns a `ModuleValue`. The vocabulary (`generator.dsl`) checks the arguments a spec
passes with the functions here (`spec_function` for its keywords, `identifier`,
`text`, `to_ref`, `to_dtype`, ...) and turns them into the model's values; a wrong one
is named in the spec's own words (`describe`) at the spec line that wrote it
(`generator.loading.locations`).
"""

from __future__ import annotations

import difflib
import functools
import inspect
import keyword
import unicodedata
from types import SimpleNamespace

from generator import model
from generator.errors import GeneratorError, SpecFieldError
from generator.loading.locations import blame, spec_location
from generator.model import SourceLocation


class Ref:
    """A lazy dotted name: attribute access extends the path, nothing is imported."""

    __slots__ = ("_location", "_path")

    def __init__(self, path: str, location: SourceLocation | None = None):
        self._path = path
        self._location = location

    def __getattr__(self, name: str) -> Ref:
        if name.startswith("__"):
            raise AttributeError(name)
        return Ref(f"{self._path}.{name}", spec_location())

    def __getitem__(self, name: str) -> Ref:
        """`nn[f"Conv{d}d"]`: a computed attribute name."""
        return Ref(f"{self._path}.{name}", spec_location())

    def __repr__(self) -> str:
        return f"Ref({self._path!r})"

    def to_model(self) -> model.TorchRef:
        return model.TorchRef(self._path, self._location)


class ModuleValue(SimpleNamespace):
    """What Module(...) returns: the one value a spec file's MODULE may hold."""


def describe(value) -> str:
    """A spec value in the spec's own words, for error messages."""
    if isinstance(value, Ref):
        return _spelling(value._path)
    if isinstance(value, model.TorchRef):
        return _spelling(value.path)
    if isinstance(value, model.DTypeConfig):
        return f"the dtype config {value.name}"
    if isinstance(value, model.DTypeWithConstraints):
        return f"the DTypeWithConstraints {value.name}"
    if isinstance(value, model.FixedQParams):
        return f"the dtype config {value.base.name}"
    if isinstance(value, model.PatternConfig):
        return "a config(...)"
    if isinstance(value, model.FunctionDef):
        return f"the function {value.name}"
    if isinstance(value, model.Call):
        return f"the call {_spelling(value.function.path)}(...)"
    if isinstance(value, list):
        return f"[{', '.join(describe(v) for v in value)}]"
    if isinstance(value, tuple):
        return f"({', '.join(describe(v) for v in value)})"
    if isinstance(value, dict):
        return "a dict"
    if type(value) is ModuleValue:  # not isinstance: a spec class's __class__ could claim to be one
        return "a Module(...)"
    if isinstance(value, model.Backend):
        return f"the Backend(name={value.name!r}, ...)"
    if inspect.isgenerator(value):
        return "a generator expression (write a list: [... for ...])"
    shown = repr(value)
    # A default repr (`<x object at 0x7f...>`) changes from run to run and means nothing to a user.
    return f"a value of type {type(value).__name__}" if " at 0x" in shown else shown


def _spelling(path: str) -> str:
    from generator.spelling import ref_source

    try:
        return ref_source(model.TorchRef(path))
    except GeneratorError:
        return path


def spec_function(function):
    """Checks a spec function's arguments before it runs: a misspelt keyword gets a "did you mean"."""
    signature = inspect.signature(function)
    keywords = [n for n, p in signature.parameters.items() if p.kind is not p.VAR_KEYWORD]

    @functools.wraps(function)
    def checked(*args, **kwargs):
        has_var_keyword = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
        for key in kwargs:
            if key not in keywords and not has_var_keyword:
                raise SpecFieldError(
                    f"{function.__name__}() has no argument {key}={suggest_keyword(key, keywords)}",
                    spec_location(),
                )
        try:
            signature.bind(*args, **kwargs)
        except TypeError as error:
            raise SpecFieldError(f"{function.__name__}(): {error}", spec_location()) from None
        return function(*args, **kwargs)

    return checked


def suggest_keyword(key: str, keywords) -> str:
    """The keyword `key` was likely meant to be, or the keywords there are: ` (did you mean x=?)`."""
    close = difflib.get_close_matches(key, list(keywords), n=1)
    return f" (did you mean {close[0]}=?)" if close else f" (it takes {', '.join(keywords)})"


def suggest(name: str, choices) -> str:
    """` (did you mean x?)` for a close choice, else nothing."""
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def identifier(value, what: str, location, example: str = "get_my_backend_config") -> str:
    """`value`, checked to be a name Python reads as itself (a builder's, an export's, a generated module's)."""
    if not isinstance(value, str) or not value.isidentifier() or keyword.iskeyword(value):
        message = f"{what} must be a Python identifier such as {example}, not {value!r}"
        raise SpecFieldError(message, location)
    read_as = unicodedata.normalize("NFKC", value)
    if read_as != value:  # Python reads `get_ｘ` as `get_x`: the module would not define the name it exports
        message = f"{what} {value!r} is read by Python as {read_as!r} (Unicode NFKC); write {read_as!r}"
        raise SpecFieldError(message, location)
    return value


def text(value, what: str, location) -> str:
    """`value`, checked to be a string."""
    if not isinstance(value, str):
        raise SpecFieldError(f"{what} must be a string, not {describe(value)}", location)
    return value


def one_line(value, what: str, location) -> str:
    """Text the generated module writes as a comment: a line break would end the comment there."""
    line = text(value, what, location)
    if "\n" in line or "\r" in line:
        message = f'{what} must be one line (it is written as a comment), e.g. {what}="conv + relu"'
        raise SpecFieldError(message, location)
    return line


def to_ref(value, what: str, example: str = "nn.Conv2d") -> model.TorchRef | None:
    """A torch name (a module, a class) as the model's, or None."""
    if value is None:
        return None
    if isinstance(value, Ref):
        return value.to_model()
    raise SpecFieldError(f"{what} must be a torch name such as {example}, not {describe(value)}", blame(value))


def to_dtype(value, what: str, constraints_allowed: bool):
    """A torch dtype as the model's (or, where `constraints_allowed`, a DTypeWithConstraints), or None."""
    if value is None:
        return None
    if isinstance(value, Ref):
        return value.to_model()
    if constraints_allowed and isinstance(value, model.DTypeWithConstraints):
        return value
    alternative = " or a DTypeWithConstraints" if constraints_allowed else ""
    raise SpecFieldError(
        f"{what} must be a torch dtype such as torch.quint8{alternative}, not {describe(value)}", blame(value)
    )


def to_observation_type(value, what: str, where) -> str:
    """An ObservationType.X value (the spec gets its member's name as a string)."""
    if isinstance(value, str) and value in model.OBSERVATION_TYPES:
        return value
    hint = suggest(value, model.OBSERVATION_TYPES) if isinstance(value, str) else ""
    if hint:
        hint = hint.replace("(did you mean ", "(did you mean ObservationType.")
    else:
        hint = f" (it is one of ObservationType.{', ObservationType.'.join(model.OBSERVATION_TYPES)})"
    raise SpecFieldError(f"{what} {describe(value)} is not an ObservationType{hint}", blame(where))
