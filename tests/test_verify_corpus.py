"""`verify` on backends of many shapes, with and without a reference: green for every correct one, red
for each wrong one naming the pattern, and the same bytes on every run.

- torch's nine builders, generated and verified as if they had no reference (their specs without
  `reference=`): every backend holds, and the patterns no flow exercises are counted.
- the standard fusion families (tests/support/fusion_families.py: conv 1d/2d/3d + bn (+ relu),
  conv + relu, linear + relu, linear + bn1d, bn + relu, conv + add (+ relu) either side), imported
  with `python -m generator import` (its reference is that builder) and verified with the reference
  and without it: green, every family exercised.
- that backend made wrong in one place each (a fused module its fuser does not make, a fuser that
  drops the relu, a weight nothing observes, a root module that is not the pattern's), without a
  reference: each fails, one line per cause naming the backend, the pattern with its spec line, the
  torch calls and what differs.
- the wrong backends' report, run in two interpreters under two hash seeds: byte for byte the same
  output and exit code, and the same as the run in this process.

Each project is built and verified once per module (verify runs in this process, where torch is
imported already; the hash-seed runs are subprocesses).
"""

import os
import re
import subprocess
import sys

import pytest

from generator import cli
from tests.support import projects

ROOT = projects.ROOT
FAMILIES = "tests.support.fusion_families"
WRONG = ("wrong_fused_module", "wrong_fuser", "missing_weight_observer", "root_module_mismatch")
REFERENCE_LINE = re.compile(r"^ *reference=.*\n", re.M)


def verify(project, *args):
    """(exit code, standard output, standard error) of `verify` run in this process."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(["--root", str(project), "verify", *args])
    return code, out.getvalue(), err.getvalue()


def without_references(project):
    """Every spec file's `reference=` line taken out, and the project regenerated: the backends as once their old
    builders are retired."""
    for spec in sorted((project / "spec").glob("*.py")):
        text = spec.read_text()
        if REFERENCE_LINE.search(text):
            spec.write_text(REFERENCE_LINE.sub("", text))
    assert cli.main(["--root", str(project), "regenerate"]) == 0


@pytest.fixture(scope="module")
def torch_nine_without_references(tmp_path_factory):
    project = projects.fresh_copy(tmp_path_factory.mktemp("nine") / "project")
    without_references(project)
    return verify(project)


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    """The fusion families and the wrong backends imported into a copy of the project (their references: the
    builders), regenerated; verified with the references, then again without them."""
    project = projects.fresh_copy(tmp_path_factory.mktemp("families") / "project", "x86", factory=tmp_path_factory)
    for name in ("fusion_families", *WRONG):
        assert cli.main(["--root", str(project), "import", f"{FAMILIES}:get_{name}_backend_config"]) == 0
    assert cli.main(["--root", str(project), "regenerate"]) == 0
    with_reference = verify(project, "fusion_families")
    without_references(project)
    return project, with_reference, verify(project, "fusion_families", *WRONG)


def backend_line(out: str, label: str) -> str:
    (line,) = [line for line in out.splitlines() if line.startswith(f"{label}: ")]
    return line


def test_torch_s_nine_builders_verify_without_their_references(torch_nine_without_references):
    code, out, err = torch_nine_without_references
    assert (code, err) == (0, ""), out + err
    lines = out.splitlines()
    summaries = [line for line in lines if ": no reference builder, so FX flows only: " in line]
    assert len(summaries) == 9, out
    assert all(line.endswith(": hold") for line in summaries), out
    counted = sum(int(n) for n in re.findall(r"\((\d+) not exercised\)", out))
    assert counted > 0
    assert lines[-1] == f"verify: all 9 backend(s) hold; {counted} pattern(s) not exercised by the FX flows (listed)"
    # a fusion torch's own fuse_fx cannot run is listed with torch's reason, not failed
    assert re.search(r"^  onednn: .*\(nn\.Linear, F\.leaky_relu\).*: torch's prepare_fx hands F\.leaky_relu to the "
                     r"fuser method as a function, not a module, and it raises AssertionError$", out, re.M), out


def test_the_fusion_families_verify_against_their_reference(families):
    _, (code, out, err), _ = families
    assert (code, err) == (0, ""), out + err
    line = backend_line(out, "fusion_families")
    assert line == (f"fusion_families: equal to {FAMILIES}.get_fusion_families_backend_config field by field; FX flows "
                    "ptq, qat, fuse on 26 of its 55 patterns: as the reference's")  # fmt: skip
    assert out.splitlines()[-1] == "verify: all 1 backend(s) hold"


def test_the_fusion_families_verify_without_a_reference_every_family_exercised(families):
    _, _, (_, out, err) = families
    line = backend_line(out, "fusion_families")
    assert line == ("fusion_families: no reference builder, so FX flows only: FX flows ptq, qat, fuse on 26 of its "
                    "55 patterns: hold")  # fmt: skip
    assert not [failure for failure in err.splitlines() if failure.startswith("fusion_families:")], err


FAILURES = {  # backend: what its failure lines must say (each a regular expression for one whole line)
    "wrong_fused_module": [
        r"\(nn\.Conv2d, nn\.ReLU\) \(spec/wrong_fused_module\.py:\d+\): fuse_fx: makes no nni\.ConvBnReLU2d \(the "
        r"fused_module its configs name\); the pattern's modules are nni\.ConvReLU2d, nn\.Conv2d, nn\.ReLU",
        r"\(nn\.Conv2d, nn\.ReLU\) \(spec/wrong_fused_module\.py:\d+\): prepare_qat_fx: makes no nniqat\.ConvBnReLU2d "
        r"\(the qat_module its configs name\); .*",
    ],
    "wrong_fuser": [
        r"\(nn\.Linear, nn\.ReLU\) \(spec/wrong_fuser\.py:\d+\): fuse_fx: makes no nni\.LinearReLU \(the fused_module "
        r"its configs name\); the pattern's modules are nn\.Linear",
        r"\(nn\.Linear, nn\.ReLU\) \(spec/wrong_fuser\.py:\d+\): fuse_fx: the fused model does not compute what the "
        r"float model computes \(largest difference .*\)",
    ],
    "missing_weight_observer": [
        r"nn\.Linear \(spec/missing_weight_observer\.py:\d+\): prepare_fx, then convert_to_reference_fx: makes no "
        r"nnqr\.Linear \(the reference_quantized_module its configs name\); the pattern's modules are nn\.Linear",
    ],
    "root_module_mismatch": [
        r"\(nn\.Linear, nn\.ReLU\) \(spec/root_module_mismatch\.py:\d+\): prepare_fx, then convert_to_reference_fx: "
        r"makes no nnqr\.Conv2d \(the reference_quantized_module its configs name\); .*",
    ],
}


@pytest.mark.parametrize("backend", WRONG)
def test_a_wrong_backend_fails_naming_the_pattern(families, backend):
    _, _, (code, out, err) = families
    assert code == 1
    assert backend_line(out, backend).endswith(" failure(s)")
    mine = [line.removeprefix(f"{backend}: ") for line in err.splitlines() if line.startswith(f"{backend}: ")]
    for wanted in FAILURES[backend]:
        assert any(re.fullmatch(wanted, line) for line in mine), "\n".join(mine)
    for line in mine:  # in the author's words: never a path into the flows' records
        assert re.match(r"\S.* \(spec/\w+\.py:\d+\): (prepare_fx|prepare_qat_fx|fuse_fx)[^:]*: ", line), line
        assert "['" not in line and "result" not in line, line


def test_the_report_is_the_same_bytes_under_any_hash_seed(families):
    project, _, in_process = families
    runs = []
    for seed in ("0", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(ROOT), NO_COLOR="1")
        command = [sys.executable, "-m", "generator", "--root", str(project), "verify", "fusion_families", *WRONG]
        done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)
        runs.append((done.returncode, done.stdout, done.stderr))
    assert runs[0] == runs[1]
    assert runs[0] == in_process


def test_github_format_annotates_each_failure_at_its_pattern_s_spec_line(families):
    project, _, (_, _, text_err) = families
    code, out, err = verify(project, "--format", "github", "root_module_mismatch")
    assert (code, err) == (1, "")
    failures = [line for line in text_err.splitlines() if line.startswith("root_module_mismatch: ")]
    assert failures
    annotated = [line for line in out.splitlines() if line.startswith("::error file=")]
    for failure in failures:
        line = re.search(r" \(spec/root_module_mismatch\.py:(\d+)\): ", failure).group(1)
        wanted = f"::error file=spec/root_module_mismatch.py,line={line},title=verify::{failure}"
        assert wanted in annotated, out
    assert out.splitlines()[-1].startswith("::error::verify: 1 of 1 backend(s) fail (")
