"""Speed of `python -m generator verify` on this repository's backends, beside its target of 11 s.

Usage: `python benchmarks/verify_speed.py [--runs N] [--baseline REV [--within 0.10]]`.

verify runs each generated builder against its reference builder field by field, and through torch's
FX flows, in a child process per backend: seconds, most of them torch's. Measured as
benchmarks/speed.py measures every figure (its `Project`, `Sides` and tables): a subprocess on a
committed scratch copy of the project, warmed up by a `regenerate --force`, N runs (default 3) from the
same saved state. With --baseline REV, the tree at REV is measured too, run by run in turn, and the
figure is the median paired ratio this / baseline against 1 + --within ("no slower than before").
Beside it, the floor: `import torch` with backend_config.utils, which every run pays.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from speed import (
    TORCH_IMPORT,
    BaselineError,
    Figure,
    Project,
    Sides,
    Timed,
    baseline_clone,
    python_seconds,
    report,
    seconds,
)

TARGET = 11.0  # seconds: docs/commands.md's "about 11 seconds" for the nine backends


def parse_options(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs a figure (default 3)")
    parser.add_argument("--baseline", metavar="REV", help="also measure the tree at REV, side by side, run by run")
    parser.add_argument("--within", type=float, default=0.10, metavar="FRACTION",
                        help="with --baseline: the limit of this / baseline, 1 + FRACTION (default 0.10)")  # fmt: skip
    options = parser.parse_args(argv)
    if options.runs < 1:
        parser.error("--runs must be 1 or more")
    return options


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_options(argv)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="generator-verify-speed-") as scratch:
        folder = Path(scratch)
        try:
            clone, commit = baseline_clone(options.baseline, folder) if options.baseline else (None, "")
        except BaselineError as error:
            print(f"verify_speed.py: {error}", file=sys.stderr)
            return 2
        sides = Sides(Project(folder / "project"), Project(folder / "baseline-project", clone) if clone else None)
        for side in sides.projects:
            side.generator("regenerate", "--force")
            side.commit()
            side.save()
        torch_floor = Timed(python_seconds(options.runs, TORCH_IMPORT))
        figures = [
            Figure("floor: import torch", torch_floor),
            Figure("verify, every backend", sides.time(options.runs, "verify"), TARGET,
                   f"torch {seconds(min(torch_floor.this))}"),
        ]  # fmt: skip
    report(figures, options.runs, started, options.baseline if clone else None, commit, options.within)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit("interrupted")
