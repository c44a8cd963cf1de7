"""Run in a fresh interpreter (PYTHONPATH=a project copy with its own generator/): generator commands, in turn.

For tests/test_promises.py. The commands are `generator.cli.main` calls, each with a
fresh run's state (check digests the generator's files from disk), one after another in
one interpreter that imported the copy's generator: the test pays for Python's start-up
and the generator's imports once rather than once per command.

argv[1]: a JSON list of argument lists, run from the current folder. Prints one JSON
line: [exit code, stdout, stderr] of each command, in order.
"""

import contextlib
import io
import json
import sys
from pathlib import Path

from generator import cli


def run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(args)
    return code, out.getvalue(), err.getvalue()


def main() -> None:
    assert Path(cli.__file__).parent == Path.cwd() / "generator", "run in the copy, with PYTHONPATH=the copy"
    print(json.dumps([run(args) for args in json.loads(sys.argv[1])]), flush=True)


if __name__ == "__main__":
    main()
