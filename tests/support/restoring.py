"""Make a copy of a project what a fresh copy of it is, changing only what differs: tests/support/projects.py
restored_in_place, which gives each test of a module the project the test before left, restored.

What a fresh copy holds: the folders and files copied (each file's bytes, mode and modification time,
nothing more in the folders), and nothing else (the caller puts the session's caches back into .cache/).
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
    """The files of `base` (the repository, or a reduction of it) as a copy of its folders and files `copied`
    copies them, {relative path: (bytes, stat)}, and the stats of the folders that holds them."""
    files, folders = {}, {}
    for copy in copied:
        if (base / copy).is_file():  # a file of its own (a user's package the spec imports): and its folders
            for parent in reversed(Path(copy).parents[:-1]):
                folders[str(parent)] = os.stat(base / parent)
            files[copy] = ((base / copy).read_bytes(), (base / copy).stat())
            continue
        for parent, names, file_names in os.walk(base / copy):
            names[:] = [n for n in names if n != "__pycache__"]
            relative = Path(parent).relative_to(base)
            folders[str(relative)] = os.stat(parent)
            for name in file_names:
                path = Path(parent) / name
                files[str(relative / name)] = (path.read_bytes(), path.stat())
    return files, folders


def restore(project: Path, base: Path, copied: tuple[str, ...]) -> None:
    """Make `project` what a copy of the folders and files `copied` of `base` is, changing only what differs."""
    files, folders = committed(base, copied)
    tops = {Path(copy).parts[0] for copy in copied}
    for entry in os.scandir(project):
        if entry.name not in tops:
            _remove(Path(entry.path))  # .cache/ too: the caller puts the session's caches back
    for top in sorted(tops):
        if top in files:
            if (project / top).is_dir() and not (project / top).is_symlink():
                _remove(project / top)
            _restore_file(project, base, top, files)
            continue
        for parent, names, file_names in os.walk(project / top, topdown=True):
            relative = Path(parent).relative_to(project)
            for name in list(names):
                if str(relative / name) not in folders or (Path(parent) / name).is_symlink():
                    _remove(Path(parent) / name)
                    names.remove(name)
            for name in file_names:
                _restore_file(project, base, str(relative / name), files)
    for relative in folders:  # parents first (os.walk's order, each file's folders outermost first)
        (project / relative).mkdir(exist_ok=True)
    for relative in files:
        if not (project / relative).exists():
            shutil.copy2(base / relative, project / relative)
    for relative, wanted in folders.items():  # last: a file added or removed changed its folder's time
        found = (project / relative).stat()
        if (found.st_mode, found.st_mtime_ns) != (wanted.st_mode, wanted.st_mtime_ns):
            shutil.copystat(base / relative, project / relative)


def _restore_file(project: Path, base: Path, relative: str, files: dict) -> None:
    """The file at `relative` in `project` removed if a copy has none there, else made the copied one."""
    path = project / relative
    if not path.exists() and not path.is_symlink():
        return  # copied back afterwards
    wanted = files.get(relative)
    found = path.lstat()
    if wanted is None or not stat.S_ISREG(found.st_mode) or found.st_mode != wanted[1].st_mode:
        _remove(path)
    elif found.st_mtime_ns != wanted[1].st_mtime_ns or path.read_bytes() != wanted[0]:
        shutil.copy2(base / relative, path)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
