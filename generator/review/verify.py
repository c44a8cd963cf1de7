"""`verify`: each generated builder proven equal to its reference builder, and run through torch's FX flows.

For every backend chosen (`sides.load_builders`, as `diff --against-torch` chooses them):

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
from generator.review.sides import BuilderRef, import_generated


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What verify found for one backend."""

    label: str
    reference: str | None
    patterns: int  # how many patterns its BackendConfig registers
    flows: tuple[str, ...]  # the FX flows run
    branches: int  # how many patterns the flows' model is made of
    failures: tuple[str, ...] = ()  # one line each, naming the backend and the pattern
    declared: tuple[str, ...] = ()  # declared differences, and the flows they explain

    @property
    def ok(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        if self.branches:
            flows = f"FX flows {', '.join(self.flows)} on {self.branches} of its {self.patterns} patterns"
        else:
            flows = f"no FX flow (none of its {self.patterns} patterns can be made into a model)"
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
    with user_code.running(GeneratedModuleError, where, root):
        module = import_generated(root, ref.module)
        ours = diff.build_generated(module, ref, where)
    failures, declared, theirs = [], [], None
    if ref.reference is not None:
        theirs = divergence.build_reference(ref.reference, root, ref.location)
        with user_code.running(ReferenceBuilderError, f"comparing {ref.label}", root, ref.location, exceptions=False):
            compared = diff.against_reference(ref, module, ours, theirs, locations)
        failures += compared.lines("reference", "generated")
        declared += [f"{ref.label}: {change}" for change in compared.declared]
    with user_code.running(GeneratedModuleError, f"FX flows of {ref.label}", root, exceptions=False):
        with flows.quiet_flows(), _one_thread():
            found = flows.branches(ours)
            run = flows.wanted_flows(found) if found else ()
            if theirs is not None:
                both = flows.branches(theirs)
                run = flows.wanted_flows(found + both) if found or both else ()
                for finding in flow_comparison.compare(ours, theirs, ref.declarations, timeout):
                    (failures if finding.failure else declared).append(finding.line(ref.label))
            elif found:
                failures += [f"{ref.label}: {problem}" for problem in _absolute_problems(ours, found, timeout)]
    return Verdict(ref.label, ref.reference, len(ours.configs), run, len(found), tuple(failures), tuple(declared))


def _absolute_problems(ours, found, timeout) -> list[str]:
    """flows.flow_problems, bounded; a flow that raises is one problem naming what it raised."""
    from generator.review import flows

    try:
        with flows.bounded(timeout):
            return flows.flow_problems(ours, found)
    except flows.FlowTimeout as error:
        return [f"FX flows: {error}"]
    except Exception as error:  # the config makes torch's flow fail: that is the finding
        return [f"FX flows: raised {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"]


class _one_thread:
    """On the flows' tiny tensors, waking a second OpenMP thread costs ~10x the op itself."""

    def __enter__(self):
        import torch

        self.previous = torch.get_num_threads()
        torch.set_num_threads(1)

    def __exit__(self, *exc_info):
        import torch

        torch.set_num_threads(self.previous)
