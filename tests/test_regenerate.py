"""regenerate reproduces the committed generated/ byte for byte, whatever the hash seed."""

import os
import shutil
import subprocess
import sys

from generator import cache, cli, files
from tests.support.builders import GENERATED_MODULES
from tests.support.projects import ROOT, fresh_copy

MATRIX = "docs/support-matrix.md"


def run_generator(root, *args, seed="0"):
    env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, "-m", "generator", "--root", str(root), *args],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_forced_regenerate_is_byte_identical_to_committed_under_two_hash_seeds(tmp_path):
    """Under seed 1, black formats every piece, as on a new checkout. Under seed 4242, pieces come
    from the session's format cache, which black filled in a pytest worker under its own random
    seed: a piece rendered otherwise under 4242 is not in it and is formatted anew, so what is
    compared is still seed 4242's rendering, and the cached pieces carry a third seed's formatting."""
    outputs = [f"generated/{module}.py" for module in GENERATED_MODULES] + [MATRIX]
    roots = [fresh_copy(tmp_path / seed) for seed in ("1", "4242")]
    for root in roots:
        for output in outputs:
            (root / output).unlink()
    cold = roots[0]
    for kind in (cache.FORMAT, cache.CHECKS):
        shutil.rmtree(cache.Cache(cold, kind).folder)  # and every module's text is checked, as on a new checkout
    assert cache.Cache(roots[1], cache.FORMAT).names()
    runs = [run_generator(root, "regenerate", "--force", seed=root.name) for root in roots]
    for run in runs:
        out, err = run.communicate()
        assert run.returncode == 0, err
    for output in outputs:
        committed = (ROOT / output).read_bytes()
        for root in roots:
            assert (root / output).read_bytes() == committed, (output, root.name)


def test_regenerate_on_the_committed_tree_changes_nothing(fresh_project, capsys):
    files = [*(fresh_project / "generated").glob("*.py"), fresh_project / MATRIX]
    before = {p: p.read_bytes() for p in files}
    assert cli.main(["--root", str(fresh_project), "regenerate"]) == 0
    assert {p: p.read_bytes() for p in files} == before
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(GENERATED_MODULES) + 1
    assert all(line.startswith("unchanged") for line in lines)


def test_write_if_changed_leaves_an_identical_file_alone(tmp_path):
    path = tmp_path / "module.py"
    assert files.write_if_changed(path, "x = 1\n")
    stamp = path.stat().st_mtime_ns
    assert not files.write_if_changed(path, "x = 1\n")
    assert path.stat().st_mtime_ns == stamp
    assert files.write_if_changed(path, "x = 2\n")
    assert path.read_text() == "x = 2\n"
    assert [p.name for p in tmp_path.iterdir()] == ["module.py"]
