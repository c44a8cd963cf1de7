"""Speed of the edit loop and growth with spec size: every figure of issue 20's table, beside its target.

Usage: `python benchmarks/speed.py [--quick] [--runs N] [--sizes 200,1000,5000] [--huge]`.

The table's last figure, the test suite, has its own script: benchmarks/suite_speed.py.

Method
------
Every command runs as a subprocess, `python -m generator --root COPY ...`, on a
scratch copy of the project (spec/, templates/, generated/, docs/ and
generator/ itself, committed to a throwaway git repository), so an edit to the
real tree during the run changes nothing measured. A warm-up `regenerate
--force` fills the caches first.

- Each figure is run N times (5, or 3 with --quick; --runs sets it; with --quick
  the figures of several seconds, and the larger sizes, run once). The state
  a run starts from is restored before each one (the edited spec file, the
  generated files, the caches), so every run of "an edit" is the first save of
  that edit: black formats what the edit makes new, not nothing.
- The table shows the minimum (the figure least disturbed by the other
  processes of a shared machine), the median, and a 95 % confidence interval
  of the median (order statistics, distribution-free). The status compares the
  interval with the target: "ok" when all of it is under, "MISSED" when all of
  it is over, "~" when the target lies inside it (the machine is too noisy to
  tell; run again with more --runs).
- Floors, measured in the same run the same way: a bare interpreter, `import
  black`, `import torch` (with backend_config.utils, as the builders need),
  and black alone formatting every generated module's text (what a forced
  regenerate with an empty format cache would pay if black formatted every
  pattern entry; generator/build/entry_layout.py lays most out without it). A figure
  cannot go below the floors of what it must do.
- Scale: a synthetic backend of N patterns (pairs and triples of torch ops,
  one `config(...)` line each, a dtype config shared) is added to a fresh
  copy, for each N in --sizes. `regenerate --force` is measured with the
  format cache emptied (everything formatted; the torch-names cache kept), then
  `matrix --stdout`, then `diff` after a one-pattern edit (both sides of the
  synthetic module built); the rest of the spec stays cached. --huge adds 20,000 patterns (one run, with peak
  memory: the largest single process, from the kernel's accounting).

The report never asserts, and exits 0.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from intervals import median_interval

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
PROJECT_FOLDERS = ("spec", "templates", "generated", "docs", "generator")
TORCH_IMPORT = "import torch.ao.quantization.backend_config.utils"
KNOWN_OP, NEW_OP = "nn.BatchNorm1d", "nn.SiLU"  # new to DEFAULT_OPS; the second also new to the torch-names cache
DEFAULT_OPS_LINE = "DEFAULT_OPS = [\n"
ONEDNN_IMPORT = "torch.ao.quantization.backend_config.onednn:get_onednn_backend_config"


# ---------------------------------------------------------------- statistics and the table


@dataclass
class Figure:
    name: str
    samples: list[float]
    target: float | None = None
    floor: str = ""
    note: str = ""

    @property
    def status(self) -> str:
        if self.target is None or not self.samples:
            return "info"
        low, high = median_interval(self.samples)
        return "ok" if high <= self.target else "MISSED" if low > self.target else "~"


def seconds(value: float) -> str:
    return f"{value:.2f} s" if value >= 0.995 else f"{value * 1000:.0f} ms"


def print_table(figures: Sequence[Figure]) -> None:
    rows = [("figure", "min", "median [95% CI]", "target", "floor", "status", "")]
    for f in figures:
        if not f.samples:
            rows.append((f.name, "-", "-", "-", f.floor, "skipped", f.note))
            continue
        low, high = median_interval(f.samples)
        spread = f"{seconds(statistics.median(f.samples))} [{seconds(low)}, {seconds(high)}]"
        target = f"<= {seconds(f.target)}" if f.target is not None else "-"
        rows.append((f.name, seconds(min(f.samples)), spread, target, f.floor, f.status, f.note))
    widths = [max(len(row[i]) for row in rows) for i in range(6)]
    for index, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [cell.rjust(w) for cell, w in zip(row[1:5], widths[1:5])]
        print(" | ".join([*cells, row[5].ljust(widths[5])]) + (f"  {row[6]}" if row[6] else ""))
        if index == 0:
            print("-+-".join("-" * w for w in widths))


def progress(text: str) -> None:
    print(f"... {text}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the scratch project


class Project:
    """A committed scratch copy of the project, and a way to time the generator on it."""

    def __init__(self, folder: Path):
        self.root = folder
        for name in PROJECT_FOLDERS:
            shutil.copytree(ROOT / name, folder / name, ignore=shutil.ignore_patterns("__pycache__", ".cache"))
        (folder / ".gitignore").write_text(".cache/\n__pycache__/\n")
        self.env = dict(os.environ, PYTHONPATH=str(folder), PYTHONWARNINGS="ignore", NO_COLOR="1")
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.snapshot: dict[Path, bytes] = {}

    def git(self, *args: str) -> None:
        command = ["git", "-C", str(self.root), "-c", "user.name=b", "-c", "user.email=b@b", *args]
        subprocess.run(command, check=True, capture_output=True)

    def commit(self) -> None:
        if not (self.root / ".git").exists():
            self.git("init", "-q")
        self.git("add", "-A")
        self.git("commit", "-qm", "state", "--allow-empty")

    def generator(self, *args: str) -> subprocess.CompletedProcess:
        command = [PYTHON, "-m", "generator", "--root", str(self.root), *args]
        return subprocess.run(command, cwd=self.root, env=self.env, capture_output=True, text=True)

    def save(self) -> None:
        """Remember every file of the project (caches included), to start each run from."""
        self.snapshot = {p: p.read_bytes() for p in self._files()}

    def restore(self) -> None:
        for path in set(self._files()) - self.snapshot.keys():
            path.unlink()
        for path, data in self.snapshot.items():
            if not path.exists() or path.read_bytes() != data:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)

    def _files(self) -> list[Path]:
        folders = [*PROJECT_FOLDERS[:4], ".cache"]
        return [p for f in folders for p in (self.root / f).rglob("*") if p.is_file() and "__pycache__" not in p.parts]

    def time(self, runs: int, *args: str, prepare: Callable[[], None] | None = None) -> list[float]:
        """Seconds of `runs` runs of the generator, each from the saved state, `prepare` applied first."""
        samples = []
        for _ in range(runs):
            self.restore()
            if prepare:
                prepare()
            start = time.perf_counter()
            done = self.generator(*args)
            samples.append(time.perf_counter() - start)
            if done.returncode not in (0, 1):
                raise SystemExit(f"python -m generator {' '.join(args)} failed:\n{done.stderr}")
        self.restore()
        return samples


def python_seconds(runs: int, program: str, env: dict[str, str] | None = None) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([PYTHON, "-c", program], check=True, capture_output=True, env=env)
        samples.append(time.perf_counter() - start)
    return samples


BLACK_ALONE = """
import sys, pathlib, black
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.py")):
    black.format_str(path.read_text(), mode=black.Mode())
"""


# ---------------------------------------------------------------- the edit loop


def edit(path: Path, old: str, new: str) -> Callable[[], None]:
    def apply() -> None:
        text = path.read_text()
        assert old in text, f"{old!r} not in {path}"
        path.write_text(text.replace(old, new, 1))

    return apply


def forget_format_cache(project: Project, module: str = "*") -> Callable[[], None]:
    def apply() -> None:
        for path in (project.root / ".cache" / "generator" / "format").glob(f"generated_{module}.py"):
            path.unlink()  # the entry of each output's formatted pieces (generator/cache.py)

    return apply


def empty_cache(project: Project) -> Callable[[], None]:
    return lambda: shutil.rmtree(project.root / ".cache", ignore_errors=True)


def edit_loop_figures(project: Project, runs: int, floors: dict[str, str], quick: bool) -> list[Figure]:
    heavy = 1 if quick else runs  # the figures of seconds, where one run says enough for --quick
    spec = project.root / "spec"
    common, x86 = spec / "_common.py", spec / "x86.py"
    line = x86.read_text().splitlines(keepends=True)[-1]
    one_line = edit(x86, line, line + "# an edit\n")
    figures = []
    progress("no-op regenerate and check")
    figures.append(Figure("regenerate, no-op", project.time(runs * 2, "regenerate"), 0.1, floors["python"]))
    figures.append(Figure("check", project.time(runs * 2, "check"), 0.1, floors["python"]))
    progress("one-line edit to spec/x86.py")
    samples = project.time(runs, "regenerate", prepare=one_line)
    figures.append(Figure("regenerate after a one-line edit to spec/x86.py", samples, 0.3, floors["python"]))
    progress("an op added to DEFAULT_OPS")
    known = edit(common, DEFAULT_OPS_LINE, f"{DEFAULT_OPS_LINE}    {KNOWN_OP},\n")
    samples = project.time(runs, "regenerate", prepare=known)
    # Its new entries are laid out without black (generator/build/entry_layout.py): no black import.
    figures.append(Figure(f"regenerate after adding {KNOWN_OP} to DEFAULT_OPS", samples, 0.5, floors["python"]))
    new = edit(common, DEFAULT_OPS_LINE, f"{DEFAULT_OPS_LINE}    {NEW_OP},\n")
    samples = project.time(heavy, "regenerate", prepare=new)
    name = f"same with {NEW_OP}, a torch name never seen"
    figures.append(Figure(name, samples, 2.0, floors["torch"]))
    progress("regenerate --force")
    figures.append(Figure("regenerate --force, nothing new", project.time(runs, "regenerate", "--force"), 0.5))
    samples = project.time(heavy, "regenerate", "--force", prepare=forget_format_cache(project))
    # black formats only the module-level pieces (the entries are laid out without it): its import is the floor.
    figures.append(Figure("regenerate --force, format cache empty", samples, 1.0, floors["black"]))
    samples = project.time(heavy, "regenerate", "--force", "--jobs", "1", prepare=forget_format_cache(project))
    figures.append(Figure("  the same with --jobs 1", samples, None, floors["black_alone"]))
    samples = project.time(heavy, "regenerate", "--force", prepare=empty_cache(project))
    figures.append(Figure("regenerate --force, .cache/ empty", samples, None, floors["torch"], "imports torch"))
    progress("check --full and diff")
    figures.append(Figure("check --full, nothing new", project.time(runs, "check", "--full"), 0.5))
    figures.append(Figure("diff, nothing changed", project.time(runs, "diff"), 0.5, floors["python"]))
    samples = project.time(heavy, "diff", "--against-torch")
    figures.append(Figure("diff --against-torch", samples, 2.0, floors["torch"]))
    progress("import of torch's onednn builder")
    import_runs = 1 if quick else max(1, runs // 2)
    samples = project.time(import_runs, "import", ONEDNN_IMPORT, "--name", "onednn", "--force")
    figures.append(Figure("import ...onednn:get_onednn_backend_config", samples, 4.0, floors["torch"]))
    return figures


# ---------------------------------------------------------------- scale

SCALE_OPS = (
    "nn.Conv1d nn.Conv2d nn.Conv3d nn.Linear nn.ReLU nn.ReLU6 nn.Tanh nn.Sigmoid nn.Hardsigmoid nn.Hardswish "
    "nn.ELU nn.LeakyReLU nn.PReLU nn.Dropout nn.Identity nn.Flatten nn.BatchNorm1d nn.BatchNorm2d nn.BatchNorm3d "
    "nn.LayerNorm nn.GroupNorm nn.InstanceNorm1d nn.InstanceNorm2d nn.InstanceNorm3d nn.MaxPool1d nn.MaxPool2d "
    "nn.MaxPool3d nn.AvgPool1d nn.AvgPool2d nn.AvgPool3d nn.AdaptiveAvgPool1d nn.AdaptiveAvgPool2d "
    "nn.AdaptiveAvgPool3d nn.Hardtanh nn.PixelShuffle nn.PixelUnshuffle nn.Embedding nn.EmbeddingBag "
    "nn.Softmax nn.GELU"
).split()


def synthetic_patterns(count: int) -> list[str]:
    pairs = itertools.product(SCALE_OPS, repeat=2)
    triples = itertools.product(SCALE_OPS, repeat=3)
    return [f"({', '.join(ops)})" for ops in itertools.islice(itertools.chain(pairs, triples), count)]


def synthetic_spec(count: int) -> str:
    lines = [f"        config({p}, d, section='group {i // 50}')," for i, p in enumerate(synthetic_patterns(count))]
    return (
        '"""A synthetic backend for benchmarks/speed.py."""\n\n'
        "from generator.dsl import Backend, DTypeConfig, Module, config, nn, torch\n\n"
        "synthetic_dtype_config = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)\n"
        "d = [synthetic_dtype_config]\n\n"
        'MODULE = Module(doc="Synthetic.", backends=[Backend(name="synthetic", '
        'builder="get_synthetic_backend_config", doc="Synthetic.", configs=[\n' + "\n".join(lines) + "\n])])\n"
    )


def scale_figures(folder: Path, base: Project, count: int, runs: int, memory: bool) -> list[Figure]:
    progress(f"a synthetic backend of {count} patterns")
    forget = forget_format_cache  # of the synthetic module alone: the rest of the spec is not new
    project = Project(folder / f"scale-{count}")
    shutil.copytree(base.root / ".cache", project.root / ".cache")  # the committed spec's caches, warm
    spec = project.root / "spec" / "synthetic.py"
    spec.write_text(synthetic_spec(count))
    done = project.generator("regenerate", "--force")  # names cached, everything formatted once
    if done.returncode != 0:
        raise SystemExit(f"regenerate failed on the synthetic backend of {count} patterns:\n{done.stderr}")
    project.commit()
    project.save()
    figures = []
    if memory:
        start = time.perf_counter()
        peak = largest_process_kb(project, "regenerate", "--force", prepare=forget(project, "synthetic"))
        figures.append(Figure(f"N={count}: regenerate --force, format cache empty", [time.perf_counter() - start],
                              20.0, note=f"peak {peak / 1024:.0f} MB in one process (target <= 400 MB)"))  # fmt: skip
        return figures
    samples = project.time(runs, "regenerate", "--force", prepare=forget(project, "synthetic"))
    target = {5000: 5.0}.get(count)
    figures.append(Figure(f"N={count}: regenerate --force, format cache empty", samples, target))
    samples = project.time(runs, "regenerate", "--force")
    figures.append(Figure(f"N={count}: regenerate --force, nothing new", samples))
    samples = project.time(runs, "matrix", "--stdout")
    figures.append(Figure(f"N={count}: matrix --stdout", samples, {5000: 1.5}.get(count)))
    first = synthetic_patterns(1)[0]
    changed = edit(spec, f"config({first},", f"config({synthetic_patterns(count + 1)[-1]},")

    def edited_and_regenerated() -> None:
        changed()
        project.generator("regenerate")

    samples = project.time(runs, "diff", prepare=edited_and_regenerated)
    figures.append(Figure(f"N={count}: diff after a one-pattern edit", samples, {5000: 4.0}.get(count)))
    return figures


def largest_process_kb(project: Project, *args: str, prepare: Callable[[], None]) -> int:
    """Peak resident memory of the largest single process the command ran (kernel accounting, like GNU time's %M)."""
    project.restore()
    prepare()
    program = (
        "import resource, subprocess, sys; subprocess.run(sys.argv[1:], capture_output=True); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    command = [PYTHON, "-c", program, PYTHON, "-m", "generator", "--root", str(project.root), *args]
    done = subprocess.run(command, env=project.env, capture_output=True, text=True, check=True)
    project.restore()
    return int(done.stdout.split()[-1])


# ---------------------------------------------------------------- main


def parse_options(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 runs a figure, 1 for import; sizes 200 and 5000")
    parser.add_argument("--runs", type=int, help="runs a figure (default 5, or 3 with --quick)")
    parser.add_argument("--sizes", help="synthetic backend sizes, comma-separated (default 200,1000,5000)")
    parser.add_argument("--huge", action="store_true", help="also 20,000 patterns, once, with peak memory")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_options(argv)
    runs = options.runs or (3 if options.quick else 5)
    sizes = [int(s) for s in (options.sizes or ("200,5000" if options.quick else "200,1000,5000")).split(",")]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="generator-speed-") as scratch:
        folder = Path(scratch)
        project = Project(folder / "project")
        progress("warm-up")
        project.generator("regenerate", "--force")
        project.commit()
        project.save()
        progress("floors")
        floor_figures = [
            Figure("floor: python -c pass", python_seconds(runs, "pass")),
            Figure("floor: import black", python_seconds(runs, "import black")),
            Figure("floor: import torch", python_seconds(runs, TORCH_IMPORT)),
        ]
        start = time.perf_counter()
        subprocess.run([PYTHON, "-c", BLACK_ALONE, str(project.root / "generated")], check=True)
        floor_figures.append(Figure("floor: black alone on every generated module", [time.perf_counter() - start]))
        floors = {
            "python": f"python {seconds(min(floor_figures[0].samples))}",
            "black": f"black import {seconds(min(floor_figures[1].samples))}",
            "torch": f"torch {seconds(min(floor_figures[2].samples))}",
            "black_alone": f"black alone {seconds(min(floor_figures[3].samples))}",
        }
        figures = floor_figures + edit_loop_figures(project, runs, floors, options.quick)
        for count in sizes:
            scale_runs = runs if count <= 1000 and not options.quick else max(1, runs - 2)
            figures += scale_figures(folder, project, count, scale_runs, memory=False)
        if options.huge:
            figures += scale_figures(folder, project, 20_000, 1, memory=True)
        else:
            figures.append(Figure("N=20000: regenerate --force, format cache empty", [], note="give --huge"))
    load = os.getloadavg()[0]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average {load:.2f} at the end; "
          f"{runs} runs a figure; took {time.perf_counter() - started:.0f} s")  # fmt: skip
    print_table(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
