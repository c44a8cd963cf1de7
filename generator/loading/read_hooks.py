"""What a load's process replaces to see reads that raise no audit event (generator/loading/reads.py).

Tests of a path (os.stat, os.lstat, os.access, which os.path.exists, isfile, isdir and pathlib's tests
call, and the system module's own stat that the same functions are), opens relative to a folder
descriptor (whose audit event names the file relative to the folder), and reads of the environment
(os.environ, os.environb, os.getenv, the raw posix.environ and os.environ's own dict). A load's
process is its own, so the replacements stay; each asks the observer of the load under way, if any.
The import machinery uses its own stat, which these do not see unless it goes through the system module.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable

WRITING = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC  # flags of an open that writes
_access = os.access
_readlink = os.readlink  # the system's own, for descriptor_path: a look-up of the observer's, never observed
_current: Callable[[], object] = lambda: None  # noqa: E731 - the observer of the load under way (install)


def install(current: Callable[[], object]) -> None:
    """Replace the functions and mappings above; `current()` is the observer of the load under way, or None."""
    global _current
    _current = current
    os.stat, os.lstat, os.access = _tested(os.stat), _tested(os.lstat), _tested(os.access)
    os.readlink, os.open = _tested(os.readlink), _opened(os.open)
    system = sys.modules.get(os.name)  # posix (or nt): the same functions, reached without os
    if system is not None:
        system.stat, system.lstat, system.access, system.open = os.stat, os.lstat, os.access, os.open
        system.readlink = os.readlink
        if isinstance(getattr(system, "environ", None), dict):
            system.environ = _observed_mapping(system.environ)
    for mapping in (os.environ, getattr(os, "environb", None)):
        if mapping is not None and type(mapping).__module__ == "os":
            mapping.__class__ = _observed_environment(type(mapping))
            if type(getattr(mapping, "_data", None)) is dict:
                mapping._data = _observed_mapping(mapping._data)


def descriptor_path(fd: int) -> str | None:
    """The path an open folder descriptor is open on, where the system says (Linux's /proc)."""
    try:
        return _readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def _watching():
    """The observer of the load under way, when what happens now is the load's own; else None."""
    observer = _current()
    return observer if observer is not None and observer.watching() else None


def _tested(real):
    """os.stat, os.lstat or os.access, noting the path project code tests while a load is observed."""

    def tested(path, *args, **kwargs):
        observer = _watching()
        if observer is not None:
            if not isinstance(path, int) and kwargs.get("dir_fd") is None:
                try:
                    observer.note_test(path)
                except PermissionError:
                    raise  # refused (a read in a process a load forked): the user's call fails
                except Exception:  # noqa: S110 - observing must not fail the user's own call
                    pass
            mode = args[0] if args else kwargs.get("mode", os.F_OK)
            if real is _access and isinstance(mode, int) and mode & (os.R_OK | os.W_OK):
                with contextlib.suppress(Exception):
                    observer.refuse(f"asks os.access whether it may read or write {path!r}, which depends on who "
                                    "runs it and is not recorded; open the file, or test it with os.path.exists")
        return real(path, *args, **kwargs)

    tested.__name__, tested.__qualname__, tested.__doc__ = real.__name__, real.__name__, real.__doc__
    return tested


def _observed_environment(base: type) -> type:
    """os.environ's class, noting the variables project code reads (and those a load sets) while a load is observed."""

    def noted(mapping, key) -> None:
        observer = _watching()
        if observer is not None:
            try:
                name = key if key is None else os.fsdecode(key)
            except (TypeError, ValueError):
                return
            try:
                observer.note_variable(name)
            except Exception:  # noqa: S110 - observing must not fail the user's own read
                pass

    def changed(mapping, key) -> None:
        observer = _watching()
        if observer is not None:
            with contextlib.suppress(Exception):
                observer.note_change(os.fsdecode(key))

    class ObservedEnvironment(base):
        def __getitem__(self, key):
            noted(self, key)
            return base.__getitem__(self, key)

        def __iter__(self):
            noted(self, None)
            return base.__iter__(self)

        def __len__(self):
            noted(self, None)
            return base.__len__(self)

        def __repr__(self):
            noted(self, None)
            return base.__repr__(self)

        def __setitem__(self, key, value):
            changed(self, key)
            base.__setitem__(self, key, value)

        def __delitem__(self, key):
            changed(self, key)
            base.__delitem__(self, key)

    ObservedEnvironment.__name__ = ObservedEnvironment.__qualname__ = base.__name__
    return ObservedEnvironment


def _opened(real):
    """os.open, noting the file a `dir_fd=` open reads by its real path (its audit event names it relative to
    the folder descriptor, which the event does not carry)."""

    def opened(path, flags, *args, dir_fd=None, **kwargs):
        observer = _watching() if dir_fd is not None else None
        if observer is None:
            return real(path, flags, *args, dir_fd=dir_fd, **kwargs)
        folder = descriptor_path(dir_fd)
        with observer.quietly():  # the event's path is relative to the folder: not the file's
            fd = real(path, flags, *args, dir_fd=dir_fd, **kwargs)
        if folder is not None and not flags & WRITING:
            with contextlib.suppress(Exception):
                observer.note_opened_in(folder, path)
        return fd

    opened.__name__, opened.__qualname__, opened.__doc__ = real.__name__, real.__name__, real.__doc__
    return opened


def _observed_mapping(mapping: dict) -> dict:
    """A copy of the raw environment (posix.environ, os.environ._data) that notes the variables read from it."""

    def noted(key) -> None:
        observer = _watching()
        if observer is not None:
            with contextlib.suppress(Exception):
                observer.note_variable(None if key is None else os.fsdecode(key))

    class ObservedMapping(dict):
        def __getitem__(self, key):
            noted(key)
            return dict.__getitem__(self, key)

        def get(self, key, default=None):
            noted(key)
            return dict.get(self, key, default)

        def __contains__(self, key):
            noted(key)
            return dict.__contains__(self, key)

        def __iter__(self):
            noted(None)
            return dict.__iter__(self)

        def keys(self):
            noted(None)
            return dict.keys(self)

        def items(self):
            noted(None)
            return dict.items(self)

        def values(self):
            noted(None)
            return dict.values(self)

        def copy(self):
            noted(None)
            return dict(dict.items(self))

        def __len__(self):
            noted(None)
            return dict.__len__(self)

        def __repr__(self):
            noted(None)
            return dict.__repr__(self)

    return ObservedMapping(mapping)
