"""Broken on purpose: a pattern_complex_format nested 200 deep (no module could hold it)."""

from generator.dsl import Backend, DTypeConfig, Module, config, nn, torch

weighted_op_quint8_dtype_config = DTypeConfig(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)
weighted = [weighted_op_quint8_dtype_config]
deep = nn.Conv2d
for _ in range(200):
    deep = (nn.ReLU, deep)  # <- error


MODULE = Module(
    doc="Broken on purpose.",
    backends=[
        Backend(
            name="qnnpack_pytorch_2.0_export",
            builder="get_qnnpack_pt2e_backend_config",
            doc="Broken on purpose.",
            configs=[
                config(pattern_complex_format=deep, dtype_configs=weighted),
            ],
        ),
    ],
)
