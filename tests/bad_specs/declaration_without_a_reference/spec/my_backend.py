"""Broken on purpose: a backend without a reference builder declares an added pattern."""

from generator.dsl import Backend, DTypeConfig, Module, added, config, nn, torch

weighted_int8_dtype_config = DTypeConfig(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)
weighted = [weighted_int8_dtype_config]

MODULE = Module(
    doc="Broken on purpose.",
    backends=[
        Backend(
            name="my_backend",
            builder="get_my_backend_config",
            doc="Broken on purpose.",
            configs=[
                config(nn.Linear, weighted),
                config(added(nn.Conv2d, "we quantize conv2d too"), weighted),  # <- error
            ],
        )
    ],
)
