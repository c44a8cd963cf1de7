"""Broken on purpose: in pattern_complex_format only arguments nest; the first element of a tuple is an op."""

from generator.dsl import Backend, DTypeConfig, Module, config, nn, torch

weighted_op_quint8_dtype_config = DTypeConfig(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)
weighted = [weighted_op_quint8_dtype_config]
# Written as if it were the forward order: torch would never match it.
conv_bn_relu = ((nn.Conv2d, nn.BatchNorm2d), nn.ReLU)  # <- error


MODULE = Module(
    doc="Broken on purpose.",
    backends=[
        Backend(
            name="qnnpack_pytorch_2.0_export",
            builder="get_qnnpack_pt2e_backend_config",
            doc="Broken on purpose.",
            configs=[
                config(pattern_complex_format=conv_bn_relu, dtype_configs=weighted),
            ],
        ),
    ],
)
