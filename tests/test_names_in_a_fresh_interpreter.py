"""The torch names a spec uses are proven as a user's fresh interpreter has them: a vendor module that adds
`NpuGELU` to `torch.nn` as it imports (imported here as a reference builder's module, or by `import` as the
builder's) does not make `nn.NpuGELU` a name regenerate or import accept, since the generated module, which does
not import the vendor module, would raise AttributeError."""

import subprocess
import sys

import pytest

from tests.support.projects import fresh_copy

VENDOR = '''
import torch
from torch.ao.quantization.backend_config import BackendConfig, BackendPatternConfig, DTypeConfig


class NpuGELU(torch.nn.Module):
    pass


NpuGELU.__module__ = "torch.nn"
torch.nn.NpuGELU = NpuGELU  # registered into torch.nn as this module imports

int8 = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)


def get_npu_backend_config():
    gelu = BackendPatternConfig(torch.nn.NpuGELU).add_dtype_config(int8)
    return BackendConfig("npu").set_backend_pattern_config(gelu)
'''
SPEC = '''from generator.dsl import Backend, DTypeConfig, Module, config, nn, torch

int8 = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)

MODULE = Module(
    doc="BackendConfig for npu.",
    backends=[
        Backend(
            name="npu",
            builder="get_npu_backend_config",
            doc="Return the `BackendConfig` for npu.",
            reference="acme_vendor.get_npu_backend_config",
            configs=[config(nn.NpuGELU, [int8])],
        )
    ],
)
'''


@pytest.fixture
def project(tmp_path_factory, tmp_path):
    project = fresh_copy(tmp_path / "project", "x86", factory=tmp_path_factory)
    (project / "acme_vendor.py").write_text(VENDOR)
    return project


def run(project, *args):
    return subprocess.run([sys.executable, "-m", "generator", "--root", str(project), *args], cwd=project,
                          capture_output=True, text=True, timeout=300, start_new_session=True)  # fmt: skip


def generated_files(project):
    return sorted(p.name for p in (project / "generated").iterdir())


def test_regenerate_refuses_a_name_only_a_reference_s_module_adds_to_torch(project):
    (project / "spec" / "npu.py").write_text(SPEC)
    before = generated_files(project)
    done = run(project, "regenerate")
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: spec/npu.py:") and "torch.nn.NpuGELU" in line, line
    assert generated_files(project) == before


def test_import_refuses_a_name_only_the_builder_s_module_adds_to_torch(project):
    done = run(project, "import", "acme_vendor:get_npu_backend_config")
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    (line,) = done.stderr.splitlines()
    assert "NpuGELU" in line, line
    assert not (project / "spec" / "npu.py").exists()
