"""Broken on purpose: generated/helpers.py is a file of the user's own, not a generated module."""

from generator.dsl import Backend, DTypeConfig, Module, config, nn, torch

weighted_op_quint8_dtype_config = DTypeConfig(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)

MODULE = Module(
    name="helpers",  # <- error
    doc="Broken on purpose.",
    backends=[
        Backend(
            name="qnnpack_pytorch_2.0_export",
            builder="get_qnnpack_pt2e_backend_config",
            doc="Broken on purpose.",
            configs=[config(nn.Conv2d, [weighted_op_quint8_dtype_config])],
        ),
    ],
)
