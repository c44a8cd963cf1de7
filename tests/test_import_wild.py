"""`import` attacked with builders as they exist in the wild: each outcome is a spec proven
equal, or one line, exit 2, nothing written (tests/test_import.py has the main cases)."""

import textwrap

from generator import cli


def run(capsys, *args):
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def snapshot(project):
    return {p.relative_to(project): p.read_bytes() for p in sorted(project.rglob("*")) if p.is_file()}


def write_package(project, package: str, source: str) -> None:
    """A vendor package that merely sits in the project root: not installed, not on PYTHONPATH."""
    (project / package).mkdir()
    (project / package / "__init__.py").write_text("")
    (project / package / "backend.py").write_text(textwrap.dedent(source))


def test_import_refuses_a_fuser_importable_only_from_the_project_root(project, capsys):
    """regenerate refuses such a name (generated modules must import from any folder): import did not."""
    write_package(project, "wild_vendor_partial", """
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
    before = snapshot(project)
    code, out = run(capsys, "--root", str(project), "import", "wild_vendor_partial.backend:get_config")
    assert code == 2, out
    assert out.startswith("error: not written: regenerate would refuse spec/config.py as import made it ("
                          "spec/config.py:") and out.count("\n") == 1, out
    assert "wild_vendor_partial.backend.fuse_with is importable only from the project root" in out
    assert snapshot(project) == before


def test_import_refuses_a_users_fuser_that_a_template_matches_only_on_the_trials(project, capsys):
    """The comparator tries fusers on a few real modules; this one differs on a 7x7 conv, which it
    never builds. A template that behaves alike on the trials must not stand for a user's function:
    the generated module would be "proven equal" and differ."""
    write_package(project, "wild_vendor_branching", """
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
    before = snapshot(project)
    code, out = run(capsys, "--root", str(project), "import", "wild_vendor_branching.backend:get_config")
    assert code == 2, out
    assert out == ("error: pattern (nn.Conv2d, nn.ReLU): cannot name fuser_method wild_vendor_branching.backend"
                   ".get_config.<locals>.fuse: it is local to get_config(), which returns a BackendConfig, not a "
                   "callable; define it, or the factory that makes it and each argument it is given, at module "
                   "level of an importable module\n")
    assert snapshot(project) == before
