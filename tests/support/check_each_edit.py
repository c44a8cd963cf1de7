"""Run in a fresh interpreter inside a project copy (PYTHONPATH=the copy): edit each generator module, run `check`.

For tests/test_promises.py. One interpreter serves every edit, so the test pays for
Python's start-up and the generator's imports once rather than once per module.
Each `check` is a separate `generator.cli.main` call, with a fresh run's state:
it digests the generator's files from disk (generator/digests.py), so it sees an
edit made after the modules were imported, as the pre-commit hook would.

First it prints, as one JSON line, the generator modules that importing the
pipeline loads in this fresh interpreter (the candidates for shaping output).
Then it reads, as one JSON line on stdin, the modules to edit, and prints one
JSON line {"edited": {module: [exit code, stdout, the files check rendered]}, "unedited": [exit code, stdout]},
the last from a `check` after every edit was undone.
"""

import sys

import generator.building.pipeline  # noqa: F401 - first, so that sys.modules holds what a regenerate imports

# Modules, not packages: a package's __init__.py holds only its docstring.
PIPELINE_MODULES = sorted(
    name.removeprefix("generator.")
    for name, module in sys.modules.items()
    if name.startswith("generator.") and not module.__file__.endswith("__init__.py")
)

import contextlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
from pathlib import Path  # noqa: E402

from generator import cli, commands  # noqa: E402

RENDERED: list[str] = []  # the files the builds of a check rendered
_build = commands.build_with_progress


def _counted(command, root, targets, *args, **kwargs):
    RENDERED.extend(t.relative for t in targets)
    return _build(command, root, targets, *args, **kwargs)


commands.build_with_progress = _counted


def check_after_editing(project: Path, module: str) -> tuple[int, str, list[str]]:
    source = project / "generator" / (module.replace(".", "/") + ".py")
    original = source.read_bytes()
    source.write_bytes(original + b"\n# an edit to the generator\n")
    out, err = io.StringIO(), io.StringIO()
    RENDERED.clear()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(["--root", str(project), "check", "--jobs", "1"])  # black in this process: a tiny build
    finally:
        source.write_bytes(original)
    return code, out.getvalue(), sorted(RENDERED)


def main() -> None:
    project = Path.cwd()
    in_the_copy = Path(generator.building.pipeline.__file__).parent == project / "generator" / "building"
    assert in_the_copy, "run with PYTHONPATH=the copy"
    print(json.dumps(PIPELINE_MODULES), flush=True)
    modules = json.loads(sys.stdin.readline())
    results = {module: check_after_editing(project, module) for module in modules}
    # No state of one run leaks into the next: with every edit undone, check passes again.
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        unedited = cli.main(["--root", str(project), "check"]), out.getvalue()
    print(json.dumps({"edited": results, "unedited": unedited}), flush=True)


if __name__ == "__main__":
    main()
