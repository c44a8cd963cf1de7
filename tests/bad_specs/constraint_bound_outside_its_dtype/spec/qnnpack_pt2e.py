"""Broken on purpose: a torch.qint8 activation bounded 0..255, beyond qint8's -128..127."""

from generator.dsl import Backend, DTypeConfig, DTypeWithConstraints, Module, config, nn, torch

act_qint8_constraints = DTypeWithConstraints(
    dtype=torch.qint8,
    quant_min_lower_bound=0,
    quant_max_upper_bound=255,  # <- error
)
weighted_op_qint8_dtype_config = DTypeConfig(
    input_dtype=act_qint8_constraints,
    output_dtype=act_qint8_constraints,
    weight_dtype=torch.qint8,
    bias_dtype=torch.float,
)

MODULE = Module(
    doc="Broken on purpose.",
    backends=[
        Backend(
            name='qnnpack_pytorch_2.0_export',
            builder='get_qnnpack_pt2e_backend_config',
            doc="Broken on purpose.",
            configs=[config(nn.Conv2d, [weighted_op_qint8_dtype_config])],
        ),
    ],
)
