"""A build renders and checks about half the modules in a forked child (generator/build/pipeline.py): the same
texts, the same verdicts and the same first error as rendering them one after the other."""

import os

import pytest

from generator import errors, process
from generator.build import formatting, pipeline
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
