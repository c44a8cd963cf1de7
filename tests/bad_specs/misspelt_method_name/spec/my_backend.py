"""Broken on purpose: a method-name pattern that no Tensor method has, so it could never match."""

from generator.dsl import Backend, DTypeConfig, Module, ObservationType, config, nn, torch

quint8_dtype_config = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)
share = dict(observation_type=ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT)
SHAPE_METHODS = [
    "reshape",
    "veiw",  # <- error
]

MODULE = Module(
    doc="Broken on purpose.",
    backends=[
        Backend(
            name="my_backend",
            builder="get_my_backend_config",
            doc="Broken on purpose.",
            configs=[config(nn.Linear, [quint8_dtype_config])]
            + [config(method, [quint8_dtype_config], **share) for method in SHAPE_METHODS],
        )
    ],
)
