"""The FX flows with a generated config against the same flows with its reference's (`verify`, with a reference).

Each flow of `generator.review.flows` runs with both configs on the same seeded model made of
both configs' patterns and the same inputs; every step must agree: graph code, module types,
outputs bit for bit (`differences`, on `plain` values), or the same exception type. Where they
do not (or where a flow stops on an exception, which hides every pattern after it), each
pattern runs alone, and a declared difference of the spec on a pattern that differs is named
as its cause (`Finding`, `causes`). A flow that differs only on declared patterns is what the
spec says, unless the generated config makes it raise or time out where the reference's does
not. tests/test_fx_flows.py compares its flows with `differences` and `plain` too.
torch is imported inside the functions only.
"""

from __future__ import annotations

import copy
import dataclasses

from generator.review import flows

# ---------------------------------------------------------------------------
# With a reference: every step as the reference's, but where the spec declares a difference
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Finding:
    """A flow that differs from the reference's on one pattern (or on the whole model: pattern "")."""

    pattern: str
    flow: str
    detail: str
    causes: tuple = ()  # the declarations (generator.building.expansion.Declaration) of the pattern
    failure: bool = True  # False: a difference that the declarations explain

    def line(self, label: str) -> str:
        where = f"{self.pattern}: " if self.pattern else ""
        cause = "; ".join(
            f"caused by the declared difference: {d.kind} {d.pattern} ({d.location}): {d.reason}" for d in self.causes
        )
        return f"{label}: {where}{self.flow}: {self.detail}" + (f"; {cause}" if cause else "")


def plain(value):
    """A structure of plain values and float tensors that compares exactly, quantized tensors unpacked."""
    import torch

    if isinstance(value, torch.Tensor):
        if value.is_quantized:
            if value.qscheme() in (torch.per_tensor_affine, torch.per_tensor_symmetric):
                qparams = (value.q_scale(), value.q_zero_point())
            else:
                qparams = (value.q_per_channel_scales(), value.q_per_channel_zero_points(), value.q_per_channel_axis())
            return {"dtype": value.dtype, "qscheme": value.qscheme(), "int_repr": value.int_repr(),
                    "qparams": plain(qparams)}  # fmt: skip
        return value.detach().clone()
    if isinstance(value, torch.ScriptObject):  # packed weights: compare what they serialize to
        return plain(value.__getstate__())
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(plain(item) for item in value)
    return value


def differences(ours, theirs, path="result") -> list[str]:
    """Every place where two flow results differ; tensors must be equal bit for bit."""
    import torch

    if isinstance(theirs, torch.Tensor):
        if not isinstance(ours, torch.Tensor):
            return [f"{path}: {type(ours).__name__} != Tensor"]
        if ours.dtype != theirs.dtype or ours.shape != theirs.shape:
            return [f"{path}: {ours.dtype}{tuple(ours.shape)} != {theirs.dtype}{tuple(theirs.shape)}"]
        if ours.is_floating_point():  # NaN is not equal to itself; equal NaN positions are the same result
            nans = ours.isnan()
            if not torch.equal(nans, theirs.isnan()):
                return [f"{path}: NaN positions differ"]
            ours, theirs = ours.masked_fill(nans, 0), theirs.masked_fill(nans, 0)
        return [] if torch.equal(ours, theirs) else [f"{path}: tensor values differ"]
    if isinstance(theirs, dict) and isinstance(ours, dict):
        found = [f"{path}: keys {sorted(map(str, ours.keys() ^ theirs.keys()))} not in both"] if (
            ours.keys() != theirs.keys()
        ) else []
        for key in theirs.keys() & ours.keys():
            found += differences(ours[key], theirs[key], f"{path}[{key!r}]")
        return found
    if isinstance(theirs, list | tuple) and isinstance(ours, list | tuple) and type(ours) is type(theirs):
        if len(ours) != len(theirs):
            return [f"{path}: length {len(ours)} != {len(theirs)}"]
        return [d for i, (a, b) in enumerate(zip(ours, theirs)) for d in differences(a, b, f"{path}[{i}]")]
    if isinstance(theirs, str) and isinstance(ours, str) and ours != theirs:
        return [f"{path}: differs:\n--- ours\n{ours}\n--- reference\n{theirs}"]
    return [] if ours == theirs else [f"{path}: {ours!r} != {theirs!r}"]


def record_flow(flow: str, found: list, config, timeout: float | None) -> dict:
    """What one flow produced at each step, as plain values; what stopped it (an exception's type, a timeout)."""
    import torch

    record: dict = {}

    def snapshot(step: str, gm, inputs) -> None:
        record[step] = {"code": gm.code, "modules": [(n, type(m).__name__) for n, m in gm.named_modules()]}
        with torch.no_grad():
            record[step]["outputs"] = plain(gm(inputs))

    with torch.random.fork_rng(devices=[]), flows.no_stack_traces():
        try:
            with flows.bounded(timeout):
                _recorded_flow(flow, found, config, snapshot)
        except flows.FlowTimeout as timeout_error:
            return {"timed out": str(timeout_error), "steps": record}
        except Exception as error:  # compared, not swallowed: the other config must raise the same type
            return {"raised": type(error).__name__, "steps": record}
    return {"raised": None, "steps": record}


def _recorded_flow(flow, found, config, snapshot) -> None:
    from torch.ao.quantization.quantize_fx import convert_fx, convert_to_reference_fx, fuse_fx

    if flow == "ptq":
        prepared, inputs = flows.calibrated(found, config)
        snapshot("prepared", prepared, inputs)
        snapshot("reference", convert_to_reference_fx(copy.deepcopy(prepared), backend_config=config), inputs)
        snapshot("lowered", convert_fx(prepared, backend_config=config), inputs)
    elif flow == "qat":
        prepared, inputs = flows.trained(found, config)
        snapshot("prepared", prepared, inputs)
        snapshot("reference", convert_to_reference_fx(prepared.eval(), backend_config=config), inputs)
    else:
        model, inputs = flows.model_and_inputs(found)
        snapshot("fused", fuse_fx(model.eval(), backend_config=config), inputs)


def compare(ours, reference, declarations=(), timeout: float | None = flows.DEFAULT_TIMEOUT) -> list[Finding]:
    """Where the flows with `ours` differ from those with the reference's config, each difference on its pattern.

    The model is made of both configs' patterns (a removed one is the reference's). [] when every flow agrees.
    """
    found = _union(flows.branches(ours), flows.branches(reference))
    if not found:
        return []
    run = flows.wanted_flows(found)
    whole = {flow: (record_flow(flow, found, ours, timeout), record_flow(flow, found, reference, timeout))
             for flow in run}  # fmt: skip
    findings = [Finding("", flow, mine["timed out"]) for flow, (mine, _) in whole.items() if "timed out" in mine]
    # A flow that stops on one pattern (with both configs alike: torch's own fusers refuse some patterns in QAT)
    # compares nothing after it: each pattern then runs alone, too.
    differing = [
        flow for flow, (mine, its) in whole.items()
        if "timed out" not in mine and (differences(mine, its) or mine["raised"] or its.get("raised"))
    ]  # fmt: skip
    for flow in differing:
        alone = [f for branch in found for f in _branch_findings(flow, branch, ours, reference, declarations, timeout)]
        if not any(f.flow == flow for f in alone) and differences(*whole[flow]):
            detail = differences(*whole[flow])[0].partition("\n")[0]
            alone.append(Finding("", flow, f"differs from the reference's only with every pattern together: {detail}"))
        findings += alone
    return findings


def _union(mine: list, its: list) -> list:
    labels = {b.label for b in mine}
    return mine + [b for b in its if b.label not in labels]


def _branch_findings(flow, branch, ours, reference, declarations, timeout) -> list[Finding]:
    if flow == "qat" and not branch.qat_module or flow == "fuse" and not branch.fused_module:
        return []
    mine, its = record_flow(flow, [branch], ours, timeout), record_flow(flow, [branch], reference, timeout)
    if "timed out" in mine:
        return [Finding(branch.label, flow, mine["timed out"], causes(branch, declarations))]
    found = differences(mine, its)
    if not found:
        return []
    declared = causes(branch, declarations)
    if mine.get("raised") and not its.get("raised"):
        return [Finding(branch.label, flow, f"raised {mine['raised']}; the reference's does not", declared)]
    detail = found[0].partition("\n")[0]
    return [Finding(branch.label, flow, f"differs from the reference's: {detail}", declared, failure=not declared)]


def causes(branch, declarations) -> tuple:
    """The declarations of the configs that decide the branch: of its pattern, its fused module, its dtype config."""
    from generator.review.divergence import torch_key

    keys = set(branch.keys)
    found = []
    for declaration in declarations:
        if declaration.of_dtype_config:
            named = {torch_key(key) for key, _ in declaration.uses}
        else:
            named = {torch_key(declaration.key)}
        if named & keys:
            found.append(declaration)
    return tuple(found)
