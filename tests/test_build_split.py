"""A build renders and checks about half the modules in a forked child (generator/building/pipeline.py): the same
texts, the same verdicts and the same first error as rendering them one after the other, whichever process
meets a failure."""

import os
import shutil
import subprocess
import sys

import pytest

from generator import cache, cli, errors, process
from generator.building import check_memo, formatting, pipeline
from generator.freshness import planning
from tests.support.projects import ROOT


@pytest.fixture(scope="module")
def spec():
    """The committed spec's modules, and the targets of its generated modules."""
    modules = pipeline.load(ROOT, validate=False)
    return modules, [t for t in planning.plan(ROOT) if not t.is_matrix]


def built(spec, jobs, folder):
    modules, targets = spec
    with formatting.Formatter(jobs, folder) as formatter:
        return pipeline.build(ROOT, modules, targets, formatter)


def largest_first(spec) -> list[str]:
    modules, _ = spec
    return [m.spec.name for m in sorted(modules, key=lambda m: -pipeline._pattern_count(m))]


def test_a_child_renders_half_the_patterns_and_the_texts_are_the_committed_ones(spec, tmp_path, monkeypatch):
    children = []
    real = process.Forked

    def recording(function, *args, **options):
        children.append([m.spec.name for m in args[1]])
        return real(function, *args, **options)

    monkeypatch.setattr(process, "Forked", recording)
    texts = built(spec, 2, tmp_path)
    _, targets = spec
    assert all((ROOT / t.relative).read_text() == texts[t.name] for t in targets)
    by_name = {m.spec.name: m for m in spec[0]}
    (share,) = children
    theirs = sum(pipeline._pattern_count(by_name[name]) for name in share)
    total = sum(pipeline._pattern_count(m) for m in spec[0])
    assert largest_first(spec)[0] not in share and 0.3 * total < theirs < 0.7 * total
    assert built(spec, 1, tmp_path) == texts and len(children) == 1  # one job: no child


@pytest.mark.parametrize("first_is_the_child_s", [True, False])
def test_the_first_error_is_the_one_rendering_in_order_gives(spec, tmp_path, monkeypatch, first_is_the_child_s):
    """Two modules fail to render, one here and one in the child: the one rendered first in order is said,
    whichever process rendered it."""
    order = largest_first(spec)
    share = {m.spec.name for m in pipeline._child_share([next(m for m in spec[0] if m.spec.name == n) for n in order])}
    theirs = [name for name in order if name in share]
    mine = [name for name in order if name not in share]
    failing = {theirs[0], mine[1]} if first_is_the_child_s else {mine[0], theirs[-1]}
    real = pipeline.render_module

    def render(module, templates):
        if module.spec.name in failing:
            raise errors.SpecFieldError(f"{module.spec.name} cannot be rendered", None)
        return real(module, templates)

    monkeypatch.setattr(pipeline, "render_module", render)
    expected = min(failing, key=order.index)
    for jobs in (2, 1):
        with pytest.raises(errors.SpecFieldError, match=f"^{expected} cannot"):
            built(spec, jobs, tmp_path)


def test_a_child_that_dies_leaves_the_work_to_this_process(spec, tmp_path, monkeypatch):
    parent = os.getpid()
    real = pipeline._rendered_and_checked

    def dying(root, modules):
        if os.getpid() != parent:
            os._exit(3)
        return real(root, modules)

    monkeypatch.setattr(pipeline, "_rendered_and_checked", dying)
    texts = built(spec, 2, tmp_path)
    _, targets = spec
    assert all((ROOT / t.relative).read_text() == texts[t.name] for t in targets)


# ---------------------------------------------------------------------------
# Whichever process meets a failure, the run says what rendering the modules in order (--jobs 1) says
# ---------------------------------------------------------------------------

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
            shutil.rmtree(cache.Cache(fresh_project, cache.CHECKS).folder, ignore_errors=True)
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
    """docs/spec.md's function() with a misspelt parameter in the largest module (rendered here), and a
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
