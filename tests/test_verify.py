"""`python -m generator verify`: the proof travels with the tool (generator/review/verify.py, flows.py).

verify proves, in the project it runs in, that each generated builder equals its reference builder
(torch's or the user's own) field by field, and runs it through torch's FX flows on a small model of
its patterns. Each test runs the command in this process (torch is imported already) on a reduced copy
of the project (tests/support/projects.py): the whole project verifies in about 11 s, a copy with one
or two spec files in 2 to 5.
"""

import re

import pytest

from generator import cli
from tests.support import projects, user_builder

USER_BUILDER = "tests.support.user_builder:get_user_backend_config"
HARDSWISH = "BackendPatternConfig(nn.Hardswish).set_dtype_configs(\n                "


def run(capsys, project, *args):
    code = cli.main(["--root", str(project), "verify", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def x86_only(tmp_path_factory):
    return projects.fresh_copy(tmp_path_factory.mktemp("verify") / "project", "x86", factory=tmp_path_factory)


@pytest.fixture
def x86_copy(tmp_path, tmp_path_factory):
    return projects.fresh_copy(tmp_path / "project", "x86", factory=tmp_path_factory)


def _with_user_backend(project):
    """The project with the user's own builder imported (its reference is that builder), regenerated."""
    assert cli.main(["--root", str(project), "import", USER_BUILDER]) == 0
    assert cli.main(["--root", str(project), "regenerate"]) == 0
    return project


@pytest.fixture
def user_project(tmp_path, tmp_path_factory):
    return _with_user_backend(projects.fresh_copy(tmp_path / "project", "x86", factory=tmp_path_factory))


def test_verify_passes_on_the_project_s_backends(tmp_path, tmp_path_factory, capsys):
    project = projects.fresh_copy(tmp_path / "project", "native", factory=tmp_path_factory)
    code, out, err = run(capsys, project)
    assert code == 0, out + err
    assert err == ""
    lines = out.splitlines()
    for label, function in (("native", "get_native_backend_config"),
                            ("test_only_legacy_native", "get_test_only_legacy_native_backend_config")):  # fmt: skip
        (line,) = [line for line in lines if line.startswith(f"{label}: ")]
        assert f"equal to torch.ao.quantization.backend_config.native.{function} field by field" in line
        flows = r"FX flows ptq, qat, fuse on \d+ of its \d+ patterns \(\d+ not exercised\): as the reference's$"
        assert re.search(flows, line), line
    assert re.fullmatch(r"verify: all 2 backend\(s\) hold; \d+ pattern\(s\) not exercised by the FX flows \(listed\)",
                        lines[-1]), lines[-1]


def test_an_unknown_backend_is_one_line_naming_the_known_ones(x86_only, capsys):
    code, out, err = run(capsys, x86_only, "x86", "nope")
    assert (code, out) == (2, "")
    assert err == "error: unknown backend(s) nope; choose from x86\n"


@pytest.mark.parametrize(
    ("edit", "reported"),
    [
        (  # the dtype config Hardswish registers
            (f"{HARDSWISH}[x86_default_op_quint8_dtype_config]", f"{HARDSWISH}[x86_weighted_op_int8_dtype_config]"),
            "x86: nn.Hardswish: dtype_configs",
        ),
        (  # the fuser of (Conv2d, ReLU)
            ("def _fuse_conv_relu2d(is_qat, m1, m2):\n    return nni.ConvReLU2d(m1, m2)",
             "def _fuse_conv_relu2d(is_qat, m1, m2):\n    return nn.Sequential(m1, m2)"),
            "x86: (nn.Conv2d, nn.ReLU): fuser_method",
        ),
    ],
    ids=["dtype", "fuser"],
)
def test_an_edited_generated_module_fails_naming_the_backend_and_the_pattern(x86_copy, capsys, edit, reported):
    module = x86_copy / "generated" / "x86.py"
    text = module.read_text()
    assert edit[0] in text
    module.write_text(text.replace(edit[0], edit[1]))
    code, out, err = run(capsys, x86_copy)
    assert code == 1
    failures = err.splitlines()
    assert "generated/x86.py: edited by hand" in failures[0]
    assert any(line.startswith(reported) for line in failures), err
    if "fuser" in reported:  # the flows show it too: the fused branch differs, named by its pattern
        fused = r"x86: \(nn\.Conv2d, (nn|F)\.(ReLU|relu)\) \(spec/_common\.py:\d+\): fuse_fx: .*lacks nni\.ConvReLU2d"
        assert any(re.match(fused, line) for line in failures), err
    assert out.splitlines()[-1].startswith("verify: 1 of 1 backend(s) fail (")
    assert reported not in out  # failures on stderr, the report on stdout
    module.write_text(text)
    assert run(capsys, x86_copy)[0] == 0


def test_a_user_backend_verifies_against_its_own_reference(user_project, capsys):
    code, out, err = run(capsys, user_project, "user_backend")
    assert (code, err) == (0, ""), out + err
    assert out.splitlines() == [
        "user_backend: equal to tests.support.user_builder.get_user_backend_config field by field; FX flows ptq, fuse "
        "on 9 of its 10 patterns (1 not exercised): as the reference's",
        "not exercised by the FX flows (or not by all of them):",
        "  user_backend: 'mean': a function, method or module verify makes no layer of",
        "verify: all 1 backend(s) hold; 1 pattern(s) not exercised by the FX flows (listed)",
    ]


def test_a_changed_reference_builder_fails_the_user_backend(user_project, capsys, monkeypatch):
    """The user's builder moves on; the generated one does not: verify exits 1, naming backend and pattern."""
    original = user_builder.get_user_backend_config

    def moved_on():
        config = original()
        (hardswish,) = [c for c in config.configs if c.pattern is user_builder.nn.Hardswish]
        hardswish.set_dtype_configs([user_builder.user_weighted_dtype_config])
        return config

    monkeypatch.setattr(user_builder, "get_user_backend_config", moved_on)
    code, out, err = run(capsys, user_project, "user_backend")
    assert code == 1
    assert any(line.startswith("user_backend: nn.Hardswish: dtype_configs") for line in err.splitlines()), err


DECLARED_LINEAR = (
    'config(changed(nn.Linear, "our linear lowers to a conv kernel"), user_weighted_dtype_configs, '
    'root_module=nn.Linear, reference_quantized_module=nnqr.Conv2d, section="linear")'
)
UNDECLARED_LINEAR = (
    'config(nn.Linear, user_weighted_dtype_configs, root_module=nn.Linear, reference_quantized_module=nnqr.Conv2d, '
    'section="linear")'
)


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "undeclared"])
def test_a_raise_that_a_declared_difference_starts_is_listed_as_declared_and_passes(user_project, capsys, declared):
    """nn.Linear's reference module made a conv's: the reference conversion raises with ours, not with the reference's.

    Declared, the raise is what the spec says: listed under the declared differences with its cause, exit 0.
    Undeclared, the same raise is a failure naming no cause (and the equality proof reports the field).
    """
    spec = user_project / "spec" / "user.py"
    text = spec.read_text()
    plain_linear = 'config(nn.Linear, user_weighted_dtype_configs, root_module=nn.Linear, section="linear")'
    assert plain_linear in text
    text = text.replace(plain_linear, DECLARED_LINEAR if declared else UNDECLARED_LINEAR)
    text = text.replace("    config,\n", "    changed,\n    config,\n").replace("    nni,\n", "    nni,\n    nnqr,\n")
    spec.write_text(text)
    assert cli.main(["--root", str(user_project), "regenerate"]) == 0
    capsys.readouterr()
    code, out, err = run(capsys, user_project, "user_backend")
    assert code == (0 if declared else 1), out + err
    (flow,) = [line for line in (out + err).splitlines() if ": prepare_fx, " in line]
    raised = (
        r" *user_backend: nn\.Linear \(spec/user\.py:\d+\): prepare_fx, then convert_to_reference_fx: raises "
        r"AttributeError: '?Linear'? object has no attribute 'in_channels'; the reference's does not"
    )
    assert re.match(raised, flow), flow
    cause = "caused by the declared difference: changed nn.Linear (spec/user.py:"
    assert (cause in flow) == declared, flow
    assert flow.endswith("): our linear lowers to a conv kernel") == declared
    if declared:
        assert err == ""
        assert "  user_backend: declared changed nn.Linear (spec/user.py:" in out
        assert flow.startswith("  ") and out.index("declared differences") < out.index(flow)
    else:
        assert flow in err.splitlines()
        assert any(line.startswith("user_backend: nn.Linear: reference_quantized_module") for line in err.splitlines())


def test_a_backend_without_a_reference_runs_the_flows_only_and_says_so(tmp_path_factory, capsys):
    project = tmp_path_factory.mktemp("tutorial") / "project"
    projects.tutorial(tmp_path_factory, project)
    code, out, err = run(capsys, project, "my_backend")
    assert (code, err) == (0, ""), out + err
    assert out.splitlines()[0].startswith("my_backend: no reference builder, so FX flows only: FX flows ptq")
    assert out.splitlines()[0].endswith(": hold")


def test_each_fx_flow_run_is_bounded_in_time(x86_only, capsys):
    code, out, err = run(capsys, x86_only, "--timeout", "0.001")
    assert code == 1
    assert re.search(r"^x86: (\S.*: )?(prepare_fx|prepare_qat_fx|fuse_fx)(, then \w+)?: timed out after 0\.001 s", err,
                     re.M), err
    with pytest.raises(SystemExit) as usage:  # argparse's usage error
        run(capsys, x86_only, "--timeout", "0")
    assert usage.value.code == 2
    assert "argument --timeout: 0 is not a number of seconds above 0" in capsys.readouterr().err


def test_github_annotations_name_files_from_the_top_of_the_repository(tmp_path):
    """A project in a subfolder of its git repository: the annotation's file is the repository's path."""
    from generator.review import verify

    project = tmp_path / "vendor" / "configs"
    project.mkdir(parents=True)
    assert verify.repository_prefix(project) == ""  # outside a repository: paths as the project names them
    (tmp_path / ".git").mkdir()
    assert verify.repository_prefix(project) == "vendor/configs/"
    assert verify.repository_prefix(tmp_path) == ""
    failure = verify.Line("b: nn.Linear (spec/b.py:7): fuse_fx: raises X: a\nb%", "spec/b.py:7")
    declared = verify.Line("b: declared removed nn.ReLU (spec/b.py:9): why", "spec/b.py:9")
    verdict = verify.Verdict("b", None, 3, ("ptq",), 2, failures=(failure,), declared=(declared,))
    report = verify.Report([verdict], [], fix="python -m generator regenerate")
    assert report.github("vendor/configs/") == [
        "::error file=vendor/configs/spec/b.py,line=7,title=verify::b: nn.Linear (spec/b.py:7): fuse_fx: raises X: "
        "a\\nb%25",
        "::notice file=vendor/configs/spec/b.py,line=9,title=verify::b: declared removed nn.ReLU (spec/b.py:9): why",
        "b: no reference builder, so FX flows only: FX flows ptq on 2 of its 3 patterns: 1 failure(s)",
        "::error::verify: 1 of 1 backend(s) fail (1 failure(s)): b",
    ]
