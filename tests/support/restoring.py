"""Make a copy of a project what a fresh copy of it is, changing only what differs: tests/support/projects.py
restored_in_place, which gives each test of a module the project the test before left, restored.

What a fresh copy holds: the folders copied (each file's bytes, mode and modification time, nothing more
in them), and nothing else (the caller puts the session's caches back into .cache/).
"""

import os
import shutil
import stat
from functools import cache
from pathlib import Path


@cache
def committed(
    base: Path, copied: tuple[str, ...]
) -> tuple[dict[str, tuple[bytes, os.stat_result]], dict[str, os.stat_result]]:
    """The files of `base` (the repository, or a reduction of it) as a copy of its folders `copied` copies
    them, {relative path: (bytes, stat)}, and the folders' stats."""
    files, folders = {}, {}
    for folder in copied:
        for parent, names, file_names in os.walk(base / folder):
            names[:] = [n for n in names if n != "__pycache__"]
            relative = Path(parent).relative_to(base)
            folders[str(relative)] = os.stat(parent)
            for name in file_names:
                path = Path(parent) / name
                files[str(relative / name)] = (path.read_bytes(), path.stat())
    return files, folders


def restore(project: Path, base: Path, copied: tuple[str, ...]) -> None:
    """Make `project` what a copy of the folders `copied` of `base` is, changing only what differs from it."""
    files, folders = committed(base, copied)
    for entry in os.scandir(project):
        if entry.name not in copied:
            _remove(Path(entry.path))  # .cache/ too: the caller puts the session's caches back
    for folder in copied:
        for parent, names, file_names in os.walk(project / folder, topdown=True):
            relative = Path(parent).relative_to(project)
            for name in list(names):
                if str(relative / name) not in folders or (Path(parent) / name).is_symlink():
                    _remove(Path(parent) / name)
                    names.remove(name)
            for name in file_names:
                path = Path(parent) / name
                wanted = files.get(str(relative / name))
                found = path.lstat()
                if wanted is None or not stat.S_ISREG(found.st_mode) or found.st_mode != wanted[1].st_mode:
                    _remove(path)
                elif found.st_mtime_ns != wanted[1].st_mtime_ns or path.read_bytes() != wanted[0]:
                    shutil.copy2(base / relative / name, path)
    for relative in folders:  # parents first (os.walk's order)
        (project / relative).mkdir(exist_ok=True)
    for relative in files:
        if not (project / relative).exists():
            shutil.copy2(base / relative, project / relative)
    for relative, wanted in folders.items():  # last: a file added or removed changed its folder's time
        found = (project / relative).stat()
        if (found.st_mode, found.st_mtime_ns) != (wanted.st_mode, wanted.st_mtime_ns):
            shutil.copystat(base / relative, project / relative)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
