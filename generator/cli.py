"""Command line: `python -m generator init | regenerate | check | matrix | diff | verify | import`.

The arguments, the console and the exit code; the commands' bodies are in
generator.commands. Exit codes: 0 when all is well, 1 when generated files
differ from what regenerate would write (commands.OK, commands.DIFFERENT); an
error is one line on stderr and the exit code its class carries
(`GeneratorError.exit_code`: 2, 130 for Ctrl-C), and changes no file.
"""

from __future__ import annotations

import argparse
import codecs
import errno
import functools
import json
import os
import sys
import warnings
from pathlib import Path

from generator import commands, errors, process, project
from generator.annotations import workflow_command
from generator.freshness import planning
from generator.loading import load_server

FORMATS = ("text", "markdown", "json", "github")  # diff's, as generator.review.formats prints them

CLOSED_OUTPUT = 141  # 128 + SIGPIPE, what `yes | head -1` reports for `yes`
INTERRUPTED_MESSAGE = "interrupted; every file is its old or its new version"


class OutputStream:
    """A standard stream whose failure is one line naming it ("cannot write to standard output: ...").

    A closed pipe (BrokenPipeError) is left to main, which exits quietly.
    """

    def __init__(self, stream, name: str):
        self.stream, self.name = stream, name

    def write(self, text: str) -> None:
        self._do(self.stream.write, text)

    def writelines(self, lines) -> None:
        self._do(self.stream.writelines, lines)

    def flush(self) -> None:
        self._do(self.stream.flush)

    def isatty(self) -> bool:
        return self.stream.isatty()

    def _do(self, action, *args) -> None:
        try:
            action(*args)
        except BrokenPipeError:
            raise
        except OSError as error:
            _discard_output(self.stream)  # the failed buffer must not fail again at exit
            raise errors.WriteError(f"cannot write to {self.name}: {error.strerror or error}") from None


def _discard_output(stream) -> None:
    """Point a failed standard stream at /dev/null, so that Python's flush at exit succeeds."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # not a real file (a test's capture): nothing is flushed at exit


class ClosedStream:
    """Stands for a standard stream the shell closed (`>&-`): Python made it None."""

    def write(self, text: str) -> None:
        raise OSError(errno.EBADF, "it is closed")

    writelines = write

    def flush(self) -> None:
        pass  # nothing was written, so nothing fails at exit

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise ValueError("closed")


def tolerant_standard_streams() -> None:
    """A closed stream fails on use with one line; an unencodable character (◐ in ASCII) is escaped."""
    for fd in (0, 1, 2):  # keep a file opened later from becoming a closed stream, inherited as one
        try:
            os.fstat(fd)
        except OSError:
            os.open(os.devnull, os.O_RDWR)  # the lowest free descriptor: this one
    sys.stdout = sys.stdout if sys.stdout is not None else ClosedStream()
    sys.stderr = sys.stderr if sys.stderr is not None else ClosedStream()
    codecs.register_error("generator-output", _escape_unencodable)
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="generator-output")


def _escape_unencodable(error: UnicodeError) -> tuple:
    """A path's undecodable bytes (C locale, /tmp/n\xc3\xb6) go out as they came; other characters escaped."""
    try:
        return codecs.lookup_error("surrogateescape")(error)
    except UnicodeError:
        return codecs.backslashreplace_errors(error)


class Console:
    """Prints to stdout/stderr, in colour only when the stream is a terminal."""

    COLOURS = {"red": "31", "green": "32", "yellow": "33", "bold": "1"}

    def __init__(self, out=None, err=None):
        self.out = OutputStream(out or sys.stdout, "standard output")
        self.err = OutputStream(err or sys.stderr, "standard error")

    def paint(self, text: str, colour: str, stream) -> str:
        if not stream.isatty() or os.environ.get("NO_COLOR"):
            return text
        return f"\033[{self.COLOURS[colour]}m{text}\033[0m"

    def say(self, text: str, colour: str | None = None) -> None:
        print(self.paint(text, colour, self.out) if colour else text, file=self.out)

    def warn(self, text: str) -> None:
        print(self.paint(f"warning: {one_line(text)}", "yellow", self.err), file=self.err)

    def error(self, text: str) -> None:
        try:
            print(self.paint(f"error: {one_line(text)}", "red", self.err), file=self.err)
            self.err.flush()
        except (OSError, errors.WriteError):
            pass  # nowhere left to say it: the exit code still does


# Control characters (newline, CR, ESC, ...) and the line and paragraph separators, escaped as Python
# writes them: an error or warning is one line, and a message that quotes user text cannot move the
# cursor, overwrite the line or fake another one on a terminal.
_CONTROL = {c: ascii(chr(c))[1:-1] for c in (*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029)}


def one_line(text: str) -> str:
    """`text` as one line, its control characters escaped (`\\n`, `\\x1b`)."""
    return text.translate(_CONTROL)


def positive_int(text: str) -> int:
    """argparse type for counts such as --jobs: a usage error unless 1 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not 1 or more")
    return value


def positive_float(text: str) -> float:
    """argparse type for durations such as --timeout: a usage error unless more than 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not a number of seconds above 0")
    return value


class Parser(argparse.ArgumentParser):
    """argparse, but --help that cannot reach standard output is an error, not a silent exit 0."""

    def print_help(self, file=None) -> None:
        OutputStream(file or sys.stdout, "standard output").write(self.format_help())


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Each option's help ends with its default, unless it says it already or the option is a flag;
    the description and the exit codes (the epilog) keep their lines."""

    def _get_help_string(self, action) -> str:
        text = action.help or ""
        if "default" in text or action.default in (None, False, [], argparse.SUPPRESS) or not action.option_strings:
            return text
        return f"{text} (default: %(default)s)"


ERROR_CODES = """  2    an error: one line on standard error, no file changed
  130  interrupted (Ctrl-C)"""
EXIT_CODES = {
    "init": "  0    the project is started",
    "regenerate": "  0    generated/ is what spec/ says (written or unchanged)",
    "check": "  0    every generated file is up to date\n"
    "  1    a file is stale, missing or edited by hand: each is named, with why and the fix",
    "matrix": "  0    the matrix is written (or printed)",
    "diff": "  0    no difference\n"
    "  1    a difference, or the newer side's generated/ is stale (in CI: `diff ... || true` to post it anyway)",
    "verify": "  0    every backend holds\n"
    "  1    a backend differs from its reference or fails a flow, or generated/ is stale",
    "import": "  0    the spec file is written (or already builds the same)",
}


def add_command(subparsers, name: str, summary: str, **options) -> argparse.ArgumentParser:
    """A command whose --help gives its one-line description, each option's default and the exit codes."""
    epilog = f"exit codes:\n{EXIT_CODES[name]}\n{ERROR_CODES}"
    return subparsers.add_parser(
        name, help=summary, description=summary[0].upper() + summary[1:] + ".", epilog=epilog,
        formatter_class=HelpFormatter, **options,
    )  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    root_help = "project root, the folder holding spec/ (default: the nearest one at or above the current folder)"
    parser = Parser(
        prog=program_name(),
        description="Expand spec/ into flat, explicit BackendConfig modules in generated/.",
        epilog="exit codes: 0 fine, 1 differs (check, diff, verify), 2 an error (one line on standard error, no "
        "file changed), 130 interrupted. `python -m generator COMMAND --help` says each command's options, "
        "their defaults and its exit codes.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {project.VERSION}")
    parser.add_argument("--root", type=Path, default=None, help=root_help)
    # --root is accepted after the command too; SUPPRESS keeps an absent one from
    # overwriting the value given before the command.
    after = argparse.ArgumentParser(add_help=False)
    after.add_argument("--root", type=Path, default=argparse.SUPPRESS, help=root_help)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_init(subparsers)
    new_command = functools.partial(add_command, subparsers, parents=[after])
    regenerate = new_command(
        "regenerate", f"write generated/ and {planning.MATRIX_OUTPUT} from spec/ (only what changed)"
    )
    regenerate.add_argument(
        "--force", action="store_true", help="re-run every spec file and re-render every module, even unchanged ones"
    )
    check = new_command(
        "check", "exit 1 if a generated file is stale, missing or hand-edited (reads no spec, imports no torch)"
    )
    check.add_argument("--full", action="store_true", help="re-render everything and compare bytes")
    check.add_argument(
        "--format", choices=("text", "github"), default="text",
        help="text, or github: one GitHub Actions workflow command per finding, at its spec line (default: text)",
    )
    for command in (regenerate, check):
        command.add_argument("--strict", action="store_true", help="treat lint warnings as errors")
        command.add_argument(
            "--jobs", type=positive_int, default=os.cpu_count() or 1,
            help="processes for black (default: the number of CPUs)",
        )
    matrix = new_command("matrix", f"write {planning.MATRIX_OUTPUT}: patterns x backends -> dtype configs")
    matrix.add_argument("--force", action="store_true", help="re-render even when it is up to date")
    matrix.add_argument("--stdout", action="store_true", help="print the matrix instead of writing it")
    matrix.add_argument(
        "--backend", dest="backends", metavar="NAME", nargs="+", action="extend", default=[],
        help="print the matrix of these backends only, writing nothing (default: every backend, written to the page)",
    )
    matrix.set_defaults(handler=commands.cmd_matrix)
    diff = new_command(
        "diff", "per-pattern semantic diff of generated/: working tree vs HEAD, revisions, or against torch"
    )
    side = diff.add_mutually_exclusive_group()
    side.add_argument(
        "--against-torch", action="store_true",
        help="generated builders against their reference builders, torch's or your own (verify's first half)",
    )
    side.add_argument(
        "--rev", metavar="REV", help="A..B: revision A against revision B; REV: REV against the working tree "
        "(default: HEAD against the working tree)"
    )
    diff.add_argument(
        "--format", choices=FORMATS, default="text",
        help="text; markdown (a pull-request comment); json; github: one GitHub Actions workflow command per finding, "
        "at its spec line (default: text)",
    )
    diff.add_argument(
        "backends", nargs="*", metavar="BACKEND", help="backend or module names, e.g. fbgemm onednn (default: all)"
    )
    diff.set_defaults(handler=commands.cmd_diff)
    verify = new_command(
        "verify", "prove each generated builder equals its reference builder and runs through torch's FX flows"
    )
    verify.add_argument(
        "--timeout", type=positive_float, default=60.0, metavar="SECONDS",
        help="bound on each FX flow run (default: 60)",
    )
    verify.add_argument(
        "--format", choices=("text", "github"), default="text",
        help="output format: text, or GitHub Actions annotations at the spec lines (github)",
    )
    verify.add_argument(
        "backends", nargs="*", metavar="BACKEND", help="backend or module names, e.g. fbgemm onednn (default: all)"
    )
    verify.set_defaults(handler=commands.cmd_verify)
    importer = new_command("import", "write spec/<name>.py from an existing builder MODULE:FUNCTION")
    importer.add_argument("target", metavar="MODULE:FUNCTION", help="e.g. my_backend.config:get_my_backend_config")
    importer.add_argument("--name", help="spec file name (default: FUNCTION without get_ and _backend_config)")
    importer.add_argument("--force", action="store_true", help="overwrite an existing spec file")
    importer.add_argument(
        "--no-compact", action="store_true", help="write every pattern, not spec/_common.py's op-group calls"
    )
    importer.set_defaults(handler=commands.cmd_import)
    regenerate.set_defaults(handler=commands.cmd_regenerate)
    check.set_defaults(handler=commands.cmd_check)
    return parser


def program_name() -> str:
    """How the command was run: the console script by its name, else `python -m generator`."""
    return project.COMMAND if Path(sys.argv[0]).name == project.COMMAND else "python -m generator"


def add_init(subparsers) -> None:
    init = add_command(
        subparsers, "init", "start a project here (or in --root DIR): the pyproject.toml table, an example spec, "
        "the generated package, pre-commit and CI; never overwrites a file"
    )
    init.add_argument(
        "--root", type=Path, default=argparse.SUPPRESS, help="the folder to start the project in (default: this one)"
    )
    init.add_argument("--specs", metavar="DIR", help="folder of the spec files (default: spec)")
    init.add_argument(
        "--generated", metavar="DIR", help="folder the generated modules go to (default: the package's path; generated)"
    )
    init.add_argument(
        "--package", metavar="NAME", help="import name of the generated modules, e.g. acme_quant.backend_configs "
        "(default: the --generated folder's path; generated)"
    )
    init.add_argument(
        "--install", metavar="PIP_ARGS", help="how CI installs the tool, as pip's arguments, e.g. "
        "'backend-config-generator @ git+https://github.com/acme/backend-config-generator@v0.1.0' (default: as "
        "pyproject.toml's dependencies name it, else where this one was installed from)"
    )
    init.set_defaults(handler=commands.cmd_init)


def find_root(start: Path) -> Path:
    """The nearest folder at or above `start` that holds spec/ or a pyproject.toml with the tool's table
    ([tool.backend-config-generator]), as git finds the folder holding .git.

    A backend author may stand in spec/, generated/ or any folder below the project.
    """
    looked = []
    for folder in (start, *start.parents):
        if (folder / "spec").is_dir() or project.has_table(folder):
            return folder
        looked.append(str(folder))
    raise errors.NotAProjectError(
        f"no project here: none of {', '.join(looked)} has a spec/ folder; "
        "run inside a project (any folder below the one holding spec/) or pass --root DIR"
    )


def forget_the_subfolder_on_path(root: Path) -> None:
    """Drop the current folder from sys.path when it is a folder inside the project.

    `python -m` puts the current folder first on sys.path; in spec/ or generated/
    a module such as spec/black.py would then shadow black itself. The project
    root is put on sys.path where spec code runs, as from the root.
    """
    cwd = Path.cwd()
    if sys.path and sys.path[0] in (str(cwd), "") and root in cwd.parents:
        del sys.path[0]


def require_project(root: Path, command: str) -> None:
    """Refuse to run anywhere but a project root, before anything is read or written.

    A spec/ without spec files is refused too (but by `import`, which writes the
    first one): regenerate would otherwise delete every generated module.
    """
    if not root.is_dir():
        raise errors.NotAProjectError(
            f"{root} is not a folder: pass --root the project's folder (the one holding spec/ or its pyproject.toml)"
        )
    specs = project.config(root).specs
    if not (root / specs).is_dir():
        raise errors.NotAProjectError(
            f"{root} is not a project root: it has no {specs}/ folder; run in the project's folder or pass --root DIR"
        )
    if command != "import" and not project.spec_files(root):
        raise errors.NoSpecFilesError(
            f"{root / specs} has no spec files ({specs}/NAME.py with MODULE = Module(...)); write one, "
            "or start from a builder with python -m generator import MODULE:FUNCTION"
        )


def main(argv: list[str] | None = None) -> int:
    """Run one command; every failure is one line on stderr and an exit code, never a traceback."""
    # torch warns on import when NumPy is absent; nothing here needs NumPy.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    tolerant_standard_streams()
    console = Console()
    args = None
    try:
        args = build_parser().parse_args(argv)
        if args.command == "init":  # starts a project where it stands, or in --root DIR
            args.root_given = args.root is not None
            args.root = (args.root or Path.cwd()).resolve()
        else:
            args.root = args.root.resolve() if args.root is not None else find_root(Path.cwd())
            require_project(args.root, args.command)
        forget_the_subfolder_on_path(args.root)
        load_server.expect(args.root)  # a load server started early reads what loads share meanwhile
        code = args.handler(args, console)
        console.out.flush()  # a closed stdout fails here, not at interpreter exit
        return code
    except errors.GeneratorError as error:
        return fail(console, error, getattr(args, "format", "text"))
    except KeyboardInterrupt:
        return fail(console, errors.Interrupted(INTERRUPTED_MESSAGE), getattr(args, "format", "text"))
    except BrokenPipeError:
        # The reader (e.g. `| head`) has all it wanted: exit quietly, and keep Python
        # from reporting the failed flush of stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return CLOSED_OUTPUT
    except ModuleNotFoundError as error:  # importlib.metadata.PackageNotFoundError is one too
        if (error.name or "").partition(".")[0] != "generator":  # one of ours missing is a bug, below
            return fail(console, missing_dependency(error))
        return internal_error(console, error)
    except OSError as error:
        if process.refused_by_a_limit(error):  # ulimit -n, -u, -v: said as the limit it is
            return fail(console, process.limit_error(error))
        where = f"{error.filename}: " if error.filename else ""
        return fail(console, errors.FileAccessError(f"{where}{error.strerror or error}"))
    except Exception as error:  # a bug: the user still gets one line, a developer can ask for more
        if process.refused_by_a_limit(error):  # MemoryError, or torch that cannot be mapped (ulimit -v)
            return fail(console, process.limit_error(error))
        return internal_error(console, error)


def internal_error(console: Console, error: Exception) -> int:
    if os.environ.get("GENERATOR_TRACEBACK"):
        raise error
    message = f"internal error: {type(error).__name__}: {error} (GENERATOR_TRACEBACK=1 shows where; report it)"
    return fail(console, errors.InternalError(message))


def missing_dependency(error: ModuleNotFoundError) -> errors.MissingDependencyError:
    """What to do when this interpreter lacks a package the generator imports (or reads the version of).

    Spec files and user builders that import a missing module are reported as
    their own errors before this; what reaches here is the generator's own need.
    """
    package = (error.name or str(error)).partition(".")[0]
    checkout = Path(__file__).resolve().parent.parent
    where = f"in {checkout}" if (checkout / "pyproject.toml").exists() else "in the generator's source folder"
    return errors.MissingDependencyError(
        f"{package} is not installed for {sys.executable}; activate the environment the project is installed "
        f"in, or install the project with its dependencies: pip install -e . ({where})"
    )


def fail(console: Console, error: errors.GeneratorError, fmt: str = "text") -> int:
    """The error as one line on standard error; in a machine-readable format, also as that format on standard
    output (a JSON document, a workflow command at the error's spec line), which then holds nothing else."""
    console.error(str(error))
    try:
        file, line, message = commands.located(str(error))
        if fmt == "json":
            document = {"error": message, "file": file, "line": line, "exit_code": error.exit_code}
            console.out.write(json.dumps(document, indent=1) + "\n")
        elif fmt == "github":
            console.out.write(workflow_command("error", message, file=file, line=line) + "\n")
        console.out.flush()
    except (OSError, errors.WriteError):
        pass  # nowhere left to say it: the exit code still does
    return error.exit_code
