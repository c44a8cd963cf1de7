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
import itertools
import re
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

    def declared_keys(self) -> set:
        """torch's keys of the patterns the spec declares different from the reference: each added, removed or
        changed pattern, and each pattern that uses a dtype config declared changed."""
        from generator.review.divergence import torch_key

        keys = set()
        for declaration in self.declarations:
            if declaration.of_dtype_config:
                keys |= {torch_key(key) for key, _index in declaration.uses}
            else:
                keys.add(torch_key(declaration.key))
        return keys

    def reference_as_declared(self):
        """The reference builder's BackendConfig with the declared differences applied: each declared pattern
        as the generated builder configures it (added, changed) or gone (removed), every other one torch's.
        What the generated builder must do in any flow (tests/test_fx_flows.py)."""
        from torch.ao.quantization.backend_config import BackendConfig

        theirs, declared = self.theirs()(), self.declared_keys()
        if not declared:
            return theirs
        ours, keyed = dict(_keyed(self.ours()())), _keyed(theirs)
        configs = [ours.get(key) if key in declared else config for key, config in keyed]
        configs += [config for key, config in ours.items() if key in declared and key not in dict(keyed)]
        return BackendConfig(theirs.name).set_backend_pattern_configs([c for c in configs if c is not None])

    def theirs(self):
        """The reference builder, imported as `python -m generator diff` does (project root on sys.path)."""
        if self.reference is None:
            raise LookupError(f"{self.id} has no reference builder")
        module, _, function = self.reference.rpartition(".")
        with resolution.project_on_path(self.root):
            return getattr(importlib.import_module(module), function)


def _keyed(config) -> list:
    from generator.review.identity import pattern_key

    return [(pattern_key(pattern_config), pattern_config) for pattern_config in config.configs]


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


def reference_side(builders: list[Builder]) -> str:
    """What `diff --against-torch` calls the side it compares with (docs/reviewing.md, "old"): "torch"
    while every reference builder is torch's, else the one reference builder's path, or "reference"."""
    references = sorted({b.reference for b in builders if b.reference})
    if all(reference.startswith("torch.") for reference in references):
        return "torch"
    return references[0] if len(references) == 1 else "reference"


# Activation modules of torch.nn, any of which a test may add to a spec as an op the project has never used
# (not Mish: docs/adding-a-backend.md's example adds it, and tests/test_equivalence.py follows the docs).
NEW_OP_CANDIDATES = ("SiLU", "GELU", "Softsign", "Tanhshrink", "SELU", "CELU", "Softplus", "Hardshrink")


@functools.cache
def unused_nn_op(root: Path = ROOT) -> str:
    """The name in torch.nn of an activation module no spec file of the project names and no generated module
    registers (SiLU, unless a backend of the user's own quantizes it), for tests about a torch name new to it."""
    texts = [path.read_text() for folder in ("spec", "generated") for path in (root / folder).rglob("*.py")]
    return next(name for name in NEW_OP_CANDIDATES if not any(re.search(rf"\b{name}\b", text) for text in texts))


def unused_backend_name(wanted: str, root: Path = ROOT) -> str:
    """`wanted`, or `wanted_2`, ...: a name no backend of the project has and no spec file holds (its backends
    may be a user's own: an ACME NPU imported into spec/acme_npu.py), for a test that imports a builder."""
    taken = {b.id for b in (BUILDERS if root == ROOT else discover(root))}
    taken |= {path.stem for path in (root / "spec").glob("*.py")}
    names = itertools.chain([wanted], (f"{wanted}_{n}" for n in itertools.count(2)))
    return next(name for name in names if name not in taken)
