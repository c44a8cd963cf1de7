"""Broken on purpose: a model value built by hand around an object of the spec's own class, whose
__repr__ (spec code) would run when the generator writes the call, long after the spec ran."""

from generator.dsl import Backend, DTypeConfig, Module, config, model, torch


class Loud:
    def __repr__(self):
        print("spec code, running late")
        return "1"


weighted_op_quint8_dtype_config = DTypeConfig(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)
weighted = [weighted_op_quint8_dtype_config]
getter = model.Call(model.TorchRef("functools.partial"), (model.TorchRef("operator.getitem"), Loud()))


MODULE = Module(
    doc="Broken on purpose.",
    backends=[
        Backend(
            name='qnnpack_pytorch_2.0_export',
            builder='get_qnnpack_pt2e_backend_config',
            doc="Broken on purpose.",
            configs=[
                config(torch.ops.aten.relu.default, weighted, root_node_getter=getter),  # <- error
            ],
        ),
    ],
)
