"""`python -m generator import MODULE:FUNCTION`: every builder the committed spec refers to,
and a user's own builder, imported into a copy of the project, regenerated and proven equal
to the builder by the comparator; and the refusals, each one line, exit 2, nothing written.
"""

import ast
import contextlib
import difflib
import functools
import importlib
import importlib.util
import io
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from generator import cli
from generator.building.resolution import load_object
from generator.loading import loader
from generator.model import TorchRef
from generator.review.equality import compare_backend_configs
from tests.support import projects
from tests.support.builders import discover
from tests.support.cli_runs import run
from tests.support.projects import ROOT, fresh_copy
from tests.support.shared_builds import built_once, computed_once

USER_BUILDER = "tests.support.user_builder.get_user_backend_config"
LEGACY_BUILDER = "tests.support.legacy_builder.get_legacy_backend_config"



def target(reference: str) -> str:
    """torch.ao...fbgemm.get_fbgemm_backend_config -> torch.ao...fbgemm:get_fbgemm_backend_config"""
    module, function = reference.rsplit(".", 1)
    return f"{module}:{function}"


@functools.cache
def committed_modules() -> tuple:
    """The committed spec, loaded once per worker: spec/ of the checkout is never changed by a
    test (tests change copies), so each load would give the same (frozen) modules."""
    return tuple(loader.load_modules(ROOT))


def committed_references() -> list[str]:
    return [b.reference for m in committed_modules() for b in m.backends if b.reference]


def without_hand_written_specs(project):
    for spec_file in (project / "spec").glob("[!_]*.py"):
        spec_file.unlink()
    return project


def build_imported(project):
    """The project with its hand-written specs replaced by imported ones, regenerated once.

    Each builder is imported into a scratch copy of the project whose spec/ holds only its
    helpers (spec/_common.py), and the file written is moved into the project: import loads
    every other spec file to refuse a backend name already taken (a cold load, a quarter of
    an import's CPU), which here would only find the files imported before. That refusal has
    tests of its own below; the one regenerate of all the imported files refuses a taken name too.
    """
    without_hand_written_specs(fresh_copy(project))
    names = {b.reference: b.name for m in committed_modules() for b in m.backends if b.reference}
    imported_as: dict[str, list[Path]] = {}  # the name a builder returns -> the spec files imported for it
    with tempfile.TemporaryDirectory() as temporary:
        scratch = without_hand_written_specs(fresh_copy(Path(temporary) / "project"))
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            for reference in committed_references() + [USER_BUILDER, LEGACY_BUILDER]:
                # Builders that return one name (a user's two builders of one backend) are imported as in
                # one project: each beside those imported before it, so that import labels it apart.
                before = imported_as.setdefault(names.get(reference, reference), [])
                for path in before:
                    shutil.copy(path, scratch / "spec" / path.name)
                code = cli.main(["--root", str(scratch), "import", target(reference)])
                assert code == 0, reference
                for path in before:
                    (scratch / "spec" / path.name).unlink()
                (written,) = (scratch / "spec").glob("[!_]*.py")
                assert not (project / "spec" / written.name).exists(), (reference, written.name)
                before.append(Path(shutil.move(written, project / "spec" / written.name)))
            assert cli.main(["--root", str(project), "regenerate", "--jobs", "2"]) == 0


def imported_outputs(project) -> dict[str, tuple[str, str]]:
    """Each imported reference's generated module (relative to the project) and builder name."""
    return {
        backend.reference: (module.output, backend.builder)
        for module in loader.load_modules(project)
        for backend in module.backends
    }


@pytest.fixture(scope="session")
def imported(tmp_path_factory):
    """A project whose hand-written specs are replaced by imported ones, regenerated once per
    test run: every test only reads it (and the load naming its outputs is made once too)."""
    project = built_once(tmp_path_factory, "imported", build_imported)
    references = committed_references() + [USER_BUILDER, LEGACY_BUILDER]
    found = computed_once(tmp_path_factory, "imported-outputs", str(project), lambda: imported_outputs(project))
    outputs = {reference: (project / output, builder) for reference, (output, builder) in found.items()}
    return project, references, outputs


def load_generated(path):
    spec = importlib.util.spec_from_file_location(f"imported_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def reference_builder(reference: str):
    module, function = reference.rsplit(".", 1)
    return getattr(importlib.import_module(module), function)


def test_every_imported_builder_regenerates_equal_to_the_builder(imported):
    _project, references, outputs = imported
    assert sorted(outputs) == sorted(set(references))
    patterns = 0
    for reference, (path, builder) in outputs.items():
        theirs = reference_builder(reference)()
        ours = getattr(load_generated(path), builder)()
        assert compare_backend_configs(reference, ours, theirs) == []
        patterns += len(theirs.configs)
    assert patterns == sum(len(reference_builder(r)().configs) for r in set(references))


def test_generated_modules_never_import_torchs_builder_modules(imported):
    _project, references, outputs = imported
    builder_modules = {r.rsplit(".", 1)[0] for r in references if r.startswith("torch.")}
    for path, _builder in outputs.values():
        used = set(dotted_names(ast.parse(path.read_text())))
        assert used and not {name for name in used if name.startswith(tuple(builder_modules))}, path


def dotted_names(tree):
    """Every module imported and every dotted name the code spells (docstrings are not code)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Attribute):
            parts = [node.attr]
            while isinstance(node.value, ast.Attribute):
                node = node.value
                parts.append(node.attr)
            if isinstance(node.value, ast.Name):
                yield ".".join([node.value.id, *reversed(parts)])


def test_the_user_spec_names_what_the_author_named(imported):
    project, _references, outputs = imported
    spec = (project / "spec" / "user.py").read_text()
    # constants named after the builder module's globals, constraints included
    assert "user_weighted_dtype_config = DTypeConfig(" in spec
    assert "act_quint8_scale_min_2_neg_12 = DTypeWithConstraints(" in spec
    # dtypes spelt as the author spelt them (torch.float, not torch.float32)
    assert re.search(r"bias_dtype=torch\.float\b", spec) and "torch.float32" not in spec
    # the author's own fuser is imported, torch's closure is sequential(...)
    assert 'fuser_method=importable("tests.support.user_builder.fuse_linear_relu")' in spec
    assert "fuser_method=sequential(nni.ConvReLU2d)" in spec
    # the list shared by seven patterns is named once and used by name: once by the loop over
    # the three binary ops (tests/test_import_compaction.py), once by each of the four others
    assert "user_default_dtype_configs = [user_default_dtype_config]" in spec
    assert spec.count("[user_default_dtype_config]") == 1
    assert "for op in binary_ops" in spec
    assert spec.count("user_default_dtype_configs)") + spec.count("user_default_dtype_configs,") == 5
    generated = outputs[USER_BUILDER][0].read_text()
    assert "from tests.support.user_builder import fuse_linear_relu" in generated


def test_factory_closures_and_partials_are_written_as_the_calls_that_make_them(imported):
    """torch 1.13's reverse2/reverse3/reverse_sequential_wrapper2, a vendor's factories and a
    partial: each is the call that made it, in the spec and in the generated module (proven
    equal to the builder's closures by the comparator in the round trip above)."""
    project, _references, outputs = imported
    spec = (project / "spec" / "legacy.py").read_text()
    for written in (
        'fuser_method=call(importable("tests.support.legacy_builder.reverse_sequential_wrapper2"), nni.ConvReLU2d)',
        'fuser_method=call(importable("tests.support.legacy_builder.reverse2"), fusers.fuse_conv_bn)',
        'fuser_method=call(importable("tests.support.legacy_builder.reverse3"), fusers.fuse_conv_bn_relu)',
        'fuser_method=call(importable("tests.support.legacy_builder.make_fuser"), nni.LinearReLU)',
        'importable("tests.support.legacy_builder.make_checked_fuser"), nni.ConvReLU1d, qat_allowed=False',
        'fuser_method=partial(importable("tests.support.legacy_builder.fuse_with"), nni.ConvReLU3d)',
        "call(fusers._sequential_wrapper2, nni.BNReLU2d)",
    ):
        # as black wraps it or not: the same text but for line breaks and indentation
        assert re.sub(r"\s+", "", written) in re.sub(r",\)", ")", re.sub(r"\s+", "", spec)), written
    generated = outputs[LEGACY_BUILDER][0].read_text()
    for written in (
        ".set_fuser_method(reverse_sequential_wrapper2(nni.ConvReLU2d))",
        ".set_fuser_method(reverse2(fuse_conv_bn))",
        ".set_fuser_method(reverse3(fuse_conv_bn_relu))",
        ".set_fuser_method(make_fuser(nni.LinearReLU))",
        ".set_fuser_method(make_checked_fuser(nni.ConvReLU1d, qat_allowed=False))",
        ".set_fuser_method(partial(fuse_with, nni.ConvReLU3d))",
        ".set_fuser_method(reverse2(reverse2(_sequential_wrapper2(nni.BNReLU2d))))",
        "from functools import partial\n",
    ):
        assert written in generated, written


def test_torchs_functions_become_the_projects_templates(imported):
    project, _references, _outputs = imported
    texts = "".join(p.read_text() for p in (project / "spec").glob("[!_]*.py"))
    used = set(re.findall(r'function\(\s*"(\w+)"', texts))
    assert used == {"conv_add_fuser", "conv_add_root_node_getter", "conv_add_extra_inputs_getter",
                    "getitem_root_node_getter", "linear_bn_leaky_relu_fuser"}  # fmt: skip
    # Parameters that only rename locals are still chosen to read like torch's function.
    calls = re.findall(r'function\(\s*"conv_add_\w+",\s*"(\w+)",([^)]*)\)', texts)
    assert calls
    for name, arguments in calls:
        assert ("with_bn=True" in arguments) == ("_bn_" in name), name
        assert ("relu=True" in arguments) == ("_relu_" in name), name
        assert f'side="{name.rsplit("_", 1)[1]}"' in arguments, name


def test_import_never_overwrites_a_spec_without_force(fresh_project, capsys):
    spec = fresh_project / "spec" / "fbgemm.py"
    before = spec.read_text()
    given = target(committed_references()[0])
    code, out = run(capsys, "--root", str(fresh_project), "import", given, "--name", "fbgemm")
    assert code == 2
    assert out.strip() == "error: spec/fbgemm.py exists; give --force to overwrite it or --name"
    assert spec.read_text() == before
    code, out = run(capsys, "--root", str(fresh_project), "import", target(USER_BUILDER), "--name", "fbgemm", "--force")
    assert code == 0, out
    assert 'reference="tests.support.user_builder.get_user_backend_config"' in spec.read_text()


def test_import_refuses_a_backend_name_another_spec_file_uses(fresh_project, capsys):
    """regenerate requires backend names (labels) unique across spec/: import never writes a spec it would
    refuse. The builder's own name taken, the spec file's name (--name) serves; both taken, one line."""
    (reference,) = [r for r in committed_references() if r.endswith(".get_qnnpack_pt2e_backend_config")]
    (owner,) = [m for m in committed_modules() for b in m.backends if b.reference == reference]  # as in the copy
    (native,) = [m for m in committed_modules() for b in m.backends if b.label == "test_only_legacy_native"]
    before = {p.name: p.read_text() for p in (fresh_project / "spec").iterdir() if p.is_file()}
    code, out = run(capsys, "--root", str(fresh_project), "import", target(reference), "--name",
                    "test_only_legacy_native")  # fmt: skip
    assert code == 2
    assert out.startswith("error: backend name 'test_only_legacy_native' is already used by the backend at "
                          f"{native.spec_file}:") and out.count("\n") == 1, out
    assert f"--name {native.name} --force" in out
    assert {p.name: p.read_text() for p in (fresh_project / "spec").iterdir() if p.is_file()} == before
    # under a name of its own, it is a second backend whose builder returns the name the first's returns
    code, out = run(capsys, "--root", str(fresh_project), "import", target(reference), "--name", "pt2e_imported")
    assert code == 0, out
    labels = {b.label: b.reference for m in loader.load_modules(fresh_project) for b in m.backends}
    assert labels["pt2e_imported"] == labels["qnnpack_pt2e"] == reference
    # replacing the file that holds the name works too
    code, out = run(capsys, "--root", str(fresh_project), "import", target(reference), "--name", owner.name, "--force")
    assert code == 0, out
    assert [b.reference for m in loader.load_modules(fresh_project) for b in m.backends].count(reference) == 2


@pytest.mark.parametrize(
    "given, message",
    [
        ("no_such_module:get_x", "error: cannot import no_such_module: ModuleNotFoundError: "),
        ("tests.support.user_builder:get_nothing", "error: tests.support.user_builder has no function 'get_nothing'"),
        ("tests.support.user_builder", "error: 'tests.support.user_builder': expected MODULE:FUNCTION"),
        (
            "tests.support.user_builder:get_not_a_backend_config",
            "error: tests.support.user_builder:get_not_a_backend_config() returned dict, not a BackendConfig",
        ),
        (
            "tests.support.user_builder:get_unnamed_closure_backend_config",
            "error: pattern (nn.Conv2d, nn.ReLU): cannot name fuser_method "
            "tests.support.user_builder.get_unnamed_closure_backend_config.<locals>.fuse_reversed: it is local to "
            "get_unnamed_closure_backend_config(), which returns a BackendConfig, not a callable; define it",
        ),
        (
            "tests.support.user_builder:get_raising_backend_config",
            "error: tests.support.user_builder:get_raising_backend_config() raised RuntimeError: "
            "this backend needs a license",
        ),
        (
            "tests.support.legacy_builder:get_local_class_backend_config",
            "error: pattern (nn.Conv2d, nn.ReLU): cannot name fuser_method "
            "tests.support.legacy_builder.make_fuser.<locals>.fuse: it holds "
            "tests.support.legacy_builder.get_local_class_backend_config.<locals>.LocalConvReLU, which has "
            "no import path; define it, or the factory that makes it and each argument it is given, at module level",
        ),
    ],
)
@pytest.mark.parametrize("name", [["--name", "refused"], []], ids=["named", "default name"])
def test_import_refuses_with_one_line_and_writes_nothing(fresh_project, capsys, given, message, name):
    before = sorted(p.name for p in (fresh_project / "spec").iterdir())
    code, out = run(capsys, "--root", str(fresh_project), "import", given, *name)
    assert code == 2
    assert out.startswith(message) and out.count("\n") == 1, out
    assert sorted(p.name for p in (fresh_project / "spec").iterdir()) == before


NOT_PLAIN_FUNCTIONS = {
    "partial": ("tests.support.user_builder:get_partial_backend_config", []),
    "lambda": ("tests.support.user_builder:get_lambda_backend_config", ["--name", "lambda_builder"]),
    "staticmethod": ("tests.support.user_builder:Vendor.get_backend_config", []),
    "callable object": ("tests.support.user_builder:get_object_backend_config", []),
    "empty BackendConfig": ("tests.support.user_builder:get_empty_backend_config", []),
}


def test_any_builder_callable_imports_to_a_spec_that_regenerates_equal(fresh_project, capsys):
    """Functions, partials, lambdas, staticmethods, callable objects and an empty BackendConfig."""
    for spec_file in (fresh_project / "spec").glob("[!_]*.py"):
        spec_file.unlink()
    for given, options in NOT_PLAIN_FUNCTIONS.values():
        code, out = run(capsys, "--root", str(fresh_project), "import", given, *options)
        assert code == 0, out
    code, out = run(capsys, "--root", str(fresh_project), "regenerate")
    assert code == 0, out
    written = {b.reference: (m, b) for m in loader.load_modules(fresh_project) for b in m.backends}
    assert sorted(written) == sorted(target.replace(":", ".") for target, _ in NOT_PLAIN_FUNCTIONS.values())
    for reference, (module, backend) in written.items():
        ours = getattr(load_generated(fresh_project / module.output), backend.builder)()
        theirs = load_object(TorchRef(reference))()  # Vendor.get_backend_config is not a module's name
        assert compare_backend_configs(reference, ours, theirs) == []
    assert written["tests.support.user_builder.get_empty_backend_config"][1].configs == ()
    assert written["tests.support.user_builder.get_lambda_backend_config"][1].builder == "get_lambda_backend_config"
    assert written["tests.support.user_builder.get_partial_backend_config"][1].doc == (
        "Return the `BackendConfig` of one of this vendor's backends."
    )


@pytest.mark.parametrize(
    "given, options",
    [
        ("tests.support.user_builder:get_lambda_backend_config", []),  # the default name, lambda, is a keyword
        ("tests.support.user_builder:get_partial_backend_config", ["--name", "class"]),
    ],
)
def test_import_refuses_a_spec_name_that_is_a_keyword(fresh_project, capsys, given, options):
    before = sorted(p.name for p in (fresh_project / "spec").iterdir())
    code, out = run(capsys, "--root", str(fresh_project), "import", given, *options)
    assert code == 2
    assert re.fullmatch(r"error: '(lambda|class)' cannot name a spec file: use a lower-case identifier that is not "
                        r"a Python keyword \(--name\)\n", out), out
    assert sorted(p.name for p in (fresh_project / "spec").iterdir()) == before


def test_import_writes_nothing_regenerate_would_refuse(fresh_project, capsys, monkeypatch):
    """The written spec is loaded, validated and expanded first: whatever import got wrong in it
    (here: a builder name that is a keyword) is one line, exit 2, no file."""
    from generator.importer import spec_writer

    written = spec_writer.spec_source
    monkeypatch.setattr(spec_writer, "spec_source", lambda spec, *width: written(spec, *width).replace(
        'builder="get_partial_backend_config"', 'builder="class"'))
    before = sorted(p.name for p in (fresh_project / "spec").iterdir())
    given = "tests.support.user_builder:get_partial_backend_config"
    code, out = run(capsys, "--root", str(fresh_project), "import", given)
    assert code == 2
    assert out.startswith("error: not written: regenerate would refuse spec/partial.py as import made it "
                          "(spec/partial.py:") and "'class'" in out and out.count("\n") == 1, out
    assert sorted(p.name for p in (fresh_project / "spec").iterdir()) == before


@contextlib.contextmanager
def generated_package_of(project):
    """`generated` imported from this project, as in a fresh interpreter started there."""
    saved = {n: m for n, m in sys.modules.items() if n == "generated" or n.startswith("generated.")}
    for name in saved:
        del sys.modules[name]
    sys.path.insert(0, str(project))
    try:
        yield
    finally:
        sys.path.remove(str(project))
        for name in [n for n in sys.modules if n == "generated" or n.startswith("generated.")]:
            del sys.modules[name]
        sys.modules.update(saved)


def outputs_of(project):
    files = [*(project / "generated").glob("*.py"), project / "docs" / "support-matrix.md", *project.glob("spec/*.py")]
    return {str(p.relative_to(project)): p.read_bytes() for p in files}


def test_import_force_of_every_generated_builder_round_trips_byte_identical(tmp_path, tmp_path_factory, capsys):
    """Every committed spec and the tutorial's: `import --force` of the generated builder over
    its own spec, then regenerate, leaves spec/, generated/ and the matrix byte-identical."""
    project = tmp_path / "project"
    projects.tutorial(tmp_path_factory, project)  # the project with the tutorial's backend, regenerated
    before = outputs_of(project)
    imported = []
    with generated_package_of(project):
        for module in loader.load_modules(project):
            for backend in module.backends:
                given = f"generated.{module.name}:{backend.builder}"
                stem = module.spec_file.removeprefix("spec/").removesuffix(".py")
                code, out = run(capsys, "--root", str(project), "import", given, "--force", "--name", stem)
                assert code == 0, out
                assert out.startswith(f"unchanged {module.spec_file}: it already builds exactly what {given}"), out
                imported.append(given)
    assert "generated.my_backend:get_my_backend_config" in imported
    code, out = run(capsys, "--root", str(project), "regenerate")
    assert code == 0, out
    assert outputs_of(project) == before


def changed_lines(old: str, new: str) -> tuple[list[str], list[str]]:
    """(removed, added) lines of a diff."""
    diff = list(difflib.ndiff(old.splitlines(), new.splitlines()))
    return [line[2:] for line in diff if line.startswith("- ")], [line[2:] for line in diff if line.startswith("+ ")]


def test_import_force_of_a_builder_that_returns_something_else_keeps_what_the_spec_said(fresh_project, capsys):
    """One pattern changed: a new spec is written, and the generated module and the matrix change
    by that pattern alone: builder name, docstrings, sections, dtype-config names, their order and
    spelling (`torch.float`) come from the spec it replaces."""
    before = {
        p: (fresh_project / p).read_text() for p in ("spec/fbgemm.py", "generated/fbgemm.py", "docs/support-matrix.md")
    }
    given = "tests.support.user_builder:get_fbgemm_with_another_relu_backend_config"
    code, out = run(capsys, "--root", str(fresh_project), "import", given, "--force", "--name", "fbgemm")
    assert code == 0, out
    assert out.startswith("written   spec/fbgemm.py: ")
    spec = (fresh_project / "spec" / "fbgemm.py").read_text()
    assert spec != before["spec/fbgemm.py"]
    # still compacted: the op groups, then the one pattern the builder sets otherwise
    assert spec.count("config(") == 1 and 'overrides="the builder sets it otherwise than ' in spec, spec
    assert run(capsys, "--root", str(fresh_project), "regenerate")[0] == 0
    generated = (fresh_project / "generated" / "fbgemm.py").read_text()
    removed, added = changed_lines(before["generated/fbgemm.py"], generated)
    assert removed == ["            BackendPatternConfig(nn.ReLU)",
                       "            .set_observation_type(ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT)",
                       "            .set_dtype_configs([fbgemm_default_op_quint8_dtype_config]),"]  # fmt: skip
    # what is added is the new pattern's dtype config, its constraints and the pattern
    new = ("user_default_dtype_config", "act_quint8_scale_min_2_neg_12", "BackendPatternConfig(nn.ReLU)",
           "dtype=torch.quint8", "scale_min_lower_bound=2**-12", "# Registered twice")  # fmt: skip
    assert all(line.strip(" (),") == "" or any(word in line for word in new) for line in added), added
    assert len(added) <= 16, added
    matrix = (fresh_project / "docs/support-matrix.md").read_text()
    removed, added = changed_lines(before["docs/support-matrix.md"], matrix)
    assert [line.split(" | ")[0] for line in removed] == ["| ◐ `nn.ReLU`"]
    assert [line.split(" | ")[0] for line in added] == ["| ◐ `nn.ReLU`", "| `user_default_dtype_config`"]
    ours = load_generated(fresh_project / "generated" / "fbgemm.py").get_fbgemm_backend_config()
    theirs = load_object(TorchRef(given.replace(":", ".")))()
    assert compare_backend_configs(given, ours, theirs) == []


def test_import_force_refuses_to_drop_the_other_backends_of_a_spec_file(fresh_project, capsys):
    """A spec file may declare several backends; import writes one, so replacing it would drop the rest."""
    spec_file = fresh_project / "spec" / "fbgemm.py"
    source = spec_file.read_text()
    assert source.count("        Backend(\n") == 1
    second = source[source.index("        Backend(\n") : source.index("    ],\n)")]
    second = second.replace('name="fbgemm"', 'name="fbgemm_twin"')
    second = second.replace('builder="get_fbgemm_backend_config"', 'builder="get_fbgemm_twin_backend_config"')
    spec_file.write_text(source.replace("        )\n    ],\n)", "        ),\n" + second + "    ],\n)"))
    code, out = run(capsys, "--root", str(fresh_project), "regenerate")
    assert code == 0, out
    before = spec_file.read_text()
    given = "tests.support.user_builder:get_fbgemm_with_another_relu_backend_config"
    code, out = run(capsys, "--root", str(fresh_project), "import", given, "--force", "--name", "fbgemm")
    assert code == 2
    assert out == ("error: spec/fbgemm.py also declares 'fbgemm_twin', which import (one backend per file) would "
                   "drop; move it to a spec file of its own first, or edit spec/fbgemm.py by hand\n")
    assert spec_file.read_text() == before


def spec_patterns(project, name):
    """The patterns spec/<name>.py expands to, dtype configs by content (the expansion
    names fixed-qparams copies itself), in builder order."""
    from generator.building.expansion import expand_module
    from generator.importer.compaction import _canonical

    (module,) = [m for m in loader.load_modules(project) if m.spec_file == f"spec/{name}.py"]
    return [_canonical(c) for b in expand_module(module).backends for c in b.backend.configs]


def test_import_writes_op_groups_of_spec_common_where_they_build_the_same_patterns(imported):
    project, _references, _outputs = imported
    # The op groups reproduce torch's builders only while spec/_common.py says what torch
    # does: a backend whose spec declares differences (docs/adding-a-backend.md, "Adding an op") cannot be
    # compacted onto them, and its import stays expanded (still proven equal above).
    declares = {b.module for b in discover(ROOT) if b.declarations}
    spec = (project / "spec" / "fbgemm.py").read_text()
    if "fbgemm" in declares:
        assert "native_layout(" not in spec
    else:  # fbgemm is torch's native layout throughout: one call, no pattern written out
        assert "from spec._common import native_layout\n" in spec and "native_layout(" in spec
        assert "config(" not in spec
    # tensorrt uses the groups on their own; executorch with options
    tensorrt = (project / "spec" / "tensorrt.py").read_text()
    groups = re.findall(r"^ +(conv|linear|binary_op|share_qparams_op|tensor_info_op)_configs\(", tensorrt, re.M)
    assert len(groups) == (0 if "tensorrt" in declares else 5)
    executorch = (project / "spec" / "executorch.py").read_text()
    if "executorch" not in declares:
        assert "fusions=False" in executorch and "functional=True" in executorch


def test_no_compact_writes_every_pattern_and_the_same_patterns(imported, tmp_path, capsys):
    from benchmarks.spec_size import code_lines

    project, _references, _outputs = imported
    expanded = fresh_copy(tmp_path / "expanded")
    for spec_file in (expanded / "spec").glob("[!_]*.py"):
        spec_file.unlink()
    reference = next(r for r in committed_references() if r.endswith(".get_fbgemm_backend_config"))
    code, out = run(capsys, "--root", str(expanded), "import", target(reference), "--no-compact")
    assert code == 0, out
    spec = (expanded / "spec" / "fbgemm.py").read_text()
    assert "spec._common" not in spec and "native_layout" not in spec
    patterns = spec_patterns(expanded, "fbgemm")
    assert spec.count("config(") == len(patterns) == len(reference_builder(reference)().configs)
    # The compacted spec is proven equal to torch's builder by the round trip above.
    compacted = (project / "spec" / "fbgemm.py").read_text()
    assert patterns == spec_patterns(project, "fbgemm")
    assert code_lines(compacted) * 10 < code_lines(spec)


def test_without_spec_common_or_matching_groups_import_writes_every_pattern(imported, tmp_path, capsys):
    project, _references, _outputs = imported
    bare = fresh_copy(tmp_path / "bare")
    for spec_file in (bare / "spec").glob("[!_]*.py"):
        spec_file.unlink()
    (bare / "spec" / "_common.py").unlink()
    torch_builder = target(next(r for r in committed_references() if r.endswith(".get_fbgemm_backend_config")))
    written, patterns = [], []
    for options in ([], ["--no-compact", "--name", "expanded"]):
        code, out = run(capsys, "--root", str(bare), "import", torch_builder, *options)
        assert code == 0, out
        # one backend name per project: the next import may not find this one's
        spec_file = bare / "spec" / f"{options[-1] if options else 'fbgemm'}.py"
        written.append(spec_file.read_text())
        patterns.append(spec_patterns(bare, spec_file.stem))
        spec_file.unlink()
    # no op group: only loops over op lists (tests/test_import_compaction.py) shorten it, to the same patterns
    assert "spec._common" not in written[0] and patterns[0] == patterns[1]
    assert written[1].count("config(") == len(patterns[1]) > written[0].count("config(")
    # A user builder none of whose runs an op group builds calls none: the same patterns as written out.
    code, out = run(capsys, "--root", str(bare), "import", target(USER_BUILDER), "--no-compact")
    assert code == 0, out
    assert "spec._common" not in (project / "spec" / "user.py").read_text()
    assert (bare / "spec" / "user.py").read_text().count("config(") == len(spec_patterns(bare, "user"))
    assert spec_patterns(bare, "user") == spec_patterns(project, "user")
