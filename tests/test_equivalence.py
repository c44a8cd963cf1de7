"""Every generated builder returns exactly what torch's builder returns."""

import importlib

import pytest
from torch.ao.quantization.backend_config import BackendConfig

from generator.compare import compare_backend_configs, compare_pattern_configs
from tests.builders import BUILDERS, GENERATED_MODULES


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.id)
def test_generated_builder_equals_torch(builder):
    differences = compare_backend_configs(builder.id, builder.ours()(), builder.theirs()())
    assert not differences, "\n".join(map(str, differences))


def test_all_nine_builders_cover_torch_s_1429_patterns():
    assert sum(len(b.ours()().configs) for b in BUILDERS) == 1429


@pytest.mark.parametrize("builder", [b for b in BUILDERS if b.dict_function], ids=lambda b: b.id)
def test_dict_builder_equals_torch(builder):
    ours = getattr(importlib.import_module(f"generated.{builder.module}"), builder.dict_function)()
    module = importlib.import_module(f"torch.ao.quantization.backend_config.{builder.torch_module}")
    theirs = getattr(module, builder.dict_function)()
    assert ours.keys() == theirs.keys()
    assert [c.keys() for c in ours["configs"]] == [c.keys() for c in theirs["configs"]]
    differences = compare_backend_configs(
        builder.id, BackendConfig.from_dict(ours), BackendConfig.from_dict(theirs)
    )
    assert not differences, "\n".join(map(str, differences))


@pytest.mark.parametrize("module", GENERATED_MODULES)
def test_module_exports_torch_s_public_names(module):
    ours = importlib.import_module(f"generated.{module}")
    torch_module = next(b.torch_module for b in BUILDERS if b.module == module)
    theirs = importlib.import_module(f"torch.ao.quantization.backend_config.{torch_module}")
    expected = set(getattr(theirs, "__all__", [b.function for b in BUILDERS if b.module == module]))
    assert set(ours.__all__) == expected
    for name in ours.__all__:
        assert getattr(ours, name) is not None


def test_exported_dtype_configs_equal_torch_s():
    import torch.ao.quantization.backend_config.native as theirs

    import generated.native as ours

    names = [n for n in theirs.__all__ if n.endswith("_dtype_config")]
    assert names
    for name in names:
        assert vars(getattr(ours, name)) == vars(getattr(theirs, name)), name


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.id)
def test_any_single_field_change_in_a_generated_pattern_fails_the_comparison(builder):
    """The equality test above cannot pass against a broken generated module."""
    from tests.test_compare import _mutations, _top_level_field

    theirs = builder.theirs()().configs
    missed = []
    for ours, expected in zip(builder.ours()().configs, theirs, strict=True):
        for field, mutated in _mutations(ours):
            reported = {d.field for d in compare_pattern_configs(builder.id, mutated, expected)}
            if _top_level_field(field) not in {_top_level_field(f) for f in reported}:
                missed.append(f"{ours.pattern or ours._pattern_complex_format}: {field}")
    assert not missed
