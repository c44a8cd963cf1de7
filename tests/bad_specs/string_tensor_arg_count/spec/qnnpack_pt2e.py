"""Broken on purpose: num_tensor_args_to_observation_type keys are counts."""

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
                config(torch.add, weighted, num_tensor_args_to_observation_type={"1": ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT}),  # <- error
            ],
        ),
    ],
)
