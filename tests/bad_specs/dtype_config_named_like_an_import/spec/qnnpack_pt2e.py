"""Broken on purpose: the dtype config would replace the BackendPatternConfig the module imports."""

from generator.dsl import Backend, DTypeConfig, Module, config, nn, torch

BackendPatternConfig = DTypeConfig(  # <- error
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)


MODULE = Module(
    doc="Broken on purpose.",
    backends=[
        Backend(
            name='qnnpack_pytorch_2.0_export',
            builder='get_qnnpack_pt2e_backend_config',
            doc="Broken on purpose.",
            configs=[config(nn.Conv2d, [BackendPatternConfig])],
        ),
    ],
)
