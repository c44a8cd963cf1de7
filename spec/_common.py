"""Op groups that torch's native backends share (torch's _common_operator_config_utils).

Each function takes the dtype configs for its group and returns pattern configs in
torch's order. Backends compose them in `native_layout`, naming only their own
dtype groups and extra patterns.
"""

from functools import partial

from generator.dsl import (
    DTypeWithConstraints,
    F,
    ObservationType,
    config,
    fixed_qparams,
    fusers,
    nn,
    nni,
    nniqat,
    nnqat,
    nnqr,
    operator,
    sequential,
    torch,
)

SHARE_OBSERVER = ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT
WEIGHT_BIAS_1_2 = {"weight": 1, "bias": 2}

# Dtype shapes several backends name under their own prefixes.
WEIGHTED_OP_QUINT8 = dict(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)
DEFAULT_OP_QUINT8 = dict(input_dtype=torch.quint8, output_dtype=torch.quint8)
DEFAULT_OP_FP16 = dict(
    input_dtype=torch.float16, output_dtype=torch.float16, weight_dtype=torch.float16, bias_dtype=torch.float16
)
DYNAMIC_INT8 = dict(
    input_dtype=torch.quint8,
    output_dtype=torch.float,
    weight_dtype=torch.qint8,
    bias_dtype=torch.float,
    is_dynamic=True,
)
DYNAMIC_FLOAT16 = dict(
    input_dtype=torch.float16,
    output_dtype=torch.float,
    weight_dtype=torch.float16,
    bias_dtype=torch.float,
    is_dynamic=True,
)
WEIGHT_ONLY_QUINT8 = dict(input_dtype=torch.float, output_dtype=torch.float, weight_dtype=torch.quint8)
WEIGHT_ONLY_QUINT4X2 = dict(input_dtype=torch.float, output_dtype=torch.float, weight_dtype=torch.quint4x2)
INPUT_OUTPUT_ONLY_QUINT8 = dict(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.float, bias_dtype=torch.float
)

# xnnpack-compatible constraints (qnnpack and executorch): scales no smaller than
# 2**-12, and qint8 weights in [-127, 127].
ACT_QINT8_SCALE_MIN_2_NEG_12 = dict(dtype=torch.qint8, scale_min_lower_bound=2**-12)
WEIGHT_QINT8_NEG_127_TO_127_SCALE_MIN_2_NEG_12 = dict(
    dtype=torch.qint8, quant_min_lower_bound=-127, quant_max_upper_bound=127, scale_min_lower_bound=2**-12
)


TORCH_REGISTERS_CONV_RELU_TWICE = (
    "torch's _get_conv_configs adds the fused conv-relu module and its QAT module a second time; "
    "BackendConfig keeps the first position with the second content (no root/reference modules)"
)


def conv_configs(dtype_configs, dims=(1, 2, 3), transpose=True):
    """Conv modules, functionals and their relu/bn fusions, per dimension."""
    configs = []
    for d in dims:
        root, qat, func, bn = nn[f"Conv{d}d"], nnqat[f"Conv{d}d"], F[f"conv{d}d"], nn[f"BatchNorm{d}d"]
        relu_fused, relu_qat = nni[f"ConvReLU{d}d"], nniqat[f"ConvReLU{d}d"]
        bn_fused, bn_qat = nni[f"ConvBn{d}d"], nniqat[f"ConvBn{d}d"]
        bn_relu_fused, bn_relu_qat = nni[f"ConvBnReLU{d}d"], nniqat[f"ConvBnReLU{d}d"]
        to_ref = dict(root_module=root, reference_quantized_module=nnqr[f"Conv{d}d"])
        c = partial(config, dtype_configs=dtype_configs, section=f"conv{d}d")
        configs += [
            c(root, qat_module=qat, **to_ref),
            c(qat, **to_ref),
            c(func, input_type_to_index=WEIGHT_BIAS_1_2),
            c((root, nn.ReLU), fuser_method=sequential(relu_fused), fused_module=relu_fused),
            c((root, F.relu), fuser_method=sequential(relu_fused), fused_module=relu_fused),
            c(relu_fused, qat_module=relu_qat, **to_ref),
            c(relu_qat, **to_ref),
            c((func, nn.ReLU)),
            c((func, F.relu)),
            # torch registers these two again: the copies override the ones above
            # in place, so the fused conv-relu loses its root/reference modules.
            c(relu_fused, qat_module=relu_qat, overrides=TORCH_REGISTERS_CONV_RELU_TWICE),
            c(relu_qat, **to_ref, overrides=TORCH_REGISTERS_CONV_RELU_TWICE),
            c((root, bn), fuser_method=fusers.fuse_conv_bn, fused_module=bn_fused),
            c((root, bn, nn.ReLU), fuser_method=fusers.fuse_conv_bn_relu, fused_module=bn_relu_fused),
            c((root, bn, F.relu), root_module=root, fuser_method=fusers.fuse_conv_bn_relu, fused_module=bn_relu_fused),
            c(bn_fused, qat_module=bn_qat),
            c(bn_relu_fused, qat_module=bn_relu_qat),
            c(bn_qat, **to_ref),
            c(bn_relu_qat, **to_ref),
        ]
        if transpose:
            to_ref = dict(root_module=nn[f"ConvTranspose{d}d"], reference_quantized_module=nnqr[f"ConvTranspose{d}d"])
            configs += [
                c(nn[f"ConvTranspose{d}d"], **to_ref),
                c((nn[f"ConvTranspose{d}d"], bn), fuser_method=fusers.fuse_convtranspose_bn, **to_ref),
                c(F[f"conv_transpose{d}d"], input_type_to_index=WEIGHT_BIAS_1_2),
            ]
    return configs


def linear_configs(dtype_configs, fusions=True):
    """Linear modules and functionals, with their relu and bn fusions."""
    c = partial(config, dtype_configs=dtype_configs, section="linear")
    to_ref = dict(root_module=nn.Linear, reference_quantized_module=nnqr.Linear)
    configs = [
        c(nn.Linear, qat_module=nnqat.Linear, **to_ref),
        c(nnqat.Linear, **to_ref),
        c(F.linear, input_type_to_index=WEIGHT_BIAS_1_2),
    ]
    if not fusions:
        return configs
    return configs + [
        c((nn.Linear, nn.ReLU), fuser_method=sequential(nni.LinearReLU), fused_module=nni.LinearReLU),
        c((nn.Linear, F.relu), fuser_method=sequential(nni.LinearReLU), fused_module=nni.LinearReLU),
        c(nni.LinearReLU, qat_module=nniqat.LinearReLU, **to_ref),
        c(nniqat.LinearReLU, **to_ref),
        c((F.linear, nn.ReLU)),
        c((F.linear, F.relu)),
        c((nn.Linear, nn.BatchNorm1d), fuser_method=fusers.fuse_linear_bn, fused_module=nni.LinearBn1d),
        c(nni.LinearBn1d, qat_module=nniqat.LinearBn1d, **to_ref),
        c(nniqat.LinearBn1d, **to_ref),
    ]


# How many tensor arguments a binary op gets decides whether its output shares
# the input's observer (a tensor plus a scalar) or not.
BINARY_OP_OBSERVATION = {
    0: ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT,
    1: ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT,
    2: ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT,
}


def binary_op_configs(dtype_configs, ops=(operator.add, torch.add, operator.mul, torch.mul), matmul=True):
    """Binary ops alone and followed by relu in its three spellings."""
    c = partial(config, dtype_configs=dtype_configs, section="binary ops")
    configs = [
        c(pattern, num_tensor_args_to_observation_type=BINARY_OP_OBSERVATION)
        for op in ops
        for pattern in ((op, nn.ReLU), (op, F.relu), (op, torch.relu), op)
    ]
    return configs + ([c(torch.matmul)] if matmul else [])


def cat_config(dtype_configs):
    return [config(torch.cat, dtype_configs, observation_type=SHARE_OBSERVER, section="cat")]


DEFAULT_OPS = [
    nn.ELU, nn.LeakyReLU, nn.Hardswish, nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d,
    nn.Dropout, nn.PReLU, F.elu, F.hardswish, F.leaky_relu, F.dropout,
]  # fmt: skip


def default_op_configs(dtype_configs):
    """Ops whose output gets its own observer."""
    c = partial(config, dtype_configs=dtype_configs, section="default ops")
    return [c(op) for op in DEFAULT_OPS] + [
        c(F.group_norm, input_type_to_index={"weight": 2, "bias": 3}),
        c(F.instance_norm, input_type_to_index={"weight": 3, "bias": 4}),
    ]


# Fixed-qparams ops produce values in a known range: [0, 1] or [-1, 1].
_FIXED_QPARAM_OP_0TO1_CONSTRAINTS = DTypeWithConstraints(
    dtype=torch.quint8, quant_min_lower_bound=0, quant_max_upper_bound=255,
    scale_exact_match=1.0 / 256.0, zero_point_exact_match=0,
)  # fmt: skip
_FIXED_QPARAM_OP_NEG1TO1_CONSTRAINTS = DTypeWithConstraints(
    dtype=torch.quint8, quant_min_lower_bound=0, quant_max_upper_bound=255,
    scale_exact_match=2.0 / 256.0, zero_point_exact_match=128,
)  # fmt: skip
FIXED_QPARAMS_OPS = [
    (_FIXED_QPARAM_OP_0TO1_CONSTRAINTS, "0to1", [
        nn.Hardsigmoid, F.hardsigmoid, "hardsigmoid", "hardsigmoid_",
        nn.Sigmoid, torch.sigmoid, "sigmoid", "sigmoid_", nn.Softmax,
    ]),
    (_FIXED_QPARAM_OP_NEG1TO1_CONSTRAINTS, "neg1to1", [nn.Tanh, torch.tanh, "tanh", "tanh_"]),
]  # fmt: skip


def fixed_qparams_op_configs(dtype_configs):
    return [
        config(op, fixed_qparams(dtype_configs, constraints, suffix), section="fixed qparams ops")
        for constraints, suffix, ops in FIXED_QPARAMS_OPS
        for op in ops
    ]


SHARE_QPARAMS_OPS = [
    nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d, nn.AvgPool1d, nn.AvgPool2d,
    nn.AvgPool3d, nn.Hardtanh, nn.Identity, nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d,
    nn.PixelShuffle, nn.PixelUnshuffle, nn.ReLU, nn.ReLU6,
    F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d, F.hardtanh, F.hardtanh_,
    F.interpolate, F.max_pool1d, F.max_pool2d, F.max_pool3d, F.pixel_shuffle, F.pixel_unshuffle,
    F.relu, F.relu6, F.avg_pool1d, F.avg_pool2d, F.avg_pool3d, torch.clamp, torch.flatten,
    torch.mean, torch.narrow, torch.repeat_interleave, torch.transpose, torch.squeeze, torch.stack,
    torch.unsqueeze, operator.floordiv,
    "contiguous", "clamp", "detach", "detach_", "mean", "permute", "repeat", "repeat_interleave",
    "reshape", "resize_", "relu", "relu_", "squeeze", "squeeze_", "transpose", "unsqueeze",
    "unsqueeze_", "view",
]  # fmt: skip


def share_qparams_op_configs(dtype_configs, ops=SHARE_QPARAMS_OPS):
    """Ops whose output shares the input's observer (pooling, reshaping, ...)."""
    return [config(op, dtype_configs, observation_type=SHARE_OBSERVER, section="share qparams ops") for op in ops]


def tensor_info_op_configs(dtype_configs):
    """Ops that return facts about a tensor, never observed."""
    c = partial(config, dtype_configs=dtype_configs, section="tensor info ops")
    return [c(op, observation_type=ObservationType.INPUT_OUTPUT_NOT_OBSERVED) for op in ("shape", "size")]


def bn_configs(dtype_configs):
    """BatchNorm2d/3d, alone and fused with relu."""
    c = partial(config, dtype_configs=dtype_configs, section="batchnorm")
    configs = []
    for d in (2, 3):
        bn, fused = nn[f"BatchNorm{d}d"], nni[f"BNReLU{d}d"]
        configs += [
            c((bn, nn.ReLU), fuser_method=sequential(fused), fused_module=fused),
            c((bn, F.relu), fuser_method=sequential(fused), fused_module=fused),
            c(bn),
        ]
    return configs + [c(nni.BNReLU2d), c(nni.BNReLU3d)]


def ln_configs(dtype_configs):
    c = partial(config, dtype_configs=dtype_configs, section="layer norm")
    return [c(nn.LayerNorm), c(F.layer_norm, input_type_to_index={"weight": 2, "bias": 3})]


def rnn_op_configs(dtype_configs):
    return [
        config(nn[name], dtype_configs, root_module=nn[name], reference_quantized_module=nnqr[name], section="rnn")
        for name in ("GRUCell", "LSTMCell", "RNNCell", "LSTM", "GRU")
    ]


def embedding_op_configs(dtype_configs, functional=False):
    """Embedding modules and their QAT versions; executorch adds F.embedding after each."""
    c = partial(config, dtype_configs=dtype_configs, section="embedding")
    configs = []
    for name in ("Embedding", "EmbeddingBag"):
        to_ref = dict(root_module=nn[name], reference_quantized_module=nnqr[name])
        configs += [c(nn[name], qat_module=nnqat[name], **to_ref), c(nnqat[name], **to_ref)]
        if functional:
            again = "executorch's builder adds F.embedding once per embedding module; the second replaces the first"
            configs.append(
                c(F.embedding, input_type_to_index={"weight": 1}, overrides=again if name == "EmbeddingBag" else None)
            )
    return configs


def native_layout(
    conv, linear, binary, default, fixed, share, rnn, embedding,
    tensor_info=None, layer_norm=None, extra_conv=(), extra_linear=(),
):  # fmt: skip
    """The section order of torch's fbgemm/qnnpack/x86/native/onednn builders."""
    return [
        conv_configs(conv),
        list(extra_conv),
        linear_configs(linear),
        list(extra_linear),
        binary_op_configs(binary),
        cat_config(default),
        default_op_configs(default),
        fixed_qparams_op_configs(fixed),
        share_qparams_op_configs(share),
        tensor_info_op_configs(tensor_info) if tensor_info else [],
        bn_configs(default),
        ln_configs(layer_norm) if layer_norm else [],
        rnn_op_configs(rnn),
        embedding_op_configs(embedding),
    ]
