"""check and diff, on copies of the project: clean, stale, hand-edited, missing, drifted."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import torch.ao.quantization.backend_config.fbgemm as torch_fbgemm

from generator.freshness import planning
from generator.loading import loader
from tests.support.cli_runs import run
from tests.support.projects import ROOT, at_one_path, at_one_path_fixture, commit_all

one_path_project = at_one_path_fixture("commands")  # a fresh copy per test, at one path (see there)


@pytest.fixture
def one_path_project_with_only(tmp_path_factory):
    """project_with_only(*names): a fresh copy of the project holding only those committed spec files
    (tests/support/projects.py), at one path, as `one_path_project` is: for tests about a few backends, whose runs
    would otherwise load and build every spec file."""

    return lambda *names: at_one_path(tmp_path_factory, "commands-fewer", *names)


def test_check_passes_on_a_clean_tree(one_path_project, capsys):
    code, out = run(capsys, "--root", str(one_path_project), "check")
    assert code == 0, out
    assert run(capsys, "--root", str(one_path_project), "check", "--full")[0] == 0


def test_check_finds_a_stale_module_and_says_how_to_fix_it(one_path_project, capsys):
    spec = one_path_project / "spec" / "x86.py"
    spec.write_text(spec.read_text().replace("DEFAULT_OP_QUINT8)", "DEFAULT_OP_QUINT8, is_dynamic=False)"))
    code, out = run(capsys, "--root", str(one_path_project), "check")
    assert code == 1
    assert "generated/x86.py: stale: spec/x86.py changed" in out
    assert "+    is_dynamic=False,\n" in out  # the diff regenerate would apply
    assert "generated/fbgemm.py" not in out
    assert "fix: python -m generator regenerate" in out


def test_an_edit_that_reaches_no_generated_text_passes_check_and_needs_no_commit(one_path_project_with_only, capsys):
    """An edit that reaches no generated text (a comment in spec/_common.py) is not called stale: check renders
    the files it feeds once, finds their bytes, and passes; regenerate writes nothing, the manifest included."""
    project = one_path_project_with_only("fbgemm", "x86")
    common = project / "spec" / "_common.py"
    common.write_text(common.read_text() + "# a reviewer's note\n")
    before = {p: p.read_bytes() for p in [*(project / "generated").iterdir(), project / "docs"] if p.is_file()}
    dependents = {t.relative for t in planning.plan(project) if "spec/_common.py" in dict(t.made_from)}
    assert len(dependents) > 1
    outputs = len(planning.plan(project))
    assert run(capsys, "--root", str(project), "check") == (0, f"{outputs} generated files are up to date\n")
    code, out = run(capsys, "--root", str(project), "regenerate", "--jobs", "1")
    assert code == 0 and not [line for line in out.splitlines() if not line.startswith("unchanged")], out
    assert {p: p.read_bytes() for p in before} == before  # not one file changes: nothing to commit
    assert run(capsys, "--root", str(project), "check") == (0, f"{outputs} generated files are up to date\n")


def test_check_finds_a_hand_edit_of_the_body(one_path_project, capsys):
    module = one_path_project / "generated" / "onednn.py"
    module.write_text(module.read_text().replace("nni.ConvAdd2d(conv, add)", "nni.ConvAdd2d(add, conv)"))
    code, out = run(capsys, "--root", str(one_path_project), "check")
    assert code == 1
    assert "generated/onednn.py: edited by hand" in out
    assert "-    return nni.ConvAdd2d(add, conv)" in out  # the unified diff shows the fix
    assert run(capsys, "--root", str(one_path_project), "check", "--full")[0] == 1


def test_check_finds_a_hand_edit_of_the_manifest(one_path_project, capsys):
    manifest = one_path_project / "generated" / "manifest.json"
    original = manifest.read_text()
    record = re.search(r'"generated/qnnpack.py": \{\n *"digest": "([0-9a-f])', original)
    flipped = original[: record.start(1)] + ("0" if record.group(1) != "0" else "1") + original[record.end(1) :]
    manifest.write_text(flipped)
    code, out = run(capsys, "--root", str(one_path_project), "check")
    assert code == 1
    # The module is what regenerate writes (check re-renders to know): only the record is wrong.
    assert "generated/qnnpack.py: what regenerate writes, not yet recorded" in out
    manifest.write_text(original.replace('"inputs": {\n', '"inputs": {\n  "spec/gone.py": "0",\n', 1))
    code, out = run(capsys, "--root", str(one_path_project), "check")
    assert code == 1
    assert "generated/manifest.json: stale" in out
    assert '-  "spec/gone.py": "0",' in out
    manifest.unlink()
    code, out = run(capsys, "--root", str(one_path_project), "check")
    assert code == 1
    assert "generated/x86.py: stale: generated/manifest.json has no record of it" in out


def test_check_finds_a_missing_module(one_path_project, capsys):
    (one_path_project / "generated" / "tensorrt.py").unlink()
    code, out = run(capsys, "--root", str(one_path_project), "check")
    assert code == 1
    assert "generated/tensorrt.py: missing" in out


def test_check_exits_2_on_a_bad_spec_and_writes_nothing(one_path_project, capsys):
    before = {p: p.read_bytes() for p in (one_path_project / "generated").iterdir()}
    (one_path_project / "spec" / "fbgemm.py").write_text("MODULE = (\n")
    code, out = run(capsys, "--root", str(one_path_project), "check")
    assert code == 2
    assert "spec/fbgemm.py:" in out
    assert {p: p.read_bytes() for p in (one_path_project / "generated").iterdir()} == before


def test_diff_against_torch_reports_drift(one_path_project, capsys, monkeypatch):
    assert run(capsys, "--root", str(one_path_project), "diff", "--against-torch")[0] == 0
    original = torch_fbgemm.get_fbgemm_backend_config

    def drifted():
        config = original()
        dropout = next(c for c in config.configs if c.pattern is torch_fbgemm.torch.nn.Dropout)
        del config._pattern_complex_format_to_config[dropout.pattern]
        config.configs[0].set_qat_module(None)
        return config

    monkeypatch.setattr(torch_fbgemm, "get_fbgemm_backend_config", drifted)
    code, out = run(capsys, "--root", str(one_path_project), "diff", "--against-torch", "fbgemm")
    assert code == 1
    assert "fbgemm: + pattern nn.Dropout" in out
    assert "fbgemm: nn.Conv1d: qat_module" in out


def test_diff_rev_names_the_patterns_a_spec_change_touched(one_path_project_with_only, capsys):
    project = one_path_project_with_only("fbgemm", "executorch", "qnnpack")  # executorch imports qnnpack
    commit_all(project)
    common = project / "spec" / "_common.py"
    common.write_text(common.read_text().replace("nn.Dropout, nn.PReLU,", "nn.PReLU,"))
    assert run(capsys, "--root", str(project), "regenerate")[0] == 0
    code, out = run(capsys, "--root", str(project), "diff", "--rev", "HEAD", "fbgemm", "executorch")
    assert code == 1
    assert "fbgemm: - pattern nn.Dropout" in out
    assert "executorch" not in out
    assert run(capsys, "--root", str(project), "diff", "--rev", "HEAD", "executorch")[0] == 0


FAST_PATH_PROBE = """
import sys
from generator import cli
code = cli.main(["--root", sys.argv[1], "check"])
heavy = sorted(m for m in ("torch", "black", "jinja2", "generator.loading.loader") if m in sys.modules)
print("exit", code, "imported", heavy)
"""


def test_check_fast_path_imports_neither_torch_nor_black_nor_the_spec(one_path_project):
    def probe():
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        probe = [sys.executable, "-c", FAST_PATH_PROBE, str(one_path_project)]
        done = subprocess.run(probe, env=env, capture_output=True)
        return done.stdout.decode(), done.stderr.decode()

    first_out, first_err = probe()  # no lint cache yet: the spec is executed once, without torch, black or Jinja2
    assert "exit 0 imported ['generator.loading.loader']" in first_out
    out, err = probe()
    assert "exit 0 imported []" in out
    assert err == first_err == ""  # the committed spec marks its intended overrides: no lint findings


def test_clean_runs_print_only_their_result_lines(one_path_project, capsys):
    code, out = run(capsys, "--root", str(one_path_project), "regenerate")
    assert code == 0 and out.splitlines() == [line for line in out.splitlines() if line.startswith("unchanged ")]
    for command in (["check"], ["check", "--strict"]):
        outputs = len(planning.plan(one_path_project))
        up_to_date = (0, f"{outputs} generated files are up to date\n")
        assert run(capsys, "--root", str(one_path_project), *command) == up_to_date


def test_an_unmarked_override_warns_and_fails_strict_with_or_without_the_cache(one_path_project, capsys):
    common = one_path_project / "spec" / "_common.py"
    marked = "c(relu_qat, **to_ref, overrides=TORCH_REGISTERS_CONV_RELU_TWICE),"
    assert marked in common.read_text()
    common.write_text(common.read_text().replace(marked, "c(relu_qat, **to_ref),"))
    lines = common.read_text().splitlines()
    line = max(n for n, text in enumerate(lines, 1) if text.strip() == "c(relu_qat, **to_ref),")  # the later one
    assert run(capsys, "--root", str(one_path_project), "regenerate")[0] == 0
    code, out = run(capsys, "--root", str(one_path_project), "check")
    assert code == 0
    assert f"warning: spec/_common.py:{line}: pattern nniqat.ConvReLU2d is registered again" in out
    named = re.search(r"Backends: ([^.]*)\.", out).group(1).split(", ")
    labels = {b.label for m in loader.load_modules(one_path_project) for b in m.backends}
    assert set(named) <= labels and len(named) > 1  # the names users see, never e.g. `_native_and_fp16`
    for _ in range(2):
        code, out = run(capsys, "--root", str(one_path_project), "check", "--strict")
        assert code == 2
        assert f"error: spec/_common.py:{line}: pattern nniqat.ConvReLU2d is registered again" in out
        assert "(--strict; 3 lint finding(s))" in out


def test_diff_against_torch_json_has_declared_unexplained_and_not_compared(
    one_path_project_with_only, capsys, monkeypatch
):
    """A declared addition, a dtype config changed under its name, a backend without a reference."""
    import torch.ao.quantization.backend_config.x86 as torch_x86

    project = one_path_project_with_only("fbgemm", "x86")

    spec = project / "spec" / "x86.py"
    edits = [
        ("DTypeConfig(**DEFAULT_OP_QUINT8)", 'DTypeConfig(**{**DEFAULT_OP_QUINT8, "is_dynamic": False})'),
        ("import Backend, DTypeConfig, Module", "import Backend, DTypeConfig, Module, added, config, nn"),
        ("            ),\n        )\n    ],", "            ) + [SILU],\n        )\n    ],"),
        ("MODULE = Module(", 'SILU = config(added(nn.SiLU, "SiLU like ELU"), default)\n\nMODULE = Module('),
    ]
    text = spec.read_text()
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    spec.write_text(text)
    shutil.copy(ROOT / "tests" / "custom_backends" / "tutorial" / "spec" / "my_backend.py", project / "spec")
    assert run(capsys, "--root", str(project), "regenerate")[0] == 0
    code, out = run(capsys, "--root", str(project), "diff", "--against-torch", "--format", "json", "x86", "my_backend")
    assert code == 1, out
    document = json.loads(out)
    assert document["not_compared"] == ["my_backend"] and document["different"] is True
    (x86,) = document["backends"]
    silu_line = next(n for n, line in enumerate(spec.read_text().splitlines(), 1) if "added(nn.SiLU" in line)
    assert [d for d in x86["declared"] if d["pattern"] == "nn.SiLU"] == [{
        "kind": "added", "pattern": "nn.SiLU", "reason": "SiLU like ELU",
        "location": f"spec/x86.py:{silu_line}", "fields": [],
    }]  # fmt: skip
    # torch's dtype config has no name: it is paired with ours, so its change shows once, not once per pattern
    lines = spec.read_text().splitlines()
    dtype_config_line = next(n for n, line in enumerate(lines, 1) if '"is_dynamic": False' in line)
    users = x86["dtype_configs"][0].pop("patterns")  # the patterns that use it, as the generated builder has them
    assert x86["dtype_configs"] == [{
        "name": "x86_default_op_quint8_dtype_config",
        "fields": [{"field": "is_dynamic", "old": "None", "new": "False", "constraint": None,
                    "location": f"spec/x86.py:{dtype_config_line}"}],
    }]  # fmt: skip
    assert {"torch.cat", "nn.ELU"} <= set(users)
    assert (x86["patterns"], x86["unexplained"]) == ([], [])
    original = torch_x86.get_x86_backend_config

    def with_silu():  # the reference now registers SiLU too: the declaration no longer happens
        config = original()
        return config.set_backend_pattern_config(type(config.configs[0])(torch_x86.torch.nn.SiLU))

    monkeypatch.setattr(torch_x86, "get_x86_backend_config", with_silu)
    code, out = run(capsys, "--root", str(project), "diff", "--against-torch", "--format", "json", "x86")
    (x86,) = json.loads(out)["backends"]
    assert code == 1 and x86["status"] == "changed" and x86["unexplained"], out
    assert any("nn.SiLU" in problem for problem in x86["unexplained"])
