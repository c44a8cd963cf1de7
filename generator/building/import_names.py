"""The name a generated module binds each object it imports by name under, so that it binds no name twice.

A module imports torch's objects and the user's by name (`from M import name`). Two objects of one name
(torch's `fuse_conv_bn` and a vendor's own), or an object named like something the module binds anyway,
would make one import replace the other silently: every use would get the object imported last. Each
such object is imported under an alias that says where it comes from, its module's dotted path with
underscores, then its name:

    from acme_npu.backend import fuse_conv_bn as acme_npu_backend_fuse_conv_bn

Who keeps the plain name, decided from the module's contents alone (never from the order of anything),
so the same spec always renders the same module:
- a name the module binds whatever it imports (`torch`, `__all__`, `nn`, `F` and the other module
  aliases, the backend_config classes the template imports, the names the spec gives its dtype configs,
  constraints, functions and builders, Python's built-ins) keeps it: every import of another object of
  that name is aliased;
- of several objects imported under one name, torch's keeps it when exactly one of them is torch's, so
  a torch module that gains a vendor's namesake changes only the vendor's lines; else each is aliased.
An object whose name nothing else in the module takes keeps its plain name, as every committed torch
module's objects do. The static check that no module binds a name twice is output_check.check_bindings.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable

from generator.building.expansion import ExpandedModule
from generator.spelling import FROM_IMPORT_MODULES, MODULE_ALIASES, split_ref

BACKEND_CONFIG = "torch.ao.quantization.backend_config"
# What the template imports from torch's backend_config, whatever the spec holds (rendering._names_imported
# imports some of them, as a module needs them; each is kept for backend_config's object all the same).
TEMPLATE_NAMES = ("BackendConfig", "BackendPatternConfig", "DTypeConfig", "DTypeWithConstraints", "ObservationType")
# Names every module binds, or may, that no imported object may take: the package of the module's
# `import torch.ao.quantization.backend_config.utils` line, the export list, the module aliases.
_BOUND_ANYWAY = frozenset({"torch", "__all__", *MODULE_ALIASES.values(), *dir(builtins)})


def chosen_names(module: ExpandedModule) -> list[str]:
    """Every name the spec chooses for a module-level definition: its constraints, dtype configs, functions
    and builders (naming.check_spec_names checks them; the check memo keys on them)."""
    names = [value.name for values in (module.constraints, module.dtype_configs, module.functions) for value in values]
    builders = [getattr(b.backend, argument) for b in module.backends for argument in ("builder", "dict_builder")]
    return names + [name for name in builders if name]


def import_aliases(module: ExpandedModule, paths: Iterable[str]) -> dict[tuple[str, str], str]:
    """{(module path, name): alias} for each object of `paths` (the module's references) that the generated
    module must import under an alias; an object not in it is imported under its own name."""
    importers: dict[str, set[str]] = {}  # an imported name -> the modules it is imported from
    for path in dict.fromkeys(paths):
        source, rest, by_name = split_ref(path)
        if by_name:
            importers.setdefault(rest.split(".")[0], set()).add(source)
    taken = _BOUND_ANYWAY | set(chosen_names(module)) | set(TEMPLATE_NAMES)
    aliased = []
    for name, sources in importers.items():
        keeper = _keeper(name, sources, taken)
        aliased += [(source, name) for source in sources if source != keeper]
        if keeper is not None:
            taken = taken | {name}
    aliases = {}
    taken = set(taken)
    for source, name in sorted(aliased):
        base = f"{source.replace('.', '_')}_{name}"
        alias, count = base, 1
        while alias in taken:  # a user's object named like another's alias: never met, but never a clash
            count += 1
            alias = f"{base}_{count}"
        taken.add(alias)
        aliases[source, name] = alias
    return aliases


def _keeper(name: str, sources: set[str], taken: set[str]) -> str | None:
    """The one module whose object of this name is imported under the name itself, or None."""
    if name in TEMPLATE_NAMES:
        return BACKEND_CONFIG
    if name in taken:
        return None
    if len(sources) == 1:
        return next(iter(sources))
    torch_sources = [source for source in sources if source in FROM_IMPORT_MODULES]
    return torch_sources[0] if len(torch_sources) == 1 else None
