"""Backends torch lowers to through ExecuTorch: torch.ao.quantization.backend_config.executorch."""

from generator.dsl import Backend, DTypeConfig, DTypeWithConstraints, F, Module, config, nn, operator, torch
from spec._common import (
    ACT_QINT8_SCALE_MIN_2_NEG_12,
    DEFAULT_OP_QUINT8,
    DYNAMIC_FLOAT16,
    DYNAMIC_INT8,
    SHARE_OBSERVER,
    WEIGHT_ONLY_QUINT8,
    WEIGHT_QINT8_NEG_127_TO_127_SCALE_MIN_2_NEG_12,
    WEIGHTED_OP_QUINT8,
    binary_op_configs,
    conv_configs,
    embedding_op_configs,
    linear_configs,
    share_qparams_op_configs,
)  # fmt: skip
from spec.qnnpack import (
    qnnpack_default_op_qint8_symmetric_dtype_config,
    qnnpack_weighted_op_qint8_symmetric_dtype_config,
)

executorch_weighted_op_int8_dtype_config = DTypeConfig(**WEIGHTED_OP_QUINT8)
executorch_default_op_quint8_dtype_config = DTypeConfig(**DEFAULT_OP_QUINT8)
executorch_default_dynamic_quint8_dtype_config = DTypeConfig(**DYNAMIC_INT8)
executorch_act_qint8_scale_min_2_neg_12 = DTypeWithConstraints(**ACT_QINT8_SCALE_MIN_2_NEG_12)
executorch_weight_qint8_neg_127_to_127_scale_min_2_neg_12 = DTypeWithConstraints(
    **WEIGHT_QINT8_NEG_127_TO_127_SCALE_MIN_2_NEG_12
)
executorch_default_dynamic_qint8_dtype_config = DTypeConfig(
    **dict(
        DYNAMIC_INT8,
        input_dtype=executorch_act_qint8_scale_min_2_neg_12,
        weight_dtype=executorch_weight_qint8_neg_127_to_127_scale_min_2_neg_12,
    )
)
executorch_default_dynamic_float16_dtype_config = DTypeConfig(**DYNAMIC_FLOAT16)
executorch_weight_only_quint8_dtype_config = DTypeConfig(**WEIGHT_ONLY_QUINT8)

weighted = [qnnpack_weighted_op_qint8_symmetric_dtype_config, executorch_weighted_op_int8_dtype_config]
linear = weighted + [
    executorch_default_dynamic_quint8_dtype_config,
    executorch_default_dynamic_qint8_dtype_config,
    executorch_default_dynamic_float16_dtype_config,
]
binary = [qnnpack_default_op_qint8_symmetric_dtype_config, executorch_weighted_op_int8_dtype_config]
default = [qnnpack_default_op_qint8_symmetric_dtype_config, executorch_default_op_quint8_dtype_config]

BINARY_OPS = (operator.add, torch.add, operator.sub, torch.sub, operator.mul, torch.mul)
SHARE_QPARAMS_OPS = [
    nn.Flatten, F.adaptive_avg_pool2d, F.elu, F.hardtanh, F.max_pool2d, F.pad, F.relu, F.relu6,
    F.leaky_relu, F.leaky_relu_, nn.AdaptiveAvgPool2d, nn.ConstantPad2d, nn.ELU, nn.MaxPool2d,
    nn.ReLU6, nn.Hardtanh, nn.LeakyReLU, torch.clamp, torch.flatten, torch.mean, torch.permute,
    torch.permute_copy, torch.squeeze,
    "clamp", "mean", "permute", "reshape", "relu", "relu_", "squeeze", "squeeze_", "leaky_relu",
]  # fmt: skip

MODULE = Module(
    doc="BackendConfig for backends PyTorch lowers to through the ExecuTorch stack.",
    backends=[
        Backend(
            name="executorch",
            builder="get_executorch_backend_config",
            doc="Return the `BackendConfig` for backends PyTorch lowers to through the Executorch stack.",
            reference="torch.ao.quantization.backend_config.executorch.get_executorch_backend_config",
            configs=[
                linear_configs(linear, fusions=False),
                conv_configs(weighted, dims=(2,), transpose=False),
                binary_op_configs(binary, ops=BINARY_OPS, matmul=False),
                share_qparams_op_configs(default, ops=SHARE_QPARAMS_OPS),
                config(nn.BatchNorm2d, default, section="batchnorm"),
                [
                    config(op, default, observation_type=SHARE_OBSERVER, section="cat")
                    for op in (torch.cat, torch.concat, torch.concatenate)
                ],
                embedding_op_configs([executorch_weight_only_quint8_dtype_config], functional=True),
            ],
        )
    ],
)
