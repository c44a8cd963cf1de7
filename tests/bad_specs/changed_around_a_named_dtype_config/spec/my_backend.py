"""Broken on purpose: changed() wraps a dtype config made elsewhere, not the DTypeConfig(...) call."""

from generator.dsl import Backend, DTypeConfig, Module, changed, config, nn, torch

quint8_dtype_config = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)
declared_dtype_config = changed(quint8_dtype_config, "our kernels need it")  # <- error

MODULE = Module(
    doc="Broken on purpose.",
    backends=[
        Backend(
            name="my_backend",
            builder="get_my_backend_config",
            doc="Broken on purpose.",
            reference="torch.ao.quantization.backend_config.fbgemm.get_fbgemm_backend_config",
            configs=[config(nn.Linear, [declared_dtype_config])],
        )
    ],
)
