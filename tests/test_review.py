"""`diff` as a reviewer uses it, in a temporary git repository with two commits.

The change under review: one op added to an op group in spec/_common.py, a
constraint changed inside a named dtype config of a backend the test adds
(`acme`, whose BackendConfig name is not its label), and a new backend
(`acme_new`).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from generator import cli
from generator.review import diff, sides
from tests.support.projects import GIT, commit_all, fresh_copy, git
from tests.support.shared_builds import computed_once, worker_copy

ACME = '''"""A test backend whose BackendConfig name is not a plain identifier."""

from generator.dsl import Backend, DTypeConfig, DTypeWithConstraints, Module, config, nn, torch

acme_weight = DTypeWithConstraints(dtype=torch.qint8, scale_min_lower_bound=SCALE)
acme_weighted_dtype_config = DTypeConfig(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=acme_weight, bias_dtype=torch.float
)

MODULE = Module(
    doc="Acme.",
    backends=[
        Backend(
            name="Acme NPU (v2)",
            builder="get_acme_npu_backend_config",
            doc="Acme NPU.",
            configs=[
                config(nn.Conv2d, [acme_weighted_dtype_config], section="conv2d"),
                config(nn.Linear, [acme_weighted_dtype_config], section="linear"),
                config(nn.Conv1d, [acme_weighted_dtype_config], section="conv1d"),
            ],
        )
    ],
)
'''
ACME_WEIGHT_LINE = next(n for n, text in enumerate(ACME.splitlines(), 1) if text.startswith("acme_weight = "))
ACME_WEIGHT_LOCATION = f"spec/acme.py:{ACME_WEIGHT_LINE}"
NEW_BACKEND = '''"""A backend added by the change under review."""

from generator.dsl import Backend, DTypeConfig, Module, config, nn, torch

acme_new_dtype_config = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)

MODULE = Module(
    doc="Acme new.",
    backends=[
        Backend(
            name="acme_new",
            builder="get_acme_new_backend_config",
            doc="Acme new.",
            configs=[
                config(nn.ReLU, [acme_new_dtype_config], section="relu"),
                config(nn.Hardtanh, [acme_new_dtype_config], section="hardtanh"),
            ],
        )
    ],
)
'''


def line_of(path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


# The committed spec files the repository holds (tests/support/projects.py): native's two backends take the
# op group's new op and are compared with torch's, qnnpack_pt2e's is the same on both sides. Every diff
# loads and builds each side's spec/, so the others would only make each run longer.
KEPT_SPECS = ("native", "qnnpack_pt2e")


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """The repository under review, built once per run (two regenerates, two commits); this worker's copy."""
    return worker_copy(tmp_path_factory, "review-repo", lambda project: build_repo(tmp_path_factory, project))


def build_repo(factory, project):
    project.rmdir()  # made for the build, which copies the project there
    fresh_copy(project, *KEPT_SPECS, factory=factory)
    (project / ".gitignore").write_text(".cache/\n")
    (project / "spec" / "acme.py").write_text(ACME.replace("SCALE", "0.001"))
    assert cli.main(["--root", str(project), "regenerate"]) == 0
    commit_all(project)
    (project / "spec" / "acme.py").write_text(ACME.replace("SCALE", "0.01"))
    (project / "spec" / "acme_new.py").write_text(NEW_BACKEND)
    common = project / "spec" / "_common.py"
    common.write_text(common.read_text().replace("    nn.ELU, nn.LeakyReLU,", "    nn.ELU, nn.SiLU, nn.LeakyReLU,", 1))
    assert cli.main(["--root", str(project), "regenerate"]) == 0
    git(project, "add", "-A")
    git(project, "commit", "-qm", "change")


def run(capsys, project, *args):
    capsys.readouterr()
    code = cli.main(["--root", str(project), "diff", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def counted_run(capsys, project, *args) -> tuple[tuple[int, str, str], list[str]]:
    """run(...), and the generated modules it built (sides._module_from_source), in order: written to a file as
    each is built, since they are built in a child process."""
    real = sides._module_from_source
    with tempfile.TemporaryDirectory() as folder:
        record = Path(folder) / "built"
        record.touch()

        def counting(name, source, filename):
            with record.open("a") as file:
                file.write(name + "\n")
            return real(name, source, filename)

        sides._module_from_source = counting
        try:
            return run(capsys, project, *args), record.read_text().splitlines()
        finally:
            sides._module_from_source = real


@pytest.fixture
def diff_once(repo, capsys, tmp_path_factory):
    """counted_run(ARGS) in the unchanged repository, run once per test run for each ARGS (several tests
    assert on the same diff); only for tests that leave the repository as it was built."""

    def shared(*args: str) -> tuple[tuple[int, str, str], list[str]]:
        return computed_once(tmp_path_factory, "review-diff", repr(args), lambda: counted_run(capsys, repo, *args))

    return shared


def test_two_revisions_show_the_whole_change_and_nothing_else(repo, diff_once):
    (code, out, err), _ = diff_once("--rev", "HEAD~1..HEAD")
    assert code == 1, err
    lines = out.splitlines()
    acme_spec = repo / "spec" / "acme.py"
    field = (
        "acme_npu: dtype config acme_weighted_dtype_config: weight_dtype.scale_min_lower_bound (acme_weight): "
        f"0.001 -> 0.01  (spec/acme.py:{line_of(acme_spec, 'acme_weight = ')})"
    )
    used = "acme_npu: dtype config acme_weighted_dtype_config: used by 3 patterns: nn.Conv2d, nn.Linear, nn.Conv1d"
    assert lines.count(field) == 1 and lines.count(used) == 1
    assert not [line for line in lines if "dtype_configs:" in line]  # no per-pattern -/+ of the same name
    new_spec = repo / "spec" / "acme_new.py"
    assert "acme_new: + backend (not in HEAD~1), 2 patterns" in lines
    assert f"acme_new: + pattern nn.ReLU  (spec/acme_new.py:{line_of(new_spec, 'config(nn.ReLU')})" in lines
    assert f"acme_new: + pattern nn.Hardtanh  (spec/acme_new.py:{line_of(new_spec, 'config(nn.Hardtanh')})" in lines
    silu = [line for line in lines if "nn.SiLU" in line]
    assert silu and all(re.fullmatch(r"\w+: \+ pattern nn.SiLU  \(spec/_common.py:\d+\)", line) for line in silu)
    spec_line = int(silu[0].rsplit(":", 1)[1].rstrip(")"))
    assert "nn.SiLU" in (repo / "spec" / "_common.py").read_text().splitlines()[spec_line - 1]  # the op list's entry
    explained = {field, used, *silu} | {line for line in lines if line.startswith("acme_new: ")}
    assert set(lines) == explained  # nothing else: no header churn, no invented changes


def test_one_revision_is_compared_with_the_working_tree_and_plain_diff_with_head(repo, capsys, diff_once):
    assert run(capsys, repo, "--rev", "HEAD~1") == diff_once("--rev", "HEAD~1..HEAD")[0]
    code, out, _ = run(capsys, repo)
    assert code == 0 and out.startswith("no differences in ") and out.endswith("(HEAD -> working tree)\n")


def test_a_removed_backend_lists_its_patterns_with_their_old_spec_lines(repo, capsys):
    code, out, _ = run(capsys, repo, "--rev", "HEAD..HEAD~1", "acme_new")
    assert code == 1
    assert out.splitlines() == [
        "acme_new: - backend (not in HEAD~1), 2 patterns",
        "acme_new: - pattern nn.ReLU  (spec/acme_new.py:15)",
        "acme_new: - pattern nn.Hardtanh  (spec/acme_new.py:16)",
    ]


def test_each_name_of_a_backend_selects_it_and_the_label_is_shown(repo, capsys):
    outputs = [run(capsys, repo, "--rev", "HEAD~1..HEAD", name) for name in ("acme_npu", "Acme NPU (v2)", "acme")]
    assert outputs[0] == outputs[1] == outputs[2]
    assert outputs[0][1].startswith("acme_npu: dtype config")
    code, _, err = run(capsys, repo, "--rev", "HEAD~1..HEAD", "acme_np")
    assert code == 2
    assert err.startswith("error: unknown backend(s) acme_np; did you mean acme_npu? choose from acme_new, ")


def test_torch_names_and_module_names_select_a_backend_everywhere_and_the_label_is_shown(repo, capsys):
    for args in (("--rev", "HEAD~1..HEAD"), ("--against-torch",)):
        shown = [json.loads(run(capsys, repo, *args, "--format", "json", name)[1]) for name in
                 ("_native_and_fp16", "test_only_legacy_native")]  # fmt: skip
        assert shown[0] == shown[1]
        assert [b["backend"] for b in shown[0]["backends"]] == ["test_only_legacy_native"]
    document = json.loads(run(capsys, repo, "--against-torch", "--format", "json", "acme", "acme_new")[1])
    assert (document["backends"], document["not_compared"]) == ([], ["acme_npu", "acme_new"])


def test_markdown_has_a_section_and_a_count_line_per_changed_backend(repo, capsys):
    code, out, _ = run(capsys, repo, "--rev", "HEAD~1..HEAD", "--format", "markdown", "acme_npu", "acme_new")
    assert code == 1
    sections = re.split(r"^### ", out, flags=re.MULTILINE)[1:]
    assert [s.splitlines()[0] for s in sections] == ["acme_new (new: not in `HEAD~1`)", "acme_npu"]
    assert sections[0].splitlines()[2] == "+2 patterns, -0, 0 changed"
    assert sections[1].splitlines()[2] == "+0 patterns, -0, 0 changed, 1 dtype config changed"
    assert "- dtype config `acme_weighted_dtype_config` (used by `nn.Conv2d`, `nn.Linear`, `nn.Conv1d`):" in sections[1]
    field = f"  - weight_dtype.scale_min_lower_bound (acme_weight): `0.001` → `0.01` (`{ACME_WEIGHT_LOCATION}`)"
    assert field in sections[1]


def test_json_follows_the_documented_schema(diff_once):
    (code, out, _), _ = diff_once("--rev", "HEAD~1..HEAD", "--format", "json")
    assert code == 1
    document = json.loads(out)
    assert (document["old"], document["new"], document["different"]) == ("HEAD~1", "HEAD", True)
    by_name = {b["backend"]: b for b in document["backends"]}
    new = by_name["acme_new"]
    assert new["status"] == "added" and new["counts"] == {
        "added": 2, "removed": 0, "changed": 0, "dtype_configs_changed": 0
    }  # fmt: skip
    assert [(p["change"], p["pattern"], p["location"]) for p in new["patterns"]] == [
        ("added", "nn.ReLU", "spec/acme_new.py:15"), ("added", "nn.Hardtanh", "spec/acme_new.py:16")
    ]  # fmt: skip
    assert by_name["acme_npu"]["dtype_configs"] == [{
        "name": "acme_weighted_dtype_config",
        "fields": [{"field": "weight_dtype.scale_min_lower_bound", "old": "0.001", "new": "0.01",
                    "constraint": "acme_weight", "location": ACME_WEIGHT_LOCATION}],
        "patterns": ["nn.Conv2d", "nn.Linear", "nn.Conv1d"],
    }]  # fmt: skip
    assert {b["status"] for b in document["backends"]} <= {"same", "changed", "added", "removed"}


def test_a_stale_tree_is_said_first_with_the_fix(repo, capsys):
    spec = repo / "spec" / "acme.py"
    original = spec.read_text()
    try:
        spec.write_text(original.replace("0.01", "0.1"))
        for args in ((), ("--rev", "HEAD~1"), ("--against-torch", "acme")):
            code, out, _ = run(capsys, repo, *args)
            assert code == 1
            assert out.splitlines()[0].startswith("generated/ is out of date with spec/")
            assert "generated/acme.py: stale: spec/acme.py changed" in out
            assert out.splitlines()[-1] == "fix: python -m generator regenerate"
            assert "no differences" not in out
        for args in ((), ("--against-torch",)):  # a tool reading JSON gets JSON, with the documented shape
            code, out, _ = run(capsys, repo, "--format", "json", *args)
            document = json.loads(out)
            assert code == 1 and document["different"] is True and "backends" not in document
            assert document["fix"] == "python -m generator regenerate"
            stale = {"file": "generated/acme.py", "state": "stale", "reasons": ["spec/acme.py changed"]}
            assert stale in document["stale"]
        code, out, _ = run(capsys, repo, "--format", "markdown")
        assert code == 1 and out.startswith("## Backend config diff: `HEAD` → `working tree`")
        assert "- `generated/acme.py`: stale: spec/acme.py changed" in out
    finally:
        spec.write_text(original)


def test_a_new_spec_file_not_yet_regenerated_is_a_stale_tree(repo, capsys):
    spec = repo / "spec" / "acme_newer.py"
    spec.write_text(NEW_BACKEND.replace("acme_new", "acme_newer"))
    try:
        code, out, err = run(capsys, repo)
        assert (code, err) == (1, "")
        assert "  generated/acme_newer.py: missing" in out.splitlines()
        assert "docs/support-matrix.md: stale: spec/acme_newer.py is new to it" in out
    finally:
        spec.unlink()


def commit_without_touching_the_tree(project, path: str, text: str) -> str:
    """A commit on top of HEAD that changes one file, made without checking it out."""
    index = {"GIT_INDEX_FILE": str(project / ".git" / "test-index")}
    env = {**os.environ, **index}

    def plumbing(*args, stdin=None):
        done = subprocess.run([GIT, "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                              input=stdin, env=env, check=True, capture_output=True, text=True)  # fmt: skip
        return done.stdout.strip()

    plumbing("read-tree", "HEAD")
    blob = plumbing("hash-object", "-w", "--stdin", stdin=text)
    plumbing("update-index", "--cacheinfo", f"100644,{blob},{path}")
    return plumbing("commit-tree", plumbing("write-tree"), "-p", "HEAD", "-m", "spec edited, not regenerated")


def test_a_revision_committed_stale_is_said_with_its_own_manifest(repo, capsys):
    edited = (repo / "spec" / "acme.py").read_text().replace("0.01", "0.1")
    stale = commit_without_touching_the_tree(repo, "spec/acme.py", edited)
    code, out, err = run(capsys, repo, "--rev", f"HEAD~1..{stale}")
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        f"generated/ is out of date with spec/ at {stale}; diff compares generated modules, so regenerate first:",
        "  generated/acme.py: stale: spec/acme.py changed",
        "  docs/support-matrix.md: stale: spec/acme.py changed",
        f"fix: check out {stale}, run python -m generator regenerate and commit the result",
    ]
    document = json.loads(run(capsys, repo, "--rev", f"HEAD~1..{stale}", "--format", "json")[1])
    assert [(f["file"], f["state"]) for f in document["stale"]] == [
        ("generated/acme.py", "stale"), ("docs/support-matrix.md", "stale")
    ]  # fmt: skip
    code, out, _ = run(capsys, repo, "--rev", f"{stale}..HEAD")  # only the newer side must be fresh
    assert code == 0 and out.startswith("no differences in ")


def test_nothing_to_compare_is_one_line_and_exit_2(repo, capsys, tmp_path):
    def one_error_line(*args, root=repo):
        code, out, err = run(capsys, root, *args)
        assert (code, out) == (2, "") and len(err.splitlines()) == 1 and err.startswith("error: "), err
        return err

    assert "is not a project root" in one_error_line(root=tmp_path)
    assert "not a revision" in one_error_line("--rev", "no-such-revision")
    bare = tmp_path / "bare"
    shutil.copytree(repo / "spec", bare / "spec")
    git(bare, "init", "-q")
    git(bare, "add", "-A")
    git(bare, "commit", "-qm", "spec only")
    assert "HEAD has no generated modules" in one_error_line("--rev", "HEAD..HEAD", root=bare)
    module = repo / "generated" / "acme.py"
    text = module.read_text()
    try:
        module.unlink()
        assert "generated/acme.py" in one_error_line("--rev", "HEAD", "acme_npu")
    finally:
        module.write_text(text)


def test_a_reference_dtype_config_that_meets_several_of_ours_takes_the_name_of_the_equal_one():
    """A declared change of one pattern's dtype configs (tensorrt's torch.cat given the weighted config)
    leaves torch's unnamed config meeting two of ours: it is the one whose content it has, not unnamed."""
    import torch
    from torch.ao.quantization.backend_config import BackendConfig, BackendPatternConfig
    from torch.ao.quantization.backend_config import DTypeConfig as TorchDTypeConfig

    from generator.review.diff import _paired_names

    def backend(cat, other):
        return BackendConfig("b").set_backend_pattern_configs([
            BackendPatternConfig(torch.cat).set_dtype_configs([cat]),
            BackendPatternConfig(torch.flatten).set_dtype_configs([other]),
        ])  # fmt: skip

    non_weighted = TorchDTypeConfig(input_dtype=torch.qint8, output_dtype=torch.qint8)
    weighted = TorchDTypeConfig(input_dtype=torch.qint8, output_dtype=torch.qint8, weight_dtype=torch.qint8)
    theirs_non_weighted = TorchDTypeConfig(input_dtype=torch.qint8, output_dtype=torch.qint8)
    names = {id(non_weighted): "non_weighted", id(weighted): "weighted"}
    paired = _paired_names(backend(theirs_non_weighted, theirs_non_weighted), backend(weighted, non_weighted), names)
    assert paired == {id(theirs_non_weighted): "non_weighted"}
    # with no content to go by, it stays unnamed: neither is known to be it
    theirs_other = TorchDTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)
    assert _paired_names(backend(theirs_other, theirs_other), backend(weighted, non_weighted), names) == {}


def test_modules_the_same_on_both_sides_are_not_built_and_the_diff_says_the_same(repo, capsys, monkeypatch, diff_once):
    outputs = {}
    for fmt in ("json", "text"):
        # the json diff is test_json_follows_the_documented_schema's too
        outputs[fmt], built_skipping = diff_once("--rev", "HEAD~1..HEAD", "--format", fmt)
        with monkeypatch.context() as patched:  # every module built, as before the shortcut
            patched.setattr(diff, "_declared_builders", lambda source: None)
            every, built = counted_run(capsys, repo, "--rev", "HEAD~1..HEAD", "--format", fmt)
        assert every == outputs[fmt]
        assert 0 < len(built_skipping) < len(built)
    document = json.loads(outputs["json"][1])  # what the diff with the shortcut said
    assert "same" in {backend["status"] for backend in document["backends"]}


DIFF_PROBE = """
import sys
from generator import cli
code = cli.main(["--root", sys.argv[1], "diff"])
print("exit", code, "torch imported:", "torch" in sys.modules)
"""


def test_a_diff_of_an_unchanged_or_a_stale_tree_imports_no_torch(repo, tmp_path):
    def probe(project):
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
        done = subprocess.run([sys.executable, "-c", DIFF_PROBE, str(project)], env=env, capture_output=True, text=True)
        return done.stdout.splitlines(), done.stderr

    out, err = probe(repo)
    assert (out[-1], err) == ("exit 0 torch imported: False", "")
    assert out[0].startswith("no differences in ")
    stale = shutil.copytree(repo, tmp_path / "stale")
    spec = stale / "spec" / "acme.py"
    spec.write_text(spec.read_text().replace("0.01", "0.1"))
    out, err = probe(stale)
    assert (out[-1], err) == ("exit 1 torch imported: False", "")
    assert out[0].startswith("generated/ is out of date with spec/")
