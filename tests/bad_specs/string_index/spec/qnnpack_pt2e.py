"""Broken on purpose: an input index written as a string: prepare_fx would compare str with int."""

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
                config(F.linear, weighted, input_type_to_index={"weight": "1", "bias": 2}),  # <- error
            ],
        ),
    ],
)
