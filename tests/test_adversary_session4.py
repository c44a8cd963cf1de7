"""Adversarial specs against the promise that no spec code runs outside the user-code guard.

A spec file is arbitrary Python: what it defines may run when the generator merely reads it.
Whatever it does, standard output carries nothing of it and the run ends with one located
error line, exit 2.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.projects import ROOT

# A spec module whose __getattr__ (PEP 562) is asked for the MODULE it lacks.
_MODULE_GETATTR = """
def __getattr__(name):
    print("spec code, running outside the guard:", name)
    raise AttributeError(name)
"""

# A MODULE that pretends, through a __class__ property, to be what Module(...) returns.
_FAKE_MODULE = """
from generator import dsl


class Fake:
    @property
    def __class__(self):
        print("spec code, running outside the guard: __class__")
        return dsl.ModuleValue

    @property
    def name(self):
        print("spec code, running outside the guard: name")
        return "extra"

    doc, backends, exports, dtype_configs = "x", (), (), ()


MODULE = Fake()
"""


def run(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "generator", "--root", str(project), *args],
                          cwd=project, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True)  # fmt: skip


def doc_prefixed(spec: Path, name: str, prelude: str = "") -> None:
    """The spec file's module docstring led by the string `name` holds, which `prelude` (put first) binds."""
    source = spec.read_text().replace("\nMODULE = Module(\n    doc=", f"\nMODULE = Module(\n    doc={name} + ", 1)
    spec.write_text(prelude + source)


def assert_an_input_once_it_appears(project: Path, appear, before: str, after: str) -> None:
    """x86's output says `before`; once `appear()` made what its load looked for, check says it is stale,
    and regenerate writes `after`."""
    assert run(project, "regenerate").returncode == 0
    assert before in (project / "generated" / "x86.py").read_text()
    appear()
    done = run(project, "check")
    assert done.returncode == 1, done.stdout + done.stderr  # stale: what it looked for is there now
    assert run(project, "regenerate").returncode == 0
    assert after in (project / "generated" / "x86.py").read_text()
    assert run(project, "check").returncode == 0


@pytest.mark.parametrize("source", [_MODULE_GETATTR, _FAKE_MODULE], ids=["module_getattr", "class_property"])
def test_reading_a_spec_files_module_runs_its_code_in_the_guard(project_with_only, source):
    project = project_with_only("qnnpack_pt2e")
    (project / "spec" / "extra.py").write_text(source)
    done = run(project, "check")
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith("error: spec/extra.py:"), done.stderr
    assert "not a Module(...)" not in errors[0]  # the fake's __class__ fools isinstance, not the check
    assert "Traceback" not in done.stderr


def test_what_a_spec_puts_into_sys_modules_is_gone_for_the_next_load(project_with_only):
    """native.py leaves an object in sys.modules and x86.py reads it: were it kept, x86's output
    would depend on whether native's load ran in the same process or came from the model cache."""
    project = project_with_only("native", "x86")
    writer, reader = project / "spec" / "native.py", project / "spec" / "x86.py"
    leave = 'import sys as _sys, types as _types\n_sys.modules["leaked"] = _types.SimpleNamespace(doc="seen")\n'
    writer.write_text(leave + writer.read_text())
    doc_prefixed(reader, "_SEEN", 'import sys as _sys\n_SEEN = getattr(_sys.modules.get("leaked"), "doc", "unseen")\n')
    assert run(project, "regenerate").returncode == 0  # every load made: native's first
    every_load_made = (project / "generated" / "x86.py").read_text()
    reader.write_text(reader.read_text() + "# an edit: native's load now comes from the model cache\n")
    assert run(project, "regenerate").returncode == 0
    assert (project / "generated" / "x86.py").read_text() == every_load_made
    assert "unseen" in every_load_made


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


def test_a_spelling_too_large_to_be_a_bound_is_not_computed():
    """Each power's exponent is small, yet nested they would take hours (five levels) or give an int
    whose repr Python refuses (over 4,300 digits)."""
    from generator import spelling


    assert spelling.evaluate("((10**64)**64)**2") is None
    assert spelling.evaluate("((((((10**64)**64)**64)**64)**64)**64)") is None
    assert spelling.evaluate("2**-12") == 2**-12 and spelling.evaluate("(2**64)**15") == 2**960


def test_a_helper_no_spec_imports_does_not_break_a_numbers_spelling(project_with_only):
    """Spellings of `**NAME` are looked up in every spec/ file: an unimported one may assign NAME too."""
    project = project_with_only("qnnpack")
    before = (project / "generated" / "qnnpack.py").read_text()
    stray = "WEIGHT_QINT8_NEG_127_TO_127_SCALE_MIN_2_NEG_12 = dict(quant_max_upper_bound=((10**64)**64)**2)\n"
    (project / "spec" / "_aaa.py").write_text(stray)
    done = run(project, "regenerate", "--force")
    assert done.returncode == 0, done.stderr
    assert (project / "generated" / "qnnpack.py").read_text() == before


_FINALIZER = """

class _Noisy:
    def __del__(self):
        print("spec code, running outside the guard: __del__")
        {raise_}


_kept = _Noisy()
"""


@pytest.mark.parametrize("raise_", ["", "raise ValueError('late')"], ids=["prints", "raises"])
def test_a_spec_objects_finalizer_runs_in_the_guard(project_with_only, raise_):
    """A spec module's namespace dies with its load, mostly as a reference cycle that the garbage
    collector frees whenever it next runs: any later stage, where __del__ would write to stdout."""
    project = project_with_only("x86")
    spec = project / "spec" / "x86.py"
    spec.write_text(spec.read_text() + _FINALIZER.format(raise_=raise_))
    for command in (["regenerate", "--force"], ["check", "--full"]):
        done = run(project, *command)
        assert "__del__" not in done.stdout, command
        assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, command
        if raise_:
            errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
            assert done.returncode == 2 and len(errors) == 1, done.stderr
            assert errors[0].startswith("error: spec/x86.py:") and "ValueError: late" in errors[0]
