"""Nothing of an environment variable's value is recoverable from a committed file: the manifest records only
that a spec load read it, and is the same for every teammate whose environment gives the same output. This
user's runs keep their proofs (freshness/proofs.py) by a keyed digest of the value (under the cache secret) in
their own cache, so a warm checkout proven under a value needs no build; a value not proven here (a fresh clone,
CI, a changed value) builds what was made under the variable to compare. Either way
check says what regenerate would change, and a warm checkout and a fresh one agree."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.projects import ROOT
from tests.support.spec_code import doc_prefixed

_PIN = """import os as _os
import sys as _sys

print("x86.py ran", file=_sys.stderr)
_DOC = "pin given " if _os.environ.get("X86_PIN") else "no pin "
"""


def run(project: Path, command: str, home: Path, **variables: str) -> subprocess.CompletedProcess:
    """A command in a fresh interpreter, as the user whose cache folder (and secret) is `home`."""
    environment = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(home), **variables}
    return subprocess.run([sys.executable, "-m", "generator", "--root", str(project), command], cwd=project,
                          env=environment, capture_output=True, text=True)  # fmt: skip


def manifest_of(project: Path) -> str:
    return (project / "generated" / "manifest.json").read_text()


def test_a_variable_s_value_is_in_no_committed_file_and_teammates_agree(project_with_only, tmp_path):
    project = project_with_only("x86")
    doc_prefixed(project / "spec" / "x86.py", "_DOC", _PIN)
    mine, theirs = tmp_path / "my-cache", tmp_path / "their-cache"
    assert run(project, "regenerate", mine, X86_PIN="123456").returncode == 0
    committed = manifest_of(project)
    assert json.loads(committed)["inputs"]["env:X86_PIN"] == "read"
    for found in ("123456", hashlib.sha256(b"env\0123456").hexdigest(), hashlib.sha256(b"123456").hexdigest()):
        assert found not in committed
    assert not [path for path in project.rglob("*") if path.is_file() and b"123456" in path.read_bytes()]
    # A teammate's clone (no caches, their own secret) with another pin: the same output, so fresh, and the
    # same manifest from their regenerate.
    clone = Path(shutil.copytree(project, tmp_path / "clone", ignore=shutil.ignore_patterns(".cache", "__pycache__")))
    done = run(clone, "check", theirs, X86_PIN="654321")
    assert (done.returncode, done.stdout) == (0, "2 generated files are up to date\n"), done.stdout + done.stderr
    assert run(clone, "regenerate", theirs, X86_PIN="654321").returncode == 0
    assert manifest_of(clone) == committed
    # Without a pin the output differs: stale in the clone (never seen here) and in the warm checkout alike.
    for checkout in (clone, project):
        done = run(checkout, "check", theirs if checkout == clone else mine)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "generated/x86.py: stale: environment variable X86_PIN" in done.stdout, done.stdout
    assert run(clone, "regenerate", theirs).returncode == 0
    assert '"""no pin ' in (clone / "generated" / "x86.py").read_text()


def test_a_warm_checkout_and_a_fresh_one_agree_on_a_changed_value_with_the_same_output(project_with_only, tmp_path):
    """Another pin gives the same output: both checkouts call the tree fresh (the warm one builds to see, and
    keeps a proof under the new value's keyed digest, so the next check builds nothing)."""
    project = project_with_only("x86")
    doc_prefixed(project / "spec" / "x86.py", "_DOC", _PIN)
    home = tmp_path / "cache"
    assert run(project, "regenerate", home, X86_PIN="1").returncode == 0
    clone = Path(shutil.copytree(project, tmp_path / "clone", ignore=shutil.ignore_patterns(".cache", "__pycache__")))
    for checkout in (project, clone):
        done = run(checkout, "check", home, X86_PIN="2")
        assert done.returncode == 0, done.stdout + done.stderr
    unbuildable = tmp_path / "unbuildable"  # a Jinja2 that fails to import: a check that builds fails
    (unbuildable / "jinja2").mkdir(parents=True)
    (unbuildable / "jinja2" / "__init__.py").write_text("raise ImportError('this check must not build')\n")
    done = run(project, "check", home, X86_PIN="2", PYTHONPATH=os.pathsep.join([str(unbuildable), str(ROOT)]))
    assert (done.returncode, done.stderr) == (0, ""), done.stderr  # told from the kept digest: nothing built
    assert "x86.py ran" in run(project, "check", home, X86_PIN="3").stderr  # a value not seen: built to compare
    assert os.listdir(project / ".cache" / "generator" / "proofs")  # keyed by the value's keyed digest, this user's own
