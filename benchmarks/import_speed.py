"""How long `python -m generator import MODULE:FUNCTION` takes for each builder the committed
spec refers to (torch's nine), each in a fresh interpreter, into a temporary copy of the
project whose backend spec files are removed (spec/_common.py stays, so import compacts).

The figure is wall time of the whole command, `import torch` included (the floor, measured
in the same run, is printed first). Target: under 10 s per builder (issue 19), and 4 s for
onednn (issue 20).

    python benchmarks/import_speed.py            # one run per builder
    python benchmarks/import_speed.py --keep DIR # also keep each written spec in DIR
    python benchmarks/import_speed.py --baseline b0e79e9 --only onednn --runs 7
        # side by side: the tree at REV (a `git clone --shared`, checked out there) and this one, runs
        # alternating (baseline, this, this, baseline, ...); medians and the median paired ratio this / REV
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_SECONDS = 10.0


def references() -> list[str]:
    sys.path.insert(0, str(ROOT))
    from generator.loading import loader

    return [b.reference for m in loader.load_modules(ROOT) for b in m.backends if b.reference]


def project_copy(destination: Path, source: Path = ROOT) -> Path:
    for folder in ("spec", "templates"):
        shutil.copytree(source / folder, destination / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for spec_file in (destination / "spec").glob("[!_]*.py"):
        spec_file.unlink()
    return destination


def timed(command: list[str], cwd: Path, source: Path = ROOT) -> tuple[float, subprocess.CompletedProcess]:
    env = dict(os.environ, PYTHONPATH=str(source))
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    return time.perf_counter() - start, done


def side_by_side(revision: str, only: str, runs: int) -> int:
    """`import` of each builder whose reference contains `only`, this tree against the tree at `revision`."""
    with tempfile.TemporaryDirectory() as temporary:
        baseline = Path(temporary) / "baseline"
        for command in (["git", "clone", "--quiet", "--shared", str(ROOT), str(baseline)],
                        ["git", "-C", str(baseline), "checkout", "--quiet", revision]):  # fmt: skip
            if subprocess.run(command, capture_output=True).returncode != 0:
                print(f"error: cannot check out {revision!r} of {ROOT}", file=sys.stderr)
                return 2
        sources = {"baseline": baseline, "this": ROOT}
        projects = {side: project_copy(Path(temporary) / "projects" / side, source) for side, source in sources.items()}
        floor, _ = timed([sys.executable, "-c", "import torch.ao.quantization.backend_config"], projects["this"])
        print(f"floor: import torch {floor:.2f} s; {runs} runs a side, alternating")
        for reference in [r for r in references() if only in r]:
            module, function = reference.rsplit(".", 1)
            command = [sys.executable, "-m", "generator", "import", f"{module}:{function}", "--name", "imported"]
            samples: dict[str, list[float]] = {"baseline": [], "this": []}
            for run in range(runs):
                for side in ("baseline", "this") if run % 2 == 0 else ("this", "baseline"):
                    seconds, done = timed(command, projects[side], sources[side])
                    if done.returncode != 0:
                        print(f"error: {side}: {(done.stderr or done.stdout).strip()}", file=sys.stderr)
                        return 1
                    (projects[side] / "spec" / "imported.py").unlink()
                    samples[side].append(seconds)
            ratio = statistics.median(t / b for t, b in zip(samples["this"], samples["baseline"]))
            print(f"{module + ':' + function:<72} baseline {statistics.median(samples['baseline']):.2f} s  "
                  f"this {statistics.median(samples['this']):.2f} s  this / baseline {ratio:.3f}")  # fmt: skip
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="copy each written spec file into this folder")
    parser.add_argument("--baseline", metavar="REV", help="time this tree beside the tree at REV")
    parser.add_argument("--only", default="", help="with --baseline: only references containing this text")
    parser.add_argument("--runs", type=int, default=5, help="with --baseline: runs a side (default 5)")
    args = parser.parse_args()
    if args.baseline:
        return side_by_side(args.baseline, args.only, args.runs)
    missed = 0
    with tempfile.TemporaryDirectory() as temporary:
        project = project_copy(Path(temporary) / "project")
        floor, _ = timed([sys.executable, "-c", "import torch.ao.quantization.backend_config"], project)
        print(f"{'floor: import torch':<72} {floor:6.2f} s")
        for reference in references():
            module, function = reference.rsplit(".", 1)
            name = "imported_" + function.removeprefix("get_").removesuffix("_backend_config").strip("_")
            command = [sys.executable, "-m", "generator", "import", f"{module}:{function}", "--name", name]
            seconds, done = timed(command, project)
            status = "ok" if done.returncode == 0 and seconds < TARGET_SECONDS else "MISSED"
            missed += status != "ok"
            print(f"{module + ':' + function:<72} {seconds:6.2f} s  {status} (target < {TARGET_SECONDS:.0f} s)")
            if done.returncode != 0:
                print("   ", (done.stderr or done.stdout).strip().splitlines()[-1:])
            if args.keep and done.returncode == 0:
                args.keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(project / "spec" / f"{name}.py", args.keep / f"{name}.py")
            (project / "spec" / f"{name}.py").unlink(missing_ok=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
