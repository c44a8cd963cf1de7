"""Performance report: the generated builders against torch's, and the generator's own commands.

Usage: `python benchmarks/run.py [--repeat N] [--quick] [--strict]`.

Method
------
Every figure is the median of repeated samples taken in this one run, so that a
slow outlier (a page fault, a scheduler hiccup) does not move it. Runs that are
compared with each other are interleaved, A B B A A B ..., rather than all A
then all B, so that drift of the machine (thermal, another process starting)
hits both sides alike; the order alternates each round so neither side always
goes first.

- Build time, in process and warm: each builder is called N times in a row per
  sample, N chosen per side so that a sample lasts at least MIN_SAMPLE_SECONDS;
  ours and the reference builder's samples alternate, and each is divided by N.
  A collection runs before each sample, and what was alive before the first
  (torch itself) is frozen out of collections. A ratio is the median of the
  ratios of paired samples (the summed one: of each round's sums), with its 95 %
  confidence interval (order statistics); a target inside the interval is
  reported as "~", neither met nor missed, since noise alone moves a ratio near
  1 across it (so does the cold start's). A builder without a reference
  builder (a backend of the user's own) is measured alone, as information.
- Cold start: a fresh interpreter imports and builds, ours against torch's, for
  one representative builder (fbgemm when the spec has it) and for all
  builders whose reference is torch's, in one process. Both pay torch's import,
  which dominates, so the paired difference is shown too. Builders without such
  a reference are cold-started alone, all in one process, as information.
  Bytecode is cached for both sides (torch's .pyc files ship in site-packages;
  ours are written to the scratch copy by a warm-up run).
- Generator commands run as subprocesses, `python -m generator --root COPY ...`,
  on a scratch copy of the project taken at start (spec/, templates/,
  generated/, docs/ and generator/ itself, so that edits to the tree during the
  run cannot change what is measured), with the environment's bytecode setting.
  A warm-up `regenerate --force` fills the caches first. The real tree is only
  read.
- Which files a changed spec makes regenerate write is read from its output
  (the change is a comment, so the manifest must be written, and nothing
  beyond the spec's own module and the matrix, whose text is unchanged);
  which it renders and formats is read by a probe that wraps pipeline.build.
- Peak memory: the regenerate process and its forked formatter workers are
  sampled every SAMPLE_INTERVAL through /proc; the peak of their summed RSS is
  the figure (it counts pages shared after fork once per process, so it errs
  high); summed PSS and the largest single process (GNU time's %M) are shown
  beside it. Measured twice: as usual, and with the torch-names cache empty (a
  new checkout), when regenerate imports torch before forking its workers.

The report never asserts: it exits non-zero only when a target is missed and
--strict is given.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from intervals import median_interval

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
PROJECT_FOLDERS = ("spec", "templates", "generated", "docs", "generator")
MATRIX_OUTPUT = "docs/support-matrix.md"
MANIFEST_OUTPUT = "generated/manifest.json"
MIN_SAMPLE_SECONDS = 0.025
SAMPLE_INTERVAL = 0.01
GNU_TIME = Path("/usr/bin/time")
STARTED = time.perf_counter()
TORCH_QUIRK_IMPORT = "import torch.ao.quantization.backend_config.utils"
CHANGED_SPECS = ("x86", "native")  # x86: a typical backend; native: the largest module

# A fresh interpreter running `check`, reporting which heavy modules it imported.
IMPORT_PROBE = """
import json, sys
from generator import cli
code = cli.main(["--root", sys.argv[1], "check"])
print("imports:", json.dumps([code, sorted(m for m in ("torch", "black", "jinja2") if m in sys.modules)]))
"""

# A fresh interpreter running `regenerate`, reporting which targets reached the render stage.
RENDER_PROBE = """
import sys
from generator import cli
from generator.building import pipeline
build = pipeline.build
def recording_build(root, modules, targets, *args, **kwargs):
    print("rendered:", " ".join(sorted(t.name for t in targets)))
    return build(root, modules, targets, *args, **kwargs)
pipeline.build = recording_build
sys.exit(cli.main(["--root", sys.argv[1], "regenerate"]))
"""


# ---------------------------------------------------------------- report rows


@dataclass(frozen=True)
class Row:
    """One line of the report; `met` is None for an informational row, and for a ratio whose
    confidence interval holds the target (`within_noise`): this run cannot tell."""

    measurement: str
    ours: str
    reference: str = "-"
    ratio: str = "-"
    target: str = "-"
    met: bool | None = None
    within_noise: bool = False

    @property
    def status(self) -> str:
        if self.within_noise:
            return "~ (95% CI holds the target)"
        return "info" if self.met is None else ("ok" if self.met else "MISSED")


def compared(
    measurement: str, ours: Sequence[float], theirs: Sequence[float], limit: float, works: bool = True
) -> Row:
    """A row for ours against torch's, from samples taken in pairs (round by round); the target is on the ratio.

    The ratio is the median of the paired ratios, shown with its 95 % confidence
    interval: a target inside the interval is neither met nor missed (a builder
    that takes microseconds, or a cold start dominated by torch's import, has a
    ratio near 1 that noise alone moves across the target).
    """
    ratios = [a / b for a, b in zip(ours, theirs)]
    ratio = statistics.median(ratios)
    low, high = median_interval(ratios)
    text = f"{ratio_text(ratio)} [{ratio_text(low)}, {ratio_text(high)}]"
    ours_median, theirs_median = statistics.median(ours), statistics.median(theirs)
    noise = works and low <= limit < high
    met = None if noise else works and high <= limit
    return Row(measurement, duration(ours_median), duration(theirs_median), text, f"<= {limit:.2f}", met, noise)


def significant(value: float, digits: int = 3) -> str:
    if value == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"


def duration(seconds: float) -> str:
    return f"{significant(seconds)} s" if seconds >= 1 else f"{significant(seconds * 1000)} ms"


def ratio_text(ratio: float) -> str:
    return f"{ratio:.2f}"


def print_table(rows: Sequence[Row]) -> None:
    cells = [("measurement", "ours", "reference", "ratio", "target", "status")]
    cells += [(r.measurement, r.ours, r.reference, r.ratio, r.target, r.status) for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(6)]
    for index, row in enumerate(cells):
        first = row[0].ljust(widths[0])
        rest = [cell.rjust(width) for cell, width in zip(row[1:5], widths[1:5])]
        print(" | ".join([first, *rest, row[5]]))
        if index == 0:
            print("-+-".join("-" * width for width in widths))


# ---------------------------------------------------------------- machine and workspace


def progress(section: str) -> None:
    """Say on stderr what is being measured, and account other processes' CPU use to that section."""
    INTERFERENCE.start(section)
    print(f"[{time.perf_counter() - STARTED:5.0f} s] measuring: {section}", file=sys.stderr, flush=True)


def machine_busy_seconds() -> float:
    """CPU seconds spent by everything on the machine since boot (including time stolen by a hypervisor)."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, Path("/proc/stat").read_text().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    """CPU seconds of this process and of the subprocesses it has waited for (and theirs)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


class Interference:
    """The share of the machine's CPU that other processes took while each section ran."""

    def __init__(self):
        self.shares: dict[str, float] = {}
        self._open: tuple[str, float, float, float] | None = None

    def start(self, section: str) -> None:
        self.stop()
        self._open = (section, time.perf_counter(), machine_busy_seconds(), own_cpu_seconds())

    def stop(self) -> None:
        if self._open is None:
            return
        section, wall, busy, own = self._open
        other = (machine_busy_seconds() - busy) - (own_cpu_seconds() - own)
        self.shares[section] = max(0.0, other) / ((time.perf_counter() - wall) * (os.cpu_count() or 1))
        self._open = None

    def summary(self) -> str:
        shares = ", ".join(f"{section} {share:.0%}" for section, share in self.shares.items())
        return f"CPU taken by other processes (share of all {os.cpu_count()} CPUs): {shares}"


INTERFERENCE = Interference()


def git_revision() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def print_machine(torch_version: str) -> None:
    load = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} CPUs, {platform.machine()}, {platform.system()} {platform.release()}")
    print(f"python {platform.python_version()} ({PYTHON}), torch {torch_version}")
    print(f"tree: {ROOT} at {git_revision()} (working tree as found at start, copied)")
    if "PYTHONDONTWRITEBYTECODE" in os.environ:
        print("bytecode: not written for generator runs (PYTHONDONTWRITEBYTECODE is set), so each compiles it")
    print(f"load average at start: {load:.2f}")
    if load > 0.5 * (os.cpu_count() or 1):
        print("note: the machine is busy; medians absorb some of it, but figures will be noisier")
    print()


def copy_project(destination: Path, folders: Sequence[str] = PROJECT_FOLDERS) -> Path:
    for folder in folders:
        shutil.copytree(ROOT / folder, destination / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return destination


def load_builders():
    """tests/support/builders.py's BUILDERS, loaded from its file without touching sys.path or writing bytecode."""
    spec = importlib.util.spec_from_file_location("benchmark_builders", ROOT / "tests" / "support" / "builders.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.BUILDERS


def interleaved(sides: Sequence[Callable[[], float]], repeat: int) -> list[list[float]]:
    """`repeat` samples of each side, taken round by round in alternating order."""
    samples: list[list[float]] = [[] for _ in sides]
    for round_number in range(repeat):
        order = range(len(sides)) if round_number % 2 == 0 else reversed(range(len(sides)))
        for index in order:
            samples[index].append(sides[index]())
    return samples


# ---------------------------------------------------------------- build time, in process


def batch_seconds(build: Callable[[], object], calls: int) -> float:
    gc.collect()
    start = time.perf_counter()
    for _ in range(calls):
        build()
    return time.perf_counter() - start


def calls_per_sample(build: Callable[[], object]) -> int:
    """Calls enough for one sample to last MIN_SAMPLE_SECONDS; also warms the builder up."""
    calls = 1
    while batch_seconds(build, calls) < MIN_SAMPLE_SECONDS:
        calls *= 2
    return calls


def per_call_sampler(build: Callable[[], object]) -> Callable[[], float]:
    calls = calls_per_sample(build)
    return lambda: batch_seconds(build, calls) / calls


def build_samples(ours: Callable[[], object], theirs: Callable[[], object], repeat: int) -> list[list[float]]:
    """Seconds per call of our builder and torch's, sample by sample, taken in pairs."""
    sides = [per_call_sampler(build) for build in (ours, theirs)]
    return interleaved(sides, repeat)


def build_time_rows(builders, generated_root: Path, repeat: int) -> list[Row]:
    progress("build time")
    sys.path.insert(0, str(generated_root))
    # Imports them all; a builder without a reference builder has nothing to be compared with.
    functions = [(builder.ours(), builder.theirs() if builder.reference else None) for builder in builders]
    # Objects alive now (torch, the modules) are left out of garbage collection, which then costs
    # what the builders' own garbage costs rather than a walk over all of torch.
    gc.collect()
    gc.freeze()
    rows, ours_total, theirs_total, referenced = [], [0.0] * repeat, [0.0] * repeat, 0
    for builder, (ours_function, theirs_function) in zip(builders, functions):
        if theirs_function is None:
            seconds = statistics.median(interleaved([per_call_sampler(ours_function)], repeat)[0])
            rows.append(Row(f"build {builder.id} (no reference builder)", duration(seconds)))
            continue
        ours, theirs = build_samples(ours_function, theirs_function, repeat)
        ours_total = [total + sample for total, sample in zip(ours_total, ours)]
        theirs_total = [total + sample for total, sample in zip(theirs_total, theirs)]
        referenced += 1
        rows.append(compared(f"build {builder.id}", ours, theirs, limit=1.0))
    if referenced:
        summed = f"build, all {referenced} with a reference summed"
        rows.append(compared(summed, ours_total, theirs_total, limit=0.6))
    gc.unfreeze()
    return rows


# ---------------------------------------------------------------- subprocesses


@dataclass(frozen=True)
class Run:
    seconds: float
    returncode: int
    stdout: str

    @property
    def written(self) -> frozenset[str]:
        return frozenset(line.split()[1] for line in self.stdout.splitlines() if line.startswith("written"))


def environment(bytecode: bool) -> dict[str, str]:
    env = dict(os.environ, PYTHONWARNINGS="ignore", NO_COLOR="1")
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run(command: Sequence[str], cwd: Path, env: dict[str, str]) -> Run:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    return Run(time.perf_counter() - start, done.returncode, done.stdout)


def median_seconds(runs: Sequence[Run]) -> float:
    return statistics.median(r.seconds for r in runs)


# ---------------------------------------------------------------- cold start


def our_program(chosen) -> str:
    return "; ".join(f"from generated.{b.module} import {b.function}; {b.function}()" for b in chosen)


def cold_start_programs(builders) -> dict[str, tuple[str, str]]:
    """name -> (our program, torch's program): one representative builder, and all with a torch reference.

    Only torch's builders are compared: a reference of the user's own may need the project on the
    path, which the scratch copy (generated/ alone) does not give it.
    """
    referenced = [b for b in builders if b.torch_module]
    if not referenced:
        return {}
    representative = next((b for b in referenced if b.id == "fbgemm"), referenced[0])

    def theirs(chosen):
        calls = []
        for builder in chosen:
            module, _, function = builder.reference.rpartition(".")
            calls.append(f"from {module} import {function}; {function}()")
        return "; ".join([TORCH_QUIRK_IMPORT, *calls])

    return {
        representative.id: (our_program([representative]), theirs([representative])),
        f"all {len(referenced)} with a torch reference": (our_program(referenced), theirs(referenced)),
    }


def cold_start_rows(builders, generated_root: Path, repeat: int) -> list[Row]:
    # Bytecode is allowed here, in the scratch copy: torch's .pyc files are installed, so ours get theirs too.
    env = environment(bytecode=True)
    programs = cold_start_programs(builders)
    sides = [lambda p=p: run([PYTHON, "-c", p], generated_root, env) for pair in programs.values() for p in pair]
    unreferenced = [b for b in builders if not b.torch_module]
    progress("cold start")
    if unreferenced:  # measured alone: nothing of torch's to compare them with
        sides.append(lambda: run([PYTHON, "-c", our_program(unreferenced)], generated_root, env))
    # Warm-up with all builders (the last pair, and the unreferenced ones): writes our .pyc files, fills the page cache.
    for side in sides[-3:] if unreferenced else sides[-2:]:
        side()
    samples = interleaved(sides, repeat)
    alone = samples.pop() if unreferenced else []
    rows = []
    for index, name in enumerate(programs):
        ours, theirs = samples[2 * index], samples[2 * index + 1]
        works = all(r.returncode == 0 for r in ours + theirs)
        measurement = f"cold start: import + build, {name}"
        rows.append(compared(measurement, [r.seconds for r in ours], [r.seconds for r in theirs], 1.0, works))
        paired = statistics.median(a.seconds - b.seconds for a, b in zip(ours, theirs))
        rows.append(Row(f"  ours - torch, paired, {name}", f"{significant(paired * 1000)} ms"))
    if unreferenced:
        seconds = duration(median_seconds(alone)) if all(r.returncode == 0 for r in alone) else "failed"
        names = ", ".join(b.id for b in unreferenced)
        rows.append(Row(f"cold start: import + build, no torch reference ({names})", seconds))
    return rows


# ---------------------------------------------------------------- generator commands


class Generator:
    """`python -m generator --root PROJECT ...` on the scratch copy."""

    def __init__(self, project: Path):
        self.project = project
        self.env = environment(bytecode="PYTHONDONTWRITEBYTECODE" not in os.environ)

    def __call__(self, *arguments: str) -> Run:
        command = [PYTHON, "-m", "generator", "--root", str(self.project), *arguments]
        return run(command, self.project, self.env)

    def probe(self, program: str, marker: str) -> list[str]:
        """Run a probe program on the copy; the text after `marker` on each of its output lines."""
        done = run([PYTHON, "-c", program, str(self.project)], self.project, self.env)
        return [line.removeprefix(marker) for line in done.stdout.splitlines() if line.startswith(marker)]

    def warm_up(self) -> None:
        """Fill the torch-names and lint caches, and bring the copy's outputs up to date."""
        done = self("regenerate", "--force")
        if done.returncode != 0:
            raise SystemExit(f"regenerate --force failed on the scratch copy (exit {done.returncode})")

    def forget_lint_cache(self) -> None:
        self._forget("lint")

    def forget_torch_names(self) -> None:
        self._forget("torch-names")

    def _forget(self, kind: str) -> None:
        """Empty one kind of the generator's cache (generator/cache.py)."""
        shutil.rmtree(self.project / ".cache" / "generator" / kind, ignore_errors=True)


def check_rows(generator: Generator, repeat: int) -> list[Row]:
    generator.forget_lint_cache()
    cold = generator("check")
    runs = [generator("check") for _ in range(repeat)]
    seconds = median_seconds(runs)
    fresh = all(r.returncode == 0 for r in [cold, *runs])
    reports = generator.probe(IMPORT_PROBE, "imports: ")
    code, imported = json.loads(reports[-1]) if reports else (None, ["(probe failed)"])
    return [
        Row("check, lint cache empty (one run)", duration(cold.seconds)),
        Row("check, fast path", duration(seconds), target="<= 200 ms", met=seconds <= 0.2 and fresh),
        Row(
            "  check imports torch/black/jinja2",
            ", ".join(imported) or "none",
            target="none",
            met=not imported and code == 0,
        ),
    ]


def no_op_rows(generator: Generator, repeat: int) -> list[Row]:
    runs = [generator("regenerate") for _ in range(repeat)]
    seconds = median_seconds(runs)
    quiet = all(r.returncode == 0 and not r.written for r in runs)
    return [Row("regenerate, nothing changed", duration(seconds), target="<= 300 ms", met=seconds <= 0.3 and quiet)]


def append_comment(spec_file: Path, label: str) -> None:
    with spec_file.open("a") as stream:
        stream.write(f"# bench {label}\n")


def one_spec_changed_rows(generator: Generator, repeat: int) -> list[Row]:
    spec_files = {name: generator.project / "spec" / f"{name}.py" for name in CHANGED_SPECS}
    rendered = {}
    for name, spec_file in spec_files.items():
        append_comment(spec_file, "probe")
        reports = generator.probe(RENDER_PROBE, "rendered: ")
        rendered[name] = {target for report in reports for target in report.split()}

    def changed(name: str) -> Callable[[], Run]:
        def side() -> Run:
            append_comment(spec_files[name], str(time.perf_counter_ns()))
            return generator("regenerate")

        return side

    samples = interleaved([changed(name) for name in CHANGED_SPECS], repeat)
    rows = []
    for name, runs in zip(CHANGED_SPECS, samples):
        allowed = {f"generated/{name}.py", MATRIX_OUTPUT, MANIFEST_OUTPUT}
        only_own = all(r.returncode == 0 and MANIFEST_OUTPUT in r.written and r.written <= allowed for r in runs)
        seconds = median_seconds(runs)
        written = " ".join(sorted({Path(w).name for r in runs for w in r.written})) or "nothing"
        renders = " ".join(sorted(rendered[name])) or "nothing"
        rows += [
            Row(f"regenerate, spec/{name}.py changed", duration(seconds), target="<= 1.5 s", met=seconds <= 1.5),
            Row(f"  written, spec/{name}.py changed", written, target="manifest (+ own, matrix)", met=only_own),
            Row(
                f"  rendered + formatted, spec/{name}.py changed",
                renders,
                target=f"{name} + matrix",
                met=rendered[name] == {name, "support-matrix"},
            ),
        ]
    return rows


def forced_rows(generator: Generator, repeat: int) -> list[Row]:
    jobs = os.cpu_count() or 1
    sides = [lambda: generator("regenerate", "--force"), lambda: generator("regenerate", "--force", "--jobs", "1")]
    parallel, serial = interleaved(sides, repeat)
    ok = all(r.returncode == 0 for r in parallel + serial)
    seconds, one_job = median_seconds(parallel), median_seconds(serial)
    return [
        Row(f"regenerate --force (--jobs {jobs})", duration(seconds), target="<= 3 s", met=seconds <= 3 and ok),
        Row("  --jobs 1 (ratio: default jobs / 1 job)", duration(one_job), ratio=ratio_text(seconds / one_job)),
    ]


# ---------------------------------------------------------------- peak memory


def process_tree(root_pid: int) -> list[int]:
    """root_pid and all its descendants, from the parent ids in /proc/<pid>/stat."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    tree, pending = [], [root_pid]
    while pending:
        pid = pending.pop()
        tree.append(pid)
        pending.extend(children.get(pid, ()))
    return tree


def proc_kilobytes(pid: int, file: str, key: str) -> int:
    try:
        text = Path(f"/proc/{pid}/{file}").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


class TreeMemorySampler(threading.Thread):
    """Peak summed RSS and PSS of a process and its descendants, sampled every SAMPLE_INTERVAL."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid = pid
        self.finished = threading.Event()
        self.peak_rss_kb = self.peak_pss_kb = 0

    def run(self) -> None:
        while not self.finished.is_set():
            tree = process_tree(self.pid)
            rss = sum(proc_kilobytes(pid, "status", "VmRSS") for pid in tree)
            pss = sum(proc_kilobytes(pid, "smaps_rollup", "Pss") for pid in tree)
            self.peak_rss_kb, self.peak_pss_kb = max(self.peak_rss_kb, rss), max(self.peak_pss_kb, pss)
            self.finished.wait(SAMPLE_INTERVAL)


@dataclass(frozen=True)
class Memory:
    tree_rss_mb: float
    tree_pss_mb: float
    largest_process_mb: float | None  # GNU time's %M: the largest single process of the tree


def peak_memory(generator: Generator, *arguments: str) -> Memory:
    """Sampled peaks of the process tree, and GNU time's maximum resident set size when it is installed.

    This process's own wait4 would not do: a child spawned from a process that holds torch starts
    with that process's high-water mark. GNU time is small, so the command it forks starts clean.
    """
    command = [PYTHON, "-m", "generator", "--root", str(generator.project), *arguments]
    with tempfile.NamedTemporaryFile("r", suffix=".maxrss") as report:
        if GNU_TIME.exists():
            command = [str(GNU_TIME), "-f", "%M", "-o", report.name, *command]
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        process = subprocess.Popen(command, cwd=generator.project, env=generator.env, **quiet)
        sampler = TreeMemorySampler(process.pid)
        sampler.start()
        process.wait()
        sampler.finished.set()
        sampler.join()
        maxrss_kb = report.read().split()
    largest = int(maxrss_kb[-1]) / 1024 if maxrss_kb else None
    return Memory(sampler.peak_rss_kb / 1024, sampler.peak_pss_kb / 1024, largest)


def memory_summary(case: str, samples: Sequence[Memory]) -> list[Row]:
    rss = max(s.tree_rss_mb for s in samples)
    largest = [s.largest_process_mb for s in samples if s.largest_process_mb is not None]
    return [
        Row(f"peak memory, {case} (summed RSS)", f"{rss:.0f} MB", target="<= 400 MB", met=rss <= 400),
        Row("  summed PSS (shared pages split)", f"{max(s.tree_pss_mb for s in samples):.0f} MB"),
        Row("  largest single process", f"{max(largest):.0f} MB" if largest else "n/a (no /usr/bin/time)"),
    ]


def memory_rows(generator: Generator) -> list[Row]:
    """regenerate --force as usual, then once more as on a new checkout, when it must import torch."""
    usual = [peak_memory(generator, "regenerate", "--force")]
    generator.forget_torch_names()
    first = [peak_memory(generator, "regenerate", "--force")]
    return [
        *memory_summary("regenerate --force", usual),
        *memory_summary("same, torch-names cache empty", first),
    ]


def generator_rows(project: Path, repeat: int) -> list[Row]:
    generator = Generator(project)
    progress("check + regenerate")
    generator.warm_up()
    rows = [*check_rows(generator, repeat), *no_op_rows(generator, repeat), *one_spec_changed_rows(generator, repeat)]
    progress("regenerate --force")
    rows += forced_rows(generator, repeat)
    progress("peak memory")
    return rows + memory_rows(generator)


# ---------------------------------------------------------------- main


def parse_options(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, help="samples per measurement (default: 7 in process, 5 subprocess)")
    parser.add_argument("--quick", action="store_true", help="3 samples per measurement")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    options = parser.parse_args(argv)
    quick = 3 if options.quick else None
    options.in_process = options.repeat or quick or 7
    options.subprocess = options.repeat or quick or 5
    return options


def summary(rows: Sequence[Row], missed: Sequence[str], options: argparse.Namespace) -> str:
    targets = sum(r.met is not None or r.within_noise for r in rows)
    noisy = sum(r.within_noise for r in rows)
    return (
        f"{targets - len(missed) - noisy} of {targets} targets met"
        + (f", {noisy} within noise (~)" if noisy else "")
        + (f"; missed: {'; '.join(missed)}" if missed else "")
        + f" (samples: {options.in_process} in process, {options.subprocess} per subprocess measurement;"
        + f" load average now {os.getloadavg()[0]:.2f}; run took {time.perf_counter() - STARTED:.0f} s)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_options(argv)
    sys.dont_write_bytecode = True
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")  # torch, when NumPy is absent
    import torch
    import torch.ao.quantization.backend_config.utils  # noqa: F401  -- torch 2.13's builders need it

    print_machine(torch.__version__)
    builders = load_builders()
    with tempfile.TemporaryDirectory(prefix="benchmark-") as scratch:
        generated_root = copy_project(Path(scratch) / "builders", ["generated"])
        project = copy_project(Path(scratch) / "project")
        rows = [
            *build_time_rows(builders, generated_root, options.in_process),
            *cold_start_rows(builders, generated_root, options.subprocess),
            *generator_rows(project, options.subprocess),
        ]
    INTERFERENCE.stop()
    print_table(rows)
    print()
    print(INTERFERENCE.summary())
    missed = [r.measurement.strip() for r in rows if r.met is False]
    print(summary(rows, missed, options))
    return 1 if missed and options.strict else 0


if __name__ == "__main__":
    sys.exit(main())
