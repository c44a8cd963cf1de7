"""Broken on purpose: a backend without a reference builder declares a removed pattern."""

from generator.dsl import Backend, DTypeConfig, Module, config, nn, removed, torch

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
                removed(nn.Conv2d, "no conv2d on our hardware"),  # <- error
            ],
        )
    ],
)
