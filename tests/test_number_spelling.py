"""Numbers keep the spelling the spec or torch gives them, and a spelling never changes a value.

The generated module writes a constraint bound as the spec spells it (`2**-12`,
`1.0 / 256.0`) when that spelling evaluates to exactly the value the spec produced;
otherwise as its repr. The equality tests prove every value equal to torch's; these
prove the spellings.
"""

import ast
import contextlib
import importlib.util
import io
from pathlib import Path

import torch

from generator import cli
from generator.spelling import evaluate, proven
from tests.support.projects import ROOT
from tests.support.spec_code import run

TORCH_BACKEND_CONFIG = Path(torch.__file__).parent / "ao" / "quantization" / "backend_config"
BOUNDS = ("quant_min_lower_bound", "quant_max_upper_bound", "scale_min_lower_bound", "scale_max_upper_bound",
          "scale_exact_match", "zero_point_exact_match")  # fmt: skip


def bound_expressions(paths) -> set[str]:
    """Each constraint bound written as an expression (not a plain literal), normalised by ast.unparse."""
    found = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.keyword) and node.arg in BOUNDS and not isinstance(node.value, ast.Constant):
                if not (isinstance(node.value, ast.UnaryOp) and isinstance(node.value.operand, ast.Constant)):
                    found.add(ast.unparse(node.value))
    return found


def test_the_generated_modules_spell_bounds_as_torch_s_sources_do():
    torch_spellings = bound_expressions(TORCH_BACKEND_CONFIG.glob("*.py"))
    assert {"1.0 / 256.0", "2.0 / 256.0", "2 ** (-12)"} <= torch_spellings
    assert torch_spellings <= bound_expressions((ROOT / "generated").glob("*.py"))


def regenerate(project) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["--root", str(project), "regenerate", "--jobs", "1"]) == 0


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"spelling_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SPEC = '''"""Bounds spelt in every way a spec may spell them."""

from generator.dsl import Backend, DTypeConfig, DTypeWithConstraints, Module, config, nn, torch

BASE = dict(dtype=torch.quint8, quant_min_lower_bound=0, scale_min_lower_bound=2**-12)
OVERRIDDEN = {**BASE, "scale_max_upper_bound": 1.0 / 2}
MUTATED = dict(dtype=torch.quint8, scale_min_lower_bound=2**-12)
MUTATED["scale_min_lower_bound"] = 2**-10  # the source's 2**-12 is no longer the value
SCALE = 2**-8

direct = DTypeWithConstraints(dtype=torch.quint8, scale_min_lower_bound=2 ** -14, scale_max_upper_bound=3e-1)
via_dict = DTypeWithConstraints(**OVERRIDDEN)
overriding = DTypeWithConstraints(**{**BASE, "scale_min_lower_bound": 2**-10})
mutated = DTypeWithConstraints(**MUTATED)
by_name = DTypeWithConstraints(dtype=torch.quint8, scale_exact_match=SCALE, zero_point_exact_match=-(2**3))
c0 = DTypeConfig(input_dtype=direct, output_dtype=direct)
c1 = DTypeConfig(input_dtype=via_dict, output_dtype=via_dict)
c2 = DTypeConfig(input_dtype=overriding, output_dtype=overriding)
c3 = DTypeConfig(input_dtype=mutated, output_dtype=mutated)
c4 = DTypeConfig(input_dtype=by_name, output_dtype=by_name)
quarter = DTypeWithConstraints(dtype=torch.quint8, scale_max_upper_bound=1.0 / 4)
quarter_too = DTypeWithConstraints(dtype=torch.quint8, scale_max_upper_bound=2**-2)  # the same value
c5 = DTypeConfig(input_dtype=quarter, output_dtype=quarter)
c6 = DTypeConfig(input_dtype=quarter_too, output_dtype=quarter_too)

MODULE = Module(
    doc="Spellings.",
    backends=[
        Backend(
            name="spelt",
            builder="get_spelt_backend_config",
            doc="Spellings.",
            configs=[config(nn.Linear, [c0]), config(nn.Conv2d, [c1, c2, c3, c4]), config(nn.ReLU, [c5, c6])],
        )
    ],
)
'''


def test_a_bound_keeps_the_spec_s_spelling_only_when_it_is_its_value(fresh_project):
    (fresh_project / "spec" / "spelt.py").write_text(SPEC)
    regenerate(fresh_project)
    text = (fresh_project / "generated" / "spelt.py").read_text()
    tree = ast.parse(text)
    written = {
        (node.targets[0].id, keyword.arg): ast.get_source_segment(text, keyword.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and ast.unparse(node.value).startswith("DTypeWithConstraints(")
        for keyword in node.value.keywords
        if keyword.arg != "dtype"
    }
    assert written == {
        ("direct", "scale_min_lower_bound"): "2**-14",  # black's spacing; the spec wrote 2 ** -14
        ("direct", "scale_max_upper_bound"): "3e-1",
        ("via_dict", "quant_min_lower_bound"): "0",
        ("via_dict", "scale_min_lower_bound"): "2**-12",
        ("via_dict", "scale_max_upper_bound"): "1.0 / 2",
        ("overriding", "quant_min_lower_bound"): "0",
        ("overriding", "scale_min_lower_bound"): "2**-10",  # the later entry wins, as in Python
        ("mutated", "scale_min_lower_bound"): "0.0009765625",  # the source says 2**-12: not its value
        ("by_name", "scale_exact_match"): "0.00390625",  # a name is no spelling of a number
        ("by_name", "zero_point_exact_match"): "-(2**3)",
        ("quarter", "scale_max_upper_bound"): "1.0 / 4",  # each call keeps its own spelling of 0.25
        ("quarter_too", "scale_max_upper_bound"): "2**-2",
    }
    module = load(fresh_project / "generated" / "spelt.py")
    expected = {
        "direct": {"scale_min_lower_bound": 2**-14, "scale_max_upper_bound": 0.3},
        "via_dict": {"quant_min_lower_bound": 0, "scale_min_lower_bound": 2**-12, "scale_max_upper_bound": 0.5},
        "overriding": {"quant_min_lower_bound": 0, "scale_min_lower_bound": 2**-10},
        "mutated": {"scale_min_lower_bound": 2**-10},
        "by_name": {"scale_exact_match": 2**-8, "zero_point_exact_match": -8},
        "quarter": {"scale_max_upper_bound": 0.25},
        "quarter_too": {"scale_max_upper_bound": 0.25},
    }
    for name, bounds in expected.items():
        constraints = getattr(module, name)
        for bound in BOUNDS:
            value = getattr(constraints, bound)
            assert repr(value) == repr(bounds.get(bound)), (name, bound)


def test_a_spelling_is_proven_by_evaluating_it():
    assert evaluate("2**-12") == 2**-12 and evaluate("1.0 / 256.0") == 0.00390625
    assert evaluate("__import__('os')") is None and evaluate("SCALE") is None and evaluate("2**10000") is None
    assert proven(2**-12, "2 ** -12") == "2 ** -12"
    assert proven(0.000244140625, "2**-12") == "2**-12"
    assert proven(2**-10, "2**-12") is None  # another value
    assert proven(1, "1.0") is None  # another type: an int bound stays an int
    assert proven(0.5, "0.5") is None  # nothing to keep: the repr says it


LATIN_1_SPEC = '''# -*- coding: latin-1 -*-
"""A spec saved in Latin-1, as its coding line says: its columns count characters Python decoded."""

from generator.dsl import Backend, DTypeConfig, DTypeWithConstraints, Module, config, nn, torch

e = DTypeWithConstraints(dtype=torch.quint8, quant_min_lower_bound=len("\xe9t\xe9") - 3, scale_min_lower_bound=2**-12)
c0 = DTypeConfig(input_dtype=e, output_dtype=e)

MODULE = Module(
    doc="Latin-1.",
    backends=[
        Backend(name="latin", builder="get_latin_backend_config", doc="Latin-1.", configs=[config(nn.Linear, [c0])])
    ],
)
'''


def test_a_spec_in_another_encoding_keeps_its_spellings(fresh_project):
    (fresh_project / "spec" / "latin.py").write_bytes(LATIN_1_SPEC.encode("latin-1"))
    regenerate(fresh_project)
    text = (fresh_project / "generated" / "latin.py").read_text()
    (node,) = [n for n in ast.parse(text).body if isinstance(n, ast.Assign) and n.targets[0].id == "e"]
    written = {k.arg: ast.get_source_segment(text, k.value) for k in node.value.keywords if k.arg != "dtype"}
    assert written == {"quant_min_lower_bound": "0", "scale_min_lower_bound": "2**-12"}


def test_a_spelling_too_large_to_be_a_bound_is_not_computed():
    """Each power's exponent is small, yet nested they would take hours (five levels) or give an int
    whose repr Python refuses (over 4,300 digits)."""
    from generator import spelling


    assert spelling.evaluate("((10**64)**64)**2") is None
    assert spelling.evaluate("((((((10**64)**64)**64)**64)**64)**64)") is None
    assert spelling.evaluate("2**-12") == 2**-12 and spelling.evaluate("(2**64)**15") == 2**960


def test_a_helper_no_spec_imports_does_not_break_a_numbers_spelling(project_with_only):
    """Spellings of `**NAME` are looked up in every spec/ file: an unimported one may assign NAME too."""
    project = project_with_only("qnnpack")
    before = (project / "generated" / "qnnpack.py").read_text()
    stray = "WEIGHT_QINT8_NEG_127_TO_127_SCALE_MIN_2_NEG_12 = dict(quant_max_upper_bound=((10**64)**64)**2)\n"
    (project / "spec" / "_aaa.py").write_text(stray)
    done = run(project, "regenerate", "--force")
    assert done.returncode == 0, done.stderr
    assert (project / "generated" / "qnnpack.py").read_text() == before
