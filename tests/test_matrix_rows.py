"""The support matrix tells the truth about a user's two chips: one row per pattern whatever section each
backend puts it in, no `·` where a backend has the pattern, nothing that moves when only a spec's layout
does, and `matrix --backend` narrows it (tests/support/two_chips.py)."""

import re

import pytest

from tests.support import two_chips

MATRIX = "docs/support-matrix.md"


def rows(text: str) -> list[tuple[str, dict[str, str]]]:
    """Every row of every family table: (pattern, {backend: cell})."""
    found, backends = [], []
    for line in text.splitlines():
        if line.startswith("| pattern |"):
            backends = [cell.strip() for cell in line.strip("|").split("|")[1:]]
        elif backends and line.startswith("| ") and not line.startswith("|---"):
            label, *cells = [cell.strip() for cell in line.strip("|").split(" | ")]
            found.append((re.fullmatch(r"(?:◐ )?`(.+)`", label).group(1), dict(zip(backends, cells, strict=True))))
        elif not line.startswith("|"):
            backends = [] if line.startswith("#") else backends
    return found


def run(root, *args) -> tuple[int, str]:
    code, out, err = two_chips.generator(root, *args)
    return code, out + err


@pytest.fixture
def chips(tmp_path):
    root = two_chips.write(tmp_path / "chips")
    assert run(root, "regenerate")[0] == 0
    return root


def test_a_pattern_in_different_sections_has_one_row_with_every_backend_that_has_it(chips):
    found = rows((chips / MATRIX).read_text())
    patterns = [pattern for pattern, _ in found]
    assert sorted(patterns) == sorted(["nn.Conv2d", "nn.Linear", "nn.ReLU", "nn.Hardtanh"])  # once each
    for pattern, cells in found:
        if pattern != "nn.Hardtanh":
            assert cells == {"dsp": "`_ACT_S8`", "npu": "`_ACT_S8`"}, pattern
    assert dict(found)["nn.Hardtanh"] == {"dsp": "`_DSP_U8`", "npu": "·"}


def test_which_backend_names_the_section_does_not_decide_the_row(chips):
    before = (chips / MATRIX).read_text()
    # The sections swap sides: npu's ops now have none, dsp's are "conv2d".
    two_chips.edit(chips, 'section="conv2d"', "", "spec/npu.py")
    two_chips.edit(chips, "config(op, [_ACT_S8])", 'config(op, [_ACT_S8], section="conv2d")', "spec/dsp.py")
    assert run(chips, "regenerate")[0] == 0
    assert (chips / MATRIX).read_text() == before


def test_a_spec_reformatted_leaves_the_matrix_byte_for_byte(chips):
    two_chips.edit(
        chips, 'config(nn.Hardtanh, [_DSP_U8], section="activations"),',
        'config(nn.Hardtanh, [_DSP_U8], section="activations"),\n'
        '                config(added(nn.Hardswish, "our DSP runs Hardswish in int8"), [_DSP_U8]),',
        "spec/dsp.py",
    )
    two_chips.edit(chips, "import Backend,", "import Backend, added,", "spec/dsp.py")
    assert run(chips, "regenerate")[0] == 0
    before = (chips / MATRIX).read_text()
    assert "our DSP runs Hardswish in int8" in before and "`spec/dsp.py`" in before  # the declaration, by file
    spec = chips / "spec" / "dsp.py"
    spec.write_text("# A comment, and lines that move every line below.\n\n\n" + spec.read_text())
    code, out = run(chips, "regenerate")
    assert code == 0 and f"unchanged {MATRIX}" in out
    assert (chips / MATRIX).read_text() == before


def test_matrix_backend_prints_those_backends_only_and_writes_nothing(chips):
    committed = (chips / MATRIX).read_bytes()
    code, out = run(chips, "matrix", "--backend", "npu")
    assert code == 0
    found = rows(out)
    assert sorted(p for p, _ in found) == ["nn.Conv2d", "nn.Linear", "nn.ReLU"]  # dsp's own Hardtanh is gone
    assert all(list(cells) == ["npu"] for _, cells in found)
    assert "`_DSP_U8`" not in out
    assert (chips / MATRIX).read_bytes() == committed
    assert run(chips, "check")[0] == 0


def test_a_misspelt_backend_is_one_line_with_a_suggestion(chips):
    code, out = run(chips, "matrix", "--backend", "nup")
    assert code == 2
    assert out == "error: unknown backend(s) nup; did you mean npu? choose from dsp, npu\n"
