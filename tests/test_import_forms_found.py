"""Builder forms found in public builders that `import` once refused, now imported and proven equal:

- a fuser that is a lambda bound to a module-level name (`_fuse = lambda ...`): imported by that name;
- `functools.partial(f, [1, 0])`, a list among a partial's arguments: `list((1, 0))`, an equal list;
- `float("inf")` and `-float("inf")` bounds: spelt so in the spec and the generated module;
- classes and fusers of a module loaded by a path that is not made of identifiers
  (`importlib.import_module("projects.nas-mqbench.models.quant")`, as OpenMMLab projects load theirs): named
  through the module-level name the builder's module binds that module to; refused in one line, naming the
  folder, where no module binds it.
"""

import importlib
import importlib.util
import sys
import textwrap

import pytest

from generator.review.equality import compare_backend_configs
from tests.support.cli_runs import run

FORMS = """
    import functools

    import torch
    import torch.ao.nn.intrinsic as nni
    import torch.nn as nn
    from torch.ao.quantization.backend_config import (
        BackendConfig, BackendPatternConfig, DTypeConfig, DTypeWithConstraints
    )

    int8 = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8)
    unbounded = DTypeWithConstraints(
        dtype=torch.quint8, scale_min_lower_bound=-float("inf"), scale_max_upper_bound=float("inf")
    )
    wide = DTypeConfig(input_dtype=unbounded, output_dtype=unbounded)

    _fuse = lambda is_qat, conv, relu: nni.ConvReLU2d(conv, relu)  # noqa: E731


    def fuse_in_order(order, is_qat, *modules):
        return nn.Sequential(*(modules[i] for i in order))


    def get_config():
        return BackendConfig("forms").set_backend_pattern_configs([
            BackendPatternConfig((nn.Conv2d, nn.ReLU)).set_dtype_configs([int8]).set_fuser_method(_fuse),
            BackendPatternConfig((nn.Linear, nn.ReLU)).set_dtype_configs([int8])
            .set_fuser_method(functools.partial(fuse_in_order, [1, 0])),
            BackendPatternConfig(nn.ReLU).set_dtype_configs([wide]),
        ])
"""

NAS_MODELS = """
    import torch.nn as nn


    class ConvReLU2dNas(nn.Sequential):
        pass


    def fuse_conv_relu(is_qat, conv, relu):
        return ConvReLU2dNas(conv, relu)
"""

NAS_BACKEND = """
    import importlib

    import torch
    import torch.nn as nn
    from torch.ao.quantization.backend_config import BackendConfig, BackendPatternConfig, DTypeConfig

    quant = importlib.import_module("projects.nas-mqbench.models.quant")
    int8 = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8)


    def get_config():
        return BackendConfig("nas").set_backend_pattern_config(
            BackendPatternConfig((nn.Conv2d, nn.ReLU))
            .set_dtype_configs([int8])
            .set_fused_module(quant.ConvReLU2dNas)
            .set_fuser_method(quant.fuse_conv_relu)
        )

"""

NAS_UNBOUND_BACKEND = """
    import importlib

    import torch
    import torch.nn as nn
    from torch.ao.quantization.backend_config import BackendConfig, BackendPatternConfig, DTypeConfig

    int8 = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8)


    def get_unbound_config():
        models = importlib.import_module("projects.nas-mqbench.models.quant")
        return BackendConfig("nas").set_backend_pattern_config(
            BackendPatternConfig((nn.Conv2d, nn.ReLU)).set_dtype_configs([int8]).set_fused_module(models.ConvReLU2dNas)
        )
"""


@pytest.fixture(autouse=True)
def forgotten():
    """Each test imports its packages afresh, and leaves none behind (a module bound to a global is found
    through sys.modules)."""

    def forget():
        for name in [n for n in sys.modules if n.partition(".")[0] in ("found_forms", "found_nas", "projects",
                                                                        "found_nas_unbound")]:  # fmt: skip
            del sys.modules[name]

    forget()
    yield
    forget()


def write(site, relative: str, source: str) -> None:
    path = site / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))


def site_with(project, monkeypatch, files: dict[str, str]):
    """A site folder outside the project (on sys.path wherever a generated module runs, as an installed
    package's), holding `files`."""
    site = project.parent / "site"
    for relative, source in files.items():
        write(site, relative, source)
    monkeypatch.syspath_prepend(str(site))
    return site


def snapshot(project):
    files = (p for p in sorted(project.rglob("*")) if p.is_file() and ".cache" not in p.relative_to(project).parts)
    return {p.relative_to(project): p.read_bytes() for p in files}


def imported_equal(capsys, project, target: str, name: str) -> str:
    """Import target as spec/NAME.py, regenerate, and prove the generated builder equal to it; the spec."""
    code, out = run(capsys, "--root", str(project), "import", target, "--name", name)
    assert code == 0, out
    code, out = run(capsys, "--root", str(project), "regenerate")
    assert code == 0, out
    path = project / "generated" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"forms_found_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module_name, function = target.split(":")
    theirs = getattr(importlib.import_module(module_name), function)()
    assert compare_backend_configs(name, getattr(module, function)(), theirs) == []
    return (project / "spec" / f"{name}.py").read_text()


def test_a_module_level_lambda_a_list_in_a_partial_and_infinite_bounds_import_equal(
    fresh_project, capsys, monkeypatch
):
    site_with(fresh_project, monkeypatch, {"found_forms/__init__.py": "", "found_forms/backend.py": FORMS})
    spec = imported_equal(capsys, fresh_project, "found_forms.backend:get_config", "found_forms")
    flat = "".join(spec.split())
    assert 'fuser_method=importable("found_forms.backend._fuse")' in flat
    assert 'partial(importable("found_forms.backend.fuse_in_order"),call(importable("builtins.list"),(1,0)))' in flat
    assert 'scale_min_lower_bound=-float("inf"),scale_max_upper_bound=float("inf")' in flat
    generated = "".join((fresh_project / "generated" / "found_forms.py").read_text().split())
    assert 'scale_min_lower_bound=-float("inf"),scale_max_upper_bound=float("inf")' in generated


def test_classes_of_a_module_loaded_by_a_path_that_is_no_identifier_are_named_through_its_alias(
    fresh_project, capsys, monkeypatch
):
    site_with(fresh_project, monkeypatch, {
        "projects/nas-mqbench/models/quant.py": NAS_MODELS,
        "found_nas/__init__.py": "",
        "found_nas/backend.py": NAS_BACKEND,
    })  # fmt: skip
    spec = imported_equal(capsys, fresh_project, "found_nas.backend:get_config", "found_nas")
    flat = "".join(spec.split())
    assert 'fused_module=importable("found_nas.backend.quant.ConvReLU2dNas")' in flat
    assert 'fuser_method=importable("found_nas.backend.quant.fuse_conv_relu")' in flat
    assert "nas-mqbench" not in spec


def test_one_no_module_binds_is_refused_in_one_line_naming_the_folder(fresh_project, capsys, monkeypatch):
    site_with(fresh_project, monkeypatch, {
        "projects/nas-mqbench/models/quant.py": NAS_MODELS,
        "found_nas_unbound/__init__.py": "",
        "found_nas_unbound/backend.py": NAS_UNBOUND_BACKEND,
    })  # fmt: skip
    before = snapshot(fresh_project)
    code, out = run(capsys, "--root", str(fresh_project), "import", "found_nas_unbound.backend:get_unbound_config")
    assert code == 2, out
    assert out == (
        "error: pattern (nn.Conv2d, nn.ReLU): cannot name fused_module projects.nas-mqbench.models.quant."
        "ConvReLU2dNas: its module projects.nas-mqbench.models.quant is imported by a path that is not made of "
        "identifiers ('nas-mqbench': importlib.import_module loads it, an import statement cannot), and a "
        "generated module imports what it uses with import statements; rename the folder to an identifier and "
        "import the module by that name, or bind the module to a name at module level of the builder's module\n"
    ), out
    assert snapshot(fresh_project) == before
