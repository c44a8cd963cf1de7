"""What `diff` finds, backend by backend: plain records, without torch.

`changes.backend_diff` fills them from two BackendConfigs; `formats`
prints them. They live apart from the comparator so that a diff that builds
nothing (every generated module the same on both sides, or a stale tree) never
imports torch.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class FieldChange:
    """One field of a pattern or dtype config, before and after."""

    field: str
    old: str
    new: str
    constraint: str = ""  # the spec's name of the constraint the field belongs to (`_W_S8`), if it has one
    location: str | None = None  # a dtype config's field: the spec line of its constraint or dtype config

    @property
    def where(self) -> str:
        """The field, with its constraint's name: `weight_dtype.scale_min_lower_bound (_W_S8)`."""
        return f"{self.field} ({self.constraint})" if self.constraint else self.field

    def __str__(self) -> str:
        if self.field == "dtype_configs":  # a list entry that came or went
            return f"dtype_configs: - {self.old}" if self.old else f"dtype_configs: + {self.new}"
        if self.field == "position":
            return f"moved from position {self.old} to {self.new}"
        if self.field == "attributes":  # an attribute torch added: only the finding is known
            return f"attributes: {self.new}"
        return f"{self.where}: {self.old} -> {self.new}"


@dataclasses.dataclass(frozen=True)
class PatternChange:
    """A pattern that was added, removed, changed or moved; `location` is its spec line."""

    change: str  # "added" | "removed" | "changed" | "moved"
    pattern: str
    position: int
    fields: tuple[FieldChange, ...] = ()
    dtype_configs: tuple[str, ...] = ()  # added or removed: the pattern's dtype configs
    location: str | None = None


@dataclasses.dataclass(frozen=True)
class DTypeConfigChange:
    """A dtype config whose content changed under the same name, and the patterns that use it."""

    name: str
    fields: tuple[FieldChange, ...]
    patterns: tuple[str, ...] = ()  # as the newer side registers them


@dataclasses.dataclass(frozen=True)
class DeclaredChange:
    """A difference from the reference builder that the spec declares on purpose, with its reason."""

    kind: str  # "added" | "removed" | "changed"
    pattern: str
    reason: str
    location: str | None = None
    fields: tuple[FieldChange, ...] = ()  # for "changed": what differs from the reference

    def __str__(self) -> str:
        at = f" ({self.location})" if self.location else ""
        changes = "".join(f"; {f}" for f in self.fields)
        return f"declared {self.kind} {self.pattern}{at}: {self.reason}{changes}"


@dataclasses.dataclass(frozen=True)
class BackendDiff:
    """Everything that differs between two versions of one backend's config.

    Against a reference builder, `declared` lists the differences the spec declares
    (not drift), and `unexplained` the drift that is no pattern change: a declaration
    that does not happen, or a comparator finding the pattern diff cannot show.
    """

    backend: str
    status: str  # "same" | "changed" | "added" | "removed"
    name: FieldChange | None = None
    dtype_configs: tuple[DTypeConfigChange, ...] = ()
    patterns: tuple[PatternChange, ...] = ()
    declared: tuple[DeclaredChange, ...] = ()
    unexplained: tuple[str, ...] = ()

    def count(self, *changes: str) -> int:
        return sum(p.change in changes for p in self.patterns)

    def lines(self, old_side: str = "old", new_side: str = "new") -> list[str]:
        """The text form: one line per change, prefixed by the backend."""
        prefix = f"{self.backend}: "
        lines = []
        if self.status == "added":
            lines.append(f"{prefix}+ backend (not in {old_side}), {len(self.patterns)} patterns")
        elif self.status == "removed":
            lines.append(f"{prefix}- backend (not in {new_side}), {len(self.patterns)} patterns")
        if self.name is not None:
            lines.append(f"{prefix}name: {self.name.old} -> {self.name.new}")
        for dtype_config in self.dtype_configs:
            lines += [
                f"{prefix}dtype config {dtype_config.name}: {f}" + (f"  ({f.location})" if f.location else "")
                for f in dtype_config.fields
            ]
            if dtype_config.patterns:
                used = f"used by {_count(dtype_config.patterns)}: {', '.join(dtype_config.patterns)}"
                lines.append(f"{prefix}dtype config {dtype_config.name}: {used}")
        for change in self.patterns:
            at = f"  ({change.location})" if change.location else ""
            if change.change in ("added", "removed"):
                sign = "+" if change.change == "added" else "-"
                lines.append(f"{prefix}{sign} pattern {change.pattern}{at}")
            else:
                lines += [f"{prefix}{change.pattern}: {f}{at}" for f in change.fields]
        lines += [f"{prefix}{problem}" for problem in self.unexplained]
        return lines


def _count(patterns) -> str:
    return f"{len(patterns)} pattern{'' if len(patterns) == 1 else 's'}"
