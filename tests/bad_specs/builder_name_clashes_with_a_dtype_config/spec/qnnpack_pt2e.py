"""Broken on purpose: the builder would replace the dtype config constant of the same name."""

from generator.dsl import Backend, DTypeConfig, DTypeWithConstraints, F, Module, ObservationType, config, nn, torch

weighted_op_quint8_dtype_config = DTypeConfig(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)
weighted = [weighted_op_quint8_dtype_config]


MODULE = Module(
    doc="Broken on purpose.",
    backends=[
        Backend(
            name='qnnpack_pytorch_2.0_export',
            builder='weighted_op_quint8_dtype_config',  # <- error
            doc="Broken on purpose.",
            configs=[
                config(nn.Conv2d, weighted),
            ],
        ),
    ],
)
