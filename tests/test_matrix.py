"""docs/support-matrix.md: every cell is what the generated builders register, and check keeps it fresh."""

import difflib
import importlib
import re

import torch
from torch.ao.quantization.backend_config import DTypeConfig

from generator import cli
from generator.building.torch_names import describe_pattern
from generator.model import Backend
from generator.spelling import evaluate
from tests.support.builders import BUILDERS
from tests.support.projects import ROOT, at_one_path_fixture

one_path_project = at_one_path_fixture("matrix")  # a fresh copy per test, at one path (see there)

MATRIX = "docs/support-matrix.md"


def parse_matrix(text: str) -> tuple[dict[str, dict[str, tuple[str, ...]]], dict[str, int], list[str]]:
    """({backend: {pattern: dtype config names}}, {backend: pattern count}, family names), read from the tables."""
    columns: dict[str, dict[str, tuple[str, ...]]] = {}
    counts: dict[str, int] = {}
    families: list[str] = []
    backends: list[str] = []
    in_family = False
    for line in text.splitlines():
        if line.startswith("## "):
            in_family = False
        elif line.startswith("### "):
            families.append(line[4:])
            in_family = True
        elif line.startswith("| pattern |"):
            backends = [cell.strip() for cell in line.strip("|").split("|")[1:]]
        elif re.match(r"^\| `[^`]+` \| `get_", line):
            backend, _builder, _module, count = [cell.strip() for cell in line.strip("|").split("|")]
            counts[backend.strip("`")] = int(count)
        elif in_family and line.startswith("| ") and not line.startswith("|---"):
            label, *cells = [cell.strip() for cell in line.strip("|").split(" | ")]
            pattern = re.fullmatch(r"(?:◐ )?`(.+)`", label).group(1)
            for backend, cell in zip(backends, cells, strict=True):
                if cell != "·":
                    names = tuple(re.fullmatch(r"`(\w+)`", n).group(1) for n in cell.split("<br>"))
                    assert pattern not in columns.setdefault(backend, {}), (backend, pattern)
                    columns[backend][pattern] = names
    return columns, counts, families


def matrix_label(pattern) -> str:
    """A pattern as the matrix's rows spell it: torch's objects as describe_pattern names them (nn.Conv2d), an
    object of the user's own code (`importable("acme.ops.Block")` in a spec) by the name the generated module
    imports it under, its name in its module (Block)."""
    if isinstance(pattern, tuple):
        inner = ", ".join(matrix_label(item) for item in pattern)
        return f"({inner},)" if len(pattern) == 1 else f"({inner})"
    text = describe_pattern(pattern)
    module, name = getattr(pattern, "__module__", None), getattr(pattern, "__qualname__", None)
    if isinstance(module, str) and isinstance(name, str) and text == f"{module}.{name}":
        return name if module.partition(".")[0] != "torch" else text
    return text


def registered(builder) -> tuple[str, dict[str, tuple[str, ...]]]:
    """The backend's label and {pattern: dtype config names} of a generated builder, read from the objects."""
    module = importlib.import_module(f"generated.{builder.module}")
    names = {id(value): name for name, value in vars(module).items() if isinstance(value, DTypeConfig)}
    config = builder.ours()()
    patterns = {}
    for pattern_config in config.configs:
        pattern = pattern_config.pattern
        if pattern is None:
            pattern = pattern_config._pattern_complex_format
        patterns[matrix_label(pattern)] = tuple(names[id(dc)] for dc in pattern_config.dtype_configs)
    given = getattr(module, "__backend_labels__", {}).get(builder.function)  # a label the spec gives (docs/spec.md)
    return given or Backend(config.name, builder.function, "", ()).label, patterns


def test_every_cell_is_what_the_generated_builder_registers():
    columns, counts, families = parse_matrix((ROOT / MATRIX).read_text())
    expected = dict(registered(builder) for builder in BUILDERS)
    assert set(columns) == set(expected)
    for backend, patterns in expected.items():
        assert columns[backend] == patterns, backend
        assert counts[backend] == len(patterns), backend
    assert families == sorted(families)


def test_the_parser_sees_a_changed_cell():
    text = (ROOT / MATRIX).read_text()
    columns, _, _ = parse_matrix(text)
    changed = text.replace("`x86_weighted_op_int8_dtype_config` |", "· |", 1)
    assert changed != text
    assert parse_matrix(changed)[0] != columns


def run(capsys, project, *args):
    code = cli.main(["--root", str(project), *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_check_finds_a_missing_matrix_and_the_matrix_command_restores_it(one_path_project, capsys):
    committed = (one_path_project / MATRIX).read_bytes()
    (one_path_project / MATRIX).unlink()
    code, out = run(capsys, one_path_project, "check")
    assert code == 1
    assert f"{MATRIX}: missing" in out
    assert not re.search(r"^generated/\S+: ", out, re.MULTILINE)  # the modules are fine
    assert run(capsys, one_path_project, "matrix") == (0, f"written   {MATRIX}\n")
    assert (one_path_project / MATRIX).read_bytes() == committed
    assert run(capsys, one_path_project, "matrix") == (0, f"unchanged {MATRIX}\n")
    assert run(capsys, one_path_project, "check")[0] == 0


def test_check_finds_a_hand_edited_cell(one_path_project, capsys):
    matrix = one_path_project / MATRIX
    matrix.write_text(matrix.read_text().replace("`x86_weighted_op_int8_dtype_config` |", "· |", 1))
    code, out = run(capsys, one_path_project, "check")
    assert code == 1
    assert f"{MATRIX}: edited by hand" in out
    assert "+| " in out  # the diff shows the row as regenerate would write it


def test_a_spec_change_makes_the_matrix_stale_and_touches_one_row(one_path_project, capsys):
    before = (one_path_project / MATRIX).read_text()
    spec = one_path_project / "spec" / "qnnpack_pt2e.py"
    mm = '                config(aten.mm.default, weighted, input_type_to_index={"weight": 1}, section="linear"),\n'
    assert mm in spec.read_text()
    spec.write_text(spec.read_text().replace(mm, ""))
    code, out = run(capsys, one_path_project, "check")
    assert code == 1
    assert f"{MATRIX}: stale" in out
    assert run(capsys, one_path_project, "regenerate")[0] == 0
    after = (one_path_project / MATRIX).read_text()
    changed_rows = [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), n=0, lineterm="")
        if line[:1] in "+-" and line[1:3] == "| " and not re.match(r"^[-+]\| `[^`]+` \| `get_", line)
    ]
    assert len(changed_rows) == 1 and changed_rows[0].startswith("-| ◐ `torch.ops.aten.mm.default` |"), changed_rows
    assert "torch.ops.aten.mm.default" not in parse_matrix(after)[0]["qnnpack_pt2e"]


def test_matrix_stdout_prints_without_writing(one_path_project, capsys):
    (one_path_project / MATRIX).unlink()
    code, out = run(capsys, one_path_project, "matrix", "--stdout")
    assert code == 0
    assert out == (ROOT / MATRIX).read_text()
    assert not (one_path_project / MATRIX).exists()


# ---------------------------------------------------------------------------
# The family index and the dtype-config legend, read back independently
# ---------------------------------------------------------------------------


def family_index_and_rows(text: str) -> tuple[dict[str, str], dict[str, int]]:
    """({family: "N patterns" as written in the index}, {family: rows in its table})."""
    index = dict(re.findall(r"^- \[(.+)\]\(#[^)]*\): (\d+ patterns?)$", text, re.MULTILINE))
    rows: dict[str, int] = {}
    family = None
    for line in text.splitlines():
        if line.startswith("## "):
            family = None
        elif line.startswith("### "):
            family = line[4:]
            rows[family] = 0
        elif family and line.startswith("| ") and not line.startswith(("| pattern |", "|---")):
            rows[family] += 1
    return index, rows


def test_the_family_index_counts_each_family_s_rows():
    index, rows = family_index_and_rows((ROOT / MATRIX).read_text())
    assert rows and set(index) == set(rows)
    for family, count in rows.items():
        assert index[family] == (f"{count} pattern" if count == 1 else f"{count} patterns"), family


def legend(text: str) -> dict[str, list[str]]:
    """{dtype config name: [input, output, weight, bias, dynamic, defined in]} from the legend table."""
    section = text.split("\n## Dtype configs\n", 1)[1]
    entries = {}
    for line in section.splitlines():
        match = re.fullmatch(r"\| `(\w+)` \|(.*)\|", line)
        if match:
            entries[match.group(1)] = [cell.strip() for cell in match.group(2).split("|")]
    return entries


def constraint_cell(cell: str) -> tuple[object, dict]:
    """`torch.quint8 (quant_min_lower_bound=0, ...)` -> (torch.quint8, {"quant_min_lower_bound": 0, ...})."""
    if cell == "":
        return None, {}
    match = re.fullmatch(r"`torch\.(\w+)(?: \((.*)\))?`", cell)
    assert match, cell
    extras = {}
    for item in filter(None, (match.group(2) or "").split(", ")):
        key, value = item.split("=")
        extras[key] = evaluate(value)  # as the spec spells it: 0, 2**-12, 1.0 / 256.0
    return getattr(torch, match.group(1)), extras


def expected_constraint(constraints) -> tuple[object, dict]:
    fields = ("quant_min_lower_bound", "quant_max_upper_bound", "scale_min_lower_bound",
              "scale_max_upper_bound", "scale_exact_match", "zero_point_exact_match")
    extras = {f: getattr(constraints, f) for f in fields if getattr(constraints, f) is not None}
    return constraints.dtype, extras


def test_the_legend_shows_each_dtype_config_s_own_dtypes():
    text = (ROOT / MATRIX).read_text()
    entries = legend(text)
    columns, _, _ = parse_matrix(text)
    assert set(entries) == {name for patterns in columns.values() for names in patterns.values() for name in names}
    modules = {m: importlib.import_module(f"generated.{m}") for m in {b.module for b in BUILDERS}}
    for name, (inputs, output, weight, bias, dynamic, defined_in) in entries.items():
        holders = {m for m, module in modules.items() if isinstance(vars(module).get(name), DTypeConfig)}
        assert defined_in.split(", ") == sorted(holders), name
        for module in holders:
            dtype_config = getattr(modules[module], name)
            assert constraint_cell(inputs) == expected_constraint(dtype_config.input_dtype_with_constraints), name
            assert constraint_cell(output) == expected_constraint(dtype_config.output_dtype_with_constraints), name
            assert constraint_cell(weight) == expected_constraint(dtype_config.weight_dtype_with_constraints), name
            assert constraint_cell(bias) == (dtype_config.bias_dtype, {}), name
            assert dynamic == ("" if dtype_config.is_dynamic is None else f"`{dtype_config.is_dynamic}`"), name
