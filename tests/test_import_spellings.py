"""The spec `import` writes keeps the builder's spellings in its corners, and is laid out as the project's
formatter lays out its code.

tests/support/inhouse/orbit_dsp/corners.py spells its accumulator's range `-(2**70)`, `2**70 - 1` and
`2**-70`, and makes three output constraints in a loop that differ only by a zero written `0`, `0.0` and
`-0.0` (three values to the comparator: it compares types and reprs). The spec spells the numbers as the
builder does, names the three constraints apart without `_alt` and without the loop's variable (it holds
only the last one), and regenerates equal; at the width of `[tool.black] line-length`, else of
`[tool.ruff] line-length`, else the generator's own 120.
"""

import importlib.util
import re
import sys
from pathlib import Path

import black
import pytest

from generator.importer.number_spellings import name_text
from generator.importer.spec_writer import line_length
from generator.review.equality import compare_backend_configs
from tests.support import init_projects

PACKAGE = Path(__file__).parent / "support" / "inhouse" / "orbit_dsp"
CORNERS = "orbit_dsp.corners:get_orbit_corners_backend_config"
HELPERS = "orbit_dsp.helpers:get_orbit_dsp_backend_config"


def imported(base: Path, target: str, pyproject_extra: str = "") -> tuple[Path, str]:
    """(project, spec text): target imported as spec/imported.py into a project `init` started, regenerated."""
    project, site = init_projects.started(base, PACKAGE, pyproject_extra)
    for args in (("import", target, "--name", "imported"), ("regenerate",)):
        done = init_projects.generator(project, site, *args)
        assert done.returncode == 0, done.stdout + done.stderr
    return project, (project / "spec" / "imported.py").read_text()


@pytest.fixture(scope="module")
def corners(tmp_path_factory):
    return imported(tmp_path_factory.mktemp("corners"), CORNERS)


def test_numbers_keep_the_builders_spelling(corners):
    project, spec = corners
    flat = " ".join(spec.split())
    assert "quant_min_lower_bound=-(2**70), quant_max_upper_bound=2**70 - 1, scale_min_lower_bound=2**-70" in flat
    assert "1180591620717411303424" not in spec and "1180591620717411303423" not in spec
    generated = (project / "generated" / "imported.py").read_text()
    assert "quant_min_lower_bound=-(2**70)" in generated and "1180591620717411303424" not in generated


def test_constraints_differing_only_by_how_a_zero_is_written_are_named_apart_without_alt(corners):
    _, spec = corners
    defined = re.findall(r"^(\w+) = (?:DTypeWithConstraints|DTypeConfig)\(", spec, re.MULTILINE)
    assert defined == [
        "ACCUMULATOR",
        "quint8_scale_min_0",
        "quint8_scale_min_0p0",
        "quint8_scale_min_neg_0p0",
        "quint8_to_float_weight_qint8_dtype_config",
        "quint8_output_scale_min_0_dtype_config",
        "quint8_output_scale_min_0p0_dtype_config",
        "quint8_output_scale_min_neg_0p0_dtype_config",
    ], spec
    for name, zero in (
        ("quint8_scale_min_0", "0"),
        ("quint8_scale_min_0p0", "0.0"),
        ("quint8_scale_min_neg_0p0", "-0.0"),
    ):
        assert f"{name} = DTypeWithConstraints(dtype=torch.quint8, scale_min_lower_bound={zero})\n" in spec


def test_the_corners_builder_regenerates_equal(corners, monkeypatch):
    project, _ = corners
    monkeypatch.syspath_prepend(str(project.parent / "site"))
    for name in [n for n in sys.modules if n == "orbit_dsp" or n.startswith("orbit_dsp.")]:
        monkeypatch.delitem(sys.modules, name)
    from orbit_dsp.corners import get_orbit_corners_backend_config

    spec = importlib.util.spec_from_file_location("spellings_corners_generated", project / "generated" / "imported.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ours, theirs = module.get_orbit_corners_backend_config(), get_orbit_corners_backend_config()
    assert compare_backend_configs("imported", ours, theirs) == []
    lowest = [c.dtype_configs[0].output_dtype_with_constraints.scale_min_lower_bound for c in ours.configs[1:]]
    assert [repr(v) for v in lowest] == ["0", "0.0", "-0.0"]


def test_a_zero_is_named_by_its_type_and_sign_only_where_that_tells_two_apart():
    assert [name_text(v) for v in (0, 0.0, -0.0, 1.0)] == ["0", "0", "0", "1"]
    assert [name_text(v, exact=True) for v in (0, 0.0, -0.0, 1.0)] == ["0", "0p0", "neg_0p0", "1p0"]
    assert name_text(2**-70, "2**-70", exact=True) == "2_neg_70"


@pytest.mark.parametrize(
    "extra, width",
    [
        ("\n[tool.black]\nline-length = 88\n", 88),
        ("\n[tool.ruff]\nline-length = 100\n", 100),
        ("\n[tool.black]\nline-length = 79\n\n[tool.ruff]\nline-length = 100\n", 79),
        ("", 120),
        ("\n[tool.black]\nline-length = true\n", 120),
    ],
    ids=["black", "ruff", "black-first", "none", "not-a-width"],
)
def test_the_spec_is_written_at_the_projects_line_length(tmp_path, extra, width):
    (tmp_path / "pyproject.toml").write_text('[tool.backend-config-generator]\nspecs = "spec"\n' + extra)
    assert line_length(tmp_path) == width


@pytest.mark.parametrize("width", [88, 120])
def test_black_at_the_projects_width_leaves_the_spec_as_import_wrote_it(tmp_path, width):
    extra = f"\n[tool.black]\nline-length = {width}\n" if width != 120 else ""
    _, spec = imported(tmp_path, HELPERS, extra)
    assert black.format_str(spec, mode=black.Mode(line_length=width)) == spec
    # black splits every line it can at that width (a string it cannot), and not at another
    assert all('"' in line or "`" in line for line in spec.splitlines() if len(line) > width), spec
    code_lines = [line for line in spec.splitlines() if '"' not in line and "`" not in line]
    assert width == 88 or max(len(line) for line in code_lines) > 88, spec
