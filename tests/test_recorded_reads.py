"""Adversarial specs and setups against what the caches trust: the record of what a spec load read
(manifest, model cache, diff --rev) and the compiled templates."""

import pytest

from tests.test_adversary_session4 import assert_an_input_once_it_appears, doc_prefixed, run

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
    as one that opened a missing file does (test_adversary_session4)."""
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


def _rendered_with(tmp_path, tag, marked=lambda value: True) -> str:
    """templates/module.py.j2 rendered by an environment whose `tag` filter and `marked` test are those
    given, its compiled templates kept in tmp_path/cache (as the generator keeps them)."""
    import jinja2

    from generator.build.template_cache import TemplateBytecodeCache

    (tmp_path / "templates").mkdir(exist_ok=True)
    (tmp_path / "templates" / "module.py.j2").write_text("{{ 'x' | tag }}{{ 'y' is marked }}")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(tmp_path / "templates")),
                             undefined=jinja2.StrictUndefined,
                             bytecode_cache=TemplateBytecodeCache(tmp_path / "cache"))  # fmt: skip
    env.filters["tag"], env.tests["marked"] = tag, marked
    return env.get_template("module.py.j2").render(suffix="!")


def test_a_compiled_template_serves_no_environment_whose_filters_take_other_arguments(tmp_path):
    """Jinja2 compiles a filter call with the context as its first argument when the filter is
    @pass_context (a test's with the environment, when @pass_environment): code compiled for a filter
    that has since gained the context (or lost it) would call it with the wrong arguments."""
    import jinja2

    assert _rendered_with(tmp_path, lambda value: value + "?") == "x?True"
    assert len(list((tmp_path / "cache").glob("*.bin"))) == 1  # kept: what the next environment could reuse
    with_context = jinja2.pass_context(lambda context, value: value + context["suffix"])
    assert _rendered_with(tmp_path, with_context, lambda value: False) == "x!False"
    marked_in_context = jinja2.pass_environment(lambda environment, value: environment is not None)
    assert _rendered_with(tmp_path, with_context, marked_in_context) == "x!True"


def test_a_compiled_template_serves_no_other_generator(tmp_path, monkeypatch):
    """Jinja2's compiler calls a filter given constants and compiles its result: `{{ 'x' | tag }}` is
    compiled to "x?". The filters are the generator's code, so another generator (an upgrade, an edit
    to source_spelling) must not run what this one compiled."""
    from generator import digests

    assert _rendered_with(tmp_path, lambda value: value + "?") == "x?True"
    monkeypatch.setattr(digests, "generator_code", lambda: b"another generator")
    assert _rendered_with(tmp_path, lambda value: value + "!") == "x!True"


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
