"""Every builder the spec describes, discovered from spec/, and the reference builder each must equal.

The spec is loaded and expanded by the generator's own first stages (no torch
names are validated, nothing is rendered), so a backend added as one spec file
is covered by every test that iterates `BUILDERS`, and no test names the set or
the number of backends. A builder the spec forgets is caught elsewhere: the
equality tests import each reference builder by the path the spec gives, and
`test_equivalence` checks that every builder torch's backend_config package
exports is some backend's reference.
"""

import functools
import importlib
import importlib.util
import types
from dataclasses import dataclass, field
from pathlib import Path

from generator.building import pipeline, resolution
from generator.building.expansion import Declaration, ExpandedBackend

ROOT = Path(__file__).resolve().parent.parent.parent


@dataclass(frozen=True)
class Builder:
    id: str  # the backend's label: the name users see and type
    module: str  # generated/<module>.py
    function: str
    dict_function: str | None
    reference: str | None  # dotted path of the dynamic builder this one must equal (None: no reference)
    declarations: tuple[Declaration, ...] = field(repr=False)  # declared differences from the reference
    expanded: ExpandedBackend = field(compare=False, repr=False)  # the spec's own expansion
    root: Path = ROOT  # the project it was discovered in (tests also work on copies)

    @property
    def reference_module(self) -> str | None:
        return self.reference.rpartition(".")[0] if self.reference else None

    @property
    def torch_module(self) -> str | None:
        """The reference's module under torch.ao.quantization.backend_config (benchmarks use it)."""
        prefix = "torch.ao.quantization.backend_config."
        module = self.reference_module
        return module.removeprefix(prefix) if module and module.startswith(prefix) else None

    def generated_module(self):
        if self.root == ROOT:
            return importlib.import_module(f"generated.{self.module}")
        return _module_from_file(self.root / "generated" / f"{self.module}.py")

    def ours(self):
        return getattr(self.generated_module(), self.function)

    def theirs(self):
        """The reference builder, imported as `python -m generator diff` does (project root on sys.path)."""
        if self.reference is None:
            raise LookupError(f"{self.id} has no reference builder")
        module, _, function = self.reference.rpartition(".")
        with resolution.project_on_path(self.root):
            return getattr(importlib.import_module(module), function)


def discover(root: Path = ROOT) -> list[Builder]:
    """The builders of every spec file under `root`, in spec order."""
    return [
        Builder(
            id=expanded.backend.label,
            module=module.spec.name,
            function=expanded.backend.builder,
            dict_function=expanded.backend.dict_builder,
            reference=expanded.backend.reference,
            declarations=expanded.declarations,
            expanded=expanded,
            root=root,
        )
        for module in pipeline.load(root, validate=False)
        for expanded in module.backends
    ]


@functools.cache
def _module_from_file(path: Path) -> types.ModuleType:
    """A generated module of a project copy, imported once under a name of its own."""
    spec = importlib.util.spec_from_file_location(f"generated_copy_{len(_LOADED)}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _LOADED.append(module)
    return module


_LOADED: list[types.ModuleType] = []
BUILDERS = discover()
REFERENCED = [b for b in BUILDERS if b.reference]
GENERATED_MODULES = sorted({b.module for b in BUILDERS})
