"""How long `python -m generator import MODULE:FUNCTION` takes for each builder the committed
spec refers to (torch's nine), each in a fresh interpreter, into a temporary copy of the
project whose backend spec files are removed (spec/_common.py stays, so import compacts).

The figure is wall time of the whole command, `import torch` included (the floor, measured
in the same run, is printed first). Target: under 10 s per builder (issue 19), and 4 s for
onednn (issue 20).

    python benchmarks/import_speed.py            # one run per builder
    python benchmarks/import_speed.py --keep DIR # also keep each written spec in DIR
"""

from __future__ import annotations

import argparse
import os
import shutil
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


def project_copy(destination: Path) -> Path:
    for folder in ("spec", "templates"):
        shutil.copytree(ROOT / folder, destination / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for spec_file in (destination / "spec").glob("[!_]*.py"):
        spec_file.unlink()
    return destination


def timed(command: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    return time.perf_counter() - start, done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="copy each written spec file into this folder")
    args = parser.parse_args()
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
