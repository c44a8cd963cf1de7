"""Broken on purpose: the dtype config would replace the torch module the generated module imports."""

from generator.dsl import Backend, DTypeConfig, Module, config, nn
from generator.dsl import torch as t

torch = DTypeConfig(  # <- error
    input_dtype=t.quint8, output_dtype=t.quint8, weight_dtype=t.qint8, bias_dtype=t.float
)


MODULE = Module(
    doc="Broken on purpose.",
    backends=[
        Backend(
            name='qnnpack_pytorch_2.0_export',
            builder='get_qnnpack_pt2e_backend_config',
            doc="Broken on purpose.",
            configs=[config(nn.Conv2d, [torch])],
        ),
    ],
)
