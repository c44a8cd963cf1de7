"""A command run in the test's own interpreter, as `python -m generator ARGS` would run it."""

from generator import cli


def run(capsys, *args):
    """(exit code, what the command wrote to stdout then stderr)."""
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out + captured.err
