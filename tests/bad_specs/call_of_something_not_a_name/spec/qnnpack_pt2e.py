"""Broken on purpose: call()'s factory must be a name (importable(...), fusers.x)."""

from generator.dsl import Backend, DTypeConfig, Module, call, config, nn, nni, torch

weighted_op_quint8_dtype_config = DTypeConfig(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)
weighted = [weighted_op_quint8_dtype_config]


MODULE = Module(
    doc="Broken on purpose.",
    backends=[
        Backend(
            name='qnnpack_pytorch_2.0_export',
            builder='get_qnnpack_pt2e_backend_config',
            doc="Broken on purpose.",
            configs=[
                config((nn.Conv2d, nn.ReLU), weighted, fuser_method=call("my_backend.make_fuser", nni.ConvReLU2d)),  # <- error
            ],
        ),
    ],
)
