"""check and diff, on copies of the project: clean, stale, hand-edited, missing, drifted."""

import os
import re
import shutil
import subprocess
import sys

import torch.ao.quantization.backend_config.fbgemm as torch_fbgemm

from generator import cli
from tests.conftest import ROOT


def run(capsys, *args):
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_check_passes_on_a_clean_tree(project, capsys):
    code, out = run(capsys, "--root", str(project), "check")
    assert code == 0, out
    assert run(capsys, "--root", str(project), "check", "--full")[0] == 0


def test_check_finds_a_stale_module_and_says_how_to_fix_it(project, capsys):
    spec = project / "spec" / "x86.py"
    spec.write_text(spec.read_text().replace("DEFAULT_OP_QUINT8)", "DEFAULT_OP_QUINT8)  # touched"))
    code, out = run(capsys, "--root", str(project), "check")
    assert code == 1
    assert "generated/x86.py: stale" in out
    assert "generated/fbgemm.py" not in out
    assert "fix: python -m generator regenerate" in out


def test_check_finds_a_hand_edit_of_the_body(project, capsys):
    module = project / "generated" / "onednn.py"
    module.write_text(module.read_text().replace("nni.ConvAdd2d(conv, add)", "nni.ConvAdd2d(add, conv)"))
    code, out = run(capsys, "--root", str(project), "check")
    assert code == 1
    assert "generated/onednn.py: edited by hand" in out
    assert "-    return nni.ConvAdd2d(add, conv)" in out  # the unified diff shows the fix
    assert run(capsys, "--root", str(project), "check", "--full")[0] == 1


def test_check_finds_a_hand_edit_of_the_digest(project, capsys):
    module = project / "generated" / "qnnpack.py"
    text = module.read_text()
    flipped = re.sub(r"body=([0-9a-f])", lambda m: "body=" + ("0" if m.group(1) != "0" else "1"), text, count=1)
    module.write_text(flipped)
    code, out = run(capsys, "--root", str(project), "check")
    assert code == 1
    assert "generated/qnnpack.py: edited by hand" in out


def test_check_finds_a_missing_module(project, capsys):
    (project / "generated" / "tensorrt.py").unlink()
    code, out = run(capsys, "--root", str(project), "check")
    assert code == 1
    assert "generated/tensorrt.py: missing" in out


def test_check_exits_2_on_a_bad_spec_and_writes_nothing(project, capsys):
    before = {p: p.read_bytes() for p in (project / "generated").iterdir()}
    (project / "spec" / "fbgemm.py").write_text("MODULE = (\n")
    code, out = run(capsys, "--root", str(project), "check")
    assert code == 2
    assert "spec/fbgemm.py:" in out
    assert {p: p.read_bytes() for p in (project / "generated").iterdir()} == before


def test_diff_against_torch_reports_drift(project, capsys, monkeypatch):
    assert run(capsys, "--root", str(project), "diff", "--against-torch")[0] == 0
    original = torch_fbgemm.get_fbgemm_backend_config

    def drifted():
        config = original()
        dropout = next(c for c in config.configs if c.pattern is torch_fbgemm.torch.nn.Dropout)
        del config._pattern_complex_format_to_config[dropout.pattern]
        config.configs[0].set_qat_module(None)
        return config

    monkeypatch.setattr(torch_fbgemm, "get_fbgemm_backend_config", drifted)
    code, out = run(capsys, "--root", str(project), "diff", "--against-torch", "fbgemm")
    assert code == 1
    assert "fbgemm: + pattern nn.Dropout" in out
    assert "fbgemm: nn.Conv1d: qat_module" in out


def test_diff_rev_names_the_patterns_a_spec_change_touched(project, capsys):
    git = shutil.which("git")

    def sh(*args):
        subprocess.run([git, "-C", str(project), *args], check=True, capture_output=True)

    sh("init", "-q")
    sh("-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    sh("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
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
heavy = sorted(m for m in ("torch", "black", "jinja2", "generator.spec_loading") if m in sys.modules)
print("exit", code, "imported", heavy)
"""


def test_check_fast_path_imports_neither_torch_nor_black_nor_the_spec(project):
    def probe():
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        done = subprocess.run([sys.executable, "-c", FAST_PATH_PROBE, str(project)], env=env, capture_output=True)
        return done.stdout.decode(), done.stderr.decode()

    first_out, first_err = probe()  # no lint cache yet: the spec is executed once, still without torch or black
    assert "exit 0 imported ['generator.spec_loading', 'jinja2']" in first_out
    out, err = probe()
    assert "exit 0 imported []" in out
    assert err == first_err and "pattern nni.ConvReLU2d is registered again" in err  # lint findings, from the cache


def test_check_strict_fails_on_lint_findings_with_or_without_the_cache(project, capsys):
    # the second registration of the fused conv-relu, found in the spec so that edits above it do not matter
    lines = (project / "spec" / "_common.py").read_text().splitlines()
    again = lines.index("            c(relu_fused, qat_module=relu_qat),") + 1
    for _ in range(2):
        code, out = run(capsys, "--root", str(project), "check", "--strict")
        assert code == 2
        assert f"error: spec/_common.py:{again}: pattern nni.ConvReLU2d is registered again" in out
        assert "(--strict; 7 lint finding(s))" in out
