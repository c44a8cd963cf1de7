"""Broken on purpose: a number stands where the op of a pattern_complex_format belongs."""

from generator.dsl import Backend, DTypeConfig, Module, config, operator, torch

weighted_op_quint8_dtype_config = DTypeConfig(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)
weighted = [weighted_op_quint8_dtype_config]
aten = torch.ops.aten


MODULE = Module(
    doc="Broken on purpose.",
    backends=[
        Backend(
            name="qnnpack_pytorch_2.0_export",
            builder="get_qnnpack_pt2e_backend_config",
            doc="Broken on purpose.",
            configs=[
                config(pattern_complex_format=(operator.getitem, (0, aten.max_pool2d_with_indices.default)), dtype_configs=weighted),  # <- error
            ],
        ),
    ],
)
