"""This user's cache folder (generator/user_cache.py): where PYTHONDONTWRITEBYTECODE leaves no .pyc, the
generator's own compiled modules are kept there, and the folder does not grow without end."""

import hashlib
import os
import shutil
import subprocess
import sys

import pytest

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


# ---------------------------------------------------------------- only this user's, only regular files (issue 39)


def planted(tmp_path, open_to_others: str) -> tuple[list[str], dict[str, str]]:
    """A copy of the generator, and another user's code planted in this user's folder as the kept code of its
    generator/cli.py, with `open_to_others` (the user folder, the cache home above it) writable by anyone."""
    import marshal

    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "generator", checkout / "generator", ignore=shutil.ignore_patterns("__pycache__"))
    home = tmp_path / "xdg"
    kept = home / user_cache.APPLICATION / "bytecode"
    kept.mkdir(parents=True)
    for folder in (home, kept.parent, kept):
        os.chmod(folder, 0o700)
    source = checkout / "generator" / "cli.py"
    how = f"{sys.version}\0{sys.flags.optimize}\0{source}\0".encode()
    entry = kept / hashlib.sha256(how + source.read_bytes()).hexdigest()
    entry.write_bytes(marshal.dumps(compile("print('planted code ran')", str(source), "exec")))
    os.chmod({"user folder": kept.parent, "bytecode folder": kept, "cache home": home}[open_to_others], 0o777)
    environment = dict(os.environ, XDG_CACHE_HOME=str(home), PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(checkout))
    probe = "from generator import user_cache as u; u.keep_own_bytecode(); import generator.cli as c; print(c.__file__)"
    return [sys.executable, "-S", "-c", probe], environment


@pytest.mark.parametrize("open_to_others", ["user folder", "bytecode folder", "cache home"])
def test_code_another_user_could_plant_is_never_run(tmp_path, open_to_others):
    command, environment = planted(tmp_path, open_to_others)
    done = subprocess.run(command, env=environment, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "planted code ran" not in done.stdout and done.stdout.endswith("generator/cli.py\n"), done.stdout


def test_the_kept_code_is_used_where_the_folder_is_the_user_s_alone(tmp_path):
    """The same plant in a folder only the user can write is the user's own (a .pyc is trusted so too): the
    test above fails for the folder's mode, not for a planted entry that would never be read."""
    command, environment = planted(tmp_path, "user folder")
    os.chmod(tmp_path / "xdg" / user_cache.APPLICATION, 0o700)
    done = subprocess.run(command, env=environment, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "planted code ran" in done.stdout


@pytest.mark.parametrize("where", ["secret", "cache entries"])
def test_a_fifo_where_a_cache_file_belongs_holds_no_command(project_with_only, tmp_path, where):
    """A FIFO in place of the secret, or of each cache entry of the project's, is no file to read: the commands
    run (without that cache), never waiting for a writer."""
    project = project_with_only("x86")
    home = tmp_path / "xdg"
    environment = {"XDG_CACHE_HOME": str(home)}
    assert run(project, "check", environment).returncode == 0  # makes the secret, keeps entries
    if where == "secret":
        secret = home / user_cache.APPLICATION / "key"
        secret.unlink()
        os.mkfifo(secret)
    else:
        entries = [path for path in (project / ".cache").rglob("*") if path.is_file() and path.name != "write.lock"]
        assert entries
        for path in entries:
            path.unlink()
            os.mkfifo(path)
    for command in ("check", "regenerate"):
        done = run(project, command, environment)
        assert done.returncode == 0, done.stderr
    assert "unchanged generated/x86.py" in done.stdout or "up to date" in done.stdout, done.stdout


def run(project, command: str, environment: dict[str, str]) -> subprocess.CompletedProcess:
    """A command in a fresh interpreter; one that waits on a FIFO fails the test instead of holding it."""
    return subprocess.run([sys.executable, "-m", "generator", "--root", str(project), command],
                          cwd=project, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", **environment},
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_no_secret_is_made_or_read_where_another_user_could_write(project_with_only, tmp_path):
    """The cache home is writable by anyone (no sticky bit): another user could swap the user folder for one of
    theirs, with a secret they know. No secret is made or read there, so no cache entry is read or kept."""
    project = project_with_only("x86")
    home = tmp_path / "xdg"
    home.mkdir()
    os.chmod(home, 0o777)
    def entries() -> dict[str, bytes]:
        return {path.as_posix(): path.read_bytes() for path in (project / ".cache").rglob("*") if path.is_file()}

    before = entries()  # made under another secret (the test session's): no entry this user's runs trust
    assert run(project, "check", {"XDG_CACHE_HOME": str(home)}).returncode == 0
    assert not (home / user_cache.APPLICATION / "key").exists()
    assert entries() == before
    os.chmod(home, 0o700)  # the user's alone: the secret is made, and entries kept under it
    assert run(project, "check", {"XDG_CACHE_HOME": str(home)}).returncode == 0
    assert (home / user_cache.APPLICATION / "key").is_file()
    assert entries() != before
