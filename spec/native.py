"""PyTorch's native backend (fbgemm/qnnpack) and its test-only fp16 variant:
torch.ao.quantization.backend_config.native."""

from generator.dsl import Backend, DTypeConfig, Module
from spec._common import (
    DEFAULT_OP_FP16,
    DEFAULT_OP_QUINT8,
    DYNAMIC_FLOAT16,
    DYNAMIC_INT8,
    INPUT_OUTPUT_ONLY_QUINT8,
    WEIGHT_ONLY_QUINT4X2,
    WEIGHT_ONLY_QUINT8,
    WEIGHTED_OP_QUINT8,
    native_layout,
)  # fmt: skip

weighted_op_quint8_dtype_config = DTypeConfig(**WEIGHTED_OP_QUINT8)
default_op_quint8_dtype_config = DTypeConfig(**DEFAULT_OP_QUINT8)
default_op_fp16_dtype_config = DTypeConfig(**DEFAULT_OP_FP16)
default_dynamic_int8_dtype_config = DTypeConfig(**DYNAMIC_INT8)
default_dynamic_float16_dtype_config = DTypeConfig(**DYNAMIC_FLOAT16)
# LayerNorm's kernel only supports float weights.
input_output_only_quint8_dtype_config = DTypeConfig(**INPUT_OUTPUT_ONLY_QUINT8)
weight_only_quint8_dtype_config = DTypeConfig(**WEIGHT_ONLY_QUINT8)
weight_only_quint4x2_dtype_config = DTypeConfig(**WEIGHT_ONLY_QUINT4X2)

EXPORTED_DTYPE_CONFIGS = [
    default_op_quint8_dtype_config,
    default_op_fp16_dtype_config,
    default_dynamic_int8_dtype_config,
    default_dynamic_float16_dtype_config,
    input_output_only_quint8_dtype_config,
    weight_only_quint8_dtype_config,
    weight_only_quint4x2_dtype_config,
]

default = [default_op_quint8_dtype_config]
linear = [weighted_op_quint8_dtype_config, default_dynamic_int8_dtype_config, default_dynamic_float16_dtype_config]
shared = dict(
    conv=[weighted_op_quint8_dtype_config],
    default=default,
    tensor_info=default,
    rnn=[default_dynamic_int8_dtype_config, default_dynamic_float16_dtype_config],
    embedding=[weight_only_quint8_dtype_config, weight_only_quint4x2_dtype_config],
    layer_norm=[input_output_only_quint8_dtype_config],
)
with_fp16 = default + [default_op_fp16_dtype_config]

MODULE = Module(
    doc="BackendConfigs for PyTorch's native backend (fbgemm/qnnpack), with and without extra fp16 ops.",
    exports=[dc.name for dc in EXPORTED_DTYPE_CONFIGS],
    dtype_configs=EXPORTED_DTYPE_CONFIGS,
    backends=[
        Backend(
            name="_native_and_fp16",
            builder="get_test_only_legacy_native_backend_config",
            dict_builder="get_test_only_legacy_native_backend_config_dict",
            doc="Return the `BackendConfig` for PyTorch Native backend (fbgemm/qnnpack) "
            "with various additional fp16 ops.",
            reference="torch.ao.quantization.backend_config.native.get_test_only_legacy_native_backend_config",
            configs=native_layout(
                linear=[*linear, default_op_fp16_dtype_config],
                binary=with_fp16,
                fixed=with_fp16,
                share=with_fp16,
                **shared,
            ),
        ),
        Backend(
            name="native",
            builder="get_native_backend_config",
            dict_builder="get_native_backend_config_dict",
            doc="Return the `BackendConfig` for PyTorch Native backend (fbgemm/qnnpack).",
            reference="torch.ao.quantization.backend_config.native.get_native_backend_config",
            configs=native_layout(linear=linear, binary=default, fixed=default, share=default, **shared),
        ),
    ],
)
