"""oneDNN (x86 with AVX-512 VNNI/AMX) backend: torch.ao.quantization.backend_config.onednn."""

from functools import partial

from generator.dsl import (
    Backend,
    DTypeConfig,
    F,
    MatchAllNode,
    Module,
    config,
    function,
    nn,
    nni,
    nnqr,
    operator,
    product,
    sequential,
    torch,
)  # fmt: skip
from spec._common import (
    DEFAULT_OP_QUINT8,
    DYNAMIC_INT8,
    INPUT_OUTPUT_ONLY_QUINT8,
    WEIGHTED_OP_QUINT8,
    native_layout,
)  # fmt: skip

onednn_weighted_op_int8_dtype_config = DTypeConfig(**WEIGHTED_OP_QUINT8)
onednn_op_quint8_dtype_config = DTypeConfig(**DEFAULT_OP_QUINT8)
onednn_dynamic_int8_dtype_config = DTypeConfig(**DYNAMIC_INT8)
onednn_weight_only_qint8_dtype_config = DTypeConfig(
    input_dtype=torch.float, output_dtype=torch.float, weight_dtype=torch.qint8
)
onednn_input_output_only_quint8_dtype_config = DTypeConfig(**INPUT_OUTPUT_ONLY_QUINT8)

conv = [onednn_weighted_op_int8_dtype_config]
linear = [onednn_weighted_op_int8_dtype_config, onednn_dynamic_int8_dtype_config]
default = [onednn_op_quint8_dtype_config]


def conv_add_configs(relu):
    """Conv2d (+ bn) feeding an add on its left or right input, optionally followed by relu."""
    fused = nni.ConvAddReLU2d if relu else nni.ConvAdd2d
    configs = []
    for row in product(side=["left", "right"], with_bn=[True, False], add_op=[torch.add, operator.add]):
        conv_pattern = (nn.BatchNorm2d, nn.Conv2d) if row.with_bn else nn.Conv2d
        operands = (conv_pattern, MatchAllNode) if row.side == "left" else (MatchAllNode, conv_pattern)
        add_pattern = (row.add_op, *operands)
        stem = "conv" + "_bn" * row.with_bn + "_add" + "_relu" * relu
        params = dict(
            side=row.side, with_bn=row.with_bn, relu=relu, fused_module=fused,
            fuse_conv_bn_eval=nn.utils.fusion.fuse_conv_bn_eval,
        )  # fmt: skip
        configs.append(
            config(
                pattern_complex_format=(nn.ReLU, add_pattern) if relu else add_pattern,
                dtype_configs=conv,
                fuser_method=function("conv_add_fuser", f"_fuse_{stem}_{row.side}", **params),
                root_node_getter=function(
                    "conv_add_root_node_getter", f"_{stem}_root_node_getter_{row.side}", **params
                ),
                extra_inputs_getter=function(
                    "conv_add_extra_inputs_getter", f"_{stem}_extra_inputs_getter_{row.side}", **params
                ),
                fused_module=fused,
                section="conv2d + add" + " + relu" * relu,
            )
        )
    fused_config = config(
        fused, conv, root_module=nn.Conv2d, reference_quantized_module=nnqr.Conv2d, section=configs[0].section
    )
    return configs + [fused_config]


def linear_eltwise_configs(post_module, post_op, fused):
    """Linear followed by an elementwise op, as module or functional on either side."""
    c = partial(config, dtype_configs=linear, section="linear + eltwise")
    return [
        c((nn.Linear, post_module), fuser_method=sequential(fused), fused_module=fused),
        c((nn.Linear, post_op), fuser_method=sequential(fused), fused_module=fused),
        c(fused, root_module=nn.Linear, reference_quantized_module=nnqr.Linear),
        c((F.linear, post_module)),
        c((F.linear, post_op)),
    ]


MODULE = Module(
    doc="BackendConfig for PyTorch's native ONEDNN backend.",
    backends=[
        Backend(
            name="onednn",
            builder="get_onednn_backend_config",
            doc="Return the `BackendConfig` for PyTorch's native ONEDNN backend.",
            reference="torch.ao.quantization.backend_config.onednn.get_onednn_backend_config",
            configs=native_layout(
                conv=conv,
                extra_conv=[conv_add_configs(relu=False), conv_add_configs(relu=True)],
                linear=linear,
                extra_linear=[
                    linear_eltwise_configs(nn.LeakyReLU, F.leaky_relu, nni.LinearLeakyReLU),
                    config(
                        (nn.Linear, nn.BatchNorm1d, nn.LeakyReLU),
                        linear,
                        fuser_method=function(
                            "linear_bn_leaky_relu_fuser",
                            "_fuse_linear_bn_leaky_relu",
                            linear=nn.Linear,
                            fused_module=nni.LinearLeakyReLU,
                            fuse_linear_bn_eval=nn.utils.fusion.fuse_linear_bn_eval,
                        ),
                        fused_module=nni.LinearLeakyReLU,
                        section="linear + eltwise",
                    ),
                    linear_eltwise_configs(nn.Tanh, torch.tanh, nni.LinearTanh),
                ],
                binary=default,
                default=default,
                fixed=default,
                share=default,
                rnn=[onednn_dynamic_int8_dtype_config],
                embedding=[onednn_weight_only_qint8_dtype_config],
                layer_norm=[onednn_input_output_only_quint8_dtype_config],
            ),
        )
    ],
)
