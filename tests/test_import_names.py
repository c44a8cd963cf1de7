"""A backend's name in the project and the name its BackendConfig has are two things.

The project's name (its label: what `diff`, `--name` and the support matrix say) is unique
across spec/; the name a builder returns is what the generated builder returns too: torch's
default empty name, or a name another backend's builder returns as well (three real builders
return "native" or "tensorrt", as torch's own do). Builders of tests/support/named_builders.py
are imported, regenerated, proven equal field by field, and shown under their project names.
"""

import importlib.util
import re
import shutil

import pytest

from generator import cli
from generator.loading import loader
from generator.review.equality import compare_backend_configs
from tests.support import named_builders, projects
from tests.support.cli_runs import run

UNNAMED = "tests.support.named_builders:get_unnamed_npu_backend_config"
OTHER_UNNAMED = "tests.support.named_builders:get_other_unnamed_npu_backend_config"
TENSORRT_FORK = "tests.support.named_builders:get_acme_trt_backend_config"
# (target, options, spec file stem, label, the name its BackendConfig has)
IMPORTS = [
    (UNNAMED, ["--name", "mine"], "mine", "mine", ""),
    (OTHER_UNNAMED, [], "other_unnamed_npu", "other_unnamed_npu", ""),
    (TENSORRT_FORK, ["--name", "trt_fork"], "trt_fork", "trt_fork", "tensorrt"),
]


def load_generated(path):
    spec = importlib.util.spec_from_file_location(f"named_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def spec_files(project):
    return {p.name: p.read_text() for p in (project / "spec").iterdir() if p.is_file()}


@pytest.fixture(scope="module")
def named(tmp_path_factory):
    """The project with the three builders imported and regenerated, committed to git: (project, outputs)."""
    project = projects.fresh_copy(tmp_path_factory.mktemp("named") / "project")
    outputs = []
    for given, options, *_ in IMPORTS:
        code = cli.main(["--root", str(project), "import", given, *options])
        outputs.append(code)
    outputs.append(cli.main(["--root", str(project), "regenerate"]))
    projects.commit_all(project)
    return project, outputs


def test_each_imports_and_regenerates_under_its_project_name(named):
    project, codes = named
    assert codes == [0, 0, 0, 0]
    for given, _options, stem, label, name in IMPORTS:
        spec = (project / "spec" / f"{stem}.py").read_text()
        # name= is what the builder returns; label= only where the project's name is not derived from it
        assert f'name="{name}",' in spec, spec
        assert (f'label="{label}",' in spec) == (label != given.rsplit(":get_", 1)[1].removesuffix("_backend_config"))
    (module,) = [m for m in loader.load_modules(project) if m.spec_file == "spec/trt_fork.py"]
    assert [(b.label, b.name) for b in module.backends] == [("trt_fork", "tensorrt")]


@pytest.mark.parametrize("given, options, stem, label, name", IMPORTS, ids=[i[3] for i in IMPORTS])
def test_the_generated_builder_returns_what_the_original_returns(named, given, options, stem, label, name):
    project, _ = named
    function = given.split(":")[1]
    ours = getattr(load_generated(project / "generated" / f"{stem}.py"), function)()
    theirs = getattr(named_builders, function)()
    assert ours.name == theirs.name == name
    assert compare_backend_configs(given, ours, theirs) == []


def test_two_builders_returning_the_empty_name_are_two_backends(named):
    project, _ = named
    backends = [b for m in loader.load_modules(project) for b in m.backends if b.name == ""]
    assert sorted(b.label for b in backends) == ["mine", "other_unnamed_npu"]
    generated = (project / "generated" / "mine.py").read_text()
    assert "return BackendConfig().set_backend_pattern_configs(" in generated  # as torch's default reads


def test_the_matrix_and_diff_name_each_by_its_project_name(named, capsys):
    project, _ = named
    matrix = (project / "docs" / "support-matrix.md").read_text()
    for given, _options, stem, label, _name in IMPORTS:
        assert f"| `{label}` | `{given.split(':')[1]}` | `generated/{stem}.py` |" in matrix
    assert "| `tensorrt` | `get_tensorrt_backend_config` | `generated/tensorrt.py` |" in matrix
    header = next(line for line in matrix.splitlines() if line.startswith("| pattern |"))
    assert {"mine", "other_unnamed_npu", "trt_fork", "tensorrt"} <= set(header.replace(" ", "").split("|"))
    code, out = run(capsys, "--root", str(project), "diff", "--against-torch", "mine", "trt_fork", "other_unnamed_npu")
    assert (code, out) == (0, "no differences in 3 backends (reference -> generated)\n")
    code, out = run(capsys, "--root", str(project), "check")
    assert code == 0, out


def test_a_diff_between_revisions_keys_each_backend_on_its_project_name(named, tmp_path, capsys):
    """The generated module records a given label (`__backend_labels__`): built or read from its source
    unbuilt, trt_fork is never taken for tensorrt, whose BackendConfig name it shares."""
    project = tmp_path / "project"
    shutil.copytree(named[0], project, symlinks=True)
    generated = (project / "generated" / "trt_fork.py").read_text()
    assert '__backend_labels__ = {\n    "get_acme_trt_backend_config": "trt_fork",\n}' in generated
    code, out = run(capsys, "--root", str(project), "diff", "tensorrt")  # both unchanged: read unbuilt
    assert (code, out) == (0, "no differences in 1 backend (HEAD -> working tree)\n")
    spec = project / "spec" / "trt_fork.py"
    text = spec.read_text()
    spec.write_text(re.sub(r"\n\s*config\(nn\.Linear[^\n]*\n", "\n", text, count=1))
    assert spec.read_text() != text
    assert run(capsys, "--root", str(project), "regenerate")[0] == 0
    code, out = run(capsys, "--root", str(project), "diff", "trt_fork", "tensorrt", "mine")
    assert code == 1, out  # differences found
    assert [line.split("  (")[0] for line in out.splitlines()] == ["trt_fork: - pattern nn.Linear"], out
    code, out = run(capsys, "--root", str(project), "diff", "tensorrt")
    assert (code, out) == (0, "no differences in 1 backend (HEAD -> working tree)\n")


def test_import_force_over_a_labelled_spec_keeps_its_project_name(named, tmp_path, capsys):
    project = tmp_path / "project"
    shutil.copytree(named[0], project, symlinks=True)
    code, out = run(capsys, "--root", str(project), "import", OTHER_UNNAMED, "--name", "mine", "--force")
    assert code == 0, out
    assert out.startswith("written   spec/mine.py: 3 patterns"), out
    spec = (project / "spec" / "mine.py").read_text()
    assert 'label="mine",' in spec and 'name="",' in spec
    assert 'builder="get_unnamed_npu_backend_config"' in spec  # the replaced spec's builder name, recovered
    assert run(capsys, "--root", str(project), "regenerate")[0] == 0
    ours = load_generated(project / "generated" / "mine.py").get_unnamed_npu_backend_config()
    theirs = named_builders.get_other_unnamed_npu_backend_config()
    assert compare_backend_configs(OTHER_UNNAMED, ours, theirs) == []


def test_an_import_whose_names_are_both_taken_is_refused_in_one_line(fresh_project, capsys):
    """The builder's name (tensorrt) and --name (test_only_legacy_native, a label of spec/native.py) are taken."""
    before = spec_files(fresh_project)
    code, out = run(capsys, "--root", str(fresh_project), "import", TENSORRT_FORK, "--name", "test_only_legacy_native")
    assert code == 2
    assert re.fullmatch(
        r"error: backend names 'tensorrt' \(its builder's\) and 'test_only_legacy_native' \(--name\) are already used "
        r"by the backends at spec/tensorrt\.py:\d+ and spec/native\.py:\d+; backend names must be unique across "
        r"spec/, so import with another --name, or replace that file \(--name tensorrt --force\)\n",
        out,
    ), out
    assert spec_files(fresh_project) == before


def test_two_specs_with_the_same_project_name_are_refused_in_one_line(fresh_project, capsys):
    """label= names a backend; two backends of one label are refused, naming both files."""
    source = (fresh_project / "spec" / "tensorrt.py").read_text()
    copy = source.replace('name="tensorrt",', 'label="tensorrt", name="",')
    copy = copy.replace('builder="get_tensorrt_backend_config"', 'builder="get_trt_copy_backend_config"')
    copy = copy.replace('dict_builder="get_tensorrt_backend_config_dict"', 'dict_builder="get_trt_copy_dict"')
    assert copy.count('label="tensorrt"') == 1
    (fresh_project / "spec" / "trt_copy.py").write_text(copy)
    code, out = run(capsys, "--root", str(fresh_project), "regenerate")
    assert code == 2
    assert re.fullmatch(
        r"error: spec/(tensorrt|trt_copy)\.py:\d+: backend name 'tensorrt' is already used by the backend at "
        r"spec/(tensorrt|trt_copy)\.py:\d+; backend names must be unique across spec/ \(Backend\(label=\.\.\.\) "
        r"names one otherwise than the name its builder returns\)\n",
        out,
    ), out
    assert len(set(re.findall(r"spec/(\w+)\.py", out))) == 2, out
    assert not (fresh_project / "generated" / "trt_copy.py").exists()
    # the same file with a label of its own regenerates, its builder returning the empty name
    (fresh_project / "spec" / "trt_copy.py").write_text(copy.replace('label="tensorrt"', 'label="trt_copy"'))
    code, out = run(capsys, "--root", str(fresh_project), "regenerate")
    assert code == 0, out
    assert load_generated(fresh_project / "generated" / "trt_copy.py").get_trt_copy_backend_config().name == ""


@pytest.mark.parametrize("label", ["Mine", "my-backend", "", "1st"])
def test_a_label_that_is_not_a_plain_name_is_refused(fresh_project, capsys, label):
    spec = fresh_project / "spec" / "tensorrt.py"
    spec.write_text(spec.read_text().replace('name="tensorrt",', f'label={label!r}, name="tensorrt",'))
    code, out = run(capsys, "--root", str(fresh_project), "regenerate")
    assert code == 2
    assert re.fullmatch(
        rf"error: spec/tensorrt\.py:\d+: a backend's label must be a lower-case name such as my_backend, "
        rf"not '{label}'\n",
        out,
    ), out
