"""The caches of .cache/generator/ make runs faster and never different: compiled templates, kept spec loads
(the model cache), module names kept by content, compiled spec code, the check memo and generated modules
compiled for diff. A corrupt, stale or forged entry is ignored or refused, an edit is seen, and a cache
that cannot be written costs nothing."""

import json
import marshal
import os
import shutil
import subprocess
import sys

import pytest

from generator import cache, cli
from generator.review import sides
from tests.support.builders import GENERATED_MODULES
from tests.support.projects import ROOT, commit_all, copy_inputs, fresh_copy
from tests.support.shared_builds import worker_copy

OUTPUTS = [f"generated/{module}.py" for module in GENERATED_MODULES] + ["docs/support-matrix.md"]


def regenerate(project, *args):
    """A real run in a fresh interpreter: in-process runs keep compiled templates in memory."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "generator", "--root", str(project), "regenerate", *args],
                          cwd=project, env=env, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done


def here(capfd, project, *args):
    """A run by cli.main in this process, for caches kept on disk alone (the model cache, the check memo):
    what reaches file descriptors 1 and 2 is captured, as a subprocess's pipes would be."""
    capfd.readouterr()
    code = cli.main(["--root", str(project), *args])
    out, err = capfd.readouterr()
    return subprocess.CompletedProcess(args, code, out, err)


def regenerated_here(capfd, project, *args):
    done = here(capfd, project, "regenerate", *args)
    assert done.returncode == 0, done.stderr
    return done


def cache_entries(project, kind):
    """The files of the entries of one kind in the project's cache."""
    kept = cache.Cache(project, kind)
    return [kept.path(name) for name in kept.names()]


# ---------------------------------------------------------------- compiled templates

def template_cache_files(project):
    return cache_entries(project, cache.TEMPLATES)


def _literal_changed(data: bytes) -> bytes:
    """The same code with one of its string constants altered, its checksum left as it was."""
    for literal in (b"BackendPatternConfig", b"DTypeConfig", b"def ", b"import "):
        if literal in data:
            return data.replace(literal, literal[:-1] + bytes([literal[-1] ^ 1]), 1)
    return data[:-1] + bytes([data[-1] ^ 1])


CORRUPTIONS = {
    "truncated": lambda data: data[: len(data) // 2],
    "empty": lambda data: b"",
    "garbage": lambda data: os.urandom(len(data)),
    "literal changed": _literal_changed,
}


@pytest.fixture(scope="module")
def forced_once(tmp_path_factory):
    """(path, copy): the project after `regenerate --force` at `path`, run once per module and worker, and a
    copy of what it left, so that each test gets back at `path` every file and cache as its own first run
    leaves them."""
    # A folder of its own: pytest-xdist's worksteal may hand this module's tests to a worker again after
    # another module's, and the module fixture is then set up a second time in the same worker.
    path = tmp_path_factory.mktemp("forced-once") / "project"
    for entry in check_memo_entries(fresh_copy(path)):
        entry.unlink()  # the session's check memo: the run's own entries are under test
    regenerate(path, "--force")
    copy = tmp_path_factory.mktemp("forced-once-copy") / "project"
    shutil.copytree(path, copy, symlinks=True)
    return path, copy


@pytest.fixture
def forced(forced_once):
    """The project as `regenerate --force` left it (forced_once), at the path it ran at."""
    path, copy = forced_once
    shutil.rmtree(path)
    shutil.copytree(copy, path, symlinks=True)
    return path


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_corrupt_template_cache_cannot_change_output(forced, corruption):
    project = forced  # regenerated with --force
    files = template_cache_files(project)
    assert len(files) >= len(list((project / "templates").rglob("*.j2"))) >= 2
    corrupted = {}
    for path in files:
        corrupted[path] = CORRUPTIONS[corruption](path.read_bytes())
        path.write_bytes(corrupted[path])
    regenerate(project, "--force")
    for output in OUTPUTS:
        assert (project / output).read_bytes() == (ROOT / output).read_bytes(), output
    assert all(path.read_bytes() != corrupted[path] for path in files)  # compiled again, and replaced


def test_an_edited_template_is_compiled_again(forced):
    project = forced  # regenerated with --force
    module_template = project / "templates" / "module.py.j2"
    module_template.write_text(module_template.read_text() + "# edited by a test\n")
    regenerate(project)
    for module in GENERATED_MODULES:
        assert "# edited by a test\n" in (project / "generated" / f"{module}.py").read_text(), module


def _file_names(code) -> set[str]:
    """The file names of a code object and of every function compiled into it."""
    inner = [c for c in code.co_consts if isinstance(c, type(code))]
    return {code.co_filename}.union(*map(_file_names, inner))


def test_compiled_templates_serve_the_project_copied_to_another_folder(tmp_path, monkeypatch):
    """Compiled templates are kept by template name: a copy of the project elsewhere compiles none, and each
    one's code is what compiling it there gives, down to the file name that template errors are located by."""
    import jinja2

    from generator.building import rendering

    first = copy_inputs(tmp_path / "first")
    rendering.preload(first / "templates", first)
    second = tmp_path / "second"
    shutil.copytree(first, second)
    fresh = copy_inputs(tmp_path / "fresh")  # no cache: compiled here
    compile_template = jinja2.Environment.compile
    compiled = []

    def counted_compile(env, *args):
        compiled.append(args)
        return compile_template(env, *args)

    monkeypatch.setattr(jinja2.Environment, "compile", counted_compile)
    rendering.preload(second / "templates", second)
    assert compiled == []
    env = rendering.make_environment(second / "templates")
    names = env.list_templates(extensions=["j2"])
    assert len(names) >= 2
    for name in names:
        filename = str(second / "templates" / name)
        source = (second / "templates" / name).read_text()
        code = env.bytecode_cache.get_bucket(env, name, filename, source).code
        here = compile_template(env, source, name, filename)
        assert code == here and _file_names(code) == _file_names(here) == {filename}, name

    def undefined_location(project):  # every variable of the module template left undefined
        with pytest.raises(jinja2.UndefinedError) as raised:
            rendering.make_environment(project / "templates").get_template("module.py.j2").render()
        return rendering._template_error(raised.value, project / "templates").location

    assert undefined_location(second) == undefined_location(fresh) is not None


def _rendered_with(tmp_path, tag, marked=lambda value: True) -> str:
    """templates/module.py.j2 rendered by an environment whose `tag` filter and `marked` test are those
    given, its compiled templates kept in tmp_path's cache (as the generator keeps them)."""
    import jinja2

    from generator.building.template_cache import TemplateBytecodeCache

    (tmp_path / "templates").mkdir(exist_ok=True)
    (tmp_path / "templates" / "module.py.j2").write_text("{{ 'x' | tag }}{{ 'y' is marked }}")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(tmp_path / "templates")),
                             undefined=jinja2.StrictUndefined,
                             bytecode_cache=TemplateBytecodeCache(tmp_path))  # fmt: skip
    env.filters["tag"], env.tests["marked"] = tag, marked
    return env.get_template("module.py.j2").render(suffix="!")


def test_a_compiled_template_serves_no_environment_whose_filters_take_other_arguments(tmp_path):
    """Jinja2 compiles a filter call with the context as its first argument when the filter is
    @pass_context (a test's with the environment, when @pass_environment): code compiled for a filter
    that has since gained the context (or lost it) would call it with the wrong arguments."""
    import jinja2

    assert _rendered_with(tmp_path, lambda value: value + "?") == "x?True"
    assert len(cache.Cache(tmp_path, cache.TEMPLATES).names()) == 1  # kept: what the next environment could reuse
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


# ---------------------------------------------------------------- the model cache

MODULE_DOC = 'doc="BackendConfig for PyTorch\'s native FBGEMM backend.",'


COUNTING = (
    "\nimport pathlib as _pathlib\n"
    "with (_pathlib.Path(__file__).parent.parent / 'fbgemm-runs.log').open('a') as _log:\n"
    "    _log.write('run\\n')\n"
)


def counting_project(project):
    """A copy of the project, with spec/fbgemm.py counting its executions in fbgemm-runs.log and its module
    docstring read from spec/fbgemm_doc.txt; regenerated once, so the model cache holds every load."""
    fresh_copy(project)
    spec = project / "spec" / "fbgemm.py"
    text = spec.read_text()
    assert MODULE_DOC in text
    (project / "spec" / "fbgemm_doc.txt").write_text("BackendConfig for PyTorch's native FBGEMM backend.")
    reading = "doc=(_pathlib.Path(__file__).parent / 'fbgemm_doc.txt').read_text(),"
    spec.write_text(COUNTING + text.replace(MODULE_DOC, reading))
    regenerate(project)
    assert runs(project) == 1
    assert_committed_outputs(project)


@pytest.fixture
def counted(tmp_path_factory):
    """counting_project, built once per run (its first regenerate executes every spec file); each test
    gets a copy of its own. The model cache records project-relative names, so it holds in the copy."""
    return worker_copy(tmp_path_factory, "load-speed-counted", counting_project)


def runs(project) -> int:
    log = project / "fbgemm-runs.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def assert_committed_outputs(project):
    for output in OUTPUTS:
        assert (project / output).read_bytes() == (ROOT / output).read_bytes(), output


def edit_x86(project):
    with (project / "spec" / "x86.py").open("a") as spec:
        spec.write("# an edit\n")


def model_entry(project, spec="fbgemm"):
    return cache.Cache(project, cache.MODELS).path(f"spec/{spec}.py")


def kept_models(project):
    return cache.Cache(project, cache.MODELS).folder


def test_after_an_edit_to_one_spec_file_the_others_are_not_executed_again(counted, capfd):
    edit_x86(counted)
    regenerated_here(capfd, counted)
    assert runs(counted) == 1  # fbgemm's load came from the cache
    assert_committed_outputs(counted)


def test_check_of_an_edited_spec_file_executes_it_once(counted, capsys):
    """check's lint loads the edited file and keeps the load: the build that explains the stale tree
    takes it from the model cache instead of executing the file again."""
    spec = counted / "spec" / "fbgemm.py"
    spec.write_text(spec.read_text().replace('doc="', 'doc="Edited. ', 1))
    assert cli.main(["--root", str(counted), "check"]) == 1
    out = capsys.readouterr().out
    assert "generated/fbgemm.py" in out and "fix: python -m generator regenerate" in out
    assert runs(counted) == 2


def test_force_and_check_full_execute_every_spec_file(counted, capfd):
    regenerated_here(capfd, counted, "--force")
    assert runs(counted) == 2
    done = here(capfd, counted, "check", "--full")
    assert done.returncode == 0, done.stdout + done.stderr
    assert runs(counted) == 3


def test_force_fills_the_model_cache_for_the_next_edit(counted, capfd):
    shutil.rmtree(kept_models(counted))
    regenerated_here(capfd, counted, "--force")
    assert runs(counted) == 2
    edit_x86(counted)
    regenerated_here(capfd, counted)
    assert runs(counted) == 2
    assert_committed_outputs(counted)


@pytest.mark.parametrize("edited", ["spec/_common.py", "spec/fbgemm_doc.txt"])
def test_an_edit_to_any_file_a_load_read_executes_it_again(counted, edited, capfd):
    path = counted / edited
    if edited.endswith(".txt"):
        path.write_text("FBGEMM, as a data file says.")
    else:
        path.write_text(path.read_text() + "# an edit\n")
    edit_x86(counted)
    regenerated_here(capfd, counted)
    assert runs(counted) == 2
    fbgemm = (counted / "generated" / "fbgemm.py").read_text()
    assert ("FBGEMM, as a data file says." in fbgemm) == edited.endswith(".txt")


def test_import_and_diff_take_unchanged_spec_files_from_the_model_cache(counted, capfd):
    """import (refusing a backend name another spec file uses; with --force, what the file it replaces
    builds) and diff (the spec lines of the working tree; the builders and lines of --against-torch)
    load the spec as regenerate does: an unchanged file's load comes from the model cache."""
    builder = "tests.support.user_builder:get_user_backend_config"
    for args in (["import", builder, "--name", "mine"], ["import", builder, "--name", "mine", "--force"]):
        done = here(capfd, counted, *args)
        assert done.returncode == 0, done.stderr
    assert runs(counted) == 1
    regenerated_here(capfd, counted)  # diff compares a tree that is up to date
    done = here(capfd, counted, "diff", "--against-torch", "fbgemm")
    assert done.returncode == 0, done.stderr
    assert runs(counted) == 1
    (counted / "spec" / "mine.py").unlink()
    with (counted / "spec" / "fbgemm.py").open("a") as spec:
        spec.write("# an edit\n")
    assert here(capfd, counted, "import", builder, "--name", "mine").returncode == 0
    assert runs(counted) == 2  # an edited file is executed, as regenerate would


def test_diff_of_an_edited_tree_takes_the_unedited_spec_files_from_the_model_cache(counted, capfd):
    """diff builds the stale files to tell a changed text from changed inputs alone: the other spec files'
    loads come from the model cache, as regenerate's would; an edited one is executed."""
    commit_all(counted)
    edit_x86(counted)  # a comment: the inputs changed, the text would not
    same_content(here(capfd, counted, "diff"))
    assert runs(counted) == 1
    with (counted / "spec" / "fbgemm.py").open("a") as spec:
        spec.write("# an edit\n")
    same_content(here(capfd, counted, "diff"))
    assert runs(counted) == 2  # x86's text was proven the same by the first diff: only fbgemm's load runs


def same_content(done) -> None:
    """A diff that found no difference, and no file to regenerate."""
    assert done.returncode == 0 and done.stdout.startswith("no differences in "), done.stdout + done.stderr
    assert done.stderr == "", done.stderr


def test_diff_of_a_revision_takes_its_unchanged_spec_files_from_the_project_s_model_cache(counted, capfd):
    """diff --rev loads the revision's spec (extracted elsewhere) for its spec lines: a file whose recorded
    reads are the same there as in a kept load is not executed; one that differs is. Either way the diff
    says what it says with no model cache at all."""
    log = counted / "fbgemm-runs.log"
    fbgemm = counted / "spec" / "fbgemm.py"
    counting = "_pathlib.Path(__file__).parent.parent / 'fbgemm-runs.log'"
    counting_here = fbgemm.read_text().replace(counting, f"_pathlib.Path({str(log)!r})")
    fbgemm.write_text(counting_here)  # the revision's copy, extracted elsewhere, counts its runs here too
    regenerated_here(capfd, counted)
    commit_all(counted)
    x86 = counted / "spec" / "x86.py"
    x86.write_text(x86.read_text().replace("default=default,", "default=weighted,", 1))
    regenerated_here(capfd, counted)
    before = runs(counted)

    def diffs_alike_without_a_cache(executed_with_the_cache: int) -> None:
        done = here(capfd, counted, "diff", "--rev", "HEAD")
        assert done.returncode == 1, done.stderr
        assert "x86:" in done.stdout and "spec/" in done.stdout  # the changed patterns, with their spec lines
        assert runs(counted) == before + executed_with_the_cache
        kept = kept_models(counted)
        shutil.copytree(kept, counted / "kept-models")
        shutil.rmtree(kept)
        uncached = here(capfd, counted, "diff", "--rev", "HEAD")
        assert (uncached.returncode, uncached.stdout, uncached.stderr) == (done.returncode, done.stdout, done.stderr)
        assert runs(counted) == before + executed_with_the_cache + 2  # without it, both sides executed fbgemm.py
        if kept.exists():
            shutil.rmtree(kept)
        shutil.move(counted / "kept-models", kept)

    diffs_alike_without_a_cache(0)  # fbgemm.py is the same in HEAD as in its kept load
    fbgemm.write_text("# a line that moves every other one\n" + counting_here)
    regenerated_here(capfd, counted)
    before = runs(counted)
    diffs_alike_without_a_cache(1)  # HEAD's fbgemm.py is not the kept load's: the revision's side executes it


def _kept(project, relative="spec/fbgemm.py"):
    from generator.loading import model_cache

    models = model_cache.ModelCache(project)
    module = models.lookup(relative)
    assert module is not None
    return models, module


def _forged_doc(project, data):
    """The entry's module with another docstring, kept with a valid checksum: what only --force may ignore."""
    import dataclasses

    models, module = _kept(project)
    models.keep(dataclasses.replace(module, doc="A forged docstring."))
    return models.entries.path(module.spec_file).read_bytes()


def _stale_read(project, data):
    """A valid entry that records another digest for spec/_common.py than the file has now."""
    import dataclasses

    models, module = _kept(project)
    read = tuple((name, "0" * 64 if name == "spec/_common.py" else digest) for name, digest in module.read)
    assert read != module.read
    models.keep(dataclasses.replace(module, read=read))
    return models.entries.path(module.spec_file).read_bytes()


class _Payload:
    """Unpickled, it would leave a folder behind: an entry may hold nothing but the model's classes."""

    def __init__(self, folder):
        self.folder = folder

    def __reduce__(self):
        return (os.mkdir, (str(self.folder),))


def marker(project):
    return project / "made-by-unpickling"


def _code(project, data):
    """A valid key, header and checksum around a pickle that would run code."""
    import pickle

    models, module = _kept(project)
    header = json.dumps([module.spec_file, [list(pair) for pair in module.read]]).encode()
    body = len(header).to_bytes(4, "big") + header + pickle.dumps(_Payload(marker(project)))
    models.entries.put(models.entries.read(module.spec_file).key, body, module.spec_file)  # the sound entry's key
    return models.entries.path(module.spec_file).read_bytes()


ENTRY_CORRUPTIONS = {
    "truncated": lambda project, data: data[: len(data) // 2],
    "garbage": lambda project, data: os.urandom(len(data)),
    "one byte changed": lambda project, data: data.replace(b"FBGEMM", b"FBGEMm", 1),
    "stale read": _stale_read,
    "code": _code,
}


@pytest.mark.parametrize("corruption", sorted(ENTRY_CORRUPTIONS))
def test_a_corrupt_or_stale_model_entry_is_ignored(counted, corruption, capfd):
    entry = model_entry(counted)
    entry.write_bytes(ENTRY_CORRUPTIONS[corruption](counted, entry.read_bytes()))
    edit_x86(counted)
    regenerated_here(capfd, counted)
    assert runs(counted) == 2  # executed again
    assert not marker(counted).exists()
    assert_committed_outputs(counted)
    edit_x86(counted)
    regenerated_here(capfd, counted)
    assert runs(counted) == 2  # and the entry was replaced by a sound one


def test_force_ignores_even_a_valid_looking_entry(counted, capfd):
    entry = model_entry(counted)
    entry.write_bytes(_forged_doc(counted, entry.read_bytes()))
    regenerated_here(capfd, counted, "--force")
    assert_committed_outputs(counted)


# ---------------------------------------------------------------- module names kept by content

def generator_run(project, *args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "generator", "--root", str(project), *args],
                          cwd=project, env=env, capture_output=True, text=True)  # fmt: skip


def kept_name(project, module="x86"):
    """(the project's module-name cache, the entry that holds `module`, spec/x86.py's module name)."""
    names = cache.Cache(project, cache.MODULE_NAMES)
    [entry] = [name for name in names.names() if names.read(name).payload == module.encode()]
    return names, entry


def test_a_corrupt_module_name_cache_is_ignored(fresh_project):
    assert generator_run(fresh_project, "check").returncode == 0
    names, entry = kept_name(fresh_project)
    data = names.path(entry).read_bytes()
    assert data.endswith(b"x86")
    names.path(entry).write_bytes(data[: -len(b"x86")] + b"other")  # its checksum no longer holds
    done = generator_run(fresh_project, "check")
    assert done.returncode == 0, done.stdout + done.stderr
    names.path(entry).write_bytes(os.urandom(200))
    done = generator_run(fresh_project, "check")
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_forged_module_name_makes_runs_fail_and_writes_nothing_elsewhere(fresh_project):
    assert generator_run(fresh_project, "check").returncode == 0
    names, entry = kept_name(fresh_project)
    names.put(names.read(entry).key, b"forged", entry)  # with its key, and a checksum that holds
    for command in ("check", "regenerate"):
        done = generator_run(fresh_project, command)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "spec/x86.py" in done.stderr and "generated/forged.py" in done.stderr
    assert not (fresh_project / "generated" / "forged.py").exists()
    assert_committed_outputs(fresh_project)


# ---------------------------------------------------------------- compiled spec code

@pytest.fixture
def compiled(monkeypatch) -> list[str]:
    """The file names of the project source Python compiles from now on, in order."""
    from importlib.machinery import SourceFileLoader

    names = []
    real = SourceFileLoader.source_to_code

    def counting(self, data, path, *args, **kwargs):
        names.append(os.path.basename(path))
        return real(self, data, path, *args, **kwargs)

    monkeypatch.setattr(SourceFileLoader, "source_to_code", counting)
    return names


def loads_here(project):
    """Every spec file's load, one after another in this process, as each load's own process runs it
    (loader.load_here): what it compiles is seen here."""
    from generator.loading import loader
    from generator.project import spec_files

    return [loader.load_here(project, path) for path in spec_files(project)]


def test_project_source_is_compiled_once_per_content_and_an_edit_is_compiled_again(project_with_only, compiled):
    """Each spec file's load runs on fresh modules, so spec/_common.py runs once per spec file: it is
    compiled once per content (loader._compiled_once), and an edit is what runs next time."""
    project = project_with_only("fbgemm", "x86")  # two spec files importing spec/_common.py; fbgemm uses DEFAULT_OPS
    from generator.loading import loader

    loader._COMPILED.clear()
    compiled.clear()  # what making the project's copy compiled
    first = loads_here(project)
    spec_files = [p.name for p in (project / "spec").glob("*.py") if not p.name.startswith("_")]
    assert sorted(compiled) == sorted(["__init__.py", "_common.py", *spec_files])
    assert len([m for m in first if m.spec_file != "spec/_common.py"]) == len(spec_files)

    common = project / "spec" / "_common.py"
    common.write_text(common.read_text().replace("DEFAULT_OPS = [\n", "DEFAULT_OPS = [\n    nn.BatchNorm1d,\n", 1))
    compiled.clear()
    again = loads_here(project)
    assert compiled == ["_common.py"]  # the edited file alone, once
    alone = "TorchRef(path='torch.nn.BatchNorm1d'"

    def lone_batch_norms(modules):
        return sum(repr(c.pattern).startswith(alone) for m in modules for b in m.backends for c in b.configs)

    assert lone_batch_norms(again) > lone_batch_norms(first)


def test_project_source_is_kept_compiled_on_disk_and_an_edit_or_a_corrupt_entry_is_compiled_again(
    project_with_only, compiled
):
    """Each process compiled every spec file it ran; loader._compiled_once keeps the code in
    the cache (cache.CODE) under a digest of the source bytes, so a new process compiles none."""
    project = project_with_only("fbgemm", "x86")  # two spec files importing spec/_common.py; fbgemm uses DEFAULT_OPS
    from generator.loading import loader

    def load_in_a_new_process():
        loader._COMPILED.clear()  # what a new process starts with
        compiled.clear()
        return repr(loads_here(project))

    first = load_in_a_new_process()
    entries = [entry for entry in cache_entries(project, cache.CODE) if entry.name.startswith("project-")]
    assert len(entries) == len(compiled) > 0
    assert load_in_a_new_process() == first and compiled == []

    for entry in entries:  # code that still loads, but not the code its checksum was taken of
        entry.write_bytes(_literal_changed(entry.read_bytes()))
    assert load_in_a_new_process() == first and len(compiled) == len(entries)

    common = project / "spec" / "_common.py"
    common.write_text(common.read_text().replace("DEFAULT_OPS = [\n", "DEFAULT_OPS = [\n    nn.BatchNorm1d,\n", 1))
    edited = load_in_a_new_process()
    assert compiled == ["_common.py"]  # the edited file alone, and what runs is the edit
    assert edited.count("torch.nn.BatchNorm1d'") > first.count("torch.nn.BatchNorm1d'")


# ---------------------------------------------------------------- the check memo

def check_memo_entries(project):
    return cache_entries(project, cache.CHECKS)


def test_the_check_memo_serves_only_the_text_that_passed_and_a_corrupt_entry_is_checked_again(forced, capfd):
    project = forced  # regenerated with --force
    entries = check_memo_entries(project)
    assert [e.name for e in entries] == sorted(GENERATED_MODULES)
    zeros = {entry: b"\0" * len(entry.read_bytes()) for entry in entries}
    for entry in entries:
        entry.write_bytes(zeros[entry])
    regenerated_here(capfd, project, "--force")  # the memo is on disk alone: a run here reads it as a new process
    assert_committed_outputs(project)
    memo = cache.Cache(project, cache.CHECKS)
    assert all(memo.read(e.name) is not None and e.read_bytes() != zeros[e] for e in entries)  # sound again
    spec = project / "spec" / "fbgemm.py"
    spec.write_text(spec.read_text().replace('builder="get_fbgemm_backend_config"', 'builder="type"'))
    for _ in range(2):  # a refused text is never remembered, so it is refused every time
        done = here(capfd, project, "regenerate", "--force")
        assert done.returncode == 2
        assert "builder name 'type' would hide Python's built-in type" in done.stderr
        assert "spec/fbgemm.py:30" in done.stderr
    assert_committed_outputs(project)


def test_the_check_memo_is_keyed_by_the_checks_own_code(tmp_path):
    """A stricter check after an upgrade sees every text again: a pass is kept per version of the checks."""
    program = (
        "from generator.building import check_memo; print(check_memo.key('x = 1\\n', 'generated/a.py', ['a']).hex())"
    )

    def key_with(generator_dir):
        env = dict(os.environ, PYTHONPATH=str(generator_dir.parent))
        done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return done.stdout

    copy = tmp_path / "copy" / "generator"
    shutil.copytree(ROOT / "generator", copy, ignore=shutil.ignore_patterns("__pycache__"))
    unchanged = key_with(copy)
    assert unchanged == key_with(ROOT / "generator")
    for module in ("building/output_check.py", "building/naming.py"):
        path = copy / module
        original = path.read_text()
        path.write_text(original + "\n# a stricter check\n")
        assert key_with(copy) != unchanged, module
        path.write_text(original)


def test_a_memoised_names_check_is_not_reused_after_the_entries_are_cut_otherwise(tmp_path):
    """The names check reads the text without its entries (formatting.without_entries): a pass remembered
    before an edit of formatting.py (how the entries are cut) must not stand for the text after it."""
    import shutil
    import subprocess
    import sys

    shutil.copytree(ROOT / "generator", tmp_path / "generator", ignore=shutil.ignore_patterns("__pycache__"))
    script = "from generator.building import check_memo; print(check_memo.key('text', 'generated/x.py', ['a']).hex())"

    def memo_key() -> str:
        run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True)
        return run.stdout

    before = memo_key()
    formatting_file = tmp_path / "generator" / "building" / "formatting.py"
    formatting_file.write_text(formatting_file.read_text() + "\n# entries cut otherwise\n")
    assert memo_key() != before


# ---------------------------------------------------------------- generated modules compiled for diff

def test_a_generated_module_is_compiled_once_per_text_and_never_served_stale(tmp_path, monkeypatch) -> None:
    compiled = []
    monkeypatch.setattr(sides, "compile", lambda *args: compiled.append(args) or compile(*args), raising=False)
    code_cache = cache.Cache(tmp_path, cache.CODE)

    def value(source: str) -> int:
        code = sides._compiled(source, "generated/m.py", tmp_path, "m")
        return sides._module_from_code("m", "generated/m.py", code).VALUE

    assert [value("VALUE = 1\n"), value("VALUE = 1\n")] == [1, 1]
    assert len(compiled) == 1  # the second run read the cache
    assert value("VALUE = 2\n") == 2  # the same length, another text
    assert len(compiled) == 2
    (entry,) = code_cache.names()
    data, two, three = code_cache.path(entry).read_bytes(), marshal.dumps(2), marshal.dumps(3)
    assert data.count(two[1:]) == 1
    code_cache.path(entry).write_bytes(data.replace(two[1:], three[1:]))  # a corrupt entry that still loads: VALUE = 3
    assert value("VALUE = 2\n") == 2
    assert len(compiled) == 3


# ---------------------------------------------------------------- every cache file

def test_a_cache_file_that_cannot_be_written_costs_nothing_and_leaves_no_temporary(tmp_path):
    """Every cache keeps its entries through one store (generator/cache.py), which writes each through
    files.keep_cache_file: a folder where the entry should be, or where the cache folder should be, is no error."""
    kept = cache.Cache(tmp_path, "kind")
    blocked = kept.path("entry")
    blocked.mkdir(parents=True)
    kept.put(kept.key("a"), b"data", "entry")
    assert blocked.is_dir() and list(blocked.parent.iterdir()) == [blocked]
    kept.put(kept.key("b"), b"data", "other")
    assert kept.get(kept.key("b"), "other") == b"data"
    assert sorted(p.name for p in blocked.parent.iterdir()) == ["entry", "other"]
    unwritable = tmp_path / "file"
    unwritable.mkdir()
    cache.folder(unwritable).parent.write_text("a file where the cache folder would be")
    cache.Cache(unwritable, "kind").put(kept.key("b"), b"data", "other")
    assert cache.Cache(unwritable, "kind").get(kept.key("b"), "other") is None
    assert sorted(p.name for p in unwritable.iterdir()) == [cache.FOLDER.parts[0]]


def test_a_cache_entry_is_used_only_whole_under_its_own_key_and_kind(tmp_path):
    """The one entry format: key, checksum of key and payload, payload. A truncated, corrupt or
    forged-without-checksum entry, one of another key or of another kind is not used; one whose payload
    fails while it is written is not kept."""
    kept = cache.Cache(tmp_path, "kind")
    key = kept.key("input", b"bytes")
    assert key != cache.Cache(tmp_path, "other").key("input", b"bytes") != kept.key("inp", b"utbytes")
    kept.put(key, b"payload", "entry")
    assert kept.get(key, "entry") == b"payload" and kept.read("entry") == cache.Entry(key, b"payload")
    assert kept.get(kept.key("another input"), "entry") is None
    path, data = kept.path("entry"), kept.path("entry").read_bytes()
    for damaged in (data[:-1], data[:40], b"", data[:-1] + b"P", data[:64] + b"forged", b"\0" * len(data)):
        path.write_bytes(damaged)
        assert kept.get(key, "entry") is None and kept.read("entry") is None, damaged
    path.write_bytes(data)
    other = cache.Cache(tmp_path, "other")
    other.folder.mkdir(parents=True, exist_ok=True)
    other.path("entry").write_bytes(data)
    assert other.get(other.key("input", b"bytes"), "entry") is None  # a foreign entry
    kept.put(key, b"found by its key")
    assert kept.get(key) == b"found by its key" and key.hex() in kept.names()

    def failing(stream):
        stream.write(b"half a payload")
        raise ValueError("cannot be written")

    with pytest.raises(ValueError):
        kept.put_written(key, failing, "entry")
    assert kept.get(key, "entry") == b"payload"  # the entry as it was, and no temporary beside it
    assert sorted(kept.names()) == sorted(os.listdir(kept.folder))


def test_a_cache_kind_found_by_content_is_pruned_to_its_newest_entries(tmp_path):
    kept = cache.Cache(tmp_path, "kind")
    for number in range(10):
        kept.put(kept.key(str(number)), str(number).encode())
        os.utime(kept.path(kept.key(str(number)).hex()), ns=(number * 10**9, number * 10**9))
    kept.prune(10)
    assert len(kept.names()) == 10
    kept.prune(8)
    assert [kept.get(kept.key(str(n))) for n in range(10)] == [None] * 6 + [b"6", b"7", b"8", b"9"]
