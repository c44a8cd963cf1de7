"""Broken on purpose: importable() names a module of the backend's own package that does not exist."""

from generator.dsl import Backend, DTypeConfig, Module, config, importable, nn, nni, torch

quint8_dtype_config = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)

MODULE = Module(
    doc="Broken on purpose.",
    backends=[
        Backend(
            name="npu",
            builder="get_npu_backend_config",
            doc="Broken on purpose.",
            configs=[
                config(
                    (nn.Linear, nn.ReLU),
                    [quint8_dtype_config],
                    fused_module=nni.LinearReLU,
                    fuser_method=importable("npu_ext.fusrs.fuse_linear_relu"),  # <- error
                ),
            ],
        )
    ],
)
