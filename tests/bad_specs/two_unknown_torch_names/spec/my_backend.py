"""Broken on purpose: two misspelt torch names. The one reported is the first the spec uses, at that use
(not the first alphabetically, nor its last use)."""

from generator.dsl import Backend, DTypeConfig, Module, config, nn, torch

quint8_dtype_config = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)

MODULE = Module(
    doc="Broken on purpose.",
    backends=[
        Backend(
            name="my_backend",
            builder="get_my_backend_config",
            doc="Broken on purpose.",
            configs=[
                config(nn.Linear, [quint8_dtype_config]),
                config(nn.ReLUU, [quint8_dtype_config]),  # <- error
                config(nn.Conv2dd, [quint8_dtype_config]),
                config((nn.Linear, nn.ReLUU), [quint8_dtype_config]),
            ],
        )
    ],
)
