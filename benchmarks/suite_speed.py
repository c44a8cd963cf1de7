"""The test suite's time, as a ratio to the suite issue 20's target was set against, measured side by side.

Usage: `python benchmarks/suite_speed.py [--rounds N] [PYTEST_ARGS ...]`.

Issue 20 asks for `python -m pytest` (both cores) in 2 minutes or less, where the
suite of its day (commit BASELINE, 743 tests) took 155 s on an idle machine. A
wall time alone cannot say whether that holds: the same tree's time moves by a
factor of two with the host (and its `import torch` with it). So both suites run
here, one after the other, on the same machine and interpreter:

- The baseline is a clone of this repository (`git clone --shared`, which changes
  nothing here) checked out at BASELINE, run with its own generator on its path;
  this tree is run where it is, as `python -m pytest`. Each run gets a fresh
  `--basetemp` in a scratch folder (so neither pays for removing an older run's
  temporary folders, as pytest otherwise does) and `-p no:cacheprovider` (so
  nothing is written into either tree). SIGINT is reset to its default for
  both: the baseline's Ctrl-C tests predate the fix for suites started as a
  background job.
- Rounds alternate the order (baseline, this, this, baseline, ...), so a
  machine that drifts during the run weighs on both sides alike. Each round
  gives one ratio of paired runs; the figure is their median with a
  distribution-free confidence interval of about 95 % from 10 rounds on; with fewer
  it is the whole range, whose coverage is printed beside it (2 rounds: 50 %,
  6 rounds: 97 %).
- The target ratio is 120 / 155: 2 minutes where the baseline took 155 s. "ok"
  when the whole interval is under it, "MISSED" when all of it is over, "~" when
  it lies inside. The last line converts the median ratio into seconds on the
  machine of issue 20's table, and gives this run's own wall times beside it.
- CPU-s are user and system time of the whole run, workers and every process
  the tests started (each pytest is a child of this script). The outcomes column
  is pytest's summary without its timing: anything but "N passed" there (skipped,
  xfailed, deselected) means the run did less than the whole suite.

A suite that fails makes its ratio meaningless: the report names it and exits 1.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from intervals import coverage, median_interval
from speed import TORCH_IMPORT, python_seconds

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
BASELINE = "2007476fe73e34977ab1cc67b4567ef2792c4286"  # main when issue 20 was filed: 743 tests
BASELINE_SECONDS = 155.0  # its suite on the idle machine of issue 20's table
TARGET_SECONDS = 120.0


@dataclass
class Run:
    tree: str
    wall: float
    cpu: float
    summary: str  # pytest's last line: "1089 passed in 127.73s (0:02:07)"


def default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_suite(tree: str, folder: Path, basetemp: Path, pytest_args: Sequence[str]) -> Run:
    env = dict(os.environ, PYTHONPATH=str(folder))
    command = [PYTHON, "-m", "pytest", "-p", "no:cacheprovider", f"--basetemp={basetemp}", *pytest_args]
    cpu, start = children_cpu(), time.perf_counter()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, preexec_fn=default_sigint)
    wall, cpu = time.perf_counter() - start, children_cpu() - cpu
    lines = done.stdout.strip().splitlines()
    summary = lines[-1].strip("= ") if lines else done.stderr.strip()[-200:]
    if done.returncode != 0:
        raise SystemExit(f"the {tree} suite failed (exit {done.returncode}): {summary}")
    return Run(tree, wall, cpu, summary)


def baseline_clone(scratch: Path) -> Path:
    folder = scratch / "baseline"
    for command in (["clone", "-q", "--shared", "--no-checkout", str(ROOT), str(folder)],
                    ["-C", str(folder), "checkout", "-q", "--detach", BASELINE]):  # fmt: skip
        try:
            done = subprocess.run(["git", *command], capture_output=True, text=True)
        except OSError as error:
            raise SystemExit(f"cannot run git to check out the baseline {BASELINE[:7]}: {error}") from None
        if done.returncode != 0:
            raise SystemExit(
                f"cannot check out the baseline {BASELINE[:7]} from {ROOT}: {done.stderr.strip()}"
                " (a shallow clone lacks it: git fetch --unshallow)"
            )
    return folder


def outcomes(run: Run) -> str:
    """pytest's summary without its timing: "1089 passed", or "740 passed, 3 skipped"."""
    return re.sub(r" in [\d.]+s.*$", "", run.summary)


def report(runs: list[Run], ratios: list[float], floors: tuple[float, float], whole: bool) -> None:
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; import torch {floors[0]:.2f} s before the "
          f"runs, {floors[1]:.2f} s after; baseline {BASELINE[:7]}")  # fmt: skip
    print(f"{'run':>3} | {'tree':<8} | {'wall':>7} | {'CPU-s':>5} | outcomes")
    for number, run in enumerate(runs, start=1):
        print(f"{number:>3} | {run.tree:<8} | {run.wall:6.1f}s | {run.cpu:5.0f} | {outcomes(run)}")
    median = statistics.median(ratios)
    low, high = median_interval(ratios)
    target = TARGET_SECONDS / BASELINE_SECONDS
    status = "ok" if high <= target else "MISSED" if low > target else "~"
    if len(ratios) < 2:
        status = "one round says nothing of the spread: give --rounds 2 or more"
    pairs = ", ".join(f"{r:.2f}" for r in ratios)
    print(f"this tree / baseline, wall: {median:.2f} [{low:.2f}, {high:.2f}], a {coverage(len(ratios)):.0%} interval "
          f"(rounds: {pairs}); target <= {target:.3f} (2 min where the baseline took {BASELINE_SECONDS:.0f} s): "
          f"{status}")  # fmt: skip
    if not whole:
        return  # a part of each suite: its ratio says nothing of 2 minutes for the whole
    ours = [run.wall for run in runs if run.tree == "this"]
    print(f"this tree on the machine of issue 20's table: about {median * BASELINE_SECONDS:.0f} s; "
          f"here, in this run: {min(ours):.0f}-{max(ours):.0f} s")  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="pairs of runs, order alternating (default 2)")
    parser.add_argument("pytest_args", nargs="*", help="passed to both suites (e.g. a test file, to try this out)")
    options = parser.parse_args(argv)
    if options.rounds < 1:
        parser.error("--rounds must be 1 or more")
    with tempfile.TemporaryDirectory(prefix="suite-speed-") as scratch_name:
        scratch = Path(scratch_name)
        trees = {"baseline": baseline_clone(scratch), "this": ROOT}
        before = min(python_seconds(3, TORCH_IMPORT))
        runs: list[Run] = []
        ratios = []
        for number in range(options.rounds):
            order = ("baseline", "this") if number % 2 == 0 else ("this", "baseline")
            pair = {}
            for tree in order:
                print(f"... round {number + 1}: {tree}", file=sys.stderr, flush=True)
                pair[tree] = run_suite(tree, trees[tree], scratch / f"tmp-{len(runs)}", options.pytest_args)
                runs.append(pair[tree])
            ratios.append(pair["this"].wall / pair["baseline"].wall)
        after = min(python_seconds(3, TORCH_IMPORT))
    report(runs, ratios, (before, after), whole=not options.pytest_args)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # the scratch clone is gone already (TemporaryDirectory)
        sys.exit("interrupted")
