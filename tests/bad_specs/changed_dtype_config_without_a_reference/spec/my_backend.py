"""Broken on purpose: a dtype config declared changed, but no backend using it has a reference builder."""

from generator.dsl import Backend, DTypeConfig, Module, changed, config, nn, torch

weighted_int8_dtype_config = changed(  # <- error
    DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8),
    "our kernels take no bias dtype",
)

MODULE = Module(
    doc="Broken on purpose.",
    backends=[
        Backend(
            name="my_backend",
            builder="get_my_backend_config",
            doc="Broken on purpose.",
            configs=[config(nn.Linear, [weighted_int8_dtype_config])],
        )
    ],
)
