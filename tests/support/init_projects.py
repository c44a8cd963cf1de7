"""A project as a team starts it (`python -m generator init`: no torch backend in spec/), with an in-house
builder's package installed beside it, and the generator run there in a fresh interpreter."""

import os
import shutil
import subprocess
import sys
from pathlib import Path


def generator(project: Path, site: Path, *args: str, seed: str | None = None) -> subprocess.CompletedProcess:
    """`python -m generator ARGS` in a fresh interpreter in the project, the builder's package installed (on
    PYTHONPATH, as a site folder outside the project is); `seed`: its PYTHONHASHSEED."""
    env = dict(os.environ, PYTHONPATH=str(site))
    if seed is not None:
        env["PYTHONHASHSEED"] = seed
    return subprocess.run([sys.executable, "-m", "generator", *args], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def started(base: Path, package: Path, pyproject_extra: str = "") -> tuple[Path, Path]:
    """(project, site): `init` run in base/project (its pyproject.toml then given `pyproject_extra`), the
    package copied into base/site."""
    site, project = base / "site", base / "project"
    shutil.copytree(package, site / package.name, ignore=shutil.ignore_patterns("__pycache__"))
    project.mkdir()
    done = generator(project, site, "init")
    assert done.returncode == 0, done.stdout + done.stderr
    if pyproject_extra:
        with open(project / "pyproject.toml", "a", encoding="utf-8") as file:
            file.write(pyproject_extra)
    return project, site
