"""Adversarial checks of the build's split between this process and a forked child (generator/build/pipeline.py):
whichever process meets a failure, the run says what rendering the modules in order (`--jobs 1`) says."""

import os
import subprocess
import sys

import pytest

from generator import cli, errors
from generator.build import check_memo, pipeline
from tests import test_build_split
from tests.support.projects import ROOT

spec, built = test_build_split.spec, test_build_split.built  # the committed spec's fixture, a build with N jobs


def shares(spec) -> tuple[list[str], list[str], list[str]]:
    """Every module in rendering order, those the child renders, those this process renders."""
    modules, _ = spec
    order = sorted(modules, key=lambda m: -pipeline._pattern_count(m))
    theirs = {m.spec.name for m in pipeline._child_share(order)}
    names = [m.spec.name for m in order]
    return names, [n for n in names if n in theirs], [n for n in names if n not in theirs]


class TemplateBug(Exception):
    """Not a GeneratorError: what a template calling a method wrongly raises (a TypeError, say)."""


@pytest.mark.parametrize("spec_error_first", [True, False])
@pytest.mark.parametrize("first_is_the_child_s", [True, False])
def test_the_first_failure_in_order_is_said_when_one_is_a_bug(spec, tmp_path, monkeypatch, first_is_the_child_s,
                                                              spec_error_first):  # fmt: skip
    """One module fails with a spec error, another (in the other process) with an exception that is not a
    GeneratorError: rendering in order never reaches the later one, so the earlier one is said."""
    _, theirs, mine = shares(spec)
    first, later = (theirs[0], mine[-1]) if first_is_the_child_s else (mine[0], theirs[-1])
    spec_error, bug = (first, later) if spec_error_first else (later, first)
    real = pipeline.render_module

    def render(module, templates):
        if module.spec.name == spec_error:
            raise errors.SpecFieldError(f"{spec_error} has a misspelt parameter", None)
        if module.spec.name == bug:
            raise TemplateBug(f"{bug}'s template is broken")
        return real(module, templates)

    monkeypatch.setattr(pipeline, "render_module", render)
    expected = (errors.SpecFieldError, f"^{spec_error} has") if spec_error_first else (TemplateBug, f"^{bug}'s")
    for jobs in (1, 2):
        with pytest.raises(expected[0], match=expected[1]):
            built(spec, jobs, tmp_path)


def regenerate(project, *options) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "generator", "regenerate", "--force", *options], cwd=project,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)  # fmt: skip


def regenerated_here(capfd, *options) -> subprocess.CompletedProcess:
    """regenerate --force by cli.main in this process, from the current folder; fds 1 and 2 captured."""
    capfd.readouterr()
    code = cli.main(["regenerate", "--force", *options])
    out, err = capfd.readouterr()
    return subprocess.CompletedProcess(options, code, out, err)


def test_what_the_checks_compile_warns_of_is_said_alike_whatever_the_jobs_and_the_cache(fresh_project):
    """A template that writes `x is 1` makes compile() warn as the static checks compile each module. Part
    of the checks run in the child, whose output comes after this process's, and a text that passed once
    is not compiled again (check_memo): what a run says must depend on neither."""
    template = fresh_project / "templates" / "functions" / "sequential.py.j2"
    template.write_text(
        template.read_text().replace("(is_qat, m1, m2):\n", "(is_qat, m1, m2):\n    assert m1 is not 1\n")
    )
    said = []
    for options, memo in ((["--jobs", "1"], "cold"), (["--jobs", "2"], "cold"), (["--jobs", "2"], "warm")):
        if memo == "cold":
            for kept in (fresh_project / ".cache" / "generator").glob("checked-*.bin"):
                kept.unlink()
        done = regenerate(fresh_project, *options)
        assert done.returncode == 0, done.stderr
        said.append(done.stderr)
    assert said[0] == said[1] == said[2]


def test_a_check_failing_other_than_by_a_spec_error_leaves_a_spec_error_rendered_first_said(
    spec, tmp_path, monkeypatch
):
    """compile() raises RecursionError (not SyntaxError) on a text with a 100000-term expression, which a
    template can write. The child checks its modules before this process raises the first render error:
    rendering in order stops at that error and never checks the later module, so the error is said."""
    order, theirs, mine = shares(spec)
    real_render, real_check = pipeline.render_module, pipeline.check_module

    def render(module, templates):
        if module.spec.name == mine[0]:
            raise errors.SpecFieldError(f"{mine[0]} has a misspelt parameter", None)
        return real_render(module, templates)

    def check(text, output):
        if output == f"generated/{theirs[-1]}.py":
            raise RecursionError("maximum recursion depth exceeded during compilation")
        return real_check(text, output)

    monkeypatch.setattr(pipeline, "render_module", render)
    monkeypatch.setattr(pipeline, "check_module", check)
    monkeypatch.setattr(check_memo, "passed", lambda *args: False)  # every text is checked
    monkeypatch.setattr(check_memo, "remember", lambda *args: None)
    for jobs in (1, 2):
        with pytest.raises(errors.SpecFieldError, match=f"^{mine[0]} has"):
            built(spec, jobs, tmp_path)


def test_through_the_cli_a_misspelt_parameter_is_said_before_a_later_template_s_bug(fresh_project, capfd, monkeypatch):
    """The README's function() with a misspelt parameter in the largest module (rendered here), and a
    template bug in one only the smallest module uses (rendered in the child): --jobs 1 and the default
    both say the misspelt parameter, the first failure in rendering order. The CLI runs in this process
    (cli.main, forking its child as a fresh one would), what reaches file descriptors 1 and 2 captured."""
    native = fresh_project / "spec" / "native.py"
    source = native.read_text()
    source = source.replace(
        "import Backend, DTypeConfig, Module", "import Backend, DTypeConfig, Module, config, function, nn, nni"
    )
    source = source.replace(
        "configs=native_layout(linear=linear, binary=default, fixed=default, share=default, **shared),",
        "configs=native_layout(linear=linear, binary=default, fixed=default, share=default, **shared)\n"
        "            + [config((nn.Linear, nn.Tanh), default, fused_module=nni.LinearTanh,\n"
        '                      fuser_method=function("sequential", "_fuse_linear_tanh", fused_modul=nni.LinearTanh))],',
    )
    native.write_text(source)
    getter = fresh_project / "templates" / "functions" / "getitem_root_node_getter.py.j2"
    getter.write_text(getter.read_text().replace("return op", "return op  # {{ name.upper(1) }}"))
    monkeypatch.chdir(fresh_project)
    said = {jobs: regenerated_here(capfd, "--jobs", jobs) for jobs in ("1", "2")}
    for done in said.values():
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.startswith("error: spec/native.py:") and "has no parameter fused_modul=" in done.stderr
    assert said["1"].stderr == said["2"].stderr
