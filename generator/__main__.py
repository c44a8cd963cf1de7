"""`python -m generator` and the `backend-config-generator` command: see generator.cli.

`python -m generator` imports `generator` from the current folder first: a module or package named
`generator` at a repository's root runs instead of this one. The console script `backend-config-generator`
(pyproject.toml's [project.scripts], `run`) has its own folder first on sys.path, so it imports the installed
package whatever folder it runs in.
"""

import sys


def _without_the_current_folder() -> None:
    """Drop the current folder (`python -m` puts it first on sys.path, unless -P) before any other
    import: a project's numbers.py, copy.py or platform.py would otherwise stand in for the standard
    library's, here and in every module imported later. Spec code gets the project root on its path
    where it runs. A generator run from its own uninstalled checkout is imported already (this module
    is part of it), and its child processes are forked from this one."""
    import os  # imported by Python's start-up already, so not from the current folder

    if sys.path and sys.path[0] in ("", os.getcwd()) and not getattr(sys.flags, "safe_path", False):
        del sys.path[0]  # that entry alone: PYTHONPATH may name the same folder, on purpose


def run() -> int:
    """One command, from sys.argv; its exit code."""
    _without_the_current_folder()
    try:
        from generator import user_cache  # the standard library's modules only, as load_server's

        user_cache.keep_own_bytecode()  # where PYTHONDONTWRITEBYTECODE leaves no .pyc: before the other imports
        from generator.loading import load_server

        load_server.start_early(sys.argv[1:])  # the spec loads' server boots while this process imports the rest
        from generator import heap

        heap.collect_rarely()  # before the imports, which allocate most of a run's objects
        from generator.cli import main
    except KeyboardInterrupt:  # Ctrl-C while the generator starts: one line, as once it runs
        if "load_server" in locals():
            load_server.stop()
        sys.stderr.write("error: interrupted; every file is its old or its new version\n")
        return 130
    try:
        return main()
    finally:
        load_server.stop()


if __name__ == "__main__":
    sys.exit(run())
