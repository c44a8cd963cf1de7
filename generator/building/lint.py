"""Spec lint: findings about a spec that is valid but probably not what was meant.

It reports patterns registered twice within one backend. torch keeps the
first position and the later content, silently; the generated modules reproduce
that, and the lint makes it visible. An override the spec marks as intended, with
`config(..., overrides="reason")` at the line that overrides, is not reported. The
same pair of spec lines reached by several backends is reported once, naming the
backends as users see them (`Backend.label`).

It also reports a stale mark: an `overrides=` line that overrides nothing (no
earlier registration of its pattern) in every backend that reaches it. A mark in a
shared helper that overrides in some backends and not in others is fine.
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.building.expansion import ExpandedModule
from generator.model import SourceLocation
from generator.spelling import python_source


@dataclass(frozen=True)
class LintWarning:
    message: str
    location: SourceLocation | None

    def __str__(self) -> str:
        return f"{self.location}: {self.message}" if self.location else self.message


def lint(modules: list[ExpandedModule]) -> list[LintWarning]:
    return _unmarked_overrides(modules) + _stale_marks(modules)


def _unmarked_overrides(modules: list[ExpandedModule]) -> list[LintWarning]:
    backends_by_pair: dict[tuple, list[str]] = {}
    details: dict[tuple, tuple] = {}
    for module in modules:
        for expanded in module.backends:
            for override in expanded.overrides:
                if override.later.overrides is not None:
                    continue  # marked as intended, with the reason, at the overriding line
                pair = (str(override.first.location), str(override.later.location), python_source(override.first.key))
                backends_by_pair.setdefault(pair, []).append(expanded.backend.label)
                details[pair] = (override.later.location, override.same_content)
    return [_warning(pair, backends, *details[pair]) for pair, backends in backends_by_pair.items()]


def _warning(pair, backends, location, same_content) -> LintWarning:
    first, later, pattern = pair
    content = "same content" if same_content else "content differs"
    earlier = "by this same line, earlier in its loop" if first == later else f"at {first}"
    return LintWarning(
        f"pattern {pattern} is registered again, overriding the one registered {earlier} ({content}); "
        f"torch keeps the first position with this content. Backends: {', '.join(sorted(set(backends)))}. "
        'If intended, say why: config(..., overrides="reason")',
        location,
    )


def _stale_marks(modules: list[ExpandedModule]) -> list[LintWarning]:
    """`overrides=` lines that override nothing in any backend reaching them (one line: one finding)."""
    marks: dict[str, tuple[SourceLocation | None, dict[str, bool], set[str]]] = {}
    for module in modules:
        for expanded in module.backends:
            overriding = {str(o.later.location) for o in expanded.overrides}
            for config in _registered(expanded):
                if config.overrides is None:
                    continue
                line = str(config.location)
                location, backends, patterns = marks.setdefault(line, (config.location, {}, set()))
                label = expanded.backend.label
                backends[label] = backends.get(label, False) or line in overriding
                patterns.add(python_source(config.key))
    return [
        _stale_warning(location, sorted(backends), sorted(patterns))
        for location, backends, patterns in marks.values()
        if not any(backends.values())
    ]


def _registered(expanded):
    """Every config a backend registers, those later overridden included (they are some override's first)."""
    found = {}
    for config in (*expanded.backend.configs, *(c for o in expanded.overrides for c in (o.first, o.later))):
        found.setdefault(id(config), config)
    return found.values()


def _stale_warning(location, backends: list[str], patterns: list[str]) -> LintWarning:
    what = f"pattern {patterns[0]}" if len(patterns) == 1 else f"patterns {', '.join(patterns)}"
    return LintWarning(
        f"overrides= says this config replaces an earlier one on purpose, but no earlier config registers {what} "
        f"in any backend that reaches this line (Backends: {', '.join(backends)}); remove overrides=, or restore "
        "the registration it replaced",
        location,
    )
