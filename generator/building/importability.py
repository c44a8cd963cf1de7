"""Generated modules import the same from any working directory.

A generated module imports every object the spec names by its top-level
package (`from npu_ext.fusers import fuse_linear_relu` for
`importable("npu_ext.fusers.fuse_linear_relu")`). While the generator runs, the
project root is on sys.path, so a package folder that merely sits in the project
root imports fine here, yet `from generated.acme_npu import ...` fails from
every other folder. Such a name is refused at its spec line, before anything is
written, with the two ways to make it importable: install it, or move it into a
package that is installed.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
from pathlib import Path

from generator.building.expansion import ExpandedModule, torch_refs
from generator.errors import NotImportableError


def require_importable_anywhere(modules: list[ExpandedModule]) -> None:
    """Raise NotImportableError for the first name whose package is found only through the project root."""
    first_use = {}
    for module in modules:
        for ref in torch_refs(module):
            first_use.setdefault(ref.path.partition(".")[0], (ref, module))
    elsewhere = _path_elsewhere()
    for package, (ref, module) in first_use.items():
        if _findable(package, elsewhere):
            continue
        output = module.spec.output
        raise NotImportableError(
            f"{ref.path} is importable only from the project root ({package} is a folder there, not an installed "
            f"package), so {output} would fail to import from any other folder; list {package!r} in pyproject.toml's "
            "[tool.setuptools] packages and run pip install -e ., or move it into a package that is installed",
            ref.location,
        )


def _path_elsewhere() -> list[str]:
    """sys.path as a script started in another folder sees it: without the current folder's entry.

    `python -m generator` puts the current folder first (the project root, when
    run there). An entry that PYTHONPATH, a .pth file or an editable install adds
    stays: those reach every folder.
    """
    path = list(sys.path)
    from_environment = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    if path and (path[0] == "" or _same_folder(path[0], os.getcwd())):
        if not any(_same_folder(path[0] or os.getcwd(), entry) for entry in from_environment):
            del path[0]  # the entry `python -m` adds (__main__ drops it; an in-process caller may have it)
    return path


def _same_folder(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def _findable(package: str, path: list[str]) -> bool:
    """Whether `import package` succeeds with `path` as sys.path: not from sys.modules, which has it already.

    Finders other than the path finder (builtin and frozen modules, editable
    installs) map names to places whatever sys.path holds.
    """
    for finder in sys.meta_path:
        if finder is importlib.machinery.PathFinder:
            found = finder.find_spec(package, path)
        else:
            find_spec = getattr(finder, "find_spec", None)
            found = find_spec(package, None) if find_spec is not None else None
        if found is not None:
            return True
    return False
