"""This user's cache folder (generator/user_cache.py): where PYTHONDONTWRITEBYTECODE leaves no .pyc, the
generator's own compiled modules are kept there, and the folder does not grow without end."""

import os
import shutil
import subprocess
import sys

from generator import user_cache
from tests.support.projects import ROOT


def test_the_generator_s_code_is_kept_for_the_user_where_python_writes_no_pyc(tmp_path):
    checkout = tmp_path / "checkout"  # a copy with no __pycache__, as a fresh clone under PYTHONDONTWRITEBYTECODE
    shutil.copytree(ROOT / "generator", checkout / "generator", ignore=shutil.ignore_patterns("__pycache__"))
    environment = dict(os.environ, XDG_CACHE_HOME=str(tmp_path), PYTHONDONTWRITEBYTECODE="1")
    environment["PYTHONPATH"] = str(checkout)
    probe = "from generator import user_cache as u; u.keep_own_bytecode(); import generator.cli as c; print(c.__file__)"
    command = [sys.executable, "-S", "-c", probe]  # -S: no site, so no editable install's finder stands in for the copy
    done = subprocess.run(command, env=environment, cwd=tmp_path, check=True, capture_output=True, text=True)
    assert done.stdout.startswith(str(checkout)), done.stdout
    kept = tmp_path / user_cache.APPLICATION / "bytecode"
    first = sorted(os.listdir(kept))
    assert len(first) > 10  # the CLI's modules, each compiled once
    subprocess.run(command, env=environment, cwd=tmp_path, check=True, capture_output=True)
    assert sorted(os.listdir(kept)) == first  # found again, not compiled again
    assert not list(checkout.rglob("*.pyc"))  # nothing written beside the source
    assert oct(os.stat(kept.parent).st_mode & 0o777) == oct(0o700)  # the user's alone, as the cache secret's


def test_the_kept_code_stays_within_bounds_and_the_newest_stays(tmp_path):
    for index in range(user_cache.KEPT + 10):
        entry = tmp_path / f"{index:06d}"
        entry.write_bytes(b"")
        os.utime(entry, ns=(index * 10**9, index * 10**9))
    user_cache.prune(str(tmp_path))
    left = sorted(os.listdir(tmp_path))
    assert len(left) == (user_cache.KEPT + 10) - (user_cache.KEPT + 10) // 2
    assert left[-1] == f"{user_cache.KEPT + 9:06d}" and left[0] == f"{(user_cache.KEPT + 10) // 2:06d}"
