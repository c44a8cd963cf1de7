"""The spec `import` writes reads as if written by hand, and `import` says what the generated
module still needs of the legacy code.

tests/support/inhouse/acme_npu/readable.py binds no constraint or dtype config to a global: those
its builder binds to local variables are named by them, the others from what they hold, and two
that differ by how they differ (never a `_2`); its
numbers (`2 ** -12`, `1.0 / 256.0`) keep their spelling in the spec and the generated module,
a computed one (`_finest_weight_scale()`) is its repr; and the generated module imports three of
its functions, two of them private.
"""

import importlib.util
import re
import shutil
import sys
from pathlib import Path

import pytest

from generator import cli, model
from generator.importer import dependencies
from generator.importer.number_spellings import NumberSpellings, name_text
from generator.review.equality import compare_backend_configs

INHOUSE = Path(__file__).parent / "support" / "inhouse" / "acme_npu"
READABLE = "acme_npu.readable:get_acme_readable_backend_config"


def run(capsys, *args):
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def acme_site(tmp_path, monkeypatch):
    """The in-house package installed (on sys.path wherever a generated module runs), imported afresh."""
    site = tmp_path / "site"
    shutil.copytree(INHOUSE, site / "acme_npu")
    monkeypatch.syspath_prepend(str(site))

    def forget():
        for name in [n for n in sys.modules if n == "acme_npu" or n.startswith("acme_npu.")]:
            del sys.modules[name]

    forget()
    yield site
    forget()


def load_generated(path):
    spec = importlib.util.spec_from_file_location(f"readable_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def defined_names(text: str) -> list[str]:
    return re.findall(r"^(\w+) = (?:DTypeWithConstraints|DTypeConfig)\(", text, re.MULTILINE)


def test_an_in_house_builder_imports_to_readable_names_and_spellings_proven_equal(fresh_project, acme_site, capsys):
    code, out, err = run(capsys, "--root", str(fresh_project), "import", READABLE, "--name", "acme")
    assert code == 0, out + err
    # what the generated module still imports from the legacy module, its private names flagged
    assert out.splitlines() == [
        "written   spec/acme.py: 9 patterns",
        "depends on acme_npu.readable: fuse_conv_bn_relu, _fuse_with, _make_relu6_fuser (private: make them "
        "public or move them before deleting acme_npu/readable.py)",
        "next: python -m generator regenerate",
    ]
    spec = (fresh_project / "spec" / "acme.py").read_text()
    # each constant the builder binds to a local variable named by it (`weighted = DTypeConfig(...)`); those
    # its helper `_activation()` returns named by what they hold, the two apart by their quantization range
    assert defined_names(spec) == [
        "quint8_scale_min_2_neg_12",
        "weight",
        "quint8_0_to_127_scale_min_2_neg_12",
        "sigmoid_output",
        "weighted",
        "weighted_relu",
        "sigmoid",
        "activation",
    ]
    flat = " ".join(spec.split())
    # numbers as the builder spells them (black writes `2 ** -12` as `2**-12`); the computed one as its repr
    assert "quint8_scale_min_2_neg_12 = DTypeWithConstraints(dtype=torch.quint8, scale_min_lower_bound=2**-12)" in flat
    assert "scale_exact_match=1.0 / 256.0, zero_point_exact_match=0" in flat
    assert "scale_min_lower_bound=0.3333333333333333" in flat
    assert "0.000244140625" not in spec and "0.00390625" not in spec

    code, out, err = run(capsys, "--root", str(fresh_project), "regenerate")
    assert code == 0, out + err
    generated_text = (fresh_project / "generated" / "acme.py").read_text()
    assert generated_text.count("scale_min_lower_bound=2**-12") == 2, generated_text
    assert "scale_exact_match=1.0 / 256.0" in generated_text and "0.000244140625" not in generated_text
    from acme_npu.readable import get_acme_readable_backend_config

    ours = load_generated(fresh_project / "generated" / "acme.py").get_acme_readable_backend_config()
    assert compare_backend_configs("acme", ours, get_acme_readable_backend_config()) == []


def test_a_spelling_is_used_only_where_it_evaluates_to_exactly_the_value():
    spellings = NumberSpellings({"scale_min_lower_bound": ["1 / 4096", "2 ** -12", "scale", "2 ** -12", "2 ** -11"]})
    # the spelling the source uses most, of those proven equal
    assert spellings.spelling("scale_min_lower_bound", 2**-12) == "2 ** -12"
    assert spellings.spelling("scale_min_lower_bound", 2**-11) == "2 ** -11"
    # another value, another type (1 is not 1.0), another bound: the repr
    assert spellings.spelling("scale_min_lower_bound", 0.5) is None
    assert NumberSpellings({"quant_min_lower_bound": ["1.0"]}).spelling("quant_min_lower_bound", 1) is None
    assert spellings.spelling("scale_max_upper_bound", 2**-12) is None


def test_spellings_are_read_from_every_form_a_builder_binds_a_bound_in(tmp_path, monkeypatch):
    (tmp_path / "vendor_bounds.py").write_text(
        "from torch.ao.quantization.backend_config import DTypeWithConstraints\n"
        "import torch\n"
        "FINEST = 2 ** -10\n"
        "A = DTypeWithConstraints(torch.quint8, 0, 2 ** 7 - 1)\n"  # positional, in torch's field order
        "B = DTypeWithConstraints(dtype=torch.quint8, scale_min_lower_bound=FINEST)\n"  # a module-level name
        "def make(scale):\n"
        "    c = DTypeWithConstraints(dtype=torch.quint8, scale_max_upper_bound=scale)\n"  # computed: no spelling
        "    c.scale_exact_match = 1.0 / 128\n"  # an attribute set afterwards
        "    return c\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import vendor_bounds

    found = NumberSpellings.of([vendor_bounds]).found
    del sys.modules["vendor_bounds"]
    assert found["quant_min_lower_bound"] == ["0"] and found["quant_max_upper_bound"] == ["2 ** 7 - 1"]
    assert found["scale_min_lower_bound"] == ["2 ** -10"]
    assert found["scale_max_upper_bound"] == [] and found["scale_exact_match"] == ["1.0 / 128"]


@pytest.mark.parametrize(
    "value, spelling, text",
    [(2**-12, "2 ** -12", "2_neg_12"), (2**-12, None, "2_neg_12"), (0.00390625, "1.0 / 256.0", "1_over_256"),
     (-127, None, "neg_127"), (1e-05, None, "1e_neg_05"), (0.1, None, "0p1"), (3.0, None, "3")],
)  # fmt: skip
def test_numbers_in_names_read_as_their_spelling(value, spelling, text):
    assert name_text(value, spelling) == text


def test_the_dependencies_are_the_modules_outside_torch_and_the_standard_library_by_name():
    import tests.support.user_builder  # noqa: F401  (a module Python has imported: cut where it ends)

    ref = model.TorchRef
    configs = (
        model.PatternConfig(
            pattern=(ref("torch.nn.Conv2d"), ref("vendor.fused.ConvReLU")),
            dtype_configs=(),
            fused_module=ref("vendor.fused.ConvReLU"),
            fuser_method=model.Call(ref("functools.partial"), (ref("vendor.fusers._fuse_with"), ref("torch.nn.ReLU"))),
        ),
        model.PatternConfig(
            pattern=ref("operator.add"), dtype_configs=(), fuser_method=ref("tests.support.user_builder.Fusers.fuse")
        ),
        model.PatternConfig(
            pattern=ref("torch.add"),
            dtype_configs=(),
            fuser_method=model.FunctionDef("f", "sequential", (("fused_module", ref("vendor.fused._Block")),)),
        ),
    )
    backend = model.Backend(name="b", builder="b", doc="", configs=configs)
    assert dependencies.report(backend) == [
        "depends on tests.support.user_builder: Fusers",
        "depends on vendor.fused: ConvReLU, _Block (private: make it public or move it before deleting "
        "vendor/fused.py)",
        "depends on vendor.fusers: _fuse_with (private: make it public or move it before deleting vendor/fusers.py)",
    ]
    assert dependencies.report(model.Backend(name="t", builder="t", doc="", configs=configs[2:2])) == []


def test_a_global_name_another_constant_has_gives_way_to_what_the_constant_holds():
    """Two modules bind `ACT` to different constraints: the first keeps it, the second is named by
    what it holds; configs of other dtypes are named by them (dynamic and weight-only included)."""
    import torch
    from torch.ao.quantization.backend_config import DTypeConfig, DTypeWithConstraints

    from generator.importer.dtype_names import DTypeNamer, GlobalNames

    act = DTypeWithConstraints(dtype=torch.quint8, scale_min_lower_bound=2**-12)
    other_act = DTypeWithConstraints(dtype=torch.quint8, quant_min_lower_bound=0, quant_max_upper_bound=127)
    configs = [
        DTypeConfig(input_dtype=act, output_dtype=act),
        DTypeConfig(input_dtype=other_act, output_dtype=other_act),
        DTypeConfig(torch.quint8, torch.float, torch.qint8, torch.float, is_dynamic=True),
        DTypeConfig(input_dtype=torch.float, output_dtype=torch.float, weight_dtype=torch.quint8),
    ]
    namer = DTypeNamer(GlobalNames([("ACT", act), ("ACT", other_act)]), configs)
    assert [c.name for c in namer.constraints.values()] == ["ACT", "quint8_0_to_127"]
    assert [c.name for c in namer.configs.values()] == [
        "quint8_input_output_scale_min_2_neg_12_dtype_config",
        "quint8_input_output_0_to_127_dtype_config",
        "quint8_to_float32_weight_qint8_bias_float32_dynamic_dtype_config",  # no source: torch.float32
        "float32_weight_quint8_dtype_config",
    ]
