"""FBGEMM (x86 server) backend: torch.ao.quantization.backend_config.fbgemm."""

from generator.dsl import Backend, DTypeConfig, Module
from spec._common import (
    DEFAULT_OP_QUINT8,
    DYNAMIC_FLOAT16,
    DYNAMIC_INT8,
    WEIGHT_ONLY_QUINT4X2,
    WEIGHT_ONLY_QUINT8,
    WEIGHTED_OP_QUINT8,
    native_layout,
)  # fmt: skip

fbgemm_weighted_op_quint8_dtype_config = DTypeConfig(**WEIGHTED_OP_QUINT8)
fbgemm_default_op_quint8_dtype_config = DTypeConfig(**DEFAULT_OP_QUINT8)
fbgemm_default_dynamic_int8_dtype_config = DTypeConfig(**DYNAMIC_INT8)
fbgemm_default_dynamic_float16_dtype_config = DTypeConfig(**DYNAMIC_FLOAT16)
fbgemm_weight_only_quint8_dtype_config = DTypeConfig(**WEIGHT_ONLY_QUINT8)
fbgemm_weight_only_quint4x2_dtype_config = DTypeConfig(**WEIGHT_ONLY_QUINT4X2)

weighted = [fbgemm_weighted_op_quint8_dtype_config]
default = [fbgemm_default_op_quint8_dtype_config]
dynamic = [fbgemm_default_dynamic_int8_dtype_config, fbgemm_default_dynamic_float16_dtype_config]

MODULE = Module(
    doc="BackendConfig for PyTorch's native FBGEMM backend.",
    backends=[
        Backend(
            name="fbgemm",
            builder="get_fbgemm_backend_config",
            doc="Return the `BackendConfig` for PyTorch's native FBGEMM backend.",
            reference="torch.ao.quantization.backend_config.fbgemm.get_fbgemm_backend_config",
            configs=native_layout(
                conv=weighted,
                linear=weighted + dynamic,
                binary=default,
                default=default,
                fixed=default,
                share=default,
                tensor_info=default,
                rnn=dynamic,
                embedding=[fbgemm_weight_only_quint8_dtype_config, fbgemm_weight_only_quint4x2_dtype_config],
            ),
        )
    ],
)
