"""`import` attacked with builders as they exist in the wild: each outcome is a spec proven
equal, or one line, exit 2, nothing written (tests/test_import.py has the main cases)."""

import importlib.util
import textwrap

import pytest

from generator.review.equality import compare_backend_configs
from tests.support.cli_runs import run


def load_generated(path):
    spec = importlib.util.spec_from_file_location(f"wild_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def snapshot(project):
    """Every file of the project but the generator's caches (.cache/: a refused import may still keep
    what it compiled, which changes no output)."""
    files = (p for p in sorted(project.rglob("*")) if p.is_file() and ".cache" not in p.relative_to(project).parts)
    return {p.relative_to(project): p.read_bytes() for p in files}


def write_package(project, package: str, source: str) -> None:
    """A vendor package that merely sits in the project root: not installed, not on PYTHONPATH."""
    (project / package).mkdir()
    (project / package / "__init__.py").write_text("")
    (project / package / "backend.py").write_text(textwrap.dedent(source))


def test_import_refuses_a_fuser_importable_only_from_the_project_root(fresh_project, capsys):
    """regenerate refuses such a name (generated modules must import from any folder): import did not."""
    write_package(fresh_project, "wild_vendor_partial", """
        import functools

        import torch
        import torch.ao.nn.intrinsic as nni
        import torch.nn as nn
        from torch.ao.quantization.backend_config import BackendConfig, BackendPatternConfig, DTypeConfig

        int8 = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8)


        def fuse_with(cls, is_qat, conv, relu):
            return cls(conv, relu)


        def get_config():
            fuser = functools.partial(fuse_with, nni.ConvReLU2d)
            pattern = BackendPatternConfig((nn.Conv2d, nn.ReLU)).set_dtype_configs([int8])
            return BackendConfig("wild").set_backend_pattern_config(
                pattern.set_fuser_method(fuser).set_fused_module(nni.ConvReLU2d)
            )
    """)
    before = snapshot(fresh_project)
    code, out = run(capsys, "--root", str(fresh_project), "import", "wild_vendor_partial.backend:get_config")
    assert code == 2, out
    assert out.startswith("error: not written: regenerate would refuse spec/config.py as import made it ("
                          "spec/config.py:") and out.count("\n") == 1, out
    assert "wild_vendor_partial.backend.fuse_with is importable only from the project root" in out
    assert snapshot(fresh_project) == before


def test_import_refuses_a_users_fuser_that_a_template_matches_only_on_the_trials(fresh_project, capsys):
    """The comparator tries fusers on a few real modules; this one differs on a 7x7 conv, which it
    never builds. A template that behaves alike on the trials must not stand for a user's function:
    the generated module would be "proven equal" and differ."""
    write_package(fresh_project, "wild_vendor_branching", """
        import torch
        import torch.ao.nn.intrinsic as nni
        import torch.nn as nn
        from torch.ao.quantization.backend_config import BackendConfig, BackendPatternConfig, DTypeConfig

        int8 = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8)


        def get_config():
            def fuse(is_qat, conv, relu):
                if conv.kernel_size == (7, 7):
                    return nn.Sequential(conv, relu)  # our kernels have no fused 7x7
                return nni.ConvReLU2d(conv, relu)

            pattern = BackendPatternConfig((nn.Conv2d, nn.ReLU)).set_dtype_configs([int8])
            return BackendConfig("wild").set_backend_pattern_config(
                pattern.set_fuser_method(fuse).set_fused_module(nni.ConvReLU2d)
            )
    """)
    before = snapshot(fresh_project)
    code, out = run(capsys, "--root", str(fresh_project), "import", "wild_vendor_branching.backend:get_config")
    assert code == 2, out
    assert out == ("error: pattern (nn.Conv2d, nn.ReLU): cannot name fuser_method wild_vendor_branching.backend"
                   ".get_config.<locals>.fuse: it is local to get_config(), which returns a BackendConfig, not a "
                   "callable; define it, or the factory that makes it and each argument it is given, at module "
                   "level of wild_vendor_branching.backend\n")
    assert snapshot(fresh_project) == before


CALLABLE_OBJECTS = """
    import torch
    import torch.ao.nn.intrinsic as nni
    import torch.nn as nn
    from torch.ao.quantization.backend_config import BackendConfig, BackendPatternConfig, DTypeConfig

    int8 = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8)


    class Fuser:
        def __init__(self, cls):
            self.cls = cls

        def __call__(self, is_qat, conv, relu):
            return self.cls(conv, relu)


    class _Options:
        pass


    CONV_RELU_FUSER = Fuser(nni.ConvReLU2d)
    _OPTIONS = _Options()


    def make_fuser(options):
        def fuse(is_qat, conv, relu):
            return nni.ConvReLU2d(conv, relu) if options is not None else None

        return fuse


    def _config(pattern, fuser):
        return BackendPatternConfig(pattern).set_dtype_configs([int8]).set_fuser_method(fuser)


    def get_config():
        return (
            BackendConfig("wild")
            .set_backend_pattern_config(_config((nn.Conv2d, nn.ReLU), CONV_RELU_FUSER))
            .set_backend_pattern_config(_config((nn.Conv1d, nn.ReLU), make_fuser(_OPTIONS)))
        )


    def get_unbound_config():
        return BackendConfig("wild").set_backend_pattern_config(_config((nn.Conv2d, nn.ReLU), Fuser(nni.ConvReLU2d)))
"""


def test_import_names_callable_objects_by_the_module_level_names_they_are_bound_to(fresh_project, capsys, monkeypatch):
    """A callable instance used as a fuser, and an object a factory closes over, are importable by the
    global they are bound to (public or not); unbound, they are refused with what to do."""
    site = fresh_project.parent / "site"  # an installed package: on sys.path wherever a generated module runs
    site.mkdir()
    write_package(site, "wild_vendor_objects", CALLABLE_OBJECTS)
    monkeypatch.syspath_prepend(str(site))
    before = snapshot(fresh_project)
    code, out = run(capsys, "--root", str(fresh_project), "import", "wild_vendor_objects.backend:get_unbound_config")
    assert code == 2, out
    assert out.startswith("error: pattern (nn.Conv2d, nn.ReLU): cannot name fuser_method <wild_vendor_objects."
                          "backend.Fuser object at ") and out.count("\n") == 1, out
    assert out.endswith("; define it (or bind the object) at module level of wild_vendor_objects.backend\n"), out
    assert snapshot(fresh_project) == before

    code, out = run(capsys, "--root", str(fresh_project), "import", "wild_vendor_objects.backend:get_config")
    assert code == 0, out
    spec_text = "".join((fresh_project / "spec" / "config.py").read_text().split())  # as black wraps it or not
    assert 'fuser_method=importable("wild_vendor_objects.backend.CONV_RELU_FUSER")' in spec_text
    assert ('fuser_method=call(importable("wild_vendor_objects.backend.make_fuser"),'
            'importable("wild_vendor_objects.backend._OPTIONS")') in spec_text
    code, out = run(capsys, "--root", str(fresh_project), "regenerate")
    assert code == 0, out
    generated = load_generated(fresh_project / "generated" / "config.py")
    from wild_vendor_objects.backend import get_config

    assert compare_backend_configs("wild", generated.get_config(), get_config()) == []
    assert generated.get_config().configs[0].fuser_method is get_config().configs[0].fuser_method


@pytest.mark.parametrize(
    "bound, shown",
    [('float("nan")', "nan"), ("True", "True"), ("torch.tensor(0.5)", "tensor(0.5000)")],
)
def test_import_refuses_a_constraint_bound_a_spec_cannot_write(fresh_project, capsys, bound, shown):
    """These reached the written spec as `nan`/`tensor(...)`, refused later as a NameError in the spec
    (`float("inf")` imports: tests/test_import_forms_found.py)."""
    package = "wild_vendor_bound_" + "".join(c for c in bound if c.isalnum())
    write_package(fresh_project, package, f"""
        import torch
        import torch.nn as nn
        from torch.ao.quantization.backend_config import (
            BackendConfig, BackendPatternConfig, DTypeConfig, DTypeWithConstraints
        )


        def get_config():
            output = DTypeWithConstraints(dtype=torch.quint8, scale_min_lower_bound={bound})
            dtype_config = DTypeConfig(input_dtype=torch.quint8, output_dtype=output)
            return BackendConfig("wild").set_backend_pattern_config(
                BackendPatternConfig(nn.ReLU).set_dtype_configs([dtype_config])
            )
    """)
    before = snapshot(fresh_project)
    code, out = run(capsys, "--root", str(fresh_project), "import", f"{package}.backend:get_config")
    assert code == 2, out
    assert out == (f"error: a DTypeWithConstraints of quint8 has scale_min_lower_bound={shown}, which a spec cannot "
                   "write: a bound is an int or a float that equals itself (nan does not, so no comparison can "
                   "prove it); change what the builder returns\n")
    assert snapshot(fresh_project) == before
