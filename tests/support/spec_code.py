"""Spec files given code of their own, for the tests of what user code can and cannot do (tests/test_user_code.py,
test_spec_isolation.py, test_recorded_reads.py): `doc_prefixed` makes a spec file's output show what its code
saw, and `run` runs a command as a user does, in a fresh interpreter with a bare environment; `run_here` runs it
in this interpreter (each spec load still has a process of its own), for tests that run many commands."""

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

from tests.support.projects import ROOT


def run(project: Path, *args: str, environment: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m generator --root PROJECT ARGS` in a fresh interpreter, with no environment but the paths
    (and `environment`)."""
    return subprocess.run([sys.executable, "-m", "generator", "--root", str(project), *args],
                          cwd=project, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", **(environment or {})},
                          capture_output=True, text=True)  # fmt: skip


def doc_prefixed(spec: Path, name: str, prelude: str = "") -> None:
    """The spec file's module docstring led by the string `name` holds, which `prelude` (put first) binds."""
    source = spec.read_text().replace("\nMODULE = Module(\n    doc=", f"\nMODULE = Module(\n    doc={name} + ", 1)
    spec.write_text(prelude + source)


def run_here(project: Path, *args: str, environment: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m generator --root PROJECT ARGS` run in this interpreter, with `environment` set for the run."""
    from generator import cli

    saved = {name: os.environ.get(name) for name in environment or {}}
    os.environ.update(environment or {})
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(["--root", str(project), *args])
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())
