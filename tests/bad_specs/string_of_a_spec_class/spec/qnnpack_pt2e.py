"""Broken on purpose: a section that is a str subclass of the spec's own, whose __eq__ (spec code)
would run when the generator compares sections, long after the spec ran."""

from generator.dsl import Backend, DTypeConfig, Module, config, nn, torch


class Loud(str):
    def __eq__(self, other):
        print("spec code, running late")
        return str.__eq__(self, other)

    __hash__ = str.__hash__


weighted_op_quint8_dtype_config = DTypeConfig(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)
weighted = [weighted_op_quint8_dtype_config]


MODULE = Module(
    doc="Broken on purpose.",
    backends=[
        Backend(
            name='qnnpack_pytorch_2.0_export',
            builder='get_qnnpack_pt2e_backend_config',
            doc="Broken on purpose.",
            configs=[
                config(nn.Conv2d, weighted, section=Loud("conv")),  # <- error
            ],
        ),
    ],
)
