"""Broken on purpose: a dtype config wrapped in added(); a dtype config can only be declared changed()."""

from generator.dsl import Backend, DTypeConfig, Module, added, config, nn, torch

quint8_dtype_config = added(  # <- error
    DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8), "our backend adds it"
)

MODULE = Module(
    doc="Broken on purpose.",
    backends=[
        Backend(
            name="my_backend",
            builder="get_my_backend_config",
            doc="Broken on purpose.",
            reference="torch.ao.quantization.backend_config.fbgemm.get_fbgemm_backend_config",
            configs=[config(nn.Linear, [quint8_dtype_config])],
        )
    ],
)
