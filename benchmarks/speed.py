"""Speed of the edit loop and growth with spec size: every figure of issue 20's table, beside its target.

Usage: `python benchmarks/speed.py [--quick] [--runs N] [--sizes 200,1000,5000] [--huge]
[--baseline REV [--within 0.10]]`.

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
  pattern entry; generator/building/entry_layout.py lays most out without it). A figure
  cannot go below the floors of what it must do.
- Scale: a synthetic backend of N patterns (pairs and triples of torch ops,
  one `config(...)` line each, a dtype config shared) is added to a fresh
  copy, for each N in --sizes. `regenerate --force` is measured with the
  format cache emptied (everything formatted; the torch-names cache kept), then
  `matrix --stdout`, then `diff` after a one-pattern edit (both sides of the
  synthetic module built); the rest of the spec stays cached. --huge adds 20,000 patterns (one run, with peak
  memory: the largest single process, from the kernel's accounting).

With --baseline REV, every figure (the floors excepted: measured once) is also
measured for the tree at REV, side by side:

- The baseline is a clone of this repository (`git clone --shared`, which changes
  nothing here) checked out at REV in the scratch folder; its scratch projects are
  copied from it, so they run its own generator. The clone goes with the scratch
  folder on the way out, Ctrl-C included.
- Each figure's runs alternate between the two (baseline, this, this, baseline,
  ...), every run from its own side's saved state, so a machine that drifts during
  the run weighs on both alike. Run i of this tree divided by run i of the baseline
  is one paired ratio.
- The table shows both medians and the median paired ratio (this / baseline) with
  its interval (order statistics, as above; with few pairs the whole range, whose
  coverage is printed beside it). The status compares the interval with 1 + --within
  (default 0.10): "ok" when all of it is at most that, "MISSED" when all of it is
  over, "~" otherwise, and for a figure of one pair (--quick runs several once),
  which says nothing of the spread.

A bad REV, a repository without it (a shallow clone) or a missing git is one line
and exit 2. The report never asserts, and otherwise exits 0.
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
from typing import NamedTuple

from intervals import coverage, median_interval

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
PROJECT_FOLDERS = ("spec", "templates", "generated", "docs", "generator")
TORCH_IMPORT = "import torch.ao.quantization.backend_config.utils"
KNOWN_OP, NEW_OP = "nn.BatchNorm1d", "nn.SiLU"  # new to DEFAULT_OPS; the second also new to the torch-names cache
DEFAULT_OPS_LINE = "DEFAULT_OPS = [\n"
ONEDNN_IMPORT = "torch.ao.quantization.backend_config.onednn:get_onednn_backend_config"
# Where a project keeps the formatted pieces of generated/MODULE.py, in .cache/generator: one file
# each before generator/cache.py, one entry of its "format" kind since. A baseline may be either.
FORMAT_CACHE_ENTRIES = ("format-generated_{module}.py.json", "format/generated_{module}.py")


# ---------------------------------------------------------------- statistics and the table


class Timed(NamedTuple):
    """Seconds of a figure's runs: this tree's, and with --baseline the baseline's (run i beside run i)."""

    this: list[float]
    baseline: list[float] | None = None


@dataclass
class Figure:
    name: str
    timed: Timed
    target: float | None = None
    floor: str = ""
    note: str = ""

    @property
    def samples(self) -> list[float]:
        return self.timed.this

    @property
    def status(self) -> str:
        if self.target is None or not self.samples:
            return "info"
        low, high = median_interval(self.samples)
        return "ok" if high <= self.target else "MISSED" if low > self.target else "~"

    @property
    def ratios(self) -> list[float]:
        """this / baseline, run by run; none without a baseline (a floor is measured once)."""
        return [this / baseline for this, baseline in zip(self.timed.this, self.timed.baseline or [])]

    def paired_status(self, within: float) -> str:
        if not self.ratios:
            return "info" if self.samples else "skipped"
        if len(self.ratios) < 2:
            return "~"  # one pair says nothing of the spread
        low, high = median_interval(self.ratios)
        return "ok" if high <= 1 + within else "MISSED" if low > 1 + within else "~"


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
    print_rows(rows)


def print_paired_table(figures: Sequence[Figure], within: float) -> None:
    rows = [("figure", "this", "baseline", "this / baseline [CI]", "pairs (CI coverage)", "status", "")]
    for f in figures:
        if not f.ratios:  # a floor, or a figure not measured
            this = seconds(statistics.median(f.samples)) if f.samples else "-"
            rows.append((f.name, this, "-", "-", "-", f.paired_status(within), f.note))
            continue
        low, high = median_interval(f.ratios)
        ratio = f"{statistics.median(f.ratios):.2f} [{low:.2f}, {high:.2f}]"
        pairs = f"{len(f.ratios)} ({coverage(len(f.ratios)):.0%})"
        medians = [seconds(statistics.median(side)) for side in (f.timed.this, f.timed.baseline or [])]
        note = "; ".join(filter(None, [f.note, "one pair: no interval" if len(f.ratios) < 2 else ""]))
        rows.append((f.name, *medians, ratio, pairs, f.paired_status(within), note))
    print_rows(rows)


def print_rows(rows: Sequence[Sequence[str]]) -> None:
    """The first column left-aligned, the next right-aligned, then the status; a note after the last column."""
    status = len(rows[0]) - 2  # the status column
    widths = [max(len(row[i]) for row in rows) for i in range(status + 1)]
    for index, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [cell.rjust(w) for cell, w in zip(row[1:status], widths[1:status])]
        print(" | ".join([*cells, row[status].ljust(widths[status])]) + (f"  {row[-1]}" if row[-1] else ""))
        if index == 0:
            print("-+-".join("-" * w for w in widths))


def progress(text: str) -> None:
    print(f"... {text}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the scratch project


Prepare = Callable[["Project"], None]  # what a run does to its project before the generator starts


class Project:
    """A committed scratch copy of the project in `source` (this tree, or the baseline's clone), and a way to time
    the generator on it: its own copy of `source`'s generator."""

    def __init__(self, folder: Path, source: Path = ROOT):
        self.root, self.source = folder, source
        for name in PROJECT_FOLDERS:
            if (source / name).is_dir():  # an old baseline may lack one (docs/)
                shutil.copytree(source / name, folder / name, ignore=shutil.ignore_patterns("__pycache__", ".cache"))
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

    def once(self, args: Sequence[str], prepare: Prepare | None = None) -> float:
        """Seconds of one run of the generator, from the saved state, `prepare` applied first."""
        self.restore()
        if prepare:
            prepare(self)
        start = time.perf_counter()
        done = self.generator(*args)
        elapsed = time.perf_counter() - start
        if done.returncode not in (0, 1):
            raise SystemExit(f"python -m generator {' '.join(args)} failed in {self.source}:\n{done.stderr}")
        return elapsed


class Sides:
    """The scratch projects a figure is timed on: this tree's, and with --baseline the baseline's."""

    def __init__(self, this: Project, baseline: Project | None = None):
        self.this, self.baseline = this, baseline
        self.projects = [p for p in (baseline, this) if p is not None]

    def map(self, make: Callable[[Project], Project]) -> Sides:
        """The same sides, each made anew from its own project (a synthetic backend added to each, say)."""
        return Sides(make(self.this), make(self.baseline) if self.baseline else None)

    def time(self, runs: int, *args: str, prepare: Prepare | None = None) -> Timed:
        """`runs` runs of the generator on each side, in turn run by run (A B B A ...), so that drift of the
        machine hits both alike; each run starts from its side's saved state, `prepare` applied first."""
        samples: dict[Project, list[float]] = {project: [] for project in self.projects}
        for number in range(runs):
            for project in self.projects if number % 2 == 0 else self.projects[::-1]:
                samples[project].append(project.once(args, prepare))
        for project in self.projects:
            project.restore()
        return Timed(samples[self.this], samples[self.baseline] if self.baseline else None)


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


def edit(path: str, old: str, new: str) -> Prepare:
    """Replace `old` by `new` in the project's file at `path`, once."""

    def apply(project: Project) -> None:
        file = project.root / path
        text = file.read_text()
        assert old in text, f"{old!r} not in {file}"
        file.write_text(text.replace(old, new, 1))

    return apply


def add_a_line(path: str) -> Prepare:
    """A comment line after the file's last line (read from each project's own file)."""

    def apply(project: Project) -> None:
        line = (project.root / path).read_text().splitlines(keepends=True)[-1]
        edit(path, line, line + "# an edit\n")(project)

    return apply


def forget_format_cache(module: str = "*") -> Prepare:
    def apply(project: Project) -> None:
        cache = project.root / ".cache" / "generator"
        entries = [path for pattern in FORMAT_CACHE_ENTRIES for path in cache.glob(pattern.format(module=module))]
        if not entries:  # a figure "format cache empty" must not measure a full one
            raise SystemExit(f"no format-cache entry of generated/{module}.py in {cache}: a cache layout new to "
                             "speed.py (FORMAT_CACHE_ENTRIES)?")  # fmt: skip
        for path in entries:
            path.unlink()

    return apply


def empty_cache(project: Project) -> None:
    shutil.rmtree(project.root / ".cache", ignore_errors=True)


def edit_loop_figures(sides: Sides, runs: int, floors: dict[str, str], quick: bool) -> list[Figure]:
    heavy = 1 if quick else runs  # the figures of seconds, where one run says enough for --quick
    common = "spec/_common.py"
    one_line = add_a_line("spec/x86.py")
    figures = []
    progress("no-op regenerate and check")
    figures.append(Figure("regenerate, no-op", sides.time(runs * 2, "regenerate"), 0.1, floors["python"]))
    figures.append(Figure("check", sides.time(runs * 2, "check"), 0.1, floors["python"]))
    progress("one-line edit to spec/x86.py")
    samples = sides.time(runs, "regenerate", prepare=one_line)
    figures.append(Figure("regenerate after a one-line edit to spec/x86.py", samples, 0.3, floors["python"]))
    progress("an op added to DEFAULT_OPS")
    known = edit(common, DEFAULT_OPS_LINE, f"{DEFAULT_OPS_LINE}    {KNOWN_OP},\n")
    samples = sides.time(runs, "regenerate", prepare=known)
    # Its new entries are laid out without black (generator/building/entry_layout.py): no black import.
    figures.append(Figure(f"regenerate after adding {KNOWN_OP} to DEFAULT_OPS", samples, 0.5, floors["python"]))
    new = edit(common, DEFAULT_OPS_LINE, f"{DEFAULT_OPS_LINE}    {NEW_OP},\n")
    samples = sides.time(heavy, "regenerate", prepare=new)
    name = f"same with {NEW_OP}, a torch name never seen"
    figures.append(Figure(name, samples, 2.0, floors["torch"]))
    progress("regenerate --force")
    figures.append(Figure("regenerate --force, nothing new", sides.time(runs, "regenerate", "--force"), 0.5))
    samples = sides.time(heavy, "regenerate", "--force", prepare=forget_format_cache())
    # black formats only the module-level pieces (the entries are laid out without it): its import is the floor.
    figures.append(Figure("regenerate --force, format cache empty", samples, 1.0, floors["black"]))
    samples = sides.time(heavy, "regenerate", "--force", "--jobs", "1", prepare=forget_format_cache())
    figures.append(Figure("  the same with --jobs 1", samples, None, floors["black_alone"]))
    samples = sides.time(heavy, "regenerate", "--force", prepare=empty_cache)
    figures.append(Figure("regenerate --force, .cache/ empty", samples, None, floors["torch"], "imports torch"))
    progress("check --full and diff")
    figures.append(Figure("check --full, nothing new", sides.time(runs, "check", "--full"), 0.5))
    figures.append(Figure("diff, nothing changed", sides.time(runs, "diff"), 0.5, floors["python"]))
    samples = sides.time(heavy, "diff", "--against-torch")
    figures.append(Figure("diff --against-torch", samples, 2.0, floors["torch"]))
    progress("import of torch's onednn builder")
    import_runs = 1 if quick else max(1, runs // 2)
    samples = sides.time(import_runs, "import", ONEDNN_IMPORT, "--name", "onednn", "--force")
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


def synthetic_project(base: Project, count: int) -> Project:
    """A copy of `base`'s tree with a synthetic backend of `count` patterns, regenerated once and saved."""
    project = Project(base.root.with_name(f"{base.root.name}-{count}"), base.source)
    shutil.copytree(base.root / ".cache", project.root / ".cache")  # the committed spec's caches, warm
    (project.root / "spec" / "synthetic.py").write_text(synthetic_spec(count))
    done = project.generator("regenerate", "--force")  # names cached, everything formatted once
    if done.returncode != 0:
        raise SystemExit(f"regenerate failed on the synthetic backend of {count} patterns:\n{done.stderr}")
    project.commit()
    project.save()
    return project


def scale_figures(base: Sides, count: int, runs: int, memory: bool) -> list[Figure]:
    progress(f"a synthetic backend of {count} patterns")
    forget = forget_format_cache("synthetic")  # of the synthetic module alone: the rest of the spec is not new
    sides = base.map(lambda side: synthetic_project(side, count))
    figures = []
    if memory:  # one run a side
        elapsed, peak = {}, {}
        for side in sides.projects:
            start = time.perf_counter()
            peak[side] = f"{largest_process_kb(side, 'regenerate', '--force', prepare=forget) / 1024:.0f} MB"
            elapsed[side] = [time.perf_counter() - start]
        timed = Timed(elapsed[sides.this], elapsed[sides.baseline] if sides.baseline else None)
        baseline = f" (baseline {peak[sides.baseline]})" if sides.baseline else ""
        note = f"peak {peak[sides.this]}{baseline} in one process (target <= 400 MB)"
        return [Figure(f"N={count}: regenerate --force, format cache empty", timed, 20.0, note=note)]
    samples = sides.time(runs, "regenerate", "--force", prepare=forget)
    target = {5000: 5.0}.get(count)
    figures.append(Figure(f"N={count}: regenerate --force, format cache empty", samples, target))
    samples = sides.time(runs, "regenerate", "--force")
    figures.append(Figure(f"N={count}: regenerate --force, nothing new", samples))
    samples = sides.time(runs, "matrix", "--stdout")
    figures.append(Figure(f"N={count}: matrix --stdout", samples, {5000: 1.5}.get(count)))
    first = synthetic_patterns(1)[0]
    changed = edit("spec/synthetic.py", f"config({first},", f"config({synthetic_patterns(count + 1)[-1]},")

    def edited_and_regenerated(side: Project) -> None:
        changed(side)
        side.generator("regenerate")

    samples = sides.time(runs, "diff", prepare=edited_and_regenerated)
    figures.append(Figure(f"N={count}: diff after a one-pattern edit", samples, {5000: 4.0}.get(count)))
    return figures


def largest_process_kb(project: Project, *args: str, prepare: Prepare) -> int:
    """Peak resident memory of the largest single process the command ran (kernel accounting, like GNU time's %M)."""
    project.restore()
    prepare(project)
    program = (
        "import resource, subprocess, sys; subprocess.run(sys.argv[1:], capture_output=True); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    command = [PYTHON, "-c", program, PYTHON, "-m", "generator", "--root", str(project.root), *args]
    done = subprocess.run(command, env=project.env, capture_output=True, text=True, check=True)
    project.restore()
    return int(done.stdout.split()[-1])


# ---------------------------------------------------------------- main


class BaselineError(Exception):
    """The baseline cannot be checked out: one line, exit 2."""


def baseline_clone(revision: str, scratch: Path) -> tuple[Path, str]:
    """A `git clone --shared` of this repository in `scratch`, checked out at `revision`; and its commit."""

    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", *args], capture_output=True, text=True)
        except OSError as error:
            raise BaselineError(f"--baseline needs git: {error}") from None
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines() or [f"git {' '.join(args)} failed"]
            raise BaselineError(f"--baseline {revision}: {lines[-1]}")
        return done.stdout.strip()

    shallow = git("-C", str(ROOT), "rev-parse", "--is-shallow-repository") == "true"
    try:
        commit = git("-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}")
    except BaselineError:
        lacks = " (a shallow clone: git fetch --unshallow)" if shallow else ""
        raise BaselineError(f"--baseline {revision}: no such commit in {ROOT}{lacks}") from None
    folder = scratch / "baseline"
    git("clone", "-q", "--shared", "--no-checkout", str(ROOT), str(folder))
    git("-C", str(folder), "checkout", "-q", "--detach", commit)
    return folder, commit


def parse_options(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 runs a figure, 1 for import; sizes 200 and 5000")
    parser.add_argument("--runs", type=int, help="runs a figure (default 5, or 3 with --quick)")
    parser.add_argument("--sizes", help="synthetic backend sizes, comma-separated (default 200,1000,5000)")
    parser.add_argument("--huge", action="store_true", help="also 20,000 patterns, once, with peak memory")
    parser.add_argument("--baseline", metavar="REV", help="also measure the tree at REV, side by side, run by run")
    parser.add_argument(
        "--within", type=float, metavar="FRACTION", help="with --baseline: the limit of this / baseline, 1 + FRACTION "
        "(default 0.10)"
    )  # fmt: skip
    options = parser.parse_args(argv)
    if options.within is not None and not options.baseline:
        parser.error("--within needs --baseline")
    if options.within is not None and options.within < 0:
        parser.error("--within must be 0 or more")
    return options


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_options(argv)
    runs = options.runs or (3 if options.quick else 5)
    sizes = [int(s) for s in (options.sizes or ("200,5000" if options.quick else "200,1000,5000")).split(",")]
    within = 0.10 if options.within is None else options.within
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="generator-speed-") as scratch:  # the baseline's clone too
        folder = Path(scratch)
        try:
            clone, commit = baseline_clone(options.baseline, folder) if options.baseline else (None, "")
        except BaselineError as error:
            print(f"speed.py: {error}", file=sys.stderr)
            return 2
        sides = Sides(Project(folder / "project"), Project(folder / "baseline-project", clone) if clone else None)
        progress("warm-up")
        for side in sides.projects:
            side.generator("regenerate", "--force")
            side.commit()
            side.save()
        progress("floors")
        floor_figures = [
            Figure("floor: python -c pass", Timed(python_seconds(runs, "pass"))),
            Figure("floor: import black", Timed(python_seconds(runs, "import black"))),
            Figure("floor: import torch", Timed(python_seconds(runs, TORCH_IMPORT))),
        ]
        start = time.perf_counter()
        subprocess.run([PYTHON, "-c", BLACK_ALONE, str(sides.this.root / "generated")], check=True, capture_output=True)
        alone = Timed([time.perf_counter() - start])
        floor_figures.append(Figure("floor: black alone on every generated module", alone))
        floors = {
            "python": f"python {seconds(min(floor_figures[0].samples))}",
            "black": f"black import {seconds(min(floor_figures[1].samples))}",
            "torch": f"torch {seconds(min(floor_figures[2].samples))}",
            "black_alone": f"black alone {seconds(min(floor_figures[3].samples))}",
        }
        figures = floor_figures + edit_loop_figures(sides, runs, floors, options.quick)
        for count in sizes:
            scale_runs = runs if count <= 1000 and not options.quick else max(1, runs - 2)
            figures += scale_figures(sides, count, scale_runs, memory=False)
        if options.huge:
            figures += scale_figures(sides, 20_000, 1, memory=True)
        else:
            figures.append(Figure("N=20000: regenerate --force, format cache empty", Timed([]), note="give --huge"))
    report(figures, runs, started, options.baseline if clone else None, commit, within)
    return 0


def report(figures, runs: int, started: float, baseline: str | None, commit: str, within: float) -> None:
    """The closing lines: the machine, the baseline (None: none was run) and the table of figures."""
    load = os.getloadavg()[0]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average {load:.2f} at the end; "
          f"{runs} runs a figure; took {time.perf_counter() - started:.0f} s")  # fmt: skip
    if baseline:
        named = baseline if commit.startswith(baseline) else f"{baseline} ({commit[:7]})"
        print(f"baseline {named}, run by run in turn with this tree; limit: this / baseline <= {1 + within:.2f}")
        print_paired_table(figures, within)
    else:
        print_table(figures)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # the scratch folder, the baseline's clone in it, is gone already
        sys.exit("interrupted")
