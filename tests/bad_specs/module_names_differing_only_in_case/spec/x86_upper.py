"""Broken on purpose: generated/X86.py and generated/x86.py are one file on macOS and Windows."""

from generator.dsl import Backend, DTypeConfig, Module, config, nn, torch

weighted_op_quint8_dtype_config = DTypeConfig(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)

MODULE = Module(
    name="X86",  # <- error
    doc="Broken on purpose.",
    backends=[
        Backend(
            name="x86_upper",
            builder="get_x86_upper_backend_config",
            doc="Broken on purpose.",
            configs=[config(nn.Conv2d, [weighted_op_quint8_dtype_config])],
        ),
    ],
)
