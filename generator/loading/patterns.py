"""Patterns as torch's matcher reads them, and a pattern declared added(), changed() or removed().

A simple pattern is one op or a tuple of 2 or 3 ops (torch's fusion patterns), whose
ops may be tuples again (torch keeps them as given: `((nn.BatchNorm1d, nn.Conv1d), nn.ReLU)`,
torch 1.13's style); pattern_complex_format nests in torch's reversed nested tuple format,
which is checked here as torch's matcher reads it. A pattern the vocabulary wraps in
added()/changed()/removed() is `Declared`: a deliberate difference from the
reference builder, with its reason, at the spec line that makes it.
"""

from __future__ import annotations

from generator import model
from generator.errors import SpecFieldError
from generator.loading.locations import blame, spec_location
from generator.loading.spec_values import Ref, describe


def to_pattern(value, what: str = "pattern", nested: bool = False) -> model.Pattern:
    """Turn a spec pattern (Refs, method-name strings, tuples) into a model pattern.

    A simple pattern is one op or a tuple of 2 or 3 ops (torch's fusion patterns), its ops
    may be tuples again; pattern_complex_format nests tuples as `_complex_pattern` checks.
    """
    complex_format = what == "pattern_complex_format"
    if not nested:
        _check_depth(value, what)
    if complex_format and not nested:
        _complex_pattern(value, value)
    if isinstance(value, Ref):
        return value.to_model()
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and complex_format:
        return value  # e.g. the index in (operator.getitem, max_pool2d_with_indices, 0)
    if isinstance(value, Declared):
        raise SpecFieldError(f"{value.kind}() must wrap a whole pattern, not a part of one", value.location)
    if isinstance(value, tuple) and not complex_format and nested:
        # torch keeps a tuple inside a simple pattern as given and matches it as part of the pattern
        # in its reversed nested format, as it matches a pattern_complex_format (torch 1.13's style).
        return _nested_element(value)
    if isinstance(value, tuple) and (len(value) in (2, 3) or (complex_format and len(value) >= 2)):
        return tuple(to_pattern(element, what, nested=True) for element in value)
    if isinstance(value, tuple):
        raise SpecFieldError(f"a {what} tuple holds 2 or 3 ops, not {len(value)}", blame(value))
    raise SpecFieldError(
        f"{what} elements must be modules, functions, operator overloads, method-name strings "
        f"or tuples of those, not {describe(value)}",
        blame(value),
    )


def _nested_element(value) -> tuple:
    """A tuple inside a simple pattern, `(nn.BatchNorm1d, nn.Conv1d)` of `((nn.BatchNorm1d, nn.Conv1d), nn.ReLU)`:
    ops, method names, numbers and tuples of them, as torch stores it."""
    if not value:
        raise SpecFieldError("a tuple inside a pattern holds at least one op, not none", blame(value))
    elements = []
    for element in value:
        if isinstance(element, tuple):
            elements.append(_nested_element(element))
        elif isinstance(element, int) and not isinstance(element, bool):
            elements.append(element)
        else:
            elements.append(to_pattern(element, "pattern", nested=True))
    return tuple(elements)


# torch's own patterns nest a few levels; far deeper ones exhaust the Python parser
# that compiles the generated module (about 200 levels), so they are refused here.
MAX_PATTERN_DEPTH = 32


def _check_depth(whole, what: str = "pattern_complex_format") -> None:
    """Refuse a pattern nested deeper than MAX_PATTERN_DEPTH (counted without recursion)."""
    depth, level = 0, [whole]
    while level and depth <= MAX_PATTERN_DEPTH:
        depth += 1
        level = [item for value in level if isinstance(value, tuple) for item in value]
        level = [item for item in level if isinstance(item, tuple)]
    if depth > MAX_PATTERN_DEPTH:
        raise SpecFieldError(
            f"{what} is nested more than {MAX_PATTERN_DEPTH} tuples deep, more than a generated "
            "module can spell; split it into patterns that nest less",
            blame(whole),
        )


def _complex_pattern(value, whole, argument: bool = False) -> None:
    """torch's reversed nested tuple format, as its matcher (fx/match_utils.py `_is_match`) reads it:

        pattern  = op | (op, argument, ...)      argument = pattern | an int the argument equals

    The first element of every tuple is the op whose output the (sub)pattern matches;
    only arguments may nest. A tuple standing first never matches any node (torch compares
    node.target with it), an int anywhere but in an argument matches nothing either, and
    torch asserts that a getattr pattern has exactly one argument.
    """
    if isinstance(value, int) and not isinstance(value, bool) and argument:
        return
    if not isinstance(value, tuple):
        if isinstance(value, int) and not isinstance(value, bool):
            message = (
                f"pattern_complex_format {describe(whole)}: {value!r} stands where an op belongs; "
                "only an argument can be a number, as in (operator.getitem, op, 0)"
            )
            raise SpecFieldError(message, blame(whole))
        return  # ops are checked by to_pattern (and their kinds against torch later)
    head = value[0] if value else None
    if isinstance(head, tuple):
        raise SpecFieldError(
            f"pattern_complex_format {describe(whole)} nests {describe(head)} too deeply: the first element of each "
            "tuple is the op whose output it matches, never a tuple; only its arguments nest, "
            "as in (nn.ReLU, (nn.BatchNorm2d, nn.Conv2d))",
            blame(whole),
        )
    if isinstance(head, Ref) and head.to_model().path in ("getattr", "builtins.getattr") and len(value) != 2:
        message = f"pattern_complex_format {describe(whole)}: a getattr pattern is (getattr, attribute name)"
        raise SpecFieldError(message, blame(whole))
    _complex_pattern(head, whole)
    for item in value[1:]:
        _complex_pattern(item, whole, argument=True)


class Declared:
    """A pattern wrapped in added()/changed()/removed(): a deliberate difference, with its reason.

    It stands where the pattern stands (in config(...) or in a list of ops that a
    helper passes to config), so the declaration sits at the line that makes the change.
    """

    __slots__ = ("divergence", "kind", "location", "pattern")

    def __init__(self, kind: str, pattern, reason):
        self.location = spec_location()
        self.kind = kind
        self.pattern = pattern
        self.divergence = declared_divergence(kind, reason, f'{kind}(nn.Mish, "why")', self.location)

    def unwrap(self, pattern, complex_format):
        """config()'s pattern and pattern_complex_format with this wrapper taken off."""
        if pattern is self:
            return self.pattern, complex_format
        return pattern, self.pattern

    def removal(self, complex_format: bool, section: str = "") -> model.Removal:
        what = "pattern_complex_format" if complex_format else "pattern"
        pattern = to_pattern(self.pattern, what)
        return model.Removal(pattern, self.divergence, complex_format, section, self.location)

    def __repr__(self) -> str:
        return f"{self.kind}({self.pattern!r})"


def declared_divergence(kind: str, reason, example: str, location) -> model.Divergence:
    """A declaration's difference, with the short one-line reason a reviewer reads."""
    if not isinstance(reason, str) or not reason.strip() or any(c in reason.strip() for c in "\n\r"):
        raise SpecFieldError(f"{kind}() needs a short one-line reason, e.g. {example}", location)
    return model.Divergence(kind, reason.strip(), location)
