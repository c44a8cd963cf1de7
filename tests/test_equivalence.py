"""Every generated builder equals its reference builder plus exactly the differences its spec declares.

A spec may declare that a backend adds, removes or changes a pattern relative to
its reference (`added(...)`, `removed(...)`, `changed(...)`). Then:
- an undeclared difference fails, as without declarations;
- a declaration that does not happen fails too, so that a stale one cannot linger.
The declaration tests below make both breaks on a copy of the project.
"""

import importlib
import inspect
import json
import pkgutil
import re

import pytest
import torch.ao.quantization.backend_config as torch_backend_config
from torch.ao.quantization.backend_config import BackendConfig, DTypeConfig

from generator import cli
from generator.review.divergence import split_differences, torch_key
from generator.review.equality import compare_pattern_configs
from generator.review.identity import pattern_key
from tests.support.builders import BUILDERS, GENERATED_MODULES, REFERENCED, _module_from_file, discover
from tests.support.projects import ROOT

# ---------------------------------------------------------------------------
# Equality with the reference
# ---------------------------------------------------------------------------


def equality_failures(builder) -> list[str]:
    """Why the builder is not its reference plus exactly its declared changes ([] when it is)."""
    split = split_differences(builder.id, builder.ours()(), builder.theirs()(), builder.declarations)
    return [f"undeclared: {d}" for d in split.undeclared] + [f"stale declaration: {s}" for s in split.stale]


@pytest.mark.parametrize("builder", REFERENCED, ids=lambda b: b.id)
def test_generated_builder_equals_its_reference_plus_declared_changes(builder):
    failures = equality_failures(builder)
    assert not failures, "\n".join(failures)


def torch_builders() -> set[str]:
    """Dotted paths of every builder function torch's backend_config package defines."""
    found = set()
    for info in pkgutil.iter_modules(torch_backend_config.__path__):
        module = importlib.import_module(f"{torch_backend_config.__name__}.{info.name}")
        for name, value in vars(module).items():
            if re.fullmatch(r"get_\w+_backend_config", name) and inspect.isfunction(value):
                if value.__module__ == module.__name__:
                    found.add(f"{module.__name__}.{name}")
    return found


def test_every_torch_builder_is_the_reference_of_a_generated_one():
    """Guards against a builder the spec forgets (the test list is discovered from the spec)."""
    missing = torch_builders() - {b.reference for b in REFERENCED}
    assert torch_builders() and not missing, sorted(missing)


@pytest.mark.parametrize("builder", [b for b in REFERENCED if b.dict_function], ids=lambda b: b.id)
def test_dict_builder_equals_the_reference_s(builder):
    ours = getattr(builder.generated_module(), builder.dict_function)()
    reference_module = importlib.import_module(builder.reference_module)
    theirs_function = getattr(reference_module, builder.dict_function, None)
    theirs = theirs_function() if theirs_function else builder.theirs()().to_dict()
    assert ours.keys() == theirs.keys()
    ours_config, theirs_config = BackendConfig.from_dict(ours), BackendConfig.from_dict(theirs)
    declared = {torch_key(d.key) for d in builder.declarations}
    assert _config_dict_keys(ours, ours_config, declared) == _config_dict_keys(theirs, theirs_config, declared)
    split = split_differences(builder.id, ours_config, theirs_config, builder.declarations)
    assert split.ok, "\n".join(map(str, [*split.undeclared, *split.stale]))


def _config_dict_keys(as_dict, config: BackendConfig, declared: set) -> dict:
    """{pattern key: the keys of its config dict}, outside the declared patterns."""
    return {
        pattern_key(c): d.keys()
        for c, d in zip(config.configs, as_dict["configs"], strict=True)
        if pattern_key(c) not in declared
    }


@pytest.mark.parametrize("module", GENERATED_MODULES)
def test_module_exports_the_reference_module_s_public_names(module):
    """Drop-in: a module whose builders all have one reference module exports that module's names."""
    builders = [b for b in BUILDERS if b.module == module]
    ours = builders[0].generated_module()
    functions = {b.function for b in builders} | {b.dict_function for b in builders if b.dict_function}
    assert functions <= set(ours.__all__)
    references = {b.reference_module for b in builders}
    if len(references) == 1 and None not in references:
        theirs = importlib.import_module(references.pop())
        assert set(ours.__all__) == set(getattr(theirs, "__all__", [b.function for b in builders]))
    for name in ours.__all__:
        assert getattr(ours, name) is not None


@pytest.mark.parametrize("module", sorted({b.module for b in REFERENCED}))
def test_exported_dtype_configs_equal_the_reference_module_s(module):
    builders = [b for b in REFERENCED if b.module == module]
    ours = builders[0].generated_module()
    theirs = importlib.import_module(builders[0].reference_module)
    for name in ours.__all__:
        if isinstance(getattr(ours, name), DTypeConfig) and hasattr(theirs, name):
            assert vars(getattr(ours, name)) == vars(getattr(theirs, name)), name


# ---------------------------------------------------------------------------
# Mutation: the comparison cannot pass against a broken generated module
# ---------------------------------------------------------------------------


def paired_patterns(builder):
    """(ours, theirs) pattern configs of the same pattern, declared patterns left out.

    A pattern only one side has, and that no declaration explains, fails here with
    the counts, since a mutation test over unpaired patterns would prove nothing.
    """
    declared = {torch_key(d.key) for d in builder.declarations}
    ours = {pattern_key(c): c for c in builder.ours()().configs if pattern_key(c) not in declared}
    theirs = {pattern_key(c): c for c in builder.theirs()().configs if pattern_key(c) not in declared}
    unpaired = sorted(str(k) for k in ours.keys() ^ theirs.keys())
    assert not unpaired, (
        f"{builder.id}: {len(ours)} patterns against the reference's {len(theirs)} outside the "
        f"{len(declared)} declared ones; no declaration explains {len(unpaired)}: {unpaired[:5]} "
        "(declare them with added()/removed() in the spec, or fix the spec)"
    )
    return [(ours[key], theirs[key]) for key in theirs]


def mutations_missed(builder) -> list[str]:
    from tests.test_compare import _mutations, _top_level_field

    missed = []
    for ours, expected in paired_patterns(builder):
        for field, mutated in _mutations(ours):
            reported = {d.field for d in compare_pattern_configs(builder.id, mutated, expected)}
            if _top_level_field(field) not in {_top_level_field(f) for f in reported}:
                missed.append(f"{ours.pattern or ours._pattern_complex_format}: {field}")
    return missed


@pytest.mark.parametrize("builder", REFERENCED, ids=lambda b: b.id)
def test_any_single_field_change_in_a_generated_pattern_fails_the_comparison(builder):
    """The equality test above cannot pass against a broken generated module."""
    assert not mutations_missed(builder)


# ---------------------------------------------------------------------------
# Declared differences, on a copy of the project
# ---------------------------------------------------------------------------

MISH = '    added(nn.Mish, "Mish is quantized like ELU on our backends"),\n'
PT2E_MM = '                config(aten.mm.default, weighted, input_type_to_index={"weight": 1}, section="linear"),\n'
PT2E_RELU = '                config(aten.relu.default, weighted, observation_type=SHARE_OBSERVER, section="relu"),\n'


def declare(project, readme_mish=True):
    """docs/adding-a-backend.md's example (Mish in DEFAULT_OPS) and a removal and a change in qnnpack_pt2e."""
    if readme_mish:
        common = project / "spec" / "_common.py"
        text = common.read_text().replace("    F,\n", "    F,\n    added,\n", 1)
        common.write_text(text.replace("F.leaky_relu, F.dropout,\n", f"F.leaky_relu, F.dropout,\n{MISH}", 1))
    pt2e = project / "spec" / "qnnpack_pt2e.py"
    text = pt2e.read_text().replace("Module, config,", "Module, changed, config, removed,")
    text = text.replace(PT2E_MM, '                removed(aten.mm.default, "we lower mm ourselves"),\n')
    text = text.replace(
        PT2E_RELU, '                config(changed(aten.relu.default, "our relu gets its own observer"), weighted),\n'
    )
    pt2e.write_text(text)


def regenerate(project, capsys):
    code = cli.main(["--root", str(project), "regenerate", "--jobs", "2"])
    out = capsys.readouterr()
    assert code == 0, out.err


def diff(project, capsys):
    code = cli.main(["--root", str(project), "diff", "--against-torch"])
    return code, capsys.readouterr().out


def test_declared_differences_keep_the_suite_green(fresh_project, capsys):
    """docs/adding-a-backend.md's "Adding an op" end to end: declared, the op passes equality and mutation tests."""
    declare(fresh_project)
    regenerate(fresh_project, capsys)
    builders = [b for b in discover(fresh_project) if b.reference]
    assert {b.id for b in builders if any(d.kind == "added" for d in b.declarations)} >= {"fbgemm", "x86"}
    for builder in builders:
        assert not equality_failures(builder), builder.id
    pt2e = next(b for b in builders if {d.kind for d in b.declarations} == {"removed", "changed"})
    assert len(pt2e.ours()().configs) == len(pt2e.theirs()().configs) - 1
    assert not mutations_missed(pt2e)
    fbgemm = (fresh_project / "generated" / "fbgemm.py").read_text()
    assert "# Added on purpose (unlike the reference builder): Mish is quantized like ELU on our backends" in fbgemm
    assert "# Removed on purpose (unlike the reference builder): torch.ops.aten.mm.default: we lower mm ourselves" in (
        fresh_project / "generated" / "qnnpack_pt2e.py"
    ).read_text()
    matrix = (fresh_project / "docs" / "support-matrix.md").read_text()
    mish = "| `fbgemm` | `nn.Mish` | + added | Mish is quantized like ELU on our backends | `spec/_common.py` |"
    assert mish in matrix
    assert "| `qnnpack_pt2e` | `torch.ops.aten.mm.default` | − removed | we lower mm ourselves |" in matrix
    assert re.search(r"^\| ◐ `torch\.ops\.aten\.mm\.default` \|( · \|)+$", matrix, re.MULTILINE)
    code, out = diff(fresh_project, capsys)
    assert code == 0, out
    assert "no undeclared differences" in out
    assert re.search(r"fbgemm: declared added nn.Mish \(spec/_common.py:\d+\): Mish is quantized like ELU on our", out)
    mm = r"qnnpack_pt2e: declared removed torch.ops.aten.mm.default \(spec/\S+\): we lower mm ourselves"
    assert re.search(mm, out)
    assert re.search(r"qnnpack_pt2e: declared changed torch.ops.aten.relu.default .*; observation_type: ", out)


def test_undeclared_and_stale_differences_fail(project_with_only, capsys):
    project = project_with_only("qnnpack_pt2e")  # the one spec file edited and compared
    declare(project, readme_mish=False)
    pt2e = project / "spec" / "qnnpack_pt2e.py"
    text = pt2e.read_text()
    # Undeclared: addmm dropped silently. Stale: conv "changed" but configured as the reference does.
    text = text.replace("                config(aten.addmm.default,", "                # config(aten.addmm.default,")
    text = text.replace("config(pattern, weighted, input_type_to_index=WEIGHT_BIAS_1_2", (
        'config(changed(pattern, "no change at all") if pattern == conv else pattern, weighted, '
        "input_type_to_index=WEIGHT_BIAS_1_2"))
    pt2e.write_text(text)
    regenerate(project, capsys)
    builder = next(b for b in discover(project) if b.module == "qnnpack_pt2e")
    failures = equality_failures(builder)
    assert any(f.startswith("undeclared:") and "aten.addmm.default" in f for f in failures), failures
    assert any("stale declaration:" in f and "it equals the reference's" in f for f in failures), failures
    with pytest.raises(AssertionError, match=r"no declaration explains 1: .*addmm"):
        paired_patterns(builder)
    code, out = diff(project, capsys)
    assert code == 1
    drift, declared = out.split("declared differences (deliberate, see the spec):")
    assert "qnnpack_pt2e: - pattern torch.ops.aten.addmm.default" in drift
    assert "declared changed at spec/qnnpack_pt2e.py:" in drift and "aten.mm" not in drift
    assert "declared removed torch.ops.aten.mm.default" in declared and "addmm" not in declared


# ---------------------------------------------------------------------------
# A declared change of a dtype config (docs/reviewing.md, "Reviewing a spec pull request")
# ---------------------------------------------------------------------------

QNNPACK_WEIGHT = '''qnnpack_weight_qint8_neg_127_to_127_scale_min_2_neg_12 = DTypeWithConstraints(
    **WEIGHT_QINT8_NEG_127_TO_127_SCALE_MIN_2_NEG_12
)'''
# The walkthrough of docs/reviewing.md ("Reviewing a spec pull request") declares it so:
RAISED_WEIGHT = next(
    block.strip()
    for block in re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "reviewing.md").read_text(), re.S)
    if block.startswith("qnnpack_weight_qint8_neg_127_to_127_scale_min_2_neg_12 = changed(")
).replace('"scale_min_lower_bound": 2**-10', '"scale_min_lower_bound": BOUND')


def raise_qnnpack_weight_bound(project, bound: str = "2**-10", declared: bool = True) -> int:
    """The walkthrough's edit of spec/qnnpack.py (docs/reviewing.md); the line of its changed() call."""
    spec = project / "spec" / "qnnpack.py"
    text = spec.read_text().replace("DTypeWithConstraints, Module", "DTypeWithConstraints, Module, changed", 1)
    raised = RAISED_WEIGHT.replace("BOUND", bound)
    if not declared:
        raised = "\n".join(raised.splitlines()[:2]).replace("changed(\n    ", "").rstrip(",")
    assert QNNPACK_WEIGHT in text
    spec.write_text(text.replace(QNNPACK_WEIGHT, raised))
    return text.splitlines().index(QNNPACK_WEIGHT.splitlines()[0]) + 1


def test_a_declared_dtype_config_change_keeps_the_suite_green(fresh_project, capsys):
    line = raise_qnnpack_weight_bound(fresh_project)
    regenerate(fresh_project, capsys)
    builders = {b.id: b for b in discover(fresh_project) if b.reference}
    changed = {name for name, b in builders.items() if any(d.key is None for d in b.declarations)}
    assert changed >= {"qnnpack", "executorch"}  # executorch shares qnnpack's dtype config
    for builder in builders.values():
        assert not equality_failures(builder), builder.id
    # ... and the change is real: the built configs differ from the reference's in that bound
    ours = builders["qnnpack"].ours()()
    bounds = {dc.weight_dtype_with_constraints.scale_min_lower_bound for c in ours.configs for dc in c.dtype_configs}
    assert 2**-10 in bounds and 2**-12 not in bounds
    code, out = diff(fresh_project, capsys)
    assert code == 0, out
    declared = (
        f"  qnnpack: declared changed DTypeWithConstraints qnnpack_weight_qint8_neg_127_to_127_scale_min_2_neg_12 "
        f"(spec/qnnpack.py:{line}): our int8 kernels need weight scales of at least 2**-10; "
        "weight_dtype.scale_min_lower_bound (qnnpack_weight_qint8_neg_127_to_127_scale_min_2_neg_12): 2**-12 -> 2**-10"
    )  # torch's bound, which nothing spells, reads as the power of two it is; ours as the spec spells it
    assert out.startswith("no undeclared differences in ") and declared in out.splitlines(), out
    assert declared.replace("qnnpack:", "executorch:", 1) in out.splitlines()
    code = cli.main(["--root", str(fresh_project), "diff", "--against-torch", "--format", "json", "qnnpack"])
    qnnpack = json.loads(capsys.readouterr().out)["backends"][0]
    assert code == 0 and qnnpack["status"] == "same" and qnnpack["dtype_configs"] == []
    assert qnnpack["declared"] == [{
        "kind": "changed",
        "pattern": "DTypeWithConstraints qnnpack_weight_qint8_neg_127_to_127_scale_min_2_neg_12",
        "reason": "our int8 kernels need weight scales of at least 2**-10",
        "location": f"spec/qnnpack.py:{line}",
        "fields": [{"field": "weight_dtype.scale_min_lower_bound", "old": "2**-12", "new": "2**-10",
                    "constraint": "qnnpack_weight_qint8_neg_127_to_127_scale_min_2_neg_12", "location": None}],
    }]  # fmt: skip
    matrix = (fresh_project / "docs" / "support-matrix.md").read_text()
    row = "| `qnnpack` | `DTypeWithConstraints qnnpack_weight_qint8_neg_127_to_127_scale_min_2_neg_12` | ~ changed |"
    assert row in matrix
    generated = (fresh_project / "generated" / "qnnpack.py").read_text()
    assert (
        "# Changed on purpose (unlike the reference builder): our int8 kernels need weight scales of at least 2**-10\n"
        "qnnpack_weight_qint8_neg_127_to_127_scale_min_2_neg_12 = DTypeWithConstraints(" in generated
    )


def test_an_undeclared_or_stale_dtype_config_change_fails(project_with_only, capsys):
    project = project_with_only("qnnpack")  # the one spec file edited and compared
    original = (project / "spec" / "qnnpack.py").read_text()
    raise_qnnpack_weight_bound(project, declared=False)  # the walkthrough's edit, not declared
    regenerate(project, capsys)
    qnnpack = next(b for b in discover(project) if b.id == "qnnpack")
    assert any(f.startswith("undeclared:") and "scale_min_lower_bound" in f for f in equality_failures(qnnpack))
    code, out = diff(project, capsys)
    assert code == 1 and "qnnpack: dtype config qnnpack_weighted_op_qint8_symmetric_dtype_config: " in out
    # Declared, but with torch's own bound: the declaration does not happen, so it is stale.
    (project / "spec" / "qnnpack.py").write_text(original)
    line = raise_qnnpack_weight_bound(project, bound="2**-12")
    regenerate(project, capsys)
    _module_from_file.cache_clear()  # the generated module changed under the same path
    qnnpack = next(b for b in discover(project) if b.id == "qnnpack")
    stale = (
        "stale declaration: qnnpack: DTypeWithConstraints qnnpack_weight_qint8_neg_127_to_127_scale_min_2_neg_12: "
        f"declared changed at spec/qnnpack.py:{line}, but it equals the reference's, field by field"
    )
    assert equality_failures(qnnpack) == [stale]
    code, out = diff(project, capsys)
    assert code == 1 and stale.removeprefix("stale declaration: ") in out.splitlines(), out  # "qnnpack: " once
