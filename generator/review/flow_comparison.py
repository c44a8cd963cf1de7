"""The FX flows recorded step by step, and held against the reference's flows or, without one, the float model.

Each flow of `generator.review.flows` is recorded (`record_flow`): after each torch call, the model's
graph code, its modules and its outputs as plain values, or the exception or timeout that stopped it.

- With a reference builder (`compare`): each flow runs with both configs on the same seeded model made
  of both configs' patterns and the same inputs, and every step must agree exactly (`differences`, on
  `plain` values; the same exception type). Where they do not, or where a flow stops on an exception
  (which hides every pattern after it), each pattern runs alone, and a declared difference of the spec
  on a pattern that differs is named as its cause. A difference the declarations explain, a raise
  that starts or stops included, is what the spec says (`Finding.failure` False), unless the generated
  config makes the flow time out.
- Without one (`against_float`): the flows must run and show the patterns taking effect (the fused,
  QAT and reference quantized modules the configs name), with outputs of the float model's shapes:
  the fused model's equal to the float model's within FUSE_TOLERANCE (folding a batch norm into the
  module before it changes the last bits), the reference quantized model's within QUANTIZED_TOLERANCE
  of the float outputs' range. A pattern whose flow raises is one failure, but for a fusion of a
  function other than F.relu, which torch's fuse_fx hands to the fuser method as the function
  itself: a fuser method made for modules (nni.LinearLeakyReLU(linear, leaky_relu)) cannot take it,
  and the pattern is listed as not exercised, with torch's exception.

Every finding names its pattern (`flows.Finding`); what differs is said as module types, calls,
outputs or an exception, never as a path into these records. tests/test_fx_flows.py compares its
flows with `differences` and `plain` too. torch is imported inside the functions only.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import re

from generator.review import flows
from generator.review.flows import STEPS, Finding, step_title

FUSE_TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}  # fuse_fx against the float model: batch norm folding
QUANTIZED_TOLERANCE = 0.1  # convert_to_reference_fx against the float model: mean error / range of the outputs
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


# ---------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class Record:
    """What one flow did with one config: each step's model as plain values, and what stopped the flow."""

    flow: str
    steps: dict  # {step: {"code": ..., "modules": [(name, type's name)], "calls": [...], "outputs": ...}}
    types: dict = dataclasses.field(default_factory=dict)  # {step: [(name, type)]}: not compared, for `held`
    raised: tuple[str, str] | None = None  # the exception's type name and first line
    timed_out: str | None = None

    @property
    def stopped(self) -> str | None:
        """The step that raised or timed out: the first one not recorded."""
        if self.raised is None and self.timed_out is None:
            return None
        return next((step for step in STEPS[self.flow] if step not in self.steps), STEPS[self.flow][-1])

    def held(self, step: str, index: int) -> list[type]:
        """The module types in branch `index` after `step` (its layers, as fused, swapped or converted)."""
        return [cls for name, cls in self.types[step] if name.startswith(f"b{index}.")]


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
    """Every place where two flow results differ, in a fixed order; tensors must be equal bit for bit."""
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
        for key in [key for key in theirs if key in ours]:  # the reference's order, never a set's
            found += differences(ours[key], theirs[key], f"{path}[{key!r}]")
        return found
    if isinstance(theirs, list | tuple) and isinstance(ours, list | tuple) and type(ours) is type(theirs):
        if len(ours) != len(theirs):
            return [f"{path}: length {len(ours)} != {len(theirs)}"]
        return [d for i, (a, b) in enumerate(zip(ours, theirs)) for d in differences(a, b, f"{path}[{i}]")]
    if isinstance(theirs, str) and isinstance(ours, str) and ours != theirs:
        return [f"{path}: differs:\n--- ours\n{ours}\n--- reference\n{theirs}"]
    return [] if ours == theirs else [f"{path}: {ours!r} != {theirs!r}"]


def record_flow(flow: str, found: list, config, timeout: float | None, lowered: bool = True) -> Record:
    """What one flow produced at each step, as plain values; what stopped it (an exception, a timeout).

    `lowered`: ptq ends with convert_fx too (its lowered model runs on the quantized engine's kernels)."""
    import torch

    steps: dict = {}
    types: dict = {}

    def snapshot(step: str, gm, inputs) -> None:
        calls = [(node.op, _target_name(node.target)) for node in gm.graph.nodes
                 if node.op in ("call_function", "call_method")]  # fmt: skip
        types[step] = [(name, type(module)) for name, module in gm.named_modules()]
        modules = [(name, _type_name(cls)) for name, cls in types[step]]
        steps[step] = {"code": gm.code, "modules": modules, "calls": calls}
        with torch.no_grad():
            try:
                steps[step]["outputs"] = plain(gm(inputs))
            except Exception as error:  # the lowered model on kernels this engine lacks: the step itself is made
                if step != "convert_fx":
                    raise
                steps[step]["outputs"] = {"running it raised": type(error).__name__}

    with torch.random.fork_rng(devices=[]), flows.no_stack_traces():
        try:
            with flows.bounded(timeout):
                _recorded_flow(flow, found, config, snapshot, lowered)
        except flows.FlowTimeout as timeout_error:
            return Record(flow, steps, types, timed_out=str(timeout_error))
        except Exception as error:  # compared, not swallowed: the other config must raise the same type
            first = str(error).strip().splitlines()[0] if str(error).strip() else ""
            return Record(flow, steps, types, raised=(type(error).__name__, _ADDRESS.sub("", first)[:200]))
    return Record(flow, steps, types)


def _target_name(target) -> str:
    from generator.building.torch_names import short_name

    return target if isinstance(target, str) else short_name(target)


def _recorded_flow(flow, found, config, snapshot, lowered: bool) -> None:
    from torch.ao.quantization.quantize_fx import convert_fx, convert_to_reference_fx, fuse_fx

    if flow == "ptq":
        prepared, inputs = flows.calibrated(found, config)
        snapshot("prepare_fx", prepared, inputs)
        snapshot("convert_to_reference_fx", convert_to_reference_fx(copy.deepcopy(prepared), backend_config=config),
                 inputs)  # fmt: skip
        if lowered:
            snapshot("convert_fx", convert_fx(prepared, backend_config=config), inputs)
    elif flow == "qat":
        prepared, inputs = flows.trained(found, config)
        snapshot("prepare_qat_fx", prepared, inputs)
        snapshot("convert_to_reference_fx", convert_to_reference_fx(prepared.eval(), backend_config=config), inputs)
    else:
        model, inputs = flows.model_and_inputs(found)
        snapshot("fuse_fx", fuse_fx(model.eval(), backend_config=config), inputs)


def same(mine: Record, its: Record) -> bool:
    """Exactly what the other did: every step alike, and the same exception type (or none)."""
    if (mine.timed_out is None) != (its.timed_out is None):
        return False
    if (mine.raised and mine.raised[0]) != (its.raised and its.raised[0]) or mine.stopped != its.stopped:
        return False
    return not differences(mine.steps, its.steps)


def describe(mine: Record, its: Record) -> tuple[str, str]:
    """(step, what differs) for the first step where two records differ, in a backend author's words."""
    for step in STEPS[mine.flow]:
        if step in mine.steps and step in its.steps:
            detail = _step_difference(mine.steps[step], its.steps[step])
            if detail:
                return step, detail
    if mine.raised and not its.raised:
        return mine.stopped, f"raises {_exception(mine.raised)}; the reference's does not"
    if its.raised and not mine.raised:
        return its.stopped, f"does not raise; the reference's raises {_exception(its.raised)}"
    if mine.raised and its.raised and mine.raised[0] != its.raised[0]:
        return mine.stopped, f"raises {_exception(mine.raised)}; the reference's raises {its.raised[0]}"
    step = mine.stopped or its.stopped or STEPS[mine.flow][-1]
    return step, "stops at another step than the reference's"


def _exception(raised: tuple[str, str]) -> str:
    return f"{raised[0]}: {raised[1]}" if raised[1] else raised[0]


def _step_difference(ours: dict, theirs: dict) -> str:
    mine = collections.Counter(name for _, name in ours["modules"])
    its = collections.Counter(name for _, name in theirs["modules"])
    said = []
    if mine - its:
        said.append(f"holds {_counted(mine - its)} where the reference's does not")
    if its - mine:
        said.append(f"lacks {_counted(its - mine)} that the reference's holds")
    if said:
        return "; ".join(said)
    for (name, cls), (their_name, their_cls) in zip(ours["modules"], theirs["modules"]):
        if (name, cls) != (their_name, their_cls):
            return f"module {name} is {cls} where the reference's {their_name} is {their_cls}"
    mine, its = collections.Counter(ours["calls"]), collections.Counter(theirs["calls"])
    for call in sorted(mine.keys() | its.keys()):
        if mine[call] != its[call]:
            return f"calls {call[1]} {mine[call]} time(s) where the reference's calls it {its[call]} time(s)"
    if ours["code"] != theirs["code"]:
        for line, their_line in zip(ours["code"].splitlines(), theirs["code"].splitlines()):
            if line != their_line:
                return f"its graph has `{line.strip()[:120]}` where the reference's has `{their_line.strip()[:120]}`"
        return "its graph has another length than the reference's"
    if differences(ours["outputs"], theirs["outputs"]):
        raised = [out.get("running it raised") if isinstance(out, dict) else None
                  for out in (ours["outputs"], theirs["outputs"])]  # fmt: skip
        if any(raised):
            return f"running the model raises {raised[0]} where the reference's raises {raised[1]}"
        return "computes other outputs than the reference's (same modules, same graph)"
    return ""


def _type_name(cls) -> str:
    """A module type's name; each GraphModule has a class of its own: all are GraphModule."""
    import torch

    from generator.building.torch_names import short_name

    return "GraphModule" if issubclass(cls, torch.fx.GraphModule) else short_name(cls)


def _counted(counter) -> str:
    return ", ".join(f"{n} {name}" if n > 1 else name for name, n in sorted(counter.items()))


# ---------------------------------------------------------------------------
# With a reference: every step as the reference's, but where the spec declares a difference
# ---------------------------------------------------------------------------


def compare(ours, reference, declarations=(), timeout: float | None = flows.DEFAULT_TIMEOUT) -> list[Finding]:
    """Where the flows with `ours` differ from those with the reference's config, each difference on its pattern.

    The model is made of both configs' patterns (a removed one is the reference's). [] when every flow agrees.
    """
    everything = _union(flows.branches(ours), flows.branches(reference))
    findings = []
    for flow in flows.wanted_flows(everything) if everything else ():
        found = flows.flow_branches(flow, everything)
        mine, its = record_flow(flow, found, ours, timeout), record_flow(flow, found, reference, timeout)
        if mine.timed_out:
            findings.append(Finding("", step_title(flow, mine.stopped), mine.timed_out))
            continue
        # A flow that stops on one pattern (with both configs alike: torch's own fusers refuse some patterns in
        # QAT) compares nothing after it: each pattern then runs alone, too.
        if same(mine, its) and not mine.raised:
            continue
        if same(mine, its):  # both stop alike: find the patterns that stop them, and compare the rest together
            stopping = stopping_branches(flow, found, ours, timeout, record=mine)
            rest = [branch for index, branch in enumerate(found) if index not in stopping]
            if stopping and (not rest or same(*(record_flow(flow, rest, c, timeout) for c in (ours, reference)))):
                findings += [f for index, alone in stopping.items()
                             for f in _branch_findings(flow, found[index], ours, reference, declarations, timeout,
                                                       alone)]  # fmt: skip
                continue
        alone = [f for branch in found for f in _branch_findings(flow, branch, ours, reference, declarations, timeout)]
        if not alone and not same(mine, its):
            step, detail = describe(mine, its)
            alone.append(Finding("", step_title(flow, step), f"{detail} (only with all {len(found)} patterns in "
                                 "one model: no pattern alone differs)"))  # fmt: skip
        findings += alone
    return findings


def stopping_branches(flow: str, found: list, config, timeout, lowered: bool = True, record=None) -> dict:
    """{branch's index in `found`: its record alone} for the branches whose flow raises or times out alone.

    Found by halving the model while one half alone stops (few runs for a few such branches); where both
    halves stop, each branch runs alone."""
    record = record or record_flow(flow, found, config, timeout, lowered)
    if record.raised is None and record.timed_out is None:
        return {}
    if len(found) == 1:
        return {0: record}
    half = len(found) // 2
    first, second = (record_flow(flow, part, config, timeout, lowered) for part in (found[:half], found[half:]))
    if (first.raised or first.timed_out) and (second.raised or second.timed_out):
        alone = {index: record_flow(flow, [branch], config, timeout, lowered) for index, branch in enumerate(found)}
        return {index: one for index, one in alone.items() if one.raised or one.timed_out}
    stopped = stopping_branches(flow, found[:half], config, timeout, lowered, first)
    later = stopping_branches(flow, found[half:], config, timeout, lowered, second)
    return {**stopped, **{half + index: one for index, one in later.items()}}


def _union(mine: list, its: list) -> list:
    labels = {b.label for b in mine}
    return mine + [b for b in its if b.label not in labels]


def _branch_findings(flow, branch, ours, reference, declarations, timeout, mine=None) -> list[Finding]:
    mine = mine or record_flow(flow, [branch], ours, timeout)
    its = record_flow(flow, [branch], reference, timeout)
    declared = causes(branch, declarations)
    if mine.timed_out:
        return [Finding(branch.label, step_title(flow, mine.stopped), mine.timed_out, declared)]
    if same(mine, its):
        return []
    step, detail = describe(mine, its)
    return [Finding(branch.label, step_title(flow, step), detail, declared, failure=not declared)]


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


# ---------------------------------------------------------------------------
# Without a reference: the flows must run and show the patterns taking effect
# ---------------------------------------------------------------------------


def against_float(config, found: list, timeout: float | None) -> tuple[list[Finding], list[tuple[str, str]]]:
    """(failures, (pattern, why it is not exercised) for the patterns whose fusion torch cannot run)."""
    failures, unexercised, everything = [], [], found
    for flow in flows.wanted_flows(everything) if everything else ():
        found = flows.flow_branches(flow, everything)
        record, running = record_flow(flow, found, config, timeout, lowered=False), found
        if record.timed_out:
            failures.append(Finding("", step_title(flow, record.stopped), record.timed_out))
            continue
        if record.raised:  # which patterns raise, each alone; the others are checked together
            stopping = stopping_branches(flow, found, config, timeout, lowered=False, record=record)
            for index, alone in stopping.items():
                finding, reason = _stopped(flow, found[index], alone)
                if reason:
                    unexercised.append((found[index].label, reason))
                else:
                    failures.append(finding)
            if not stopping:
                failures.append(Finding("", step_title(flow, record.stopped), f"raises {_exception(record.raised)} "
                                        f"(only with all {len(found)} patterns in one model)"))  # fmt: skip
                continue
            running = [branch for index, branch in enumerate(found) if index not in stopping]
            if not running:
                continue
            record = record_flow(flow, running, config, timeout, lowered=False)
            if record.raised or record.timed_out:
                failures.append(Finding("", step_title(flow, record.stopped), "raises "
                                        f"{_exception(record.raised) if record.raised else record.timed_out} (only "
                                        "with several patterns in one model)"))  # fmt: skip
                continue
        failures += _effects(flow, record, running, config)
    return failures, unexercised


def _stopped(flow: str, branch, alone: Record) -> tuple[Finding, str | None]:
    """The failure of a branch whose flow stops, or the reason torch's fuse_fx cannot run its fusion."""
    from generator.building.torch_names import short_name

    step = step_title(flow, alone.stopped)
    if alone.timed_out:
        return Finding(branch.label, step, alone.timed_out), None
    functions = [p for p in branch.pattern if not isinstance(p, type) and p is not _relu()]
    if branch.fused_module is not None and alone.stopped == STEPS[flow][0]:
        if alone.raised[0] == "NotImplementedError":  # the fuser's own word that it does not fuse in this mode
            return None, f"its fuser method raises NotImplementedError in {STEPS[flow][0]}: {alone.raised[1]}"
        if functions and branch.nested is None:
            return None, (f"torch's {STEPS[flow][0]} hands {short_name(functions[0])} to the fuser method as a "
                          f"function, not a module, and it raises {alone.raised[0]}")  # fmt: skip
    return Finding(branch.label, step, f"raises {_exception(alone.raised)}"), None


def _relu():
    import torch.nn.functional as F

    return F.relu  # fuse_fx hands the fuser an nn.ReLU for it


def _effects(flow: str, record: Record, found: list, config) -> list[Finding]:
    """Each branch shows its configs taking effect, and the outputs are the float model's, within tolerance."""
    import torch

    model, inputs = flows.model_and_inputs(found)
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        expected = model.eval()(inputs)
    by_pattern = {c.pattern: c for c in config.configs if c.pattern is not None}
    failures = []
    for index, branch in enumerate(found):
        failures += _branch_effects(flow, record, index, branch, by_pattern)
        for step, taken in record.steps.items():
            out, want = taken["outputs"][index], expected[index]
            if not isinstance(out, torch.Tensor) or out.shape != want.shape or not torch.isfinite(out).all():
                failures.append(Finding(branch.label, step_title(flow, step), "outputs are not finite tensors of the "
                                        f"float model's shape {tuple(want.shape)}"))  # fmt: skip
            elif step == "fuse_fx" and not torch.allclose(out, want, **FUSE_TOLERANCE):
                failures.append(Finding(branch.label, step_title(flow, step), "the fused model does not compute what "
                                        f"the float model computes (largest difference {_largest(out, want):.3g})"))
            elif flow == "ptq" and step != "prepare_fx" and _calibrated(branch) and (
                _mean_error(out, want) > QUANTIZED_TOLERANCE
            ):
                failures.append(Finding(branch.label, step_title(flow, step), "the quantized model's outputs are "
                                        "not the float model's within quantization error (mean difference "
                                        f"{_mean_error(out, want):.3g} of their range)"))  # fmt: skip
    if flow == "ptq" and not any(call[1] == "torch.quantize_per_tensor" for call in
                                 record.steps["convert_to_reference_fx"]["calls"]):  # fmt: skip
        failures.append(Finding("", step_title(flow, "convert_to_reference_fx"), "quantizes nothing (no "
                                "torch.quantize_per_tensor in the converted model)"))  # fmt: skip
    return failures


def _branch_effects(flow: str, record: Record, index: int, branch, by_pattern) -> list[Finding]:
    from generator.building.torch_names import short_name

    if flow == "fuse":
        wanted, step, what = branch.fused_module, "fuse_fx", "fused_module"
        held = record.held(step, index)
        if wanted is None or any(issubclass(m, wanted) for m in held):
            return []
        if any(p in flows.batch_norms() for p in branch.pattern) and not any(
            issubclass(m, flows.batch_norms()) for m in held
        ):
            return []  # in eval mode the fuser folds the batch norm into the module before it (no ConvBn2d)
    elif flow == "qat":
        wanted, step, what = branch.qat_module, "prepare_qat_fx", "qat_module"
    else:
        wanted, step, what = branch.reference_module, "convert_to_reference_fx", "reference_quantized_module"
        made = record.held("prepare_fx", index)
        if branch.fused_module is not None and made and made[0] is not branch.fused_module:
            # the fuser made another module in eval mode (a batch norm folded: nni.ConvReLU2d): its config decides
            config = by_pattern.get(made[0])
            wanted = config.reference_quantized_module if config is not None else None
    held = record.held(step, index)
    if wanted is None or any(issubclass(m, wanted) for m in held):
        return []
    modules = ", ".join(short_name(m) for m in held) or "nothing"
    return [Finding(branch.label, step_title(flow, step), f"makes no {short_name(wanted)} (the {what} its configs "
                    f"name); the pattern's modules are {modules}")]  # fmt: skip


def _calibrated(branch) -> bool:
    """Whether the branch's observers follow its inputs: a fixed-qparams op's (sigmoid) quantize its input to the op's
    fixed range (a float input outside it is clipped), so its outputs are not the float model's."""
    return branch.qconfig_dtypes.input_dtype_with_constraints.scale_exact_match is None


def _largest(out, want) -> float:
    return float((out - want).abs().max())


def _mean_error(out, want) -> float:
    spread = float(want.max() - want.min()) or 1.0
    return float((out - want).abs().mean()) / spread
