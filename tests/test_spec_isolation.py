"""Each spec file's load is isolated from the others and from its caller: what one load leaves in sys.modules
(a module, a stand-in, a removal, an import hook) is gone for the next, and a caller's own modules are set
aside for each load and given back (each load runs in a process of its own: generator/loading/processes.py)."""

import gc
import importlib
import sys
import threading
import types
import weakref
from pathlib import Path

import pytest

from generator.loading import loader
from tests.support.projects import inputs_only
from tests.support.spec_code import doc_prefixed, run


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


# A helper module that puts a stand-in for itself into sys.modules (a lazy or deprecating wrapper, a
# module with properties): the stand-in's namespace holds neither __file__ nor the helper's names,
# which it answers for from the module it replaced.
_STAND_IN = """import sys as _sys
import types as _types

LOADS = []


class _StandIn(_types.ModuleType):
    def __getattr__(self, name):
        return getattr(_real, name)


_real = _sys.modules[__name__]
_sys.modules[__name__] = _StandIn(__name__)
"""

_COUNTING = "import acme.count as _count\n\n_count.LOADS.append(1)\n_DOC = f'loads seen: {len(_count.LOADS)}. '\n"


def test_a_helper_submodule_that_stands_in_for_itself_is_fresh_for_each_load(project_with_only):
    """native.py and x86.py both count their loads in acme.count, which puts a stand-in for itself into
    sys.modules: were it kept, x86's output would depend on whether native's load ran in the process."""
    project = project_with_only("native", "x86")
    (project / "acme").mkdir()
    (project / "acme" / "__init__.py").write_text("")
    (project / "acme" / "count.py").write_text(_STAND_IN)
    for name in ("native", "x86"):
        doc_prefixed(project / "spec" / f"{name}.py", "_DOC", _COUNTING)
    assert run(project, "regenerate").returncode == 0  # every load made: native's first
    every_load_made = (project / "generated" / "x86.py").read_text()
    assert "loads seen: 1. " in every_load_made
    x86 = project / "spec" / "x86.py"
    x86.write_text(x86.read_text() + "# an edit: native's load now comes from the model cache\n")
    assert run(project, "regenerate").returncode == 0
    assert (project / "generated" / "x86.py").read_text() == every_load_made
    assert run(project, "check").returncode == 0


@pytest.fixture
def caller_s_modules():
    """The project modules (acme_*) a test puts into sys.modules in this process, forgotten after it."""
    yield
    for name in [name for name in sys.modules if name.startswith("acme_")]:
        del sys.modules[name]


def test_a_caller_s_helper_that_stands_in_for_itself_is_set_aside_for_each_load(
    tmp_path, monkeypatch, caller_s_modules
):
    """A process imported the project's helper (which put a stand-in for itself into sys.modules) and
    changed it: each load still runs on a fresh helper, and the caller keeps its own."""
    project = inputs_only(tmp_path / "project", "qnnpack_pt2e")
    (project / "acme_count.py").write_text(_STAND_IN)
    prelude = "import acme_count as _count\n\n_count.LOADS.append(1)\n_DOC = f'loads seen: {len(_count.LOADS)}. '\n"
    doc_prefixed(project / "spec" / "qnnpack_pt2e.py", "_DOC", prelude)
    baseline = loader.load_modules(project)
    assert baseline[0].doc.startswith("loads seen: 1. ")
    monkeypatch.syspath_prepend(str(project))
    caller_s = importlib.import_module("acme_count")
    caller_s.LOADS.extend(["the caller's"] * 5)
    for _ in range(2):  # the second finds sys.modules as the first left it
        assert loader.load_modules(project) == baseline
        assert sys.modules["acme_count"] is caller_s and caller_s.LOADS == ["the caller's"] * 5


def test_project_modules_the_caller_imported_are_set_aside_for_each_load_and_put_back(tmp_path, monkeypatch):
    """A process that imported a helper module of the project (and changed it) before loading: every load
    runs on a fresh one and leaves the caller's in place. The second and third loads find sys.modules as
    the first left it, where only the modules not yet set aside as foreign are looked at again; before the
    third, the caller imported one more project module."""
    project = inputs_only(tmp_path / "project", "qnnpack_pt2e")
    (project / "acme_helper").mkdir()
    (project / "acme_helper" / "__init__.py").write_text('PREFIX = ["as the helper says. "]\n')
    (project / "acme_helper" / "other.py").write_text('WORDS = ["and so does the other. "]\n')
    prelude = "import acme_helper\nfrom acme_helper import other as _other\n"
    doc_prefixed(project / "spec" / "qnnpack_pt2e.py", "acme_helper.PREFIX[0] + _other.WORDS[0]", prelude)
    baseline = loader.load_modules(project)
    assert baseline[0].doc.startswith("as the helper says. and so does the other. ")
    names = ("acme_helper", "acme_helper.other")
    monkeypatch.syspath_prepend(str(project))
    assert not any(name in sys.modules for name in names)
    try:
        helper = importlib.import_module("acme_helper")
        helper.PREFIX[0] = "as the caller says. "
        for imported_between in (None, None, "acme_helper.other"):
            if imported_between:
                importlib.import_module(imported_between).WORDS[0] = "as the caller says too. "
            caller_s = {name: sys.modules[name] for name in names if name in sys.modules}
            assert loader.load_modules(project) == baseline
            assert {name: sys.modules[name] for name in names if name in sys.modules} == caller_s
        assert sys.modules["acme_helper"] is helper and len(caller_s) == 2
    finally:
        for name in names:
            sys.modules.pop(name, None)


def test_a_load_runs_no_module_s_getattr_while_it_sets_the_project_s_modules_aside(tmp_path):
    """Telling the project's modules from the others reads each module's own namespace: a module in
    sys.modules with a __getattr__ (user code, or torch's) is not asked for what it lacks."""
    asked = []
    watcher = types.ModuleType("acme_watcher")
    watcher.__getattr__ = lambda name: asked.append(name) or (_ for _ in ()).throw(AttributeError(name))
    sys.modules["acme_watcher"] = watcher
    try:
        loader.load_modules(inputs_only(tmp_path / "project", "qnnpack_pt2e"))
    finally:
        del sys.modules["acme_watcher"]
    assert asked == []


class _GuardedNamespace(types.ModuleType):
    """A module whose `__dict__` attribute refuses to be read (vars() asks it; the import system does not)."""

    @property
    def __dict__(self):
        raise RuntimeError("not to be read")


def test_a_module_whose_dict_attribute_raises_does_not_fail_a_load(tmp_path, caller_s_modules):
    """A caller's module in sys.modules whose class makes `__dict__` raise: a load tells that it is not the
    project's without asking it, and runs as it would without it."""
    project = inputs_only(tmp_path / "project", "qnnpack_pt2e")
    baseline = loader.load_modules(project)
    sys.modules["acme_guarded"] = _GuardedNamespace("acme_guarded")
    assert loader.load_modules(project) == baseline
    assert type(sys.modules["acme_guarded"]) is _GuardedNamespace


def test_a_module_object_a_spec_puts_under_a_dotted_name_is_gone_for_the_next_load(project_with_only):
    """native.py puts a module object of its own into sys.modules under a dotted name, and x86.py reads it:
    were it kept, x86's output would depend on whether native's load ran in the same process."""
    project = project_with_only("native", "x86")
    writer, reader = project / "spec" / "native.py", project / "spec" / "x86.py"
    leave = 'import sys as _sys, types as _types\n_sys.modules["leaked.doc"] = _types.ModuleType("leaked.doc")\n'
    leave += '_sys.modules["leaked.doc"].DOC = "seen"\n'
    writer.write_text(leave + writer.read_text())
    read = 'import sys as _sys\n_SEEN = getattr(_sys.modules.get("leaked.doc"), "DOC", "unseen")\n'
    doc_prefixed(reader, "_SEEN", read)
    assert run(project, "regenerate").returncode == 0  # every load made: native's first
    every_load_made = (project / "generated" / "x86.py").read_text()
    assert "unseen" in every_load_made


def test_a_load_keeps_no_module_the_caller_let_go_of_alive(tmp_path, monkeypatch, caller_s_modules):
    """A process imported the project's helper, loaded, then forgot the helper: nothing of the load's keeps
    the module alive (what it holds, its finalizers, its memory), as if the process had never loaded."""
    project = inputs_only(tmp_path / "project", "qnnpack_pt2e")
    (project / "acme_helper.py").write_text("DOC = 'the helper'\n")
    monkeypatch.syspath_prepend(str(project))
    helper = weakref.ref(importlib.import_module("acme_helper"))
    loader.load_modules(project)
    del sys.modules["acme_helper"]
    gc.collect()
    assert helper() is None


def _namespace_package_in_two_places(tmp_path, project):
    """The namespace package acme: acme.tools installed outside the project (tmp_path/site, which spec code
    puts on sys.path), acme.docs in the project's own acme/ folder (no __init__.py)."""
    (tmp_path / "site" / "acme").mkdir(parents=True)
    (tmp_path / "site" / "acme" / "tools.py").write_text("DOC = 'from the tools. '\n")
    (project / "acme").mkdir()
    (project / "acme" / "docs.py").write_text("DOC = 'from the docs. '\n")
    site = str(tmp_path / "site")
    return f"import sys as _sys\n\n_sys.path.append({site!r})\nimport acme.tools\nimport acme.docs\n\n"


def test_an_installed_part_of_a_namespace_package_the_project_shares_is_fresh_with_it(tmp_path, project_with_only):
    """native.py and x86.py both use acme.tools (installed) and acme.docs (the project's): were acme.tools kept
    after native's load while acme went, x86's `import acme.tools` would find it, and the fresh acme without
    its attribute `tools` (AttributeError), but not when native's load comes from the model cache."""
    project = project_with_only("native", "x86")
    prelude = _namespace_package_in_two_places(tmp_path, project) + "_DOC = acme.tools.DOC + acme.docs.DOC\n"
    for name in ("native", "x86"):
        doc_prefixed(project / "spec" / f"{name}.py", "_DOC", prelude)
    done = run(project, "regenerate")
    assert done.returncode == 0, done.stderr
    for name in ("native", "x86"):
        assert "from the tools. from the docs. " in (project / "generated" / f"{name}.py").read_text()


def test_a_caller_s_installed_part_of_a_namespace_package_the_project_shares_is_set_aside_with_it(
    tmp_path, monkeypatch
):
    """A process imported acme.tools and acme.docs: a load that found the caller's acme.tools in sys.modules,
    next to a fresh acme, would fail on `acme.tools` (AttributeError); the caller gets both back."""
    project = inputs_only(tmp_path / "project", "qnnpack_pt2e")
    prelude = _namespace_package_in_two_places(tmp_path, project) + "_DOC = acme.tools.DOC + acme.docs.DOC\n"
    doc_prefixed(project / "spec" / "qnnpack_pt2e.py", "_DOC", prelude)
    baseline = loader.load_modules(project)
    assert baseline[0].doc.startswith("from the tools. from the docs. ")
    monkeypatch.syspath_prepend(str(project))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    names = ("acme", "acme.tools", "acme.docs")
    try:
        caller_s = {name: importlib.import_module(name) for name in names}
        assert loader.load_modules(project) == baseline
        assert {name: sys.modules[name] for name in names} == caller_s
    finally:
        for name in names:
            sys.modules.pop(name, None)


_REMOVE_OR_REPLACE = {
    "removed": "import sys as _sys\n\ndel _sys.modules['generator.dsl']\n",
    "replaced": "import sys as _sys, types as _types\n\n_sys.modules['json'] = _types.SimpleNamespace(dumps=repr)\n",
}


@pytest.mark.parametrize("change", _REMOVE_OR_REPLACE.values(), ids=_REMOVE_OR_REPLACE.keys())
def test_a_module_a_spec_removes_from_sys_modules_or_replaces_there_is_back_for_the_next_load(
    project_with_only, change
):
    """native.py removes the vocabulary's module from sys.modules (x86's load would import another, whose
    values are not the generator's), or replaces json there by a stand-in (x86 would use it): either way
    x86's output would depend on whether native's load ran in the same process."""
    project = project_with_only("native", "x86")
    writer, reader = project / "spec" / "native.py", project / "spec" / "x86.py"
    writer.write_text(writer.read_text() + change)
    doc_prefixed(reader, "_DOC", 'import json as _json\n\n_DOC = _json.dumps("json") + " "\n')
    done = run(project, "regenerate")  # every load made: native's first
    assert done.returncode == 0, done.stderr
    every_load_made = (project / "generated" / "x86.py").read_text()
    assert '"json" ' in every_load_made
    reader.write_text(reader.read_text() + "# an edit: native's load now comes from the model cache\n")
    assert run(project, "regenerate").returncode == 0
    assert (project / "generated" / "x86.py").read_text() == every_load_made


_VIRTUAL_FINDER = """
import importlib.abc as _abc
import importlib.util as _util
import sys as _sys


class _Virtual(_abc.MetaPathFinder, _abc.Loader):
    def find_spec(self, name, path=None, target=None):
        return _util.spec_from_loader(name, self) if name == "acme_virtual" else None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.DOC = "virtual"


_sys.meta_path.insert(0, _Virtual())
"""


_PROJECT_FOLDER_S_FINDER = """
import importlib.machinery as _machinery
import importlib.util as _util
import os as _os
import sys as _sys


class _Virtual(_machinery.PathFinder):
    def find_spec(self, name, target=None):
        return _util.spec_from_loader(name, self) if name == "acme_virtual" else None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.DOC = "virtual"


_sys.path_importer_cache[_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))] = _Virtual()
"""


_HOOKS = {"meta_path": _VIRTUAL_FINDER, "path_finder": _PROJECT_FOLDER_S_FINDER}


_OPTIONAL_VIRTUAL = """try:
    from acme_virtual import DOC as _DOC
except ImportError:
    _DOC = "no virtual module"
"""


@pytest.mark.parametrize("hook", _HOOKS.values(), ids=_HOOKS.keys())
def test_an_import_hook_a_spec_installs_is_gone_for_the_next_load(project_with_only, hook):
    """native.py adds a finder serving the module acme_virtual to sys.meta_path, or puts one in place of the
    finder Python keeps for the project's folder (on sys.path); x86.py imports acme_virtual if it can: were
    the hook kept, x86's output would depend on whether native's load ran in the same process."""
    project = project_with_only("native", "x86")
    writer = project / "spec" / "native.py"
    writer.write_text(writer.read_text() + hook)
    doc_prefixed(project / "spec" / "x86.py", "_DOC", _OPTIONAL_VIRTUAL)
    done = run(project, "regenerate")  # every load made: native's first
    assert done.returncode == 0, done.stderr
    assert "no virtual module" in (project / "generated" / "x86.py").read_text()


def test_a_spec_that_rebinds_sys_modules_leaves_the_next_load_fresh_modules(project_with_only):
    """native.py binds sys.modules to a copy of it: Python's own import (from ._acme import ...) still looks in
    the first, where native's spec._acme would be found by x86's load, with native's changes."""
    project = project_with_only("native", "x86")
    (project / "spec" / "_acme.py").write_text("LOADS = []\n")
    counting = "from ._acme import LOADS as _LOADS\n\n_LOADS.append(1)\n_DOC = f'loads seen: {len(_LOADS)}. '\n"
    for name in ("native", "x86"):
        doc_prefixed(project / "spec" / f"{name}.py", "_DOC", counting)
    writer = project / "spec" / "native.py"
    writer.write_text(writer.read_text() + "\nimport sys as _sys\n\n_sys.modules = dict(_sys.modules)\n")
    done = run(project, "regenerate")
    assert done.returncode == 0, done.stderr
    for name in ("native", "x86"):
        assert "loads seen: 1. " in (project / "generated" / f"{name}.py").read_text()


_HALF_RUN = (
    "import os, time\n\nimport acme_sync\n\nacme_sync.started.set()\n"
    "while not os.path.exists(acme_sync.go):\n    time.sleep(0.01)\nraise RuntimeError('fails half-run')\n"
)


# The load runs in a process of its own: it hears from the caller's thread through files.
_SPEC_WAITS = (
    "import os as _os, time as _time\n\nopen({go!r}, 'w').close()\n"
    "for _ in range(3000):\n    if _os.path.exists({failed!r}):\n        break\n    _time.sleep(0.01)\n_SYNC_DOC = ''\n"
)


def test_a_module_another_thread_fails_to_import_during_a_load_is_not_put_back(tmp_path, monkeypatch):
    """A thread is importing a module (diff imports torch so) when a load begins, and the import fails
    while the load runs: the import system removes the half-run module, and the load must not put it
    back, where the next `import` would take it as done."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "acme_half_run.py").write_text(_HALF_RUN)
    monkeypatch.syspath_prepend(str(outside))
    sync = types.ModuleType("acme_sync")
    sync.started, sync.failed = threading.Event(), threading.Event()
    sync.go, failed = str(outside / "go"), outside / "failed"
    monkeypatch.setitem(sys.modules, "acme_sync", sync)
    project = inputs_only(tmp_path / "project", "qnnpack_pt2e")
    doc_prefixed(project / "spec" / "qnnpack_pt2e.py", "_SYNC_DOC", _SPEC_WAITS.format(go=sync.go, failed=str(failed)))

    def import_half_run():
        try:
            importlib.import_module("acme_half_run")
        except RuntimeError:
            sync.failed.set()
            failed.touch()

    importer = threading.Thread(target=import_half_run)
    importer.start()
    try:
        assert sync.started.wait(30)  # the thread's import is under way: acme_half_run is in sys.modules
        assert "acme_half_run" in sys.modules
        loader.load_modules(project)  # the spec lets the import go on and waits for it to fail
        assert sync.failed.is_set()
        assert "acme_half_run" not in sys.modules
    finally:
        Path(sync.go).touch()
        importer.join(30)
        sys.modules.pop("acme_half_run", None)
