"""A builder whose pattern order varies between runs (it loops over a set of classes, as spconv's does)
imports to one spec whatever the run, equal to the builder as a set of patterns, and `import` says once
that the builder's order is not stable and which order the spec fixes.

tests/support/inhouse/orbit_dsp/sparse.py's classes hash by name, so PYTHONHASHSEED picks the run's order:
the test first shows two seeds under which the builder's orders differ.
"""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from generator.review.equality import compare_backend_configs
from tests.support import init_projects

PACKAGE = Path(__file__).parent / "support" / "inhouse" / "orbit_dsp"
TARGET = "orbit_dsp.sparse:get_orbit_sparse_backend_config"
SEEDS = ("1", "4")
NOTE = (
    "order     the builder iterates a set (orbit_dsp.sparse:47), so its pattern order changes between runs; the "
    "spec fixes it: the patterns built on the set's members sorted by the member's path, each member's own in "
    "the builder's order, the others where the builder puts them"
)


def builder_order(site: Path, seed: str) -> list[str]:
    code = (
        "import torch.ao.quantization.backend_config.utils\n"
        "from orbit_dsp.sparse import get_orbit_sparse_backend_config as get\n"
        "print(' '.join(getattr(c.pattern, '__name__', str(c.pattern)) for c in get().configs))"
    )
    env = {"PYTHONHASHSEED": seed, "PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{seed: (project, import's stdout)}: the builder imported under each seed into a project of its own."""
    found = {}
    for seed in SEEDS:
        project, site = init_projects.started(tmp_path_factory.mktemp(f"order{seed}"), PACKAGE)
        done = init_projects.generator(project, site, "import", TARGET, "--name", "sparse", seed=seed)
        assert done.returncode == 0, done.stdout + done.stderr
        found[seed] = (project, site, done.stdout)
    return found


def test_the_builders_order_differs_between_the_two_runs(runs):
    orders = [builder_order(runs[seed][1], seed) for seed in SEEDS]
    assert sorted(orders[0]) == sorted(orders[1]) and orders[0] != orders[1], orders


def test_both_runs_write_the_same_spec(runs):
    specs = [(runs[seed][0] / "spec" / "sparse.py").read_bytes() for seed in SEEDS]
    assert specs[0] == specs[1]
    text = specs[0].decode()
    # the set's members sorted by path, each member's own two patterns in the builder's order
    members = ["SparseConv3d", "SparseInverseConv3d", "SubMConv3d"]
    assert [text.index(f'importable("orbit_dsp.sparse.{m}")') for m in members] == sorted(
        text.index(f'importable("orbit_dsp.sparse.{m}")') for m in members
    )


def test_import_says_once_which_order_the_spec_fixes(runs):
    for seed in SEEDS:
        lines = runs[seed][2].splitlines()
        assert lines.count(NOTE) == 1 and sum("order" in line for line in lines) == 1, lines
        assert lines[0].startswith("written   spec/sparse.py") and lines[1] == NOTE, lines


def test_the_generated_builder_equals_the_builder_as_a_set_of_patterns(runs, monkeypatch):
    project, site, _ = runs[SEEDS[0]]
    done = init_projects.generator(project, site, "regenerate")
    assert done.returncode == 0, done.stdout + done.stderr
    monkeypatch.syspath_prepend(str(site))
    for name in [n for n in sys.modules if n == "orbit_dsp" or n.startswith("orbit_dsp.")]:
        monkeypatch.delitem(sys.modules, name)
    from orbit_dsp.sparse import get_orbit_sparse_backend_config
    from torch.ao.quantization.backend_config import BackendConfig

    spec = importlib.util.spec_from_file_location("order_sparse_generated", project / "generated" / "sparse.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def by_pattern(config):
        key = sorted(config.configs, key=lambda c: repr(c._pattern_complex_format or c.pattern))
        return BackendConfig(config.name).set_backend_pattern_configs(key)

    ours, theirs = module.get_orbit_sparse_backend_config(), get_orbit_sparse_backend_config()
    assert len(ours.configs) == len(theirs.configs) == 8
    assert compare_backend_configs("sparse", by_pattern(ours), by_pattern(theirs)) == []


def test_a_builder_that_iterates_no_set_gets_no_order_note(tmp_path):
    project, site = init_projects.started(tmp_path, PACKAGE)
    done = init_projects.generator(project, site, "import", "orbit_dsp.corners:get_orbit_corners_backend_config")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "order" not in done.stdout
