"""`import` proves what it wrote before it keeps it: the module it would regenerate runs beside the builder,
and the equality proof (every field, callables included) compares the two BackendConfigs. Any difference,
whatever its cause, is one line naming the first differing pattern and field: exit 2, nothing written.

The tests break one piece of import (its spec writer, the renderer) the way a bug would, and check that
the proof refuses; with nothing broken the same builder imports.
"""

import importlib
import importlib.util
import textwrap

from generator.building import rendering
from generator.importer import spec_writer
from generator.review.equality import compare_backend_configs
from tests.support.cli_runs import run


def snapshot(project):
    """Every file of the project but the generator's caches."""
    files = (p for p in sorted(project.rglob("*")) if p.is_file() and ".cache" not in p.relative_to(project).parts)
    return {p.relative_to(project): p.read_bytes() for p in files}


def installed_package(project, monkeypatch, package: str, source: str) -> None:
    """A vendor package on sys.path wherever a generated module runs (as an installed one is)."""
    site = project.parent / "site"
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text("")
    (site / package / "backend.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(site))


def load_generated(path):
    spec = importlib.util.spec_from_file_location(f"proof_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# A vendor's own fuse_conv_bn (the name of torch's), beside torch's own under another name.
VENDOR = """
    import torch
    import torch.nn as nn
    from torch.ao.quantization.backend_config import (
        BackendConfig,
        BackendPatternConfig,
        DTypeConfig,
        ObservationType,
    )
    from torch.ao.quantization.fuser_method_mappings import fuse_conv_bn as torch_fuse_conv_bn

    int8 = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8)


    def fuse_conv_bn(is_qat, conv, bn):
        return nn.Sequential(conv, bn)


    def get_config():
        return BackendConfig("proof").set_backend_pattern_configs([
            BackendPatternConfig(nn.Linear)
            .set_observation_type(ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT)
            .set_dtype_configs([int8]),
            BackendPatternConfig((nn.Conv2d, nn.BatchNorm2d)).set_dtype_configs([int8]).set_fuser_method(fuse_conv_bn),
        ])


    def get_both_config():
        return get_config().set_backend_pattern_config(
            BackendPatternConfig((nn.Conv1d, nn.BatchNorm1d)).set_dtype_configs([int8])
            .set_fuser_method(torch_fuse_conv_bn)
        )
"""
TORCH_FUSE_CONV_BN = "torch.ao.quantization.fuser_method_mappings.fuse_conv_bn"


def test_a_writer_that_names_another_fuser_is_caught_and_nothing_is_written(fresh_project, capsys, monkeypatch):
    """The writer names torch's fuse_conv_bn for the vendor's function of that name (issue 30's silently
    wrong module): the spec is valid, regenerates, and would build another fuser. The proof refuses it."""
    installed_package(fresh_project, monkeypatch, "proof_writer", VENDOR)
    right = spec_writer._Writer.ref

    def wrong(self, ref):
        if ref.path == "proof_writer.backend.fuse_conv_bn":
            ref = type(ref)(TORCH_FUSE_CONV_BN)
        return right(self, ref)

    monkeypatch.setattr(spec_writer._Writer, "ref", wrong)
    before = snapshot(fresh_project)
    code, out = run(capsys, "--root", str(fresh_project), "import", "proof_writer.backend:get_config")
    assert code == 2, out
    assert out.startswith(
        "error: not written: spec/config.py as import made it regenerates a get_config() that differs from "
        "proof_writer.backend:get_config(): pattern (nn.Conv2d, nn.BatchNorm2d): fuser_method: "
        f"{TORCH_FUSE_CONV_BN} != proof_writer.backend.fuse_conv_bn ("
    ), out
    assert out.endswith("(generated != builder's); report the builder that led here\n") and out.count("\n") == 1, out
    assert snapshot(fresh_project) == before

    monkeypatch.setattr(spec_writer._Writer, "ref", right)  # nothing broken: the same builder imports
    code, out = run(capsys, "--root", str(fresh_project), "import", "proof_writer.backend:get_config")
    assert (code, out.splitlines()[0]) == (0, "written   spec/config.py: 2 patterns"), out


def test_a_renderer_that_drops_a_setting_is_caught_and_nothing_is_written(fresh_project, capsys, monkeypatch):
    installed_package(fresh_project, monkeypatch, "proof_renderer", VENDOR)
    right = rendering.render_module

    def wrong(module, templates_dir):
        text = right(module, templates_dir)
        return text.replace(".set_observation_type(ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT)", "")

    monkeypatch.setattr(rendering, "render_module", wrong)
    before = snapshot(fresh_project)
    code, out = run(capsys, "--root", str(fresh_project), "import", "proof_renderer.backend:get_config")
    assert (code, out) == (2, (
        "error: not written: spec/config.py as import made it regenerates a get_config() that differs from "
        "proof_renderer.backend:get_config(): pattern nn.Linear: observation_type: "
        "ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT != "
        "ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT (generated != builder's); report the builder that led here\n"
    ))
    assert snapshot(fresh_project) == before


def test_a_module_whose_builder_raises_is_one_line_and_nothing_is_written(fresh_project, capsys, monkeypatch):
    installed_package(fresh_project, monkeypatch, "proof_raises", VENDOR)
    right = rendering.render_module

    def raising(module, templates_dir):
        return right(module, templates_dir) + "\n\ndef get_config():\n    raise RuntimeError('lost a pattern')\n"

    monkeypatch.setattr(rendering, "render_module", raising)
    before = snapshot(fresh_project)
    code, out = run(capsys, "--root", str(fresh_project), "import", "proof_raises.backend:get_config")
    assert (code, out) == (2, (
        "error: not written: spec/config.py as import made it regenerates a get_config() that raises "
        "RuntimeError: lost a pattern; report the builder that led here\n"
    ))
    assert snapshot(fresh_project) == before


def test_a_builder_with_its_own_fuse_conv_bn_beside_torchs_never_gets_a_silently_different_module(
    fresh_project, capsys, monkeypatch
):
    """Issue 30's silently wrong module: the vendor's fuse_conv_bn and torch's, one name in the generated
    module. Whether import names them apart or refuses, it never writes a module that builds otherwise."""
    installed_package(fresh_project, monkeypatch, "proof_both", VENDOR)
    before = snapshot(fresh_project)
    code, out = run(capsys, "--root", str(fresh_project), "import", "proof_both.backend:get_both_config")
    if code != 0:
        assert code == 2 and out.startswith("error: not written: ") and out.count("\n") == 1, out
        assert snapshot(fresh_project) == before
        return
    written = next(line.split()[1].rstrip(":") for line in out.splitlines() if line.startswith("written "))
    code, out = run(capsys, "--root", str(fresh_project), "regenerate")
    assert code == 0, out
    generated = load_generated(fresh_project / "generated" / written.removeprefix("spec/")).get_both_config()
    original = importlib.import_module("proof_both.backend").get_both_config()
    assert compare_backend_configs("proof", generated, original) == []
