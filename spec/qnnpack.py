"""QNNPACK (ARM mobile) backend: torch.ao.quantization.backend_config.qnnpack."""

from generator.dsl import Backend, DTypeConfig, DTypeWithConstraints, Module
from spec._common import (
    ACT_QINT8_SCALE_MIN_2_NEG_12,
    DEFAULT_OP_QUINT8,
    DYNAMIC_FLOAT16,
    DYNAMIC_INT8,
    WEIGHT_ONLY_QUINT4X2,
    WEIGHT_ONLY_QUINT8,
    WEIGHT_QINT8_NEG_127_TO_127_SCALE_MIN_2_NEG_12,
    WEIGHTED_OP_QUINT8,
    native_layout,
)  # fmt: skip

qnnpack_weighted_op_quint8_dtype_config = DTypeConfig(**WEIGHTED_OP_QUINT8)
qnnpack_default_op_quint8_dtype_config = DTypeConfig(**DEFAULT_OP_QUINT8)
qnnpack_default_dynamic_int8_dtype_config = DTypeConfig(**DYNAMIC_INT8)
qnnpack_default_dynamic_float16_dtype_config = DTypeConfig(**DYNAMIC_FLOAT16)
qnnpack_weight_only_quint8_dtype_config = DTypeConfig(**WEIGHT_ONLY_QUINT8)
qnnpack_weight_only_quint4x2_dtype_config = DTypeConfig(**WEIGHT_ONLY_QUINT4X2)

qnnpack_act_qint8_scale_min_2_neg_12 = DTypeWithConstraints(**ACT_QINT8_SCALE_MIN_2_NEG_12)
qnnpack_weight_qint8_neg_127_to_127_scale_min_2_neg_12 = DTypeWithConstraints(
    **WEIGHT_QINT8_NEG_127_TO_127_SCALE_MIN_2_NEG_12
)
qnnpack_weighted_op_qint8_symmetric_dtype_config = DTypeConfig(
    input_dtype=qnnpack_act_qint8_scale_min_2_neg_12,
    output_dtype=qnnpack_act_qint8_scale_min_2_neg_12,
    weight_dtype=qnnpack_weight_qint8_neg_127_to_127_scale_min_2_neg_12,
    bias_dtype=WEIGHTED_OP_QUINT8["bias_dtype"],
)
qnnpack_default_op_qint8_symmetric_dtype_config = DTypeConfig(
    input_dtype=qnnpack_act_qint8_scale_min_2_neg_12, output_dtype=qnnpack_act_qint8_scale_min_2_neg_12
)

default = [qnnpack_default_op_qint8_symmetric_dtype_config, qnnpack_default_op_quint8_dtype_config]
dynamic = [qnnpack_default_dynamic_int8_dtype_config, qnnpack_default_dynamic_float16_dtype_config]
weighted = [qnnpack_weighted_op_qint8_symmetric_dtype_config, qnnpack_weighted_op_quint8_dtype_config]

MODULE = Module(
    doc="BackendConfig for PyTorch's native QNNPACK backend.",
    backends=[
        Backend(
            name="qnnpack",
            builder="get_qnnpack_backend_config",
            doc="Return the `BackendConfig` for PyTorch's native QNNPACK backend.",
            reference="torch.ao.quantization.backend_config.qnnpack.get_qnnpack_backend_config",
            configs=native_layout(
                conv=weighted,
                linear=weighted + dynamic,
                binary=default,
                default=default,
                fixed=default,
                share=default,
                rnn=dynamic,
                embedding=[qnnpack_weight_only_quint8_dtype_config, qnnpack_weight_only_quint4x2_dtype_config],
            ),
        )
    ],
)
