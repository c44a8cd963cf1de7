"""Broken on purpose: torch.int8 (PT2E's) as the weight of an FX pattern, which FX's reference modules refuse."""

from generator.dsl import Backend, DTypeConfig, Module, config, nn, torch

weighted_op_int8_dtype_config = DTypeConfig(
    input_dtype=torch.quint8,
    output_dtype=torch.quint8,
    weight_dtype=torch.int8,  # <- error
    bias_dtype=torch.float,
)

MODULE = Module(
    doc="Broken on purpose.",
    backends=[
        Backend(
            name='qnnpack_pytorch_2.0_export',
            builder='get_qnnpack_pt2e_backend_config',
            doc="Broken on purpose.",
            configs=[config(nn.Conv2d, [weighted_op_int8_dtype_config])],
        ),
    ],
)
