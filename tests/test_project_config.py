"""The project's own pyproject.toml says where its specs, generated modules, matrix and templates are.

[tool.backend-config-generator] (generator/project.py): every key optional, the defaults this
repository's layout. A table that is not valid is one line naming pyproject.toml and the key, exit 2,
and nothing written; the configuration is an input of every generated file, so changing it makes
check report the files stale.
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from generator import project
from generator.errors import ProjectConfigError
from generator.freshness import planning

ROOT = Path(__file__).resolve().parent.parent
EDGE_NPU = ROOT / "tests" / "custom_backends" / "accelerator" / "spec" / "edge_npu.py"
ACME = """\
[project]
name = "acme-quant"

[tool.backend-config-generator]
specs = "backend_specs"
generated = "acme_quant/backend_configs"
package = "acme_quant.backend_configs"
matrix = "docs/backends.md"
"""


def run(project_root: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`python -m generator ARGS` from the source checkout, standing in the project (or `cwd`)."""
    return subprocess.run([sys.executable, "-m", "generator", *args], cwd=cwd or project_root,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True)  # fmt: skip


def acme_project(folder: Path, table: str = ACME) -> Path:
    """A user's repository: one spec file in backend_specs/, its package acme_quant, and the table."""
    (folder / "backend_specs").mkdir(parents=True)
    shutil.copy(EDGE_NPU, folder / "backend_specs" / "edge_npu.py")
    (folder / "acme_quant").mkdir()
    (folder / "acme_quant" / "__init__.py").write_text("")
    (folder / "pyproject.toml").write_text(table)
    return folder


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------- reading the table


def test_without_a_table_the_layout_is_this_repositorys(tmp_path):
    assert project.config(ROOT) == project.DEFAULT
    assert project.config(tmp_path) == project.DEFAULT  # no pyproject.toml at all
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert project.config(tmp_path) == project.DEFAULT
    assert (project.DEFAULT.specs, project.DEFAULT.generated, project.DEFAULT.package) == ("spec", *["generated"] * 2)
    assert (project.DEFAULT.matrix, project.DEFAULT.templates) == ("docs/support-matrix.md", "templates")


def test_a_table_is_read_into_the_config(tmp_path):
    (tmp_path / "pyproject.toml").write_text(ACME + 'templates = "./tools/templates/"\n')
    found = project.config(tmp_path)
    assert found == project.ProjectConfig(
        specs="backend_specs",
        generated="acme_quant/backend_configs",
        package="acme_quant.backend_configs",
        matrix="docs/backends.md",
        templates="tools/templates",
    )
    assert found.output("dsp") == "acme_quant/backend_configs/dsp.py"
    assert found.import_name("dsp") == "acme_quant.backend_configs.dsp"
    assert found.manifest == "acme_quant/backend_configs/manifest.json"
    assert found.digest() != project.DEFAULT.digest()
    (tmp_path / "pyproject.toml").write_text('[tool.backend-config-generator]\nmatrix = ""\n')
    assert project.config(tmp_path).matrix == ""  # re-read once the file changes


BAD_TABLES = [
    ('generate = "out"', "generate: unknown key"),
    ("generated = 3", "generated: must be a string, not int 3"),
    ('generated = "../elsewhere"', "generated: '../elsewhere' is outside the project"),
    ('generated = "/tmp/out"', "generated: must be a path relative to the project's folder"),
    ('templates = "."', "templates: '.' is outside the project"),
    ('package = "acme-quant.configs"', "package: 'acme-quant.configs' is not a Python import name"),
    ('specs = "my specs"', "specs: 'my specs' must be importable as a package"),
    ('generated = "spec/out"', "generated: 'spec/out' overlaps specs 'spec'"),
    # the matrix never lands on an output, an input or a file that is not Markdown (pyproject.toml, .git/config)
    ('matrix = "generated/x86.md"', "matrix: 'generated/x86.md' is inside generated"),
    ('matrix = "templates/m.md"', "matrix: 'templates/m.md' is inside templates"),
    ('matrix = "pyproject.toml"', "matrix: 'pyproject.toml' is not a Markdown file"),
    ('matrix = ".git/m.md"', "matrix: '.git/m.md' is in a hidden folder"),
    # a project's packages never share an import name with the tool, what it imports or the standard library
    ('package = "generator.backends"', "package: 'generator.backends' would share the import name 'generator'"),
    ('package = "torch.mine"', "package: 'torch.mine' would share the import name 'torch'"),
    ('specs = "json"', "specs: 'json' would share the import name 'json' with the standard library"),
]


@pytest.mark.parametrize(("line", "message"), BAD_TABLES, ids=[line for line, _ in BAD_TABLES])
def test_a_bad_table_is_named_by_its_key(tmp_path, line, message):
    (tmp_path / "pyproject.toml").write_text(f"[tool.backend-config-generator]\n{line}\n")
    with pytest.raises(ProjectConfigError) as raised:
        project.config(tmp_path)
    assert str(raised.value).startswith(f"pyproject.toml: [tool.backend-config-generator] {message}")
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("command", ["check", "regenerate"])
def test_a_bad_table_is_one_line_exit_2_and_nothing_written(tmp_path, command):
    folder = acme_project(tmp_path / "repo", ACME + 'matrix_path = "docs/m.md"\n')
    before = snapshot(folder)
    done = run(folder, command, cwd=folder / "acme_quant")  # found from a folder below, by the table
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        "error: pyproject.toml: [tool.backend-config-generator] matrix_path: unknown key; "
        "the keys are generated, matrix, package, specs, templates\n"
    )
    assert snapshot(folder) == before


def test_the_matrix_never_overwrites_a_file_the_generator_did_not_write(tmp_path):
    folder = acme_project(tmp_path / "repo", ACME.replace('"docs/backends.md"', '"README.md"'))
    (folder / "README.md").write_text("my precious readme\n")
    before = snapshot(folder)
    done = run(folder, "regenerate")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "error: pyproject.toml: [tool.backend-config-generator] matrix: README.md exists and the generator did not "
        "write it; move that file away or give the matrix another path\n"
    )
    after = snapshot(folder)  # the caches of the spec load before the refusal may stay: they change no output
    assert {k: v for k, v in after.items() if not k.startswith(".cache/")} == before
    (folder / "README.md").unlink()  # once moved away, the matrix is written there, and rewritten after
    assert run(folder, "regenerate").returncode == 0
    assert run(folder, "regenerate", "--force").returncode == 0


def test_a_pyproject_that_is_not_toml_is_one_line(tmp_path):
    folder = acme_project(tmp_path / "repo", "[tool.backend-config-generator\n")
    done = run(folder, "check")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("error: pyproject.toml: not valid TOML: ") and done.stderr.count("\n") == 1


# ---------------------------------------------------------------- a project laid out its own way


@pytest.fixture(scope="module")
def acme(tmp_path_factory) -> Path:
    """The user's repository, regenerated once (torch validates the names: seconds)."""
    folder = acme_project(tmp_path_factory.mktemp("acme") / "repo")
    done = run(folder, "regenerate")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return folder


@pytest.fixture
def acme_copy(acme, tmp_path) -> Path:
    return Path(shutil.copytree(acme, tmp_path / "repo", symlinks=True))


def test_the_generated_modules_go_where_the_table_says(acme):
    files = sorted(p.relative_to(acme).as_posix() for p in acme.rglob("*") if p.is_file() and ".cache" not in p.parts)
    assert files == [
        "acme_quant/__init__.py",
        "acme_quant/backend_configs/edge_npu.py",
        "acme_quant/backend_configs/manifest.json",
        "backend_specs/edge_npu.py",
        "docs/backends.md",
        "pyproject.toml",
    ]
    module = (acme / "acme_quant" / "backend_configs" / "edge_npu.py").read_text()
    assert "source: backend_specs/edge_npu.py" in module.splitlines()[1]
    matrix = (acme / "docs" / "backends.md").read_text()
    assert "`acme_quant/backend_configs/edge_npu.py`" in matrix and "generated/" not in matrix
    assert run(acme, "check").returncode == 0


def test_the_generated_package_imports_by_its_own_name_from_another_folder(acme, tmp_path):
    code = "import acme_quant.backend_configs.edge_npu as m; print(m.__name__, m.get_edge_npu_backend_config().name)"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={"PYTHONPATH": str(acme)},
                          capture_output=True, text=True)  # fmt: skip
    assert done.stdout == "acme_quant.backend_configs.edge_npu edge_npu\n", done.stderr


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (('package = "acme_quant.backend_configs"', 'package = "acme_quant.configs"'), "changed"),
        (('matrix = "docs/backends.md"', 'matrix = "docs/backends.md"\ntemplates = "tpl"'), "changed"),
    ],
    ids=["package", "templates"],
)
def test_a_configuration_change_that_changes_no_output_passes_check_and_needs_no_commit(acme_copy, change, reason):
    """The table is an input of every file: check renders them once to know, and they are what it says."""
    pyproject = acme_copy / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace(*change))
    manifest = acme_copy / "acme_quant" / "backend_configs" / "manifest.json"
    before = manifest.read_bytes()
    done = run(acme_copy, "check")
    assert done.returncode == 0, done.stdout
    statuses = {t.relative: planning.status(t, planning.read_manifest(acme_copy)) for t in planning.plan(acme_copy)}
    why = f"pyproject.toml [tool.backend-config-generator] {reason}"  # as the manifest sees it: another input
    assert {s.reasons for s in statuses.values()} == {(why,)}
    fixed = run(acme_copy, "regenerate")
    assert fixed.returncode == 0 and "written" not in fixed.stdout, fixed.stdout + fixed.stderr
    assert manifest.read_bytes() == before
    assert run(acme_copy, "check").returncode == 0


def test_moving_the_matrix_is_a_missing_matrix_and_no_matrix_is_none(acme_copy):
    pyproject = acme_copy / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('"docs/backends.md"', '"docs/matrix.md"'))
    done = run(acme_copy, "check")
    assert done.returncode == 1 and "docs/matrix.md: missing" in done.stdout
    pyproject.write_text(pyproject.read_text().replace('"docs/matrix.md"', '""'))
    assert run(acme_copy, "regenerate").returncode == 0
    assert run(acme_copy, "check").stdout == "1 generated files are up to date\n"
    done = run(acme_copy, "matrix")
    assert (done.returncode, done.stdout) == (2, "")
    no_matrix = 'matrix is "": this project keeps no support matrix'
    assert done.stderr == f"error: pyproject.toml: [tool.backend-config-generator] {no_matrix}\n"


# ---------------------------------------------------------------- the project's own templates


def with_template_override(folder: Path, extra: str) -> Path:
    """The project overrides the shipped module template with a copy holding `extra` before its dtype configs."""
    (folder / "templates").mkdir()
    text = (ROOT / "templates" / "module.py.j2").read_text()
    marker = text.index("{#", text.index("{%"))  # before the first comment after the first statement
    (folder / "templates" / "module.py.j2").write_text(text[:marker] + extra + "\n" + text[marker:])
    return folder


def test_a_template_that_does_not_compile_is_one_line_at_its_file_and_line(tmp_path):
    folder = with_template_override(acme_project(tmp_path / "repo"), "{% for x in %}")
    done = run(folder, "regenerate")
    assert (done.returncode, done.stdout) == (2, "")
    assert re.fullmatch(r"error: templates/module\.py\.j2:\d+: template error: Expected an expression, got "
                        r"'end of statement block'\n", done.stderr), done.stderr  # fmt: skip


def test_a_file_a_template_includes_is_an_input_whatever_its_name(tmp_path):
    """check is truthful about every file a render loads, not only *.j2 files."""
    folder = with_template_override(acme_project(tmp_path / "repo"), '{% include "acme_header.txt" %}')
    (folder / "templates" / "acme_header.txt").write_text("# ACME proprietary v1\n")
    assert run(folder, "regenerate").returncode == 0
    assert run(folder, "check").returncode == 0
    (folder / "templates" / "acme_header.txt").write_text("# ACME proprietary v2\n")
    done = run(folder, "check")
    assert done.returncode == 1, done.stdout + done.stderr
    assert run(folder, "regenerate").returncode == 0
    assert "# ACME proprietary v2" in (folder / "acme_quant" / "backend_configs" / "edge_npu.py").read_text()
