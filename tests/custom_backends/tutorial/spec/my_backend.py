"""The backend of PyTorch's BackendConfig tutorial: linear, and conv2d + relu with a fuser.

https://pytorch.org/tutorials/prototype/backend_config_tutorial.html
It has no reference builder: nothing to equal, so the tests check it against its
own spec and run real FX flows with it.
"""

from generator.dsl import (
    Backend,
    DTypeConfig,
    DTypeWithConstraints,
    Module,
    config,
    nn,
    nni,
    nniqat,
    nnqat,
    nnqr,
    sequential,
    torch,
)

# Activations in [0, 255] with a scale no smaller than 2**-12.
quint8_with_constraints = DTypeWithConstraints(
    dtype=torch.quint8, quant_min_lower_bound=0, quant_max_upper_bound=255, scale_min_lower_bound=2**-12
)
weighted_int8_dtype_config = DTypeConfig(
    input_dtype=quint8_with_constraints,
    output_dtype=quint8_with_constraints,
    weight_dtype=torch.qint8,
    bias_dtype=torch.float,
)
weighted = [weighted_int8_dtype_config]

MODULE = Module(
    doc="BackendConfig for my_backend, the backend of PyTorch's BackendConfig tutorial.",
    backends=[
        Backend(
            name="my_backend",
            builder="get_my_backend_config",
            doc="Return the `BackendConfig` for my_backend: linear, and conv2d + relu.",
            configs=[
                config(
                    nn.Linear, weighted, root_module=nn.Linear, qat_module=nnqat.Linear,
                    reference_quantized_module=nnqr.Linear, section="linear",
                ),
                # fuse Conv2d + ReLU into ConvReLU2d ...
                config(
                    (nn.Conv2d, nn.ReLU), weighted, fused_module=nni.ConvReLU2d,
                    fuser_method=sequential(nni.ConvReLU2d), section="conv2d",
                ),
                # ... and quantize ConvReLU2d
                config(
                    nni.ConvReLU2d, weighted, root_module=nn.Conv2d, qat_module=nniqat.ConvReLU2d,
                    reference_quantized_module=nnqr.Conv2d, section="conv2d",
                ),
            ],
        )
    ],
)
