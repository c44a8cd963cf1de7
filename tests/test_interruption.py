"""A regenerate killed with SIGKILL leaves every file whole (old or new), and check then tells which.

The project is changed so that every output changes: a line added to the module
template and to the matrix template (new bodies) and a comment added to
spec/_common.py (new input digests in the manifest). Two ways of killing:
- at every step of the write phase (temporary file created, half written,
  before and after fsync, before and after the rename), in forked children
  that run regenerate's own writing code and SIGKILL themselves there
  (tests/support/killed_writer.py: forked from a small process, not from pytest);
- a real `python -m generator regenerate` process killed inside its write
  phase: a pause the test puts into that process (tests/support/killed_writer.py,
  paused_regenerate) stops it after half the files are written, and the test
  kills it there.
"""

import contextlib
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from generator import cli
from generator.freshness import manifest, planning
from tests.support.killed_writer import Killer, paused_regenerate
from tests.support.projects import ROOT, fresh_copy
from tests.support.shared_builds import computed_once


def change_every_output(project: Path) -> None:
    template = project / "templates" / "module.py.j2"
    marked = template.read_text().replace("\n__all__ = [", "\n# Changed for the interruption test.\n__all__ = [", 1)
    template.write_text(marked)
    matrix = project / "templates" / "docs" / "support-matrix.md.j2"
    note = "\nChanged for the interruption test.\n\n## Backends\n"
    matrix.write_text(matrix.read_text().replace("\n## Backends\n", note, 1))
    common = project / "spec" / "_common.py"
    common.write_text(common.read_text() + "# changed for the interruption test\n")


def outputs(project: Path) -> list[Path]:
    """Every file regenerate writes: the targets and the manifest that records them."""
    return [t.output for t in planning.plan(project)] + [project / manifest.PATH]


def contents(project: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in outputs(project)}


def regenerated_versions(project: Path) -> tuple[dict, dict]:
    """(old, new): the bytes of every output before and after the change, by path relative to the project."""
    fresh_copy(project)
    old = {p.relative_to(project): b for p, b in contents(project).items()}
    change_every_output(project)
    with contextlib.redirect_stdout(io.StringIO()):  # the written files' list
        assert cli.main(["--root", str(project), "regenerate"]) == 0
    new = {p.relative_to(project): b for p, b in contents(project).items()}
    assert all(old[p] != new[p] for p in old), "every output must change"
    return old, new


@pytest.fixture(scope="module")
def versions(tmp_path_factory):
    """(old, new): see regenerated_versions; computed once per test run, by whichever worker asks first."""
    project = tmp_path_factory.mktemp("versions") / "project"
    return computed_once(tmp_path_factory, "interruption", "versions", lambda: regenerated_versions(project))


def verify_whole_and_fresh_exactly_when_new(project: Path, old: dict, new: dict, targets=None) -> set[str]:
    """Each output is its old or its new version, and check's freshness agrees; returns the new ones."""
    renewed = set()
    for target in targets or planning.plan(project):
        relative = target.output.relative_to(project)
        current = target.output.read_bytes()
        assert current in (old[relative], new[relative]), f"{relative} is torn"
        is_new = current == new[relative]
        assert planning.freshness(target) == ("fresh" if is_new else "stale"), relative
        if is_new:
            renewed.add(str(relative))
    return renewed


def restore(project: Path, old: dict, changed: set[str]) -> None:
    """The old version of every output in `changed` (the others are old already)."""
    for relative, data in old.items():
        if str(relative) in changed:
            (project / relative).write_bytes(data)


def test_killed_at_every_step_of_writing(versions, tmp_path):
    old, new = versions
    project = fresh_copy(tmp_path / "project")
    change_every_output(project)
    targets = planning.plan(project)
    # What is written is under test here, not how it is made: the texts are those the real regenerate wrote.
    texts = {t.name: new[t.output.relative_to(project)].decode() for t in targets}
    killed, mixed, renewed = 0, 0, set(map(str, old))
    killer = Killer(tmp_path / "job.pickle", project, targets, texts, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        for point in range(1000):
            restore(project, old, renewed | {str(manifest.PATH)})  # what the last kill left new
            if not killer.killed_at(point):
                break
            killed += 1
            renewed = verify_whole_and_fresh_exactly_when_new(project, old, new, targets)
            mixed += 0 < len(renewed) < len(old)
    finally:
        killer.close()
    assert killed >= 6 * len(old)  # six kill points per file
    assert mixed > 0
    assert verify_whole_and_fresh_exactly_when_new(project, old, new) == {str(p) for p in new if p != manifest.PATH}


def processes_mentioning(text: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text in cmdline.read_bytes().decode(errors="replace"):
                found.append(cmdline.parent.name)
        except OSError:
            pass  # the process ended while we looked
    return found


def assert_no_process_left(project: Path) -> None:
    """The formatting workers exit with their killed parent instead of waiting forever."""
    deadline = time.monotonic() + 5
    while processes_mentioning(str(project)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_mentioning(str(project)) == []


def test_real_regenerate_killed_mid_write_then_check_tells_the_truth(versions, tmp_path, capsys):
    """A real run stops at the test's pause point after writing half the files, and is killed there."""
    old, new = versions
    project = fresh_copy(tmp_path / "project")
    change_every_output(project)  # no format cache of the change: the run's formatting workers are started
    halfway = len(old) // 2
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    paused = paused_regenerate(project, halfway)
    process = subprocess.Popen(paused, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        # Blocks until the run reaches the pause point, or ends (lint warnings come first).
        said = next((line for line in process.stderr if line.startswith("paused")), "")
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        process.stderr.close()
    assert said == f"paused after writing {halfway} files\n"  # the kill landed inside the write phase
    assert_no_process_left(project)
    renewed = verify_whole_and_fresh_exactly_when_new(project, old, new)
    assert len(renewed) == halfway and 0 < halfway < len(old)
    code = cli.main(["--root", str(project), "check"])
    out = capsys.readouterr().out
    named = {line.split(":")[0] for line in out.splitlines() if ": stale" in line}
    assert named == {str(p) for p in old if p != manifest.PATH} - renewed
    assert code == 1
    command = [sys.executable, "-m", "generator", "--root", str(project), "regenerate"]
    assert subprocess.run(command, env=env, capture_output=True).returncode == 0
    assert verify_whole_and_fresh_exactly_when_new(project, old, new) == {str(p) for p in new if p != manifest.PATH}
    assert cli.main(["--root", str(project), "check"]) == 0
    assert not list(project.rglob(".*.tmp"))
