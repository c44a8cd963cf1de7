"""Broken on purpose: a pattern declared removed is registered all the same."""

from generator.dsl import Backend, DTypeConfig, Module, config, removed, torch

weighted_op_quint8_dtype_config = DTypeConfig(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)
weighted = [weighted_op_quint8_dtype_config]
aten = torch.ops.aten

MODULE = Module(
    doc="Broken on purpose.",
    backends=[
        Backend(
            name="qnnpack_pytorch_2.0_export",
            builder="get_qnnpack_pt2e_backend_config",
            doc="Broken on purpose.",
            reference="torch.ao.quantization.backend_config._qnnpack_pt2e.get_qnnpack_pt2e_backend_config",
            configs=[
                config(aten.mm.default, weighted),
                removed(aten.mm.default, "we lower mm ourselves"),  # <- error
            ],
        )
    ],
)
