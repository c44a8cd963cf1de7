"""The refs walk (generator/building/expansion.py torch_refs) finds every torch name a module uses, where it is
first used, walking each shared value once: importability reports each package's first use, and rendering
imports what the refs name."""

from generator.building import pipeline
from generator.building.expansion import torch_refs
from generator.model import TorchRef
from tests.support.projects import ROOT


def every_ref(value):
    """Every TorchRef inside a model value, depth first, in field order: each occurrence walked."""
    if isinstance(value, TorchRef):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from every_ref(item)
    elif hasattr(value, "__dataclass_fields__"):
        for name in value.__dataclass_fields__:
            if name != "location":
                yield from every_ref(getattr(value, name))


def test_walking_shared_values_once_finds_every_ref_first_used_where_the_full_walk_does():
    """importability reports each package's first use, and rendering imports what the refs name."""
    for module in pipeline.load(ROOT, validate=False):
        full = list(every_ref(module))
        found = torch_refs(module)
        assert len(found) < len(full), module.spec.name  # it does skip shared values
        assert [id(r) for r in dict.fromkeys(full)] == [id(r) for r in dict.fromkeys(found)], module.spec.name
        assert list(dict.fromkeys(full)) == list(dict.fromkeys(found)), module.spec.name
