"""An incremental run writes what a fresh `regenerate --force` writes, whatever a user did between two runs:
edit sequences against the edit loop's caches (.cache/generator/): models, templates, module names.

Each test makes a project do what a user may do between two runs, then holds every
command to the truth: what `regenerate --force` writes in a fresh copy of the same
files with no model, template or module-name cache. Each project holds only the
committed spec files a test is about (tests/support/projects.py), so that each run renders less.

Every run that reads what an earlier run left is a real one in a fresh interpreter (`run`):
the generator keeps some of its caches in memory too (compiled code, templates),
and a run in this process could be served from there instead of from .cache/generator/. A run
on a folder no run has touched yet (the first regenerate of a fresh copy, the truth's --force
in a copy of its own) has nothing of its own to be served, in memory or on disk: it runs here
(`run_here`), without a new interpreter's start-up and imports, and leaves its caches on disk,
where the fresh interpreters after it read them. Not a run before others of spec files that change
the process (sys.path, os.environ): had the generator left a change in this process, every later
child would inherit os.environ from it, and the next load would see what the test is to prove it cannot.
"""

import contextlib
import importlib.util
import io
import json
import os
import py_compile
import shutil
import subprocess
import sys
from pathlib import Path

from generator import cli
from tests.support.projects import ROOT, with_session_caches


def run(project: Path, *args: str, bytecode: bool = False) -> subprocess.CompletedProcess:
    """A real run in a fresh interpreter, as a user runs it (`bytecode`: as most users do, with __pycache__)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return subprocess.run([sys.executable, "-m", "generator", "--root", str(project), *args],
                          cwd=project, env=env, capture_output=True, text=True)  # fmt: skip


def run_here(project: Path, *args: str) -> subprocess.CompletedProcess:
    """A run by cli.main in this process, for a project folder no run has touched yet (see above)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["--root", str(project), *args])
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def outputs(project: Path) -> dict[str, bytes]:
    found = {}
    for folder in ("generated", "docs"):
        for path in sorted((project / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                found[str(path.relative_to(project))] = path.read_bytes()
    return found


def truth(project: Path, elsewhere: Path) -> dict[str, bytes]:
    """What `regenerate --force` writes from the same files, with none of the edit loop's caches."""
    code, err, files = fresh_outcome(project, elsewhere)
    assert code == 0, err
    return files


def assert_truthful(project: Path, elsewhere: Path) -> None:
    """regenerate writes what a fresh --force writes; then check and check --full pass."""
    done = run(project, "regenerate")
    assert done.returncode == 0, done.stderr
    assert outputs(project) == truth(project, elsewhere)
    for command in (["check"], ["check", "--full"]):
        done = run(project, *command)
        assert done.returncode == 0, (command, done.stdout, done.stderr)


def test_renaming_a_spec_file_names_the_module_after_its_new_name(project_with_only, tmp_path):
    """A spec without Module(name=...) is named after its file: the kept name of the same content is not."""
    project = project_with_only("qnnpack_pt2e")  # the smallest spec file: what is attacked is its name
    assert run_here(project, "regenerate").returncode == 0
    (project / "spec" / "qnnpack_pt2e.py").rename(project / "spec" / "qnnpack_pt2e_renamed.py")
    done = run(project, "check")
    assert done.returncode == 1, done.stdout + done.stderr
    assert_truthful(project, tmp_path / "truth")
    assert (project / "generated" / "qnnpack_pt2e_renamed.py").is_file()
    assert not (project / "generated" / "qnnpack_pt2e.py").exists()


def test_two_spec_files_with_the_same_content_make_two_modules(project_with_only, tmp_path):
    """Twins whose backend is named after the spec module: one content, two files, two generated modules."""
    project = project_with_only("qnnpack_pt2e")  # the smallest spec file: what is attacked is its name
    spec = project / "spec" / "qnnpack_pt2e.py"
    named = 'name="qnnpack_pytorch_2.0_export"'
    assert named in spec.read_text()
    text = spec.read_text().replace(named, 'name=__name__.rpartition(".")[2]')
    spec.write_text(text)
    assert run_here(project, "regenerate").returncode == 0
    (project / "spec" / "qnnpack_pt2e_twin.py").write_text(text)
    done = run(project, "check")
    assert done.returncode == 1, done.stdout + done.stderr
    assert_truthful(project, tmp_path / "truth")
    assert (project / "generated" / "qnnpack_pt2e_twin.py").is_file()


def outcome(project: Path, *args: str, runner=run) -> tuple[int, str, dict[str, bytes]]:
    done = runner(project, *args)
    return done.returncode, done.stderr.replace(str(project), "PROJECT"), outputs(project)


def fresh_outcome(project: Path, elsewhere: Path) -> tuple[int, str, dict[str, bytes]]:
    """`regenerate --force`'s exit code, errors and files in a copy with none of the edit loop's caches."""
    shutil.copytree(project, elsewhere, ignore=shutil.ignore_patterns(".cache", "__pycache__"))
    with_session_caches(elsewhere)  # torch names, formatted pieces, checked texts, templates: not what is attacked here
    code, err, files = outcome(elsewhere, "regenerate", "--force", runner=run_here)  # a copy no run touched
    return code, err.replace(str(elsewhere), "PROJECT"), files


SMALL_SPEC = '''"""{doc}"""
{imports}
from generator.dsl import Backend, DTypeConfig, Module, config, torch

{setup}
q = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)
MODULE = Module(
    doc="{doc}",
    backends=[
        Backend(name="{name}", builder="get_{name}_backend_config", doc="{doc}",
                configs=[config(getattr(torch, op), [q], section="ops") for op in OPS])
    ],
)
'''


def small_spec(project: Path, name: str, imports: str = "", setup: str = "OPS = ['cat']") -> Path:
    path = project / "spec" / f"{name}.py"
    path.write_text(SMALL_SPEC.format(doc=f"The {name} backend.", name=name, imports=imports, setup=setup))
    return path


def test_a_spec_that_extends_sys_path_does_not_extend_it_for_the_next_spec(project_with_only, tmp_path):
    """sys.path is the next load's as it was before: a spec that relied on an earlier one's setup
    would load under --force (every file executed, in order) and fail once the earlier one is kept."""
    project = project_with_only("qnnpack_pt2e")
    (project / "vendor").mkdir()
    (project / "vendor" / "vendored_ops.py").write_text("NAMES = ['stack']\n")
    small_spec(project, "aaa_sets_path", "import sys\nfrom pathlib import Path",
               "sys.path.insert(0, str(Path(__file__).resolve().parent.parent / 'vendor'))\nOPS = ['cat']")  # fmt: skip
    zzz = small_spec(project, "zzz_uses_path", "from vendored_ops import NAMES", "OPS = NAMES")
    run(project, "regenerate", "--force")  # fills the model cache with what loaded
    zzz.write_text(zzz.read_text() + "# an edit\n")
    assert outcome(project, "regenerate") == fresh_outcome(project, tmp_path / "fresh")


def test_a_spec_that_sets_an_environment_variable_does_not_set_it_for_the_next_spec(project_with_only, tmp_path):
    """The environment is the next load's as it was before the previous one: kept or executed, a load
    cannot see what another spec file put there."""
    project = project_with_only("qnnpack_pt2e")
    small_spec(project, "aaa_sets_env", "import os", "os.environ['ADVERSARY_OPS'] = 'stack'\nOPS = ['cat']")
    zzz = small_spec(project, "zzz_reads_env", "import os", "OPS = [os.environ.get('ADVERSARY_OPS', 'flatten')]")
    run(project, "regenerate", "--force")  # fills the model cache
    zzz.write_text(zzz.read_text() + "# an edit\n")
    assert outcome(project, "regenerate") == fresh_outcome(project, tmp_path / "fresh")


def test_a_same_size_edit_in_the_same_second_is_not_hidden_by_python_s_bytecode_cache(project_with_only, tmp_path):
    """Python trusts a __pycache__ file while its source keeps its size and modification time (in whole
    seconds): an editor saving twice within a second, or a git checkout, can change a digit and keep both."""
    project = project_with_only("qnnpack_pt2e")  # the smallest spec file: what is attacked is its bytecode
    spec = project / "spec" / "qnnpack_pt2e.py"
    assert "QNNPACK on graphs from" in spec.read_text()
    spec.write_text(spec.read_text().replace("QNNPACK on graphs from", "QNNPACK on Graphs from"))
    assert run(project, "regenerate", bytecode=True).returncode == 0
    # As any Python that imported it (the user's own, an older generator) leaves it:
    py_compile.compile(str(spec), cfile=importlib.util.cache_from_source(str(spec)), doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)  # fmt: skip
    before = spec.stat()
    spec.write_text(spec.read_text().replace("QNNPACK on Graphs from", "QNNPACK on Grapks from"))  # the same size
    os.utime(spec, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert outcome(project, "regenerate") == fresh_outcome(project, tmp_path / "fresh")


ACME_SPEC = '''"""A user's backend whose ops come from a helper module of its own."""
from generator.dsl import Backend, DTypeConfig, Module, config, torch
from . import _acme_ops as ops

acme_int8 = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8)
MODULE = Module(doc="Acme.", backends=[Backend(name="acme", builder="get_acme_backend_config", doc="Acme.",
                configs=[config(op, [acme_int8]) for op in ops.OPS])])
'''


def test_a_spec_helper_no_other_spec_imports_is_an_input_of_its_importer_alone(project_with_only, tmp_path):
    """Finding how a bound is spelt searches every spec file for a name; only the file that assigns
    it is an input. Otherwise a fresh --force recorded spec/_acme_ops.py for executorch (a load that
    searched it), while a load kept from before the helper existed did not: the manifest depended on
    the cache's history, and check --full called the incremental tree stale."""
    project = project_with_only("executorch", "qnnpack")  # executorch imports qnnpack
    assert run_here(project, "regenerate").returncode == 0
    (project / "spec" / "acme.py").write_text(ACME_SPEC)
    (project / "spec" / "_acme_ops.py").write_text("from generator.dsl import nn\n\nOPS = [nn.Conv2d, nn.Linear]\n")
    assert_truthful(project, tmp_path / "truth")
    inputs = json.loads((project / "generated" / "manifest.json").read_text())["outputs"]
    assert "spec/_acme_ops.py" in inputs["generated/acme.py"]["inputs"]
    assert "spec/_acme_ops.py" not in inputs["generated/executorch.py"]["inputs"]
    assert "spec/_common.py" in inputs["generated/executorch.py"]["inputs"]  # where its constraints' bounds are
