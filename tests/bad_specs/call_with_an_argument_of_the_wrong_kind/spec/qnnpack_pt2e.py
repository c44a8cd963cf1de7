"""Broken on purpose: a factory's arguments are names, constants, tuples or calls, not dtype configs."""

from generator.dsl import Backend, DTypeConfig, Module, config, fusers, nn, partial, torch

weighted_op_quint8_dtype_config = DTypeConfig(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)
weighted = [weighted_op_quint8_dtype_config]


MODULE = Module(
    doc="Broken on purpose.",
    backends=[
        Backend(
            name='qnnpack_pytorch_2.0_export',
            builder='get_qnnpack_pt2e_backend_config',
            doc="Broken on purpose.",
            configs=[
                config(
                    (nn.Conv2d, nn.ReLU),
                    weighted,
                    fuser_method=partial(fusers.fuse_conv_bn, weighted_op_quint8_dtype_config),  # <- error
                ),
            ],
        ),
    ],
)
