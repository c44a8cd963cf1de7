"""What a spec load read is recorded, and what it looked for and missed too: each is an input of the outputs
the load made (the manifest, the model cache and diff --rev trust the record), and the record does not depend
on the loads that ran before it in the process."""

import shutil
from pathlib import Path

import pytest

from tests.support.spec_code import doc_prefixed, run, run_here


def assert_an_input_once_it_appears(project: Path, appear, before: str, after: str) -> None:
    """x86's output says `before`; once `appear()` made what its load looked for, check says it is stale,
    and regenerate writes `after`."""
    assert run_here(project, "regenerate").returncode == 0
    assert before in (project / "generated" / "x86.py").read_text()
    appear()
    done = run_here(project, "check")
    assert done.returncode == 1, done.stdout + done.stderr  # stale: what it looked for is there now
    assert run_here(project, "regenerate").returncode == 0
    assert after in (project / "generated" / "x86.py").read_text()
    assert run_here(project, "check").returncode == 0


_OPTIONAL_FILE = """import os as _os

try:
    with open(_os.path.join(_os.path.dirname(__file__), "x86_doc.txt")) as _file:
        _DOC = _file.read().strip()
except FileNotFoundError:
    _DOC = "no doc file"
"""


def test_a_file_a_load_looked_for_and_missed_is_an_input_once_it_appears(project_with_only):
    """x86.py reads spec/x86_doc.txt if there is one: a load that found none depends on its absence."""
    project = project_with_only("x86")
    doc_prefixed(project / "spec" / "x86.py", "_DOC", _OPTIONAL_FILE)

    def appear():
        (project / "spec" / "x86_doc.txt").write_text("from the doc file")

    assert_an_input_once_it_appears(project, appear, "no doc file", "from the doc file")


_OPTIONAL_IMPORT = """try:
    from {module} import DOC as _DOC
except ImportError:
    _DOC = "no doc module"
"""


@pytest.mark.parametrize(
    ("module", "created"),
    [("spec._x86_doc", "spec/_x86_doc.py"), ("x86_doc", "x86_doc.py"), ("x86_docs", "x86_docs/__init__.py")],
    ids=["spec_helper", "root_module", "root_package"],
)
def test_a_module_a_load_failed_to_import_is_an_input_once_it_appears(project_with_only, module, created):
    """x86.py imports a doc module if there is one: a load that found none depends on its absence,
    as one that opened a missing file does (above)."""
    project = project_with_only("x86")
    doc_prefixed(project / "spec" / "x86.py", "_DOC", _OPTIONAL_IMPORT.format(module=module))

    def appear():
        (project / created).parent.mkdir(exist_ok=True)
        (project / created).write_text('DOC = "from the doc module"\n')

    assert_an_input_once_it_appears(project, appear, "no doc module", "from the doc module")


_LISTING = """import pathlib as _pathlib

_DOC = " ".join(sorted(f.stem for f in _pathlib.Path(__file__).parent.glob("_doc_*.py"))) or "no doc modules"
"""


def test_a_folder_a_load_listed_is_an_input(project_with_only):
    """x86.py names the spec/_doc_*.py files it finds: a new one changes its output, as an edit would."""
    project = project_with_only("x86")
    doc_prefixed(project / "spec" / "x86.py", "_DOC", _LISTING)

    def appear():
        (project / "spec" / "__pycache__").mkdir(exist_ok=True)  # what a test run of the user's leaves there
        assert run(project, "check").returncode == 0  # no change
        (project / "spec" / "_doc_a.py").write_text("")

    assert_an_input_once_it_appears(project, appear, "no doc modules", "_doc_a")


def test_what_a_load_is_recorded_to_read_does_not_depend_on_the_loads_before_it(project_with_only):
    """native.py and x86.py both import a helper package's submodule. Python lists the package's folder
    the first time a process imports from it: that listing is the import machinery's, not the spec's, so
    x86.py's recorded reads are the same whether native.py's load ran before it in the process or not."""
    import json

    project = project_with_only("native", "x86")
    (project / "helpers").mkdir()
    (project / "helpers" / "__init__.py").write_text("")
    (project / "helpers" / "docs.py").write_text('DOC = "shared doc: "\n')
    for name in ("native", "x86"):
        doc_prefixed(project / "spec" / f"{name}.py", "DOC", "from helpers.docs import DOC\n")

    def recorded_reads(output):
        return json.loads((project / "generated" / "manifest.json").read_text())["outputs"][output]["inputs"]

    assert run(project, "regenerate", "--force").returncode == 0  # native.py's load imports helpers first
    every_load_made = recorded_reads("generated/x86.py")
    x86 = project / "spec" / "x86.py"
    x86.write_text(x86.read_text() + "# an edit: native's load now comes from the model cache\n")
    assert run(project, "regenerate").returncode == 0  # x86.py's load imports helpers first
    assert recorded_reads("generated/x86.py") == every_load_made
    assert "helpers/docs.py" in every_load_made


# ---------------------------------------------------------------- read however it is read (issue 32, A5)
# Each load runs in a process of its own, which observes what no audit event shows: a path tested, a file
# outside the project, a helper in the generated folder, an environment variable. Each is an input: check
# names it once it changed, regenerate writes the new output, and the tree is then what --force writes.


def x86_text(project: Path) -> str:
    return (project / "generated" / "x86.py").read_text()


def assert_recorded(project: Path, change, before: str, after: str, named: str, environment=None, tree=None):
    """x86's output says `before`; once `change()` changed what its load read, check (and check --full) exits 1
    naming `named`, the fix it names (regenerate) writes `after`, check passes, and the file is what
    regenerate --force writes in a fresh copy (of `tree`, the folder the project is in, if the load reads
    beside it) run in the same `environment`."""
    assert run_here(project, "regenerate").returncode == 0
    assert before in x86_text(project)
    if change is not None:
        change()
    done = run_here(project, "check", environment=environment)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"generated/x86.py: stale: {named}" in done.stdout, done.stdout
    full = run_here(project, "check", "--full", environment=environment)  # runs the spec: says the same, and the fix
    assert full.returncode == 1 and f"generated/x86.py: stale: {named}" in full.stdout, full.stdout
    assert full.stdout.rstrip().endswith("fix: python -m generator regenerate") and "edited by hand" not in full.stdout
    done = run_here(project, "regenerate", environment=environment)
    assert done.returncode == 0, done.stderr
    assert "written   generated/x86.py" in done.stdout
    assert after in x86_text(project)
    assert run_here(project, "check", environment=environment).returncode == 0
    assert run_here(project, "check", "--full", environment=environment).returncode == 0
    tree = tree or project
    copy = Path(shutil.copytree(tree, tree.parent / f"{tree.name}-copy", symlinks=True,
                                ignore=shutil.ignore_patterns("__pycache__")))  # fmt: skip
    copied = copy / project.relative_to(tree)
    assert run_here(copied, "check", environment=environment).returncode == 0  # the record holds in another clone
    assert run_here(copied, "regenerate", "--force", environment=environment).returncode == 0
    assert x86_text(copied) == x86_text(project)


_TESTED = """import os as _os
import pathlib as _pathlib

_FLAG = _os.path.join(_os.path.dirname(__file__), "x86.flag")
_DOC = "flag on" if {test} else "flag off"
"""


@pytest.mark.parametrize(
    "test",
    [
        "_os.path.exists(_FLAG)",
        "_os.path.isfile(_FLAG)",
        "_pathlib.Path(_FLAG).exists()",
        "_pathlib.Path(_FLAG).is_file()",
        "_os.access(_FLAG, _os.F_OK)",
        "_os.path.isdir(_FLAG)",
    ],
)
def test_a_path_a_load_tested_is_an_input_once_it_appears(project_with_only, test):
    """x86.py says whether spec/x86.flag is there (a file, or a folder for isdir), by a test that opens nothing."""
    project = project_with_only("x86")
    doc_prefixed(project / "spec" / "x86.py", "_DOC", _TESTED.format(test=test))
    flag = project / "spec" / "x86.flag"

    def change():
        flag.mkdir() if "isdir" in test else flag.write_text("")

    assert_recorded(project, change, "flag off", "flag on", "spec/x86.flag changed")


_TESTED_BY_A_LIBRARY = """import os as _os
import sys as _sys

_sys.path.insert(0, _os.path.join(_os.path.dirname(__file__), "..", "vendor", "site-packages"))
import probe_lib as _probe_lib

_FLAG = _os.path.join(_os.path.dirname(__file__), "x86.flag")
_DOC = "flag on" if _probe_lib.there(_FLAG) else "flag off"
"""


def test_a_path_an_installed_library_tested_for_the_spec_is_an_input(project_with_only):
    """x86.py asks an installed library (a module in a site-packages folder) whether spec/x86.flag is there:
    what the library does at the spec's request is the spec's."""
    project = project_with_only("x86")
    site = project / "vendor" / "site-packages"
    site.mkdir(parents=True)
    (site / "probe_lib.py").write_text("import os\n\n\ndef there(path):\n    return os.path.exists(path)\n")
    doc_prefixed(project / "spec" / "x86.py", "_DOC", _TESTED_BY_A_LIBRARY)
    flag = project / "spec" / "x86.flag"
    assert_recorded(project, lambda: flag.write_text(""), "flag off", "flag on", "spec/x86.flag changed")


_STAT = """import os as _os

_DOC = "%d bytes of data" % _os.stat(_os.path.join(_os.path.dirname(__file__), "x86_data.txt")).st_size
"""


def test_a_file_a_load_stat_ed_is_an_input(project_with_only):
    """x86.py tells the size of spec/x86_data.txt from os.stat: a longer file is another output."""
    project = project_with_only("x86")
    doc_prefixed(project / "spec" / "x86.py", "_DOC", _STAT)
    data = project / "spec" / "x86_data.txt"
    data.write_text("12345")
    assert_recorded(project, lambda: data.write_text("1234567"), "5 bytes of data", "7 bytes of data",
                    "spec/x86_data.txt changed")  # fmt: skip


_OUTSIDE = """import os as _os

with open(_os.path.join(_os.path.dirname(__file__), "..", "..", "shared", "doc.txt")) as _file:
    _DOC = _file.read().strip()
"""


def test_a_file_outside_the_project_is_an_input_by_its_path_from_the_root(tmp_path_factory, tmp_path):
    """In a monorepo, x86.py reads ../shared/doc.txt: recorded as that, so it holds in every clone."""
    import json

    from tests.support.projects import fresh_copy

    tree = tmp_path / "monorepo"
    project = fresh_copy(tree / "project", "x86", factory=tmp_path_factory)
    (tree / "shared").mkdir()
    doc = tree / "shared" / "doc.txt"
    doc.write_text("the shared doc")
    doc_prefixed(project / "spec" / "x86.py", "_DOC", _OUTSIDE)

    def change():
        doc.write_text("the shared doc, edited")

    assert_recorded(project, change, "the shared doc", "the shared doc, edited", "../shared/doc.txt changed",
                    tree=tree)  # fmt: skip
    inputs = json.loads((project / "generated" / "manifest.json").read_text())["outputs"]["generated/x86.py"]["inputs"]
    assert "../shared/doc.txt" in inputs
    assert not [name for name in inputs if name.startswith("../") and name != "../shared/doc.txt"], inputs


def test_a_helper_of_the_user_s_in_the_generated_folder_is_an_input(project_with_only):
    """x86.py imports generated/helpers.py, the user's own (the manifest does not list it): an edit to it is an
    input's, and regenerate leaves it alone; the generated files stay no input."""
    import json

    project = project_with_only("x86")
    helper = project / "generated" / "helpers.py"
    helper.write_text('DOC = "from the helper"\n')
    doc_prefixed(project / "spec" / "x86.py", "_DOC", "from generated.helpers import DOC as _DOC\n")

    def change():
        helper.write_text('DOC = "from the edited helper"\n')

    assert_recorded(project, change, "from the helper", "from the edited helper", "generated/helpers.py changed")
    assert helper.read_text() == 'DOC = "from the edited helper"\n'
    inputs = json.loads((project / "generated" / "manifest.json").read_text())["outputs"]["generated/x86.py"]["inputs"]
    generated = [name for name in inputs if name.startswith("generated/")]
    assert generated == ["generated/__init__.py", "generated/helpers.py"]


@pytest.mark.parametrize(
    "read",
    [
        '_os.environ.get("X86_DOC", "no doc variable")',
        '_os.getenv("X86_DOC", "no doc variable")',
        '_os.environ["X86_DOC"] if "X86_DOC" in _os.environ else "no doc variable"',
        'eval(compile("__import__(\'os\').environ.get(\'X86_DOC\', \'no doc variable\')", "<string>", "eval"))',
        '__import__(_os.name).environ.get(b"X86_DOC", b"no doc variable").decode()',
        '_os.environ._data.get(b"X86_DOC", b"no doc variable").decode()',
    ],
    ids=["environ_get", "getenv", "in_and_item", "through_exec", "posix_environ", "environ_data"],
)
def test_an_environment_variable_a_load_read_is_an_input(project_with_only, read):
    """x86.py reads X86_DOC, by os.environ, os.getenv, code it compiled itself, the raw environment
    (posix.environ) or os.environ's own dict: set in the environment of the next check, x86.py is stale for it."""
    project = project_with_only("x86")
    doc_prefixed(project / "spec" / "x86.py", "_DOC", f"import os as _os\n\n_DOC = {read}\n")
    named = "environment variable X86_DOC, as set here, gives another output"  # its value is nowhere committed
    assert_recorded(project, None, "no doc variable", "from the environment", named,
                    environment={"X86_DOC": "from the environment"})  # fmt: skip
    changed = run(project, "check", environment={"X86_DOC": "another value"})
    assert changed.returncode == 1
    assert f"generated/x86.py: stale: {named}" in changed.stdout


_EVERY_VARIABLE = """import os as _os

_DOC = " ".join(sorted(name for name in _os.environ if name.startswith("X86_"))) or "no X86 variables"
"""


def test_a_load_that_iterated_the_environment_read_all_of_it(project_with_only):
    """x86.py names the X86_* variables it finds: a new one (any change to the environment) is an input's change;
    a variable the load set itself is not."""
    project = project_with_only("x86")
    setting = '_os.environ["X86_SET"] = "by the spec"\n'
    doc_prefixed(project / "spec" / "x86.py", "_DOC", _EVERY_VARIABLE.replace("\n\n", f"\n\n{setting}", 1))
    named = "the environment, as set here, gives another output"
    assert_recorded(project, None, '"""X86_SET', '"""X86_EXTRA X86_SET', named, environment={"X86_EXTRA": "1"})


_BACK_WAYS = {
    "scandir_stat": '_DOC = "%d bytes" % sum(e.stat().st_size for e in _os.scandir(_DATA))',
    "listdir_of_a_descriptor": '_DOC = "%d bytes" % len(_os.listdir(_os.open(_DATA, _os.O_RDONLY)))',
    "open_in_a_folder_descriptor": (
        '_DOC = "%d bytes" % len(_os.read(_os.open("a.txt", _os.O_RDONLY, dir_fd=_os.open(_DATA, _os.O_RDONLY)), 99))'
    ),
    "stat_of_the_system_module": '_DOC = "%d bytes" % __import__(_os.name).stat(_os.path.join(_DATA, "a.txt")).st_size',
    "sqlite": (
        '_DOC = "%d bytes" % __import__("sqlite3").connect("file:" + _os.path.join(_DATA, "a.db") + "?mode=ro", '
        'uri=True).execute("select v from t").fetchone()[0]'
    ),
}


@pytest.mark.parametrize("way", sorted(_BACK_WAYS))
def test_a_file_read_by_a_back_way_is_an_input(project_with_only, way):
    """What a spec reads through a folder scan's entries, a folder descriptor, the system module's own stat or
    an SQLite database is an input as a plain open() is."""
    project = project_with_only("x86")
    data = project / "spec" / "x86_data"
    data.mkdir()
    (data / "a.txt").write_text("12345")
    if way == "sqlite":
        import sqlite3

        with sqlite3.connect(data / "a.db") as database:
            database.execute("create table t(v)")
            database.execute("insert into t values (5)")
    prelude = f'import os as _os\n\n_DATA = _os.path.join(_os.path.dirname(__file__), "x86_data")\n{_BACK_WAYS[way]}\n'
    doc_prefixed(project / "spec" / "x86.py", "_DOC", prelude)

    def change():
        if way == "sqlite":
            import sqlite3

            with sqlite3.connect(data / "a.db") as database:
                database.execute("update t set v = 7")
        elif way == "listdir_of_a_descriptor":
            (data / "b.txt").write_text("")
        else:
            (data / "a.txt").write_text("1234567")

    after = "2 bytes" if way == "listdir_of_a_descriptor" else "7 bytes"
    named = {"sqlite": "spec/x86_data/a.db changed", "listdir_of_a_descriptor": "spec/x86_data/ changed"}
    before = "1 bytes" if way == "listdir_of_a_descriptor" else "5 bytes"
    assert_recorded(project, change, before, after, named.get(way, "spec/x86_data/a.txt changed"))


@pytest.mark.parametrize(
    ("path", "what"),
    [("generated/native.py", "a file regenerate writes"), (".git/HEAD", "the repository's own state")],
    ids=["another_spec_s_module", "git"],
)
def test_a_spec_that_reads_what_no_load_may_depend_on_is_one_line_at_the_reading_line(project_with_only, path, what):
    """Another spec's generated module (the output would depend on the last run) and .git (each clone has its
    own) are no input a load may have: reading one is an error at the spec line that reads it, nothing written."""
    project = project_with_only("native", "x86")
    (project / ".git").mkdir(exist_ok=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    opened = f'open(_os.path.join(_os.path.dirname(__file__), "..", "{path}"))'
    prelude = f"import os as _os\n\n_DOC = str(len({opened}.read()))\n"
    doc_prefixed(project / "spec" / "x86.py", "_DOC", prelude)
    before = (project / "generated" / "x86.py").read_text()
    done = run(project, "regenerate")
    assert done.returncode == 2, done.stdout + done.stderr
    line = prelude.splitlines().index(next(x for x in prelude.splitlines() if "open(" in x)) + 1
    assert done.stderr.splitlines() == [done.stderr.splitlines()[0]]
    assert done.stderr.startswith(f"error: spec/x86.py:{line}: spec/x86.py reads {path}, {what}"), done.stderr
    assert (project / "generated" / "x86.py").read_text() == before


# ---------------------------------------------------------------- read however it is read (issue 39)
# Bytes read through a mapping of a file opened for update, a symbolic link's target, a file's executable bit:
# each is an input as a plain read is. Starting another program (whose reads are not seen) and asking os.access
# whether the user may read or write (which depends on who runs it) are refused at the spec line.

_MAPPED = """import mmap as _mmap
import os as _os

with open(_os.path.join(_os.path.dirname(__file__), "x86_data.bin"), "r+b") as _file:
    _DOC = _mmap.mmap(_file.fileno(), 0)[:].decode()
"""


def test_a_file_mapped_after_an_open_for_update_is_an_input(project_with_only):
    project = project_with_only("x86")
    doc_prefixed(project / "spec" / "x86.py", "_DOC", _MAPPED)
    data = project / "spec" / "x86_data.bin"
    data.write_text("mapped one ")
    assert_recorded(project, lambda: data.write_text("mapped two "), "mapped one", "mapped two",
                    "spec/x86_data.bin changed")  # fmt: skip


_LINKED = """import os as _os

_LINK = _os.path.join(_os.path.dirname(__file__), "x86_link")
_DOC = "linked to %s " % _os.path.basename({read}(_LINK))
"""


@pytest.mark.parametrize("read", ["_os.readlink", "_os.path.realpath"])
def test_a_symbolic_link_s_target_is_an_input(project_with_only, read):
    """spec/x86_link points to one of two files with the same bytes: retargeted, x86.py's output changes."""
    project = project_with_only("x86")
    doc_prefixed(project / "spec" / "x86.py", "_DOC", _LINKED.format(read=read))
    for name in ("x86_a.txt", "x86_b.txt"):
        (project / "spec" / name).write_text("the same bytes\n")
    link = project / "spec" / "x86_link"
    link.symlink_to("x86_a.txt")

    def retarget():
        link.unlink()
        link.symlink_to("x86_b.txt")

    assert_recorded(project, retarget, "linked to x86_a.txt", "linked to x86_b.txt", "spec/x86_link changed")


_MODE = """import os as _os
import stat as _stat

_TOOL = _os.path.join(_os.path.dirname(__file__), "x86_tool.sh")
_DOC = "executable " if {test} else "not executable "
"""


@pytest.mark.parametrize("test", ["_os.access(_TOOL, _os.X_OK)", "_os.stat(_TOOL).st_mode & _stat.S_IXUSR"])
def test_a_file_s_executable_bit_is_an_input(project_with_only, test):
    """x86.py says whether spec/x86_tool.sh is executable (what git keeps of a file's mode): a chmod +x is a change."""
    project = project_with_only("x86")
    doc_prefixed(project / "spec" / "x86.py", "_DOC", _MODE.format(test=test))
    tool = project / "spec" / "x86_tool.sh"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o644)
    assert_recorded(project, lambda: tool.chmod(0o755), '"""not executable', '"""executable',
                    "spec/x86_tool.sh changed")  # fmt: skip


_REFUSED = {
    "subprocess": ("import subprocess as _subprocess", '_subprocess.run(["cat", _DATA], capture_output=True).stdout',
                   "starts another program (subprocess.Popen: 'cat')"),
    "popen": ("", "_os.popen('cat ' + _DATA).read()", "starts another program (subprocess.Popen: '/bin/sh')"),
    "system": ("", "_os.system('cat ' + _DATA)", "starts another program (os.system: 'cat "),
    "posix_spawn": ("", "_os.waitpid(_os.posix_spawn('/bin/cat', ['cat', _DATA], {}), 0)",
                    "starts another program (os.posix_spawn: '/bin/cat')"),
    "access_to_write": ("", "_os.access(_DATA, _os.W_OK)", "asks os.access whether it may read or write"),
}


@pytest.mark.parametrize("way", sorted(_REFUSED))
def test_a_read_that_cannot_be_recorded_is_refused_at_its_line(project_with_only, way):
    """What another program reads is not seen, and whether the user may write a file depends on who runs the
    command: a spec doing either is one line at the spec line that does it, exit 2, nothing written."""
    project = project_with_only("x86")
    imported, call, said = _REFUSED[way]
    prelude = f'import os as _os\n{imported}\n\n_DATA = _os.path.join(_os.path.dirname(__file__), "x86_data.txt")\n'
    prelude += f"_DOC = str({call})[:0]\n"
    (project / "spec" / "x86_data.txt").write_text("data\n")
    doc_prefixed(project / "spec" / "x86.py", "_DOC", prelude)
    before = x86_text(project)
    done = run(project, "regenerate", "--force")
    assert done.returncode == 2, done.stdout + done.stderr
    line = prelude.splitlines().index(f"_DOC = str({call})[:0]") + 1
    assert done.stderr.startswith(f"error: spec/x86.py:{line}: spec/x86.py {said}"), done.stderr
    assert len(done.stderr.splitlines()) == 1 and done.stdout == ""
    assert x86_text(project) == before


def test_a_fifo_a_load_tested_is_an_input_and_never_waited_on(project_with_only):
    """x86.py tests whether spec/x86.fifo is there: a FIFO is recorded as what it is (not a file), never opened
    to wait for a writer, and its going away is a change."""
    import os

    project = project_with_only("x86")
    fifo = project / "spec" / "x86.fifo"
    os.mkfifo(fifo)
    doc_prefixed(project / "spec" / "x86.py", "_DOC", _TESTED.format(test="_os.path.exists(_FLAG)").replace(
        "x86.flag", "x86.fifo"))  # fmt: skip
    assert_recorded(project, fifo.unlink, "flag on", "flag off", "spec/x86.fifo changed")


_FORKED = """import os as _os

_read, _write = _os.pipe()
if _os.fork() == 0:  # a process of the spec's own reads a data file, and hands the load its bytes
    try:
        with open(_os.path.join(_os.path.dirname(__file__), "x86_data.txt")) as _file:
            _os.write(_write, _file.read().encode())
    except PermissionError:
        _os.write(_write, b"refused in the fork ")
    _os._exit(0)
_os.close(_write)
_DOC = _os.read(_read, 1000).decode()
_os.wait()
"""


def test_a_process_a_load_forks_cannot_read_a_file_for_it(project_with_only):
    """What a forked process reads is not the load's record: its reading a project file fails (PermissionError),
    so nothing unrecorded reaches the output."""
    project = project_with_only("x86")
    (project / "spec" / "x86_data.txt").write_text("the data ")
    doc_prefixed(project / "spec" / "x86.py", "_DOC", _FORKED)
    done = run(project, "regenerate")
    assert done.returncode == 0, done.stderr
    assert '"""refused in the fork ' in x86_text(project) and "the data" not in x86_text(project)
