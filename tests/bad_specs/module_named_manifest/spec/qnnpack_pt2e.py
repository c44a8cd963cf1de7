"""QNNPACK for PyTorch 2.0 export (aten ops): torch.ao.quantization.backend_config._qnnpack_pt2e."""

from generator.dsl import Backend, DTypeConfig, Module, config, function, operator, torch
from spec._common import BINARY_OP_OBSERVATION, SHARE_OBSERVER, WEIGHT_BIAS_1_2, WEIGHTED_OP_QUINT8

weighted_op_quint8_dtype_config = DTypeConfig(**WEIGHTED_OP_QUINT8)

aten = torch.ops.aten
weighted = [weighted_op_quint8_dtype_config]
conv = aten.convolution.default


def binary_op_configs():
    """aten add and in-place add, alone and followed by relu (functional or in-place)."""
    return [
        config(pattern, weighted, num_tensor_args_to_observation_type=BINARY_OP_OBSERVATION, section="binary ops")
        for op in (aten.add.Tensor, aten.add_.Tensor)
        for pattern in ((op, aten.relu.default), op, (op, aten.relu_.default))
    ]


MODULE = Module(
    name="manifest",  # <- error
    doc="BackendConfig for QNNPACK on graphs from PyTorch 2.0 export.",
    backends=[
        Backend(
            name="qnnpack_pytorch_2.0_export",
            builder="get_qnnpack_pt2e_backend_config",
            doc="Return the `BackendConfig` for QNNPACK on PyTorch 2.0 export graphs.",
            reference="torch.ao.quantization.backend_config._qnnpack_pt2e.get_qnnpack_pt2e_backend_config",
            configs=[
                # linear is decomposed to addmm, or to `t - mm` without bias
                config(aten.addmm.default, weighted, input_type_to_index={"weight": 2, "bias": 0}, section="linear"),
                config(aten.mm.default, weighted, input_type_to_index={"weight": 1}, section="linear"),
                binary_op_configs(),
                [
                    config(pattern, weighted, input_type_to_index=WEIGHT_BIAS_1_2, section="conv")
                    for pattern in (conv, (conv, aten.relu.default), (conv, aten.relu_.default))
                ],
                config(
                    pattern_complex_format=(operator.getitem, aten.max_pool2d_with_indices.default, 0),
                    dtype_configs=weighted,
                    observation_type=SHARE_OBSERVER,
                    root_node_getter=function("getitem_root_node_getter", "_max_pool2d_root_node_getter"),
                    section="pooling",
                ),
                config(aten.relu.default, weighted, observation_type=SHARE_OBSERVER, section="relu"),
            ],
        )
    ],
)
