"""Spec lint: findings about a spec that is valid but probably not what was meant.

Today it reports patterns registered twice within one backend. torch keeps the
first position and the later content, silently; the generated modules reproduce
that, and the lint makes it visible. An override the spec marks as intended, with
`config(..., overrides="reason")` at the line that overrides, is not reported. The
same pair of spec lines reached by several backends is reported once, naming the
backends as users see them (`Backend.label`).
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.expansion import ExpandedModule
from generator.model import SourceLocation
from generator.source_spelling import python_source


@dataclass(frozen=True)
class LintWarning:
    message: str
    location: SourceLocation | None

    def __str__(self) -> str:
        return f"{self.location}: {self.message}" if self.location else self.message


def lint(modules: list[ExpandedModule]) -> list[LintWarning]:
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
