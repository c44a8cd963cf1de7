"""Broken on purpose: a new spec file whose backend takes a name fbgemm's spec already uses."""

from generator.dsl import Backend, DTypeConfig, Module, config, nn, torch

mine_dtype_config = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)

MODULE = Module(
    doc="Broken on purpose.",
    backends=[
        Backend(  # <- error
            name="fbgemm",
            builder="get_mine_backend_config",
            doc="Broken on purpose.",
            configs=[config(nn.Conv2d, [mine_dtype_config])],
        )
    ],
)
