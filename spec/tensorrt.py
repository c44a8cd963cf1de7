"""TensorRT backend (experimental in torch): torch.ao.quantization.backend_config.tensorrt."""

from generator.dsl import Backend, DTypeConfig, Module, config, torch
from spec._common import (
    SHARE_OBSERVER,
    binary_op_configs,
    conv_configs,
    linear_configs,
    share_qparams_op_configs,
    tensor_info_op_configs,
)  # fmt: skip

weighted_op_qint8_dtype_config = DTypeConfig(
    input_dtype=torch.qint8, output_dtype=torch.qint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)
non_weighted_op_qint8_dtype_config = DTypeConfig(input_dtype=torch.qint8, output_dtype=torch.qint8)

weighted = [weighted_op_qint8_dtype_config]
non_weighted = [non_weighted_op_qint8_dtype_config]

MODULE = Module(
    doc="BackendConfig for the TensorRT backend.",
    backends=[
        Backend(
            name="tensorrt",
            builder="get_tensorrt_backend_config",
            dict_builder="get_tensorrt_backend_config_dict",
            doc="Return the `BackendConfig` for the TensorRT backend.",
            reference="torch.ao.quantization.backend_config.tensorrt.get_tensorrt_backend_config",
            configs=[
                conv_configs(weighted),
                config(
                    torch.addmm, weighted, input_type_to_index={"bias": 0, "input": 1, "weight": 2}, section="addmm"
                ),
                config(torch.cat, non_weighted, observation_type=SHARE_OBSERVER, section="cat"),
                linear_configs(weighted),
                binary_op_configs(weighted),
                share_qparams_op_configs(non_weighted),
                tensor_info_op_configs(non_weighted),
            ],
        )
    ],
)
