"""What a spec load read is recorded, and what it looked for and missed too: each is an input of the outputs
the load made (the manifest, the model cache and diff --rev trust the record), and the record does not depend
on the loads that ran before it in the process."""

from pathlib import Path

import pytest

from tests.support.spec_code import doc_prefixed, run


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
