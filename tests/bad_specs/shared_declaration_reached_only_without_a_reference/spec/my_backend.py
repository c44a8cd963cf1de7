"""Broken on purpose: two backends without a reference builder share a list with a declaration."""

from generator.dsl import Backend, DTypeConfig, Module, config, torch
from spec._mine import MY_OPS

weighted_int8_dtype_config = DTypeConfig(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)
weighted = [weighted_int8_dtype_config]
ops = [config(op, weighted) for op in MY_OPS]

MODULE = Module(
    doc="Broken on purpose.",
    backends=[
        Backend(name="my_backend", builder="get_my_backend_config", doc="Broken on purpose.", configs=ops),
        Backend(name="my_other_backend", builder="get_my_other_backend_config", doc="Broken on purpose.", configs=ops),
    ],
)
