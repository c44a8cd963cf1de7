"""Broken on purpose: a simple pattern may nest tuples (torch keeps them), but not more than 32 deep."""

from generator.dsl import Backend, DTypeConfig, DTypeWithConstraints, F, Module, ObservationType, config, nn, torch

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
                config(((((((((((((((((((((((((((((((((((nn.Conv2d, nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.BatchNorm2d), nn.ReLU), weighted),  # <- error
            ],
        ),
    ],
)
