"""Broken on purpose: a dtype where a dtype config belongs; the error must point here, not at spec/_common.py."""

from generator.dsl import Backend, DTypeConfig, Module, torch
from spec._common import (
    DEFAULT_OP_QUINT8,
    DYNAMIC_FLOAT16,
    DYNAMIC_INT8,
    WEIGHT_ONLY_QUINT4X2,
    WEIGHT_ONLY_QUINT8,
    WEIGHTED_OP_QUINT8,
    native_layout,
)  # fmt: skip

x86_weighted_op_int8_dtype_config = DTypeConfig(**WEIGHTED_OP_QUINT8)
x86_default_op_quint8_dtype_config = DTypeConfig(**DEFAULT_OP_QUINT8)
x86_default_dynamic_int8_dtype_config = DTypeConfig(**DYNAMIC_INT8)
x86_default_dynamic_float16_dtype_config = DTypeConfig(**DYNAMIC_FLOAT16)
x86_weight_only_quint8_dtype_config = DTypeConfig(**WEIGHT_ONLY_QUINT8)
x86_weight_only_quint4x2_dtype_config = DTypeConfig(**WEIGHT_ONLY_QUINT4X2)

weighted = [x86_weighted_op_int8_dtype_config]
default = [torch.quint8]  # <- error
dynamic = [x86_default_dynamic_int8_dtype_config, x86_default_dynamic_float16_dtype_config]

MODULE = Module(
    doc="BackendConfig for PyTorch's native x86 backend.",
    backends=[
        Backend(
            name="x86",
            builder="get_x86_backend_config",
            doc="Return the `BackendConfig` for PyTorch's native x86 backend.",
            reference="torch.ao.quantization.backend_config.x86.get_x86_backend_config",
            configs=native_layout(
                conv=weighted,
                linear=weighted + dynamic,
                # x86 quantizes binary and fixed-qparams ops with the weighted config.
                binary=weighted,
                default=default,
                fixed=weighted,
                share=default,
                tensor_info=default,
                rnn=dynamic,
                embedding=[x86_weight_only_quint8_dtype_config, x86_weight_only_quint4x2_dtype_config],
            ),
        )
    ],
)
