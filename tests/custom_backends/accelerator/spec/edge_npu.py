"""A user's own accelerator backend, as a backend author writes it on their first day: two ops, one spec file.

It has no reference builder. tests/test_where_users_work.py adds it to a project
copy and runs every command that enumerates backends; with it (or any other
backend of the user's own) in spec/, the whole suite must stay green.
"""

from generator.dsl import Backend, DTypeConfig, Module, config, nn, nnqat, nnqr, torch

edge_npu_int8_dtype_config = DTypeConfig(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)

MODULE = Module(
    doc="BackendConfig for an edge NPU that runs linear and conv2d layers.",
    backends=[
        Backend(
            name="edge_npu",
            builder="get_edge_npu_backend_config",
            doc="Return the `BackendConfig` for the edge NPU: linear and conv2d.",
            configs=[
                config(
                    nn.Linear, [edge_npu_int8_dtype_config], root_module=nn.Linear, qat_module=nnqat.Linear,
                    reference_quantized_module=nnqr.Linear, section="linear",
                ),
                config(
                    nn.Conv2d, [edge_npu_int8_dtype_config], root_module=nn.Conv2d, qat_module=nnqat.Conv2d,
                    reference_quantized_module=nnqr.Conv2d, section="conv2d",
                ),
            ],
        )
    ],
)
