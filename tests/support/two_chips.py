"""A user's project with two chips of their own, for reviewing a week of typical changes.

`npu` and `dsp` are two backends in two spec files. They share the dtype config `_ACT_S8`'s
constraint `_W_S8` (spec/_chips.py, a helper module both import), and put the same ops in
different sections: npu's nn.Conv2d, nn.Linear and nn.ReLU are in "conv2d", dsp's have no
section ("other"). dsp names a reference builder of the project's own (chips_reference.py),
so that it may declare differences from it. `write(root)` lays the project out; `edit(root,
old, new, file)` makes one change, refusing a change that does not apply; `generator(root,
*args)` runs a command as the user does, standing in the project (a `spec` package of the
test's own interpreter would shadow the project's in-process).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CHIPS = '''"""What both chips share."""

from generator.dsl import DTypeConfig, DTypeWithConstraints, nn, torch

_W_S8 = DTypeWithConstraints(dtype=torch.qint8, scale_min_lower_bound=2**-14)
_ACT_S8 = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=_W_S8, bias_dtype=torch.float)
SHARED_OPS = [nn.Conv2d, nn.Linear, nn.ReLU]
'''

NPU = '''"""The NPU."""

from generator.dsl import Backend, Module, config

from spec._chips import _ACT_S8, SHARED_OPS

MODULE = Module(
    doc="BackendConfig for the NPU.",
    backends=[
        Backend(
            name="npu",
            builder="get_npu_backend_config",
            doc="Return the NPU's BackendConfig.",
            configs=[config(op, [_ACT_S8], section="conv2d") for op in SHARED_OPS],
        )
    ],
)
'''

DSP = '''"""The DSP."""

from generator.dsl import Backend, DTypeConfig, Module, config, nn, torch

from spec._chips import _ACT_S8, SHARED_OPS

_DSP_U8 = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)

MODULE = Module(
    doc="BackendConfig for the DSP.",
    backends=[
        Backend(
            name="dsp",
            builder="get_dsp_backend_config",
            doc="Return the DSP's BackendConfig.",
            reference="chips_reference.get_dsp_reference_config",
            configs=[
                *[config(op, [_ACT_S8]) for op in SHARED_OPS],
                config(nn.Hardtanh, [_DSP_U8], section="activations"),
            ],
        )
    ],
)
'''

REFERENCE = '''"""The DSP's dynamic builder, the reference its spec is proven against."""

import torch
from torch import nn
from torch.ao.quantization.backend_config import BackendConfig, BackendPatternConfig, DTypeConfig, DTypeWithConstraints
from torch.ao.quantization.backend_config import ObservationType


def get_dsp_reference_config():
    weight = DTypeWithConstraints(dtype=torch.qint8, scale_min_lower_bound=2**-14)
    act = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=weight, bias_dtype=torch.float)
    u8 = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)
    config = BackendConfig("dsp")
    for op in (nn.Conv2d, nn.Linear, nn.ReLU):
        config.set_backend_pattern_config(
            BackendPatternConfig(op).set_observation_type(ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT)
            .set_dtype_configs([act])
        )
    config.set_backend_pattern_config(
        BackendPatternConfig(nn.Hardtanh).set_observation_type(ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT)
        .set_dtype_configs([u8])
    )
    return config
'''


def write(root: Path) -> Path:
    (root / "spec").mkdir(parents=True)
    (root / "spec" / "_chips.py").write_text(CHIPS)
    (root / "spec" / "npu.py").write_text(NPU)
    (root / "spec" / "dsp.py").write_text(DSP)
    (root / "chips_reference.py").write_text(REFERENCE)
    (root / ".gitignore").write_text(".cache/\n__pycache__/\n")
    return root


def edit(root: Path, old: str, new: str, file: str) -> None:
    path = root / file
    text = path.read_text()
    assert text.count(old) == 1, (file, old)
    path.write_text(text.replace(old, new))


def line_of(root: Path, file: str, text: str) -> int:
    """The 1-based line of `file` that holds `text` (the only one)."""
    lines = [i for i, line in enumerate((root / file).read_text().splitlines(), 1) if text in line]
    assert len(lines) == 1, (file, text, lines)
    return lines[0]


def generator(root: Path, *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `python -m generator ARGS` run in the project's folder."""
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("GENERATOR_TRACEBACK", None)
    done = subprocess.run([sys.executable, "-m", "generator", *args], cwd=root, capture_output=True, text=True,
                          env=env, timeout=300)  # fmt: skip
    return done.returncode, done.stdout, done.stderr
