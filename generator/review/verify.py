"""`verify`: each generated builder proven equal to its reference builder, and run through torch's FX flows.

For every backend chosen (`references.load_builders`, as `diff --against-torch` chooses them):

1. With a reference builder (torch's or the user's own): the generated BackendConfig equals the
   reference's field by field, callables included (`diff.against_reference`: the equality proof
   of `generator.review.equality`, with the spec's declared differences apart). Each difference
   is one line naming the backend and the pattern.
2. The FX flows (`generator.review.flows`): with a reference, each flow with the generated config
   must do what it does with the reference's, but where a declared difference is the cause (named);
   without one, the flows must run and show the backend's patterns taking effect.

The generated module, the reference builder and the flows (which call fuser methods) are user
code: they run under `generator.user_code.running`, as `diff` runs them. torch is imported inside
the functions.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator
from pathlib import Path

from generator import process, project, user_code
from generator.errors import GeneratedModuleError, ReferenceBuilderError
from generator.review.references import BuilderRef
from generator.review.sides import import_generated


@dataclasses.dataclass(frozen=True)
class Line:
    """One line of the report, and the spec line it is about (`spec/x.py:12`), where it has one."""

    text: str
    location: str | None = None

    def __post_init__(self):  # one line whatever a user's exception message holds (a newline, an ESC)
        object.__setattr__(self, "text", self.text.translate(_CONTROL))


_CONTROL = {c: ascii(chr(c))[1:-1] for c in (*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029)}

@dataclasses.dataclass(frozen=True)
class Verdict:
    """What verify found for one backend."""

    label: str
    reference: str | None
    patterns: int  # how many patterns its BackendConfig registers
    flows: tuple[str, ...]  # the FX flows run
    branches: int  # how many patterns the flows' model is made of
    failures: tuple[Line, ...] = ()  # one line each, naming the backend and the pattern
    declared: tuple[Line, ...] = ()  # declared differences, and the flows they explain
    unexercised: tuple[Line, ...] = ()  # the patterns no flow exercises: one line per reason, naming them
    unexercised_count: int = 0

    @property
    def ok(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        if self.branches:
            flows = f"FX flows {', '.join(self.flows)} on {self.branches} of its {self.patterns} patterns"
        else:
            flows = f"no FX flow (none of its {self.patterns} patterns can be made into a model)"
        if self.unexercised_count:
            flows += f" ({self.unexercised_count} not exercised)"
        if self.reference is None:
            return f"{self.label}: no reference builder, so FX flows only: {flows}: {self._state()}"
        if self.ok:
            return f"{self.label}: equal to {self.reference} field by field; {flows}: as the reference's"
        return f"{self.label}: against {self.reference}; {flows}: {self._state()}"

    def _state(self) -> str:
        return "hold" if self.ok else f"{len(self.failures)} failure(s)"


def verify(root: Path, refs: list[BuilderRef], locations: dict, timeout: float | None) -> Iterator[Verdict]:
    """One Verdict per builder, in the spec's order, found in a child process: the generated modules, their
    reference builders and the FX flows run user code, which ends with that process whatever it does."""
    from generator.review import divergence  # noqa: F401 - torch, imported here once: the child has it

    def lost(ref: BuilderRef) -> ReferenceBuilderError:
        return ReferenceBuilderError(
            f"verifying {ref.label}: its process ended without a result (a reference builder, a generated "
            "module or a fuser must not end its process: raise an Exception instead)",
            ref.location,
        )

    yield from process.isolated_each(functools.partial(verify_one, root, locations=locations, timeout=timeout),
                                     refs, lost)  # fmt: skip


def verify_one(root: Path, ref: BuilderRef, locations: dict, timeout: float | None) -> Verdict:
    from generator.review import diff, divergence, flow_comparison, flows

    where = project.config(root).output(ref.module)
    spec_lines = locations.get(ref.label, {})
    with user_code.running(GeneratedModuleError, where, root):
        module = import_generated(root, ref.module)
        ours = diff.build_generated(module, ref, where)
    failures, declared, theirs, stopping = [], [], None, []
    if ref.reference is not None:
        theirs = divergence.build_reference(ref.reference, root, ref.location)
        with user_code.running(ReferenceBuilderError, f"comparing {ref.label}", root, ref.location, exceptions=False):
            compared = diff.against_reference(ref, module, ours, theirs, locations)
        failures += _proof_lines(compared)
        declared += [Line(f"{ref.label}: {change}", change.location) for change in compared.declared]
    with user_code.running(GeneratedModuleError, f"FX flows of {ref.label}", root, exceptions=False):
        with flows.quiet_flows(), _one_thread():
            found = flows.branches(ours)
            run = flows.wanted_flows(found) if found else ()
            if theirs is not None:
                both = flows.branches(theirs)
                run = flows.wanted_flows(found + both) if found or both else ()
                findings = flow_comparison.compare(ours, theirs, ref.declarations, timeout)
            else:
                findings, stopping = flow_comparison.against_float(ours, found, timeout)
            for finding in findings:
                line = Line(finding.line(ref.label, spec_lines.get(finding.pattern)), spec_lines.get(finding.pattern))
                (failures if finding.failure else declared).append(line)
            unexercised = stopping + flows.unexercised(ours, found)
    grouped: dict[str, list[str]] = {}
    for label, reason in dict.fromkeys(unexercised):  # a pattern two flows cannot run is said once
        grouped.setdefault(reason, []).append(label)
    listed = tuple(Line(f"{ref.label}: {', '.join(labels)}: {reason}", spec_lines.get(labels[0]))
                   for reason, labels in grouped.items())  # fmt: skip
    return Verdict(ref.label, ref.reference, len(ours.configs), run, len(found), tuple(failures), tuple(declared),
                   listed, len({label for label, _ in unexercised}))  # fmt: skip


def _proof_lines(compared) -> list[Line]:
    """The equality proof's lines, each pattern's with its spec line."""
    rest = dataclasses.replace(compared, patterns=(), unexplained=())
    lines = [Line(text) for text in rest.lines("reference", "generated")]
    for change in compared.patterns:
        one = dataclasses.replace(compared, status="changed", name=None, dtype_configs=(), patterns=(change,),
                                  unexplained=())  # fmt: skip
        lines += [Line(text, change.location) for text in one.lines("reference", "generated")]
    return lines + [Line(f"{compared.backend}: {problem}") for problem in compared.unexplained]


@dataclasses.dataclass(frozen=True)
class Report:
    """The verdicts as verify prints them: text (failures on standard error, the report on standard output)
    or GitHub Actions workflow commands (`--format github`: one per finding, at its spec line)."""

    verdicts: list[Verdict]
    unfresh: list[Line]  # generated files that are not what spec/ says: each a failure
    fix: str

    @property
    def ok(self) -> bool:
        return not self.unfresh and all(verdict.ok for verdict in self.verdicts)

    def errors(self) -> list[str]:
        return [line.text for line in self.unfresh] + [line.text for v in self.verdicts for line in v.failures]

    def text(self) -> list[tuple[str, str | None]]:
        """(line, colour) for standard output."""
        lines = [(verdict.summary(), None if verdict.ok else "red") for verdict in self.verdicts]
        declared = [line.text for verdict in self.verdicts for line in verdict.declared]
        if declared:
            lines += [("declared differences (deliberate, see the spec):", None)] + [(f"  {d}", None) for d in declared]
        unexercised = [line.text for verdict in self.verdicts for line in verdict.unexercised]
        if unexercised:
            lines += [("not exercised by the FX flows (or not by all of them):", None)]
            lines += [(f"  {u}", None) for u in unexercised]
        return lines + [(self.conclusion(), "green" if self.ok else "red")]

    def conclusion(self) -> str:
        count = sum(verdict.unexercised_count for verdict in self.verdicts)
        unexercised = f"; {count} pattern(s) not exercised by the FX flows (listed)" if count else ""
        failing = [verdict.label for verdict in self.verdicts if not verdict.ok]
        if failing:
            failures = sum(len(verdict.failures) for verdict in self.verdicts) + len(self.unfresh)
            return (f"verify: {len(failing)} of {len(self.verdicts)} backend(s) fail ({failures} failure(s)): "
                    f"{', '.join(failing)}{unexercised}")  # fmt: skip
        if self.unfresh:
            return f"verify: generated/ is not what spec/ says ({len(self.unfresh)} file(s)); fix: {self.fix}"
        return f"verify: all {len(self.verdicts)} backend(s) hold{unexercised}"

    def github(self, prefix: str) -> list[str]:
        """One workflow command per finding (paths from the repository's top: `prefix`), then the conclusion."""
        from generator.annotations import workflow_command

        def command(level: str, line: Line) -> str:
            file, _, number = (line.location or "").rpartition(":")
            if not file:
                file, number = line.location, ""
            return workflow_command(level, line.text, file=f"{prefix}{file}" if file else None,
                                    line=int(number) if number.isdigit() else None, title="verify")  # fmt: skip

        lines = [command("error", line) for line in self.unfresh]
        for verdict in self.verdicts:
            lines += [command("error", line) for line in verdict.failures]
            lines += [command("notice", line) for line in verdict.declared]
            lines += [command("notice", line) for line in verdict.unexercised]
        level = "notice" if self.ok else "error"
        return lines + [verdict.summary() for verdict in self.verdicts] + [workflow_command(level, self.conclusion())]


def repository_prefix(root: Path) -> str:
    """The project's folder from the top of its git repository (`vendor/configs/`), "" at the top or outside one."""
    for folder in (root, *root.parents):
        if (folder / ".git").exists():
            relative = root.relative_to(folder).as_posix()
            return "" if relative == "." else relative + "/"
    return ""


class _one_thread:
    """On the flows' tiny tensors, waking a second OpenMP thread costs ~10x the op itself."""

    def __enter__(self):
        import torch

        self.previous = torch.get_num_threads()
        torch.set_num_threads(1)

    def __exit__(self, *exc_info):
        import torch

        torch.set_num_threads(self.previous)
