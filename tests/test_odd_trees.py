"""Odd things in a project tree are reported as what they are, never as an internal error.

A generated file with bytes that are not UTF-8, a Python file of the user's own in
generated/, corrupt cache files, a committed symlink to an absolute path, and an
old revision whose generated module does not compile: each gets its own answer
through the real CLI, and regenerate repairs what is the generator's to repair.
"""

import itertools
import json
import shutil
import subprocess
import sys

import pytest

from generator import cache, cli
from generator.freshness import planning
from tests.support.projects import ROOT, at_one_path_fixture, commit_all, fresh_copy, git

one_path_project = at_one_path_fixture("odd_trees")  # a fresh copy per test, at one path (see there)


@pytest.fixture
def x86_project(one_path_project, tmp_path_factory):
    """The project, at its path, reduced to spec/x86.py: the other spec files would be built for nothing."""
    shutil.rmtree(one_path_project)
    return fresh_copy(one_path_project, "x86", factory=tmp_path_factory)


@pytest.fixture
def fbgemm_project(one_path_project, tmp_path_factory):
    """The project, at its path, reduced to spec/fbgemm.py."""
    shutil.rmtree(one_path_project)
    return fresh_copy(one_path_project, "fbgemm", factory=tmp_path_factory)


def run(capsys, *args) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    assert "internal error" not in err and "Traceback" not in out + err, err
    return code, out, err


def test_a_generated_file_that_is_not_utf8_is_edited_by_hand_and_regenerate_repairs_it(x86_project, capsys):
    project = x86_project
    module = project / "generated" / "x86.py"
    module.write_bytes(module.read_bytes() + b"# caf\xe9 in Latin-1\n")
    code, out, err = run(capsys, "--root", str(project), "check")
    assert code == 1
    assert "generated/x86.py: edited by hand: it is not UTF-8 text, as regenerate writes it" in out.splitlines()
    assert "+# caf\ufffd in Latin-1" not in out and "-# caf\ufffd in Latin-1" in out  # the diff shows the bytes
    assert run(capsys, "--root", str(project), "regenerate", "--jobs", "1")[0] == 0
    assert b"\xe9" not in module.read_bytes()
    assert run(capsys, "--root", str(project), "check")[0] == 0


def test_files_written_by_a_regenerate_killed_before_its_manifest_are_not_called_edited(x86_project, capsys):
    project = x86_project
    manifest = project / "generated" / "manifest.json"
    before = manifest.read_bytes()
    spec = project / "spec" / "x86.py"
    old = "default = [x86_default_op_quint8_dtype_config]"
    spec.write_text(spec.read_text().replace(old, old[:-1] + ", x86_weight_only_quint8_dtype_config]"))
    assert run(capsys, "--root", str(project), "regenerate", "--jobs", "1")[0] == 0
    manifest.write_bytes(before)  # as if killed (kill -9) after the files, before the manifest
    code, out, err = run(capsys, "--root", str(project), "check")
    unrecorded = "what regenerate writes, not yet recorded (an unfinished run?): regenerate updates only "
    unrecorded += "generated/manifest.json"
    assert (code, err) == (1, "")
    fix = "fix: python -m generator regenerate"
    assert out == f"generated/x86.py: {unrecorded}\ndocs/support-matrix.md: {unrecorded}\n{fix}\n"
    assert run(capsys, "--root", str(project), "regenerate", "--jobs", "1")[0] == 0
    assert run(capsys, "--root", str(project), "check")[0] == 0


def test_a_stray_generated_module_that_is_not_utf8_and_not_in_the_manifest_is_left_alone(x86_project, capsys):
    """Only the files the manifest lists are generated (issue 32): a stray copy with the header line is the user's."""
    project = x86_project
    stray = project / "generated" / "x86_old.py"  # a copy of the user's, under another name
    stray.write_bytes((project / "generated" / "x86.py").read_bytes() + b"# caf\xe9\n")
    code, out, err = run(capsys, "--root", str(project), "check")
    assert code == 0 and "x86_old" not in out + err
    code, out, err = run(capsys, "--root", str(project), "regenerate", "--jobs", "1")
    assert code == 0 and "x86_old" not in out + err
    assert stray.read_bytes().endswith(b"# caf\xe9\n")
    assert run(capsys, "--root", str(project), "check")[0] == 0


def test_a_listed_module_whose_spec_file_is_gone_is_named_and_regenerate_removes_it(x86_project, capsys):
    project = x86_project
    manifest = project / "generated" / "manifest.json"
    document = json.loads(manifest.read_text())
    stray = project / "generated" / "x86_old.py"  # its spec file is gone (renamed, say)
    stray.write_bytes((project / "generated" / "x86.py").read_bytes())
    document["outputs"]["generated/x86_old.py"] = dict(document["outputs"]["generated/x86.py"])
    manifest.write_text(json.dumps(document, indent=1) + "\n")
    code, out, err = run(capsys, "--root", str(project), "check")
    assert code == 1 and "generated/x86_old.py: its spec file is gone" in out.splitlines()
    code, out, err = run(capsys, "--root", str(project), "regenerate", "--jobs", "1")
    assert code == 0 and "removed   generated/x86_old.py" in out.splitlines()
    assert not stray.exists()
    assert run(capsys, "--root", str(project), "check")[0] == 0


def test_a_python_file_of_the_users_own_in_generated_is_left_alone(x86_project, capsys):
    project = x86_project
    commit_all(project)
    own = project / "generated" / "helpers.py"
    # Not UTF-8, and it imports only as part of the package: never a module to run on its own.
    own.write_bytes(b'"""Helpers of my own."""\n\nfrom .x86 import __all__ as NAMES\n\nNAME = "caf\xe9"\n')
    assert run(capsys, "--root", str(project), "check")[0] == 0
    assert run(capsys, "--root", str(project), "regenerate", "--jobs", "1")[0] == 0
    assert own.read_bytes().endswith(b'"caf\xe9"\n')  # neither removed nor rewritten
    code, out, err = run(capsys, "--root", str(project), "diff")  # not a module to compare
    assert code == 0 and out.startswith("no differences in "), out


def test_corrupt_cache_files_are_rebuilt(x86_project, capsys):
    """The lint's and the torch names' cache entries, holding what is not UTF-8, not JSON or JSON of the wrong
    shape: as files that are no entry at all, and as entries whose checksum holds (as only a forger writes them)."""
    project = x86_project
    assert run(capsys, "--root", str(project), "check")[0] == 0  # the lint cache exists
    kinds = [cache.Cache(project, cache.LINT), cache.Cache(project, cache.TORCH_NAMES)]
    corrupt = {
        "not utf-8": b"\xff\xfe{",
        "not json": b"{ not json",
        "json of the wrong shape": json.dumps({"torch.nn.Conv2d": {"kinds": "module"}, "x": 1}).encode(),
    }
    for (name, data), sound_checksum in itertools.product(corrupt.items(), (False, True)):
        entries = [(kept, entry) for kept in kinds for entry in kept.names()]
        assert len(entries) == 2, entries
        planted = {}
        for kept, entry in entries:
            planted[kept.kind] = data if "shape" not in name or kept.kind == cache.TORCH_NAMES else b'{"a": 1}'
            if sound_checksum:
                kept.put(kept.read(entry).key, planted[kept.kind], entry)
            else:
                kept.path(entry).write_bytes(planted[kept.kind])
        assert run(capsys, "--root", str(project), "check")[0] == 0, name
        lint, entry = entries[0]
        assert lint.read(entry).payload != planted[cache.LINT], name  # check lints again, and keeps its findings
        assert run(capsys, "--root", str(project), "regenerate", "--force", "--jobs", "1")[0] == 0, name
        for kept, entry in entries:
            rebuilt = kept.read(entry).payload
            assert rebuilt != planted[kept.kind] and isinstance(json.loads(rebuilt), (list, dict)), name


def test_diff_with_a_committed_symlink_to_an_absolute_path(x86_project, capsys):
    project = x86_project
    shared = project.parent / "shared_ops.py"  # outside the project, named by its absolute path
    shared.write_text("EXTRA = []\n")
    (project / "spec" / "_shared.py").symlink_to(shared)
    commit_all(project)
    for args in (["diff"], ["diff", "--rev", "HEAD"], ["diff", "--rev", "HEAD..HEAD"]):
        code, out, err = run(capsys, "--root", str(project), *args)
        assert (code, err) == (0, ""), args
        assert out.startswith("no differences in "), out


def test_diff_from_a_revision_whose_module_does_not_compile_is_one_line(fbgemm_project, capsys):
    project = fbgemm_project
    commit_all(project)
    module = project / "generated" / "fbgemm.py"
    good = module.read_bytes()
    module.write_bytes(good + b"\ndef broken(:\n")
    git(project, "commit", "-qam", "a broken module")
    module.write_bytes(good)
    git(project, "commit", "-qam", "repaired")
    code, out, err = run(capsys, "--root", str(project), "diff", "--rev", "HEAD~1..HEAD", "--format", "json")
    broken_line = len(good.splitlines()) + 2
    message = (
        "HEAD~1:generated/fbgemm.py fails to import: SyntaxError: invalid syntax "
        f"(fbgemm.py at HEAD~1, line {broken_line}); "
        "compare other revisions, or regenerate and commit at HEAD~1"
    )
    assert code == 2
    assert err.splitlines() == [f"error: {message}"]
    # Standard output stays what --format json promises: one JSON object, here the error.
    assert json.loads(out) == {"error": message, "file": None, "line": None, "exit_code": 2}


def test_the_process_never_reports_an_internal_error_for_a_non_utf8_module(x86_project):
    """The same through a real process, where stdout and the locale are the interpreter's own."""
    project = x86_project
    module = project / "generated" / "x86.py"
    module.write_bytes(b"\xff" + module.read_bytes())
    command = [sys.executable, "-m", "generator", "--root", str(project), "check"]
    env = {"PYTHONPATH": str(ROOT), "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    done = subprocess.run(command, env=env, capture_output=True)
    assert done.returncode == 1 and done.stderr == b""
    assert b"generated/x86.py: edited by hand: it is not UTF-8 text" in done.stdout
    assert planning.freshness(planning.plan(project)[-1]) == "fresh"  # the rest of the tree is untouched
