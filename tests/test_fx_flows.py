"""The generated BackendConfigs drive torch's FX quantization exactly as torch's own builders do.

test_equivalence.py compares the configs field by field; this file compares what they do. Each case
runs one flow twice, each on its own build of one seeded float model (bit-identical: building is
cheaper than deep-copying) and on the same seeded inputs: once with the generated builder's config,
once with torch's. After every step of the flow the two runs must agree
on everything a config decides:

* the code and graph of the GraphModule (fusions, observer and quantize/dequantize placement, lowering);
* its module hierarchy (fused, QAT, reference and quantized module types; which observers are shared);
* each module's state (observer statistics, fake-quant qparams, packed quantized weights), bit for bit;
* its outputs, bit for bit (quantized tensors by int_repr and qparams);
* or, where torch raises, the same exception type after the same steps.

Flows: "ptq" is prepare_fx, calibration, convert_to_reference_fx, and convert_fx lowered under the
backend's quantized engine; "qat" is prepare_qat_fx, training-mode steps and convert_to_reference_fx;
"fuse" is fuse_fx. The models cover the builders' pattern families (conv+bn+relu in 1d/2d/3d, onednn's
conv+add(+relu), linear fusions, binary, fixed-qparams, shared-qparams and default ops, layer_norm,
dynamic LSTM, weight-only embeddings). Every builder runs the models through ptq, those with fusion
patterns through fuse, and those with weighted or fixed-qparams patterns through qat, with
QConfigMappings its dtype configs accept (BACKENDS). The backend cases derive from
tests.support.builders.REFERENCED; engine, mappings and untouched cases are backend-specific knowledge keyed by
builder id, with a generic default for a builder not listed (which measures what it touches).

Every counted case can fail: torch's config must change the flow's results compared with an empty
BackendConfig of the same name run through the same flow and mapping (empty-config runs are cached per
model, flow, engine and mapping). Cases where no pattern of the config matches the model do not run:
fuse_fx of a model without fusions (Model.apis), and per backend (Backend.untouched) fuse_fx of
linear_functional everywhere but onednn, executorch's fuse_fx of the linear models (it has no linear
fusions), tensorrt's default ops, dynamic and weight-only cases (it has static qint8 configs only), and
the legacy fp16 variant's default ops (no fp16 configs for them) and embeddings (the same config and
mapping as the test_only_legacy_native case). test_every_builder_runs_every_api counts the remaining
cases, 213 here. An empty config swapped in for ours fails one case per backend and flow
(test_an_empty_config_fails_the_case), and so does one altered or removed pattern config
(test_harness_reports_a_mutated_config).

The PT2E config (qnnpack_pt2e: aten-op patterns) is consumed by no FX flow in torch 2.13: FX tracing
of nn.Modules never produces aten ops, so its cases give what an empty BackendConfig gives. They still
run (23 here) and assert just that, so that a torch that starts consuming the config shows; ours must
still equal torch's. test_every_builder_runs_every_api does not count them as coverage.

Where torch itself raises, both runs must raise alike: onednn's (Linear, F.leaky_relu) and
(Linear, torch.tanh) fusions (AssertionError), its conv+bn+add and linear+bn+leaky_relu fusions in QAT
(NotImplementedError) and its qint8 embedding lowering (NotImplementedError); lowered models with qint8
activations (qnnpack_symmetric, tensorrt) that the CPU kernels refuse to run (RuntimeError).
"""

import contextlib
import copy
import functools
import gc
import operator
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.ao.nn import intrinsic as nni
from torch.ao.quantization import (
    FakeQuantize,
    HistogramObserver,
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    PerChannelMinMaxObserver,
    PlaceholderObserver,
    QConfig,
    QConfigMapping,
    default_dynamic_qconfig,
    default_weight_fake_quant,
    default_weight_observer,
    float16_dynamic_qconfig,
    float16_static_qconfig,
    float_qparams_weight_only_qconfig,
    float_qparams_weight_only_qconfig_4bit,
    get_default_qat_qconfig_mapping,
    get_default_qconfig_mapping,
)
from torch.ao.quantization.backend_config import BackendConfig, DTypeConfig, ObservationType
from torch.ao.quantization.fx.utils import assert_and_get_unique_device
from torch.ao.quantization.qconfig_mapping import (
    _get_symmetric_qnnpack_qat_qconfig_mapping,
    _get_symmetric_qnnpack_qconfig_mapping,
)
from torch.ao.quantization.quantize_fx import convert_fx, convert_to_reference_fx, fuse_fx, prepare_fx, prepare_qat_fx

from generator.review.flow_comparison import differences, plain
from generator.review.flows import no_stack_traces, quantized_engine
from tests.support import shared_builds
from tests.support.builders import BUILDERS, REFERENCED

# torch.ao.quantization warns that it is deprecated, that quantized tensor creation is deprecated, and
# about qconfigs it ignores (e.g. tanh without fixed qparams): the same warnings on both runs, by design.
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]

# ---------------------------------------------------------------------------------------------
# Models: small, seeded, each exercising one family of backend patterns.
# ---------------------------------------------------------------------------------------------


def _randomize_batch_norms(model: nn.Module) -> nn.Module:
    """Default BN statistics (mean 0, var 1, weight 1, bias 0) would make conv-bn folding a no-op."""
    for module in model.modules():
        if isinstance(module, nn.modules.batchnorm._BatchNorm):
            module.weight.data.uniform_(0.5, 1.5)
            module.bias.data.uniform_(-0.5, 0.5)
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 1.5)
    return model


class ConvBnRelu(nn.Module):
    """conv1d/2d/3d with bn+relu, with bn, with functional relu.

    2d also with bn+functional relu, with relu, bare, and as a functional conv (F.conv2d) + relu.
    """

    def __init__(self):
        super().__init__()
        conv, bn = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}, {1: nn.BatchNorm1d, 2: nn.BatchNorm2d, 3: nn.BatchNorm3d}
        self.convs = nn.ModuleDict(
            {f"d{d}": nn.ModuleList(conv[d](3 if i == 0 else 4, 4, 1) for i in range(3)) for d in conv}
        )
        self.bns = nn.ModuleDict({f"d{d}": nn.ModuleList(bn[d](4) for _ in range(2)) for d in bn})
        self.relus = nn.ModuleDict({f"d{d}": nn.ReLU() for d in conv})
        self.convs2d = nn.ModuleList(nn.Conv2d(4, 4, 1) for _ in range(3))
        self.bn2d, self.relu2d = nn.BatchNorm2d(4), nn.ReLU()
        # torch's lowering folds F.conv2d's arguments into conv2d_prepack, which fails unless bias,
        # stride, padding, dilation (as lists) and groups are all passed.
        self.weight, self.bias = nn.Parameter(torch.randn(4, 4, 1, 1) / 2), nn.Parameter(torch.randn(4) / 2)

    def _chain(self, d: str, x):
        c, bn, relu = self.convs[d], self.bns[d], self.relus[d]
        y = relu(bn[0](c[0](x)))  # conv+bn+relu
        return F.relu(c[2](bn[1](c[1](y))))  # conv+bn, conv+functional relu

    def forward(self, x1, x2, x3):
        c = self.convs2d
        y2 = F.relu(self.bn2d(c[0](self._chain("d2", x2))))  # conv+bn+functional relu
        y2 = c[2](self.relu2d(c[1](y2)))  # conv+relu, bare conv
        y2 = F.relu(F.conv2d(y2, self.weight, self.bias, [1, 1], [0, 0], [1, 1], 1))
        return self._chain("d1", x1), y2, self._chain("d3", x3)


def _conv_bn_relu_inputs():
    return (torch.randn(2, 3, 6), torch.randn(2, 3, 4, 4), torch.randn(2, 3, 3, 3, 3))


class ResidualAdd(nn.Module):
    """conv (+bn) on the left and on the right of an add, without and with a following ReLU.

    These are onednn's conv+add(+relu) fusions; elsewhere they exercise conv and binary-op configs.
    """

    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList(nn.Conv2d(4, 4, 3, padding=1) for _ in range(8))
        self.bns = nn.ModuleList(nn.BatchNorm2d(4) for _ in range(4))
        self.relus = nn.ModuleList(nn.ReLU() for _ in range(4))

    def forward(self, x):
        c, bn, relu = self.convs, self.bns, self.relus
        y = c[0](x) + x  # conv left
        y = torch.add(y, bn[0](c[1](y)))  # conv+bn right
        y = bn[1](c[2](y)) + y  # conv+bn left
        y = y + c[3](y)  # conv right
        y = relu[0](c[4](y) + y)  # conv left, relu
        y = relu[1](y + bn[2](c[5](y)))  # conv+bn right, relu
        y = relu[2](torch.add(bn[3](c[6](y)), y))  # conv+bn left, relu
        return relu[3](y + c[7](y))  # conv right, relu


def _residual_inputs():
    return (torch.randn(2, 4, 5, 5),)


class LinearActivations(nn.Module):
    """linear+relu (module and functional), linear+leaky_relu and linear+tanh as modules, F.linear+relu.

    (nn.Tanh gets the global qconfig, see Model.global_qconfig_for, so that onednn can fuse it.)
    """

    def __init__(self):
        super().__init__()
        self.fc1, self.relu, self.fc2 = nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8)
        self.fc3, self.leaky = nn.Linear(8, 8), nn.LeakyReLU(0.1)
        self.fc4, self.tanh = nn.Linear(8, 8), nn.Tanh()
        self.weight, self.bias = nn.Parameter(torch.randn(4, 8) / 3), nn.Parameter(torch.randn(4) / 3)

    def forward(self, x):
        y = F.relu(self.fc2(self.relu(self.fc1(x))))
        y = self.tanh(self.fc4(self.leaky(self.fc3(y))))
        return F.relu(F.linear(y, self.weight, self.bias))


class LinearBn(nn.Module):
    """linear+bn1d+leaky_relu (onednn fuses it into LinearLeakyReLU, in eval mode only) and linear+bn1d."""

    def __init__(self):
        super().__init__()
        self.fc1, self.bn1, self.leaky = nn.Linear(8, 8), nn.BatchNorm1d(8), nn.LeakyReLU(0.1)
        self.fc2, self.bn2 = nn.Linear(8, 4), nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn2(self.fc2(self.leaky(self.bn1(self.fc1(x)))))


class LinearFunctionalActivations(nn.Module):
    """nn.Linear followed by F.leaky_relu and by torch.tanh: onednn's module+function fusion patterns.

    torch's fuser for those patterns expects a module where the function is (AssertionError), so for
    onednn both runs must raise alike; the other backends quantize these as linear and separate ops.
    """

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 8), nn.Linear(8, 4)

    def forward(self, x):
        return torch.tanh(self.fc2(F.leaky_relu(self.fc1(x), 0.2)))


def _vector_inputs():
    return (torch.randn(4, 8),)


class FixedQParamsOps(nn.Module):
    """sigmoid, hardsigmoid, tanh and softmax: ops whose output qparams are fixed by the backend."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.sigmoid, self.hardsigmoid, self.softmax = nn.Sigmoid(), nn.Hardsigmoid(), nn.Softmax(dim=-1)

    def forward(self, x):
        y = self.fc(x)
        return (
            self.sigmoid(y),
            torch.sigmoid(y),
            y.sigmoid(),
            self.hardsigmoid(y),
            F.hardsigmoid(y),
            torch.tanh(y),
            y.tanh(),
            self.softmax(y),
        )


class SharedQParamsOps(nn.Module):
    """pooling, hardtanh, relu6, interpolate, cat and flatten: ops whose output shares its input's observer.

    Each branch ends in its own conv, so that every shared-qparams op's config shows in the graph (a
    cat straight after the pools would share one observer among them whatever their configs say).
    """

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.max_pool, self.adaptive_pool, self.hardtanh = nn.MaxPool2d(2), nn.AdaptiveAvgPool2d(4), nn.Hardtanh()
        self.branch_convs = nn.ModuleList(nn.Conv2d(4, 4, 1) for _ in range(5))
        self.fc = nn.Linear(20 * 4 * 4, 4)

    def forward(self, x):
        y = self.conv(x)
        branches = [
            self.max_pool(y),
            F.avg_pool2d(y, 2),
            self.adaptive_pool(y),
            F.max_pool2d(self.hardtanh(y), 2),
            F.interpolate(F.relu6(y), scale_factor=0.5),
        ]
        y = torch.cat([conv(branch) for conv, branch in zip(self.branch_convs, branches)], dim=1)
        return self.fc(torch.flatten(y, 1))


class DefaultOps(nn.Module):
    """hardswish, elu, leaky_relu, instance_norm, group_norm, dropout, prelu, each straight on the input.

    Side by side rather than chained: between quantized neighbours an op is observed whatever its own
    config says, and convert_fx lowers dequantize-op-quantize patterns without consulting the config.
    """

    def __init__(self):
        super().__init__()
        self.hardswish, self.elu, self.leaky = nn.Hardswish(), nn.ELU(), nn.LeakyReLU(0.1)
        self.instance_norm, self.prelu = nn.InstanceNorm2d(4), nn.PReLU()
        self.dropout = nn.Dropout(0.0)  # matched by type; p=0 keeps train-mode flows free of randomness

    def forward(self, x):
        modules = [self.hardswish(x), self.elu(x), self.leaky(x), self.instance_norm(x), self.dropout(x), self.prelu(x)]
        functions = [F.hardswish(x), F.elu(x), F.leaky_relu(x, 0.2), F.instance_norm(x), F.group_norm(x, 2)]
        return modules + functions + [F.dropout(x, 0.0, self.training)]


class BinaryOps(nn.Module):
    """add and mul, operator and torch forms, each alone and followed by nn.ReLU, F.relu and torch.relu.

    All straight on the two inputs: nothing else is quantized, so each op's own config decides whether
    it is observed at all.
    """

    def __init__(self):
        super().__init__()
        self.relu = nn.ReLU()

    def forward(self, x, y):
        outputs = []
        for op in (operator.add, torch.add, operator.mul, torch.mul):
            outputs += [op(x, y), self.relu(op(x, y)), F.relu(op(x, y)), torch.relu(op(x, y))]
        return outputs


def _pair_inputs():
    return (torch.randn(2, 4), torch.randn(2, 4))


def _image_inputs():
    return (torch.randn(2, 3, 8, 8),)


def _feature_map_inputs():
    return (torch.randn(2, 4, 3, 3),)


class LayerNorms(nn.Module):
    """nn.LayerNorm and F.layer_norm between linears."""

    def __init__(self):
        super().__init__()
        self.fc1, self.norm, self.fc2 = nn.Linear(8, 8), nn.LayerNorm(8), nn.Linear(8, 8)
        self.weight, self.bias = nn.Parameter(torch.rand(8) + 0.5), nn.Parameter(torch.rand(8))

    def forward(self, x):
        y = self.fc2(self.norm(self.fc1(x)))
        return F.layer_norm(y, (8,), self.weight, self.bias)


class LSTMHead(nn.Module):
    """nn.LSTM followed by nn.Linear, for dynamic quantization."""

    def __init__(self):
        super().__init__()
        self.lstm, self.fc = nn.LSTM(4, 6, batch_first=True), nn.Linear(6, 3)

    def forward(self, x):
        output, _ = self.lstm(x)
        return self.fc(output)


def _sequence_inputs():
    return (torch.randn(2, 5, 4),)


class Embeddings(nn.Module):
    """nn.Embedding and nn.EmbeddingBag, for weight-only quantization."""

    def __init__(self):
        super().__init__()
        self.embedding, self.bag = nn.Embedding(10, 4), nn.EmbeddingBag(10, 4, mode="sum")

    def forward(self, indices, bag_indices, offsets):
        return self.embedding(indices), self.bag(bag_indices, offsets)


def _index_inputs():
    return (torch.randint(0, 10, (2, 3)), torch.randint(0, 10, (6,)), torch.tensor([0, 2, 5]))


# "ptq": prepare_fx + calibration, convert_to_reference_fx, and convert_fx lowering under the engine.
ALL_APIS = ("ptq", "qat", "fuse")
# fuse_fx reads only a config's fusion patterns: on a model with none it returns the traced model
# whatever the config, so such a case could not fail.
NO_FUSE_APIS = ("ptq", "qat")
# QAT differs from PTQ in what the config decides only for weighted and fixed-qparams patterns (QAT
# modules, fake-quant constraints); for other ops it would repeat ptq with fake quants, at twice the cost.
PTQ_APIS = ("ptq",)


@dataclass(frozen=True)
class Model:
    name: str
    module: Callable[[], nn.Module]
    inputs: Callable[[], tuple]
    apis: tuple[str, ...] = ALL_APIS
    quantization: str = "static"  # or "dynamic" / "weight_only": which of the backend's mappings applies
    # Object types whose own qconfig is dropped, so that the global one applies: the parts of a fused
    # module need the same object-type qconfig (torch raises LookupError otherwise), and the default
    # mappings give tanh a fixed-qparams qconfig that the Linear beside it does not have.
    global_qconfig_for: tuple = ()

    # Seeds the CPU generator alone (everything here runs on the CPU): torch.manual_seed also queues
    # a seeding of each accelerator not yet initialised, capturing the stack each time (ms a call).

    def build(self) -> nn.Module:
        torch.default_generator.manual_seed(0)
        return _randomize_batch_norms(self.module())

    def batches(self) -> list[tuple]:
        """Three calibration/evaluation batches, the same for both runs."""
        torch.default_generator.manual_seed(1)
        return [self.inputs() for _ in range(3)]


MODELS = [
    Model("conv_bn_relu", ConvBnRelu, _conv_bn_relu_inputs),
    Model("residual_add", ResidualAdd, _residual_inputs),
    Model("linear", LinearActivations, _vector_inputs, global_qconfig_for=(nn.Tanh,)),
    Model("linear_bn", LinearBn, _vector_inputs),
    Model("linear_functional", LinearFunctionalActivations, _vector_inputs),
    Model("fixed_qparams", FixedQParamsOps, _vector_inputs, NO_FUSE_APIS),
    Model("shared_qparams", SharedQParamsOps, _image_inputs, PTQ_APIS),
    Model("default_ops", DefaultOps, _feature_map_inputs, PTQ_APIS),
    Model("binary_ops", BinaryOps, _pair_inputs, PTQ_APIS),
    Model("layer_norm", LayerNorms, _vector_inputs, NO_FUSE_APIS),
    # Dynamic and weight-only quantization are post-training only: no QAT, nothing to fuse.
    Model("lstm_dynamic", LSTMHead, _sequence_inputs, PTQ_APIS, quantization="dynamic"),
    Model("embeddings", Embeddings, _index_inputs, PTQ_APIS, quantization="weight_only"),
]

# ---------------------------------------------------------------------------------------------
# Backends: QConfigMappings whose dtypes each builder's dtype configs accept, and an engine.
# ---------------------------------------------------------------------------------------------


def _min_max_activations(mapping: QConfigMapping) -> QConfigMapping:
    """torch's mapping with each HistogramObserver replaced by a MinMaxObserver on the same arguments.

    HistogramObserver's qparam search costs ~20 ms per observer and has nothing to do with the backend
    config; a MinMaxObserver with the same dtype, range, reduce_range and eps meets exactly the same dtype
    configs and constraints, so the config still decides everything it decided before.
    """

    def swap(qconfig):
        activation = getattr(qconfig, "activation", None)
        if getattr(getattr(activation, "p", None), "func", None) is not HistogramObserver:
            return qconfig
        return QConfig(activation=MinMaxObserver.with_args(**activation.p.keywords), weight=qconfig.weight)

    mapping.global_qconfig = swap(mapping.global_qconfig)
    for object_type, qconfig in mapping.object_type_qconfigs.items():
        mapping.object_type_qconfigs[object_type] = swap(qconfig)
    return mapping


def _tensorrt_mapping(is_qat: bool) -> QConfigMapping:
    """tensorrt accepts only qint8 activations (and qint8 weights): symmetric qint8 observers."""
    if is_qat:
        activation = FakeQuantize.with_args(
            observer=MovingAverageMinMaxObserver,
            dtype=torch.qint8,
            qscheme=torch.per_tensor_symmetric,
            quant_min=-128,
            quant_max=127,
        )
        return QConfigMapping().set_global(QConfig(activation=activation, weight=default_weight_fake_quant))
    activation = MinMaxObserver.with_args(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric)
    return QConfigMapping().set_global(QConfig(activation=activation, weight=default_weight_observer))


# onednn's embedding dtype config takes qint8 weights, the others quint8 (Embedding) and quint4x2 (EmbeddingBag).
_QINT8_FLOAT_QPARAMS = QConfig(
    activation=PlaceholderObserver.with_args(dtype=torch.float),
    weight=PerChannelMinMaxObserver.with_args(
        dtype=torch.qint8, qscheme=torch.per_channel_affine_float_qparams, ch_axis=0
    ),
)
_FLOAT_QPARAMS = (float_qparams_weight_only_qconfig, float_qparams_weight_only_qconfig_4bit)

# Only onednn has fusion patterns that mix a module and a function ((Linear, F.leaky_relu) and
# (Linear, torch.tanh)): under any other config, fuse_fx leaves linear_functional as it traced it.
_NO_MODULE_FUNCTION_FUSIONS = frozenset({("linear_functional", "fuse")})


@dataclass(frozen=True)
class Backend:
    label: str  # test id
    builder_id: str  # tests.support.builders.Builder.id
    engine: str  # torch.backends.quantized.engine for the flow and for convert_fx's lowering
    ptq_mapping: Callable[[], QConfigMapping]
    qat_mapping: Callable[[], QConfigMapping]
    dynamic_qconfig: QConfig = default_dynamic_qconfig  # for nn.LSTM and nn.Linear
    embedding_qconfigs: tuple[QConfig, QConfig] = _FLOAT_QPARAMS  # for nn.Embedding, nn.EmbeddingBag
    apis: tuple[str, ...] = ALL_APIS
    # (model name, api) cases whose flow this config leaves exactly as an empty BackendConfig does
    # (no pattern of it matches the model): they could not fail, so they do not run. None: not known
    # here (a builder of the user's own), so every case runs and case_failures measures it.
    untouched: frozenset[tuple[str, str]] | None = _NO_MODULE_FUNCTION_FUSIONS
    consumed_by_fx: bool = True  # False: no FX flow reads this config, so its cases prove nothing

    @property
    def builder(self):
        return next(b for b in BUILDERS if b.id == self.builder_id)

    def mapping(self, api: str, model: Model) -> QConfigMapping:
        if model.quantization == "dynamic":
            return (
                QConfigMapping()
                .set_object_type(nn.LSTM, self.dynamic_qconfig)
                .set_object_type(nn.Linear, self.dynamic_qconfig)
            )
        if model.quantization == "weight_only":
            embedding, bag = self.embedding_qconfigs
            return QConfigMapping().set_object_type(nn.Embedding, embedding).set_object_type(nn.EmbeddingBag, bag)
        mapping = self.qat_mapping() if api == "qat" else self.ptq_mapping()  # fuse_fx ignores it
        for object_type in model.global_qconfig_for:
            mapping.object_type_qconfigs.pop(object_type, None)
        return mapping


def _default(label: str, builder_id: str, mapping_backend: str, engine: str, **extra) -> Backend:
    """A backend case using torch's default (QAT) QConfigMapping for mapping_backend."""
    return Backend(
        label,
        builder_id,
        engine,
        lambda: _min_max_activations(get_default_qconfig_mapping(mapping_backend)),
        lambda: get_default_qat_qconfig_mapping(mapping_backend),
        **extra,
    )


# Backend-specific knowledge (quantized engine, qconfig mappings, extra variants), keyed by
# tests.support.builders.Builder.id. A builder with no entry gets _generic_cases.
_SPECIFIC_CASES = [
    _default("fbgemm", "fbgemm", "fbgemm", "fbgemm"),
    _default("x86", "x86", "x86", "x86"),
    _default(
        "onednn", "onednn", "onednn", "onednn", embedding_qconfigs=(_QINT8_FLOAT_QPARAMS,) * 2, untouched=frozenset()
    ),
    _default("qnnpack", "qnnpack", "qnnpack", "qnnpack"),
    # qnnpack's other dtype configs: symmetric qint8 with scale and range constraints.
    Backend(
        "qnnpack_symmetric",
        "qnnpack",
        "qnnpack",
        lambda: _min_max_activations(_get_symmetric_qnnpack_qconfig_mapping()),
        _get_symmetric_qnnpack_qat_qconfig_mapping,
    ),
    # native = fbgemm/qnnpack dtypes: quint8 activations, qint8 weights.
    _default("native", "native", "fbgemm", "fbgemm"),
    _default("test_only_legacy_native", "test_only_legacy_native", "fbgemm", "fbgemm"),
    # What sets the legacy config apart from native: its float16 static and dynamic dtype configs.
    Backend(
        "test_only_legacy_native_fp16",
        "test_only_legacy_native",
        "fbgemm",
        lambda: QConfigMapping().set_global(float16_static_qconfig),
        lambda: QConfigMapping().set_global(float16_static_qconfig),
        dynamic_qconfig=float16_dynamic_qconfig,
        # fp16 has no fake quantization (QAT modules reject its PlaceholderObserver) and fuse_fx
        # ignores qconfigs: those two flows are the test_only_legacy_native case's.
        apis=PTQ_APIS,
        # The legacy config has no fp16 default-op configs; its embeddings case would repeat
        # test_only_legacy_native's (same config, same weight-only mapping).
        untouched=_NO_MODULE_FUNCTION_FUSIONS | {("default_ops", "ptq"), ("embeddings", "ptq")},
    ),
    # executorch's static configs take quint8 activations with unconstrained qint8 weights. It has
    # no linear fusions.
    _default(
        "executorch",
        "executorch",
        "qnnpack",
        "qnnpack",
        untouched=_NO_MODULE_FUNCTION_FUSIONS | {("linear", "fuse"), ("linear_bn", "fuse")},
    ),
    # tensorrt is meant for reference models; convert_fx lowering runs under x86 to show what torch does.
    # Its configs are static qint8 only: no default ops, no dynamic or weight-only quantization.
    Backend(
        "tensorrt",
        "tensorrt",
        "x86",
        lambda: _tensorrt_mapping(False),
        lambda: _tensorrt_mapping(True),
        untouched=_NO_MODULE_FUNCTION_FUSIONS
        | {("default_ops", "ptq"), ("lstm_dynamic", "ptq"), ("embeddings", "ptq")},
    ),
    # qnnpack_pt2e's patterns are aten ops, which FX tracing of nn.Modules never produces: no FX
    # flow in torch 2.13 consumes this config. Every model stays float, the flows must still agree,
    # and must give what an empty BackendConfig gives (case_failures checks it): not coverage.
    _default("qnnpack_pt2e", "qnnpack_pt2e", "qnnpack", "qnnpack", consumed_by_fx=False),
]


def _generic_cases(builder_id: str) -> list[Backend]:
    """A builder nothing here knows about: torch's default mappings under the x86 engine.

    Which models its patterns touch is not known either (untouched=None): every case runs, and
    test_an_empty_config_fails_some_case_of_each_unknown_backend requires some of them to be able to fail.
    """
    return [_default(builder_id, builder_id, "x86", "x86", untouched=None)]


BACKENDS = [
    case
    for builder in REFERENCED
    for case in ([c for c in _SPECIFIC_CASES if c.builder_id == builder.id] or _generic_cases(builder.id))
]

# ---------------------------------------------------------------------------------------------
# Flows: each records snapshots of what it produced; run_flow turns an exception into its type.
# ---------------------------------------------------------------------------------------------


def _module_type(module: nn.Module) -> type:
    # Every GraphModule instance gets its own class; what matters is that it is one.
    return torch.fx.GraphModule if isinstance(module, torch.fx.GraphModule) else type(module)


def _run(model, batches) -> list:
    # No gradients: forwards alone update observers, fake quants and (in train mode) BN statistics.
    with torch.no_grad():
        return [model(*batch) for batch in batches]


def _record(record: dict, step: str, gm: torch.fx.GraphModule, batches) -> None:
    """gm's code, graph and modules; then its outputs on the batches and its state after them.

    The structure is recorded before running, so a flow that raises in forward still compares it.
    """
    record[step] = {
        "code": gm.code,
        "graph": str(gm.graph),
        "modules": [(name, _module_type(module)) for name, module in gm.named_modules()],
    }
    record[step]["outputs"] = plain(_run(gm, batches))
    record[step]["state"] = _state(gm)


def _state(gm: torch.fx.GraphModule) -> dict:
    """Each module's own state_dict entries: observer statistics, fake-quant qparams, (packed) weights.

    Module by module, so that a module torch cannot serialize (qnnpack cannot unpack quantized conv3d
    weights) records its exception type, compared like any value, without hiding the others' state.
    """
    state = {}
    for name, module in gm.named_modules():
        own: dict = {}
        try:
            module._save_to_state_dict(own, "", keep_vars=False)
        except Exception as exc:  # compared, not swallowed
            own = type(exc)
        state[name] = plain(own)
    return state


def _ptq_flow(record, model, batches, config, mapping, lower=True):
    """prepare_fx and calibration, then convert_to_reference_fx and convert_fx from the same observers.

    One flow rather than two, so that the prepare step (most of the cost) runs once for both.
    """
    prepared = prepare_fx(model.eval(), mapping, example_inputs=batches[0], backend_config=config)
    _record(record, "prepared", prepared, batches)  # calibration
    # Either conversion rewrites the prepared model in place: the reference one gets a copy.
    _record(record, "reference", convert_to_reference_fx(copy.deepcopy(prepared), backend_config=config), batches)
    if lower:
        _record(record, "lowered", convert_fx(prepared, backend_config=config), batches)


def _qat_flow(record, model, batches, config, mapping):
    prepared = prepare_qat_fx(model.train(), mapping, example_inputs=batches[0], backend_config=config)
    _record(record, "prepared", prepared, batches)  # training-mode steps
    _record(record, "reference", convert_to_reference_fx(prepared.eval(), backend_config=config), batches)


def _fuse_flow(record, model, batches, config, mapping):
    _record(record, "fused", fuse_fx(model.eval(), backend_config=config), batches)


FLOWS = {
    "ptq": _ptq_flow,
    "ptq_without_lowering": functools.partial(_ptq_flow, lower=False),
    "qat": _qat_flow,
    "fuse": _fuse_flow,
}


@contextlib.contextmanager
def _garbage_collected_after_the_flow():
    """No garbage collection while a flow runs; after it, torch's cache of the flow's modules cleared.

    A flow allocates ~10^5 objects, many in reference cycles (modules, graphs, nodes) that live until
    it ends: collections while it runs scan them again and again and free little, and promote them
    to the older generations, whose collections also scan everything torch imported. After the flow
    the first young collection frees its cycles at once. torch.ao.quantization.fx.utils caches each
    module's device without bound (functools.cache on assert_and_get_unique_device): every model of
    every flow of the run would stay alive, and make each full collection longer. The cache serves
    the flow while it runs; no module of an ended flow is asked about again.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        assert_and_get_unique_device.cache_clear()
        if enabled:
            gc.enable()


def run_flow(api: str, model: Model, float_model: nn.Module, config: BackendConfig, backend: Backend) -> dict:
    """What the flow produced at each step, and the type of the exception that stopped it (or None).

    float_model is the flow's own: the flow changes it.
    """
    record: dict = {}
    with quantized_engine(backend.engine), no_stack_traces(), _garbage_collected_after_the_flow():
        try:
            FLOWS[api](record, float_model, model.batches(), config, backend.mapping(api, model))
        except Exception as exc:  # compared, not swallowed: the other config must raise the same type
            return {"raised": type(exc), "steps": record}
    return {"raised": None, "steps": record}


def flow_results(api: str, model: Model, backend: Backend, ours: BackendConfig, theirs: BackendConfig):
    """(ours, theirs): run_flow with each config, each on its own build of the seeded model."""
    with torch.random.fork_rng(devices=[]):  # the seeds set here stay out of other tests
        return run_flow(api, model, model.build(), ours, backend), run_flow(api, model, model.build(), theirs, backend)


def compare_flow(api: str, model: Model, backend: Backend, ours: BackendConfig, theirs: BackendConfig) -> list[str]:
    return differences(*flow_results(api, model, backend, ours, theirs))


# Empty-config results for this session, keyed by all they depend on (see empty_config_result).
_EMPTY_CONFIG_RESULTS: dict[tuple, dict] = {}


def empty_config_result(api: str, model: Model, backend: Backend) -> dict:
    """run_flow with an empty BackendConfig of the backend's name: the flow when no pattern matches.

    It depends on the model, the flow, the engine and the qconfig mapping only (no FX code in torch
    2.13 reads a config's name), so backends that share a mapping and an engine share one run, run
    once per test run by the first pytest-xdist worker to need it (tests/support/shared_builds.py).
    """
    key = (model.name, api, backend.engine, repr(backend.mapping(api, model)))
    if key not in _EMPTY_CONFIG_RESULTS:

        def run_empty() -> dict:
            with torch.random.fork_rng(devices=[]):
                empty = BackendConfig(backend.builder.theirs()().name)
                return run_flow(api, model, model.build(), empty, backend)

        factory = shared_builds.SESSION_FACTORY[0]
        shared_key = repr((*key[:3], _without_addresses(key[3], backend.mapping(api, model))))
        _EMPTY_CONFIG_RESULTS[key] = shared_builds.computed_once(factory, "empty-config-flows", shared_key, run_empty)
    return _EMPTY_CONFIG_RESULTS[key]


_NAMED: dict[str, object] = {}  # each name _without_addresses gave, and the object it names


def _without_addresses(text: str, mapping: QConfigMapping) -> str:
    """repr(mapping), the same in every process: each function's repr (it has an address) by its qualified name.

    Two objects of one name would share a key: that raises instead.
    """
    object_types = [*mapping.object_type_qconfigs, *(t for _, t, _ in mapping.module_name_object_type_order_qconfigs)]
    for object_type in object_types:
        if " at 0x" in repr(object_type):
            name = f"{getattr(object_type, '__module__', None)}.{getattr(object_type, '__qualname__', None)}"
            assert _NAMED.setdefault(name, object_type) is object_type, f"two objects named {name}"
            text = text.replace(repr(object_type), name)
    assert " at 0x" not in text, text
    return text


def case_failures(case_id: str, backend: Backend, model: Model, api: str, ours: BackendConfig) -> list[str]:
    """Why a case fails with ours as the config under test; empty if it passes.

    ours must give exactly torch's results. torch's config must give other results than an empty
    BackendConfig (else the case could not fail whatever ours held), except for a config no FX flow
    consumes, which must give the same ones (else it should count as coverage).
    """
    theirs_config = backend.builder.reference_as_declared()  # torch's, but where the spec declares otherwise
    ours_result, theirs = flow_results(api, model, backend, ours, theirs_config)
    found = differences(ours_result, theirs)
    if bool(theirs["steps"]) == (case_id in TORCH_FAILS_BEFORE_ANY_STEP):
        found.append(f"torch's flow produced {len(theirs['steps'])} steps, raised {theirs['raised']}")
    exercised = bool(differences(theirs, empty_config_result(api, model, backend)))
    if backend.untouched is None and not exercised:
        return found  # a model an unknown backend does not touch: only ours == torch's is known here
    if exercised != backend.consumed_by_fx:
        found.append(
            f"torch's config {'changes' if exercised else 'does not change'} the flow's results compared with"
            f" an empty BackendConfig, yet consumed_by_fx={backend.consumed_by_fx}"
            + ("" if exercised else f" and {(model.name, api)} is not in the backend's untouched cases")
        )
    return found + _declared_note(backend) if found else found


def _declared_note(backend: Backend) -> list[str]:
    """A failing case of a backend whose spec declares differences names them: they may be the cause."""
    declarations = backend.builder.declarations
    if not declarations:
        return []
    return [
        f"{backend.builder.id}'s spec declares {len(declarations)} difference(s) from its reference, applied to"
        " the reference's config in this flow (a declaration may be the cause):",
        *(f"  {declaration}" for declaration in declarations),
    ]


# torch's own flows that fail before producing anything: onednn's fusers for (Linear, F.leaky_relu)
# and (Linear, torch.tanh) expect modules, and bn fusions cannot be fused in QAT. Here only the
# exception type can be compared; anywhere else, a flow that produces nothing means the test is broken.
TORCH_FAILS_BEFORE_ANY_STEP = {
    "onednn-residual_add-qat",
    "onednn-linear_bn-qat",
    "onednn-linear_functional-ptq@onednn",
    "onednn-linear_functional-qat",
    "onednn-linear_functional-fuse",
}


# ---------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """On these tiny tensors, waking a second OpenMP thread costs ~10x the op itself."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def _case(backend: Backend, model: Model, api: str):
    if api != "ptq":
        return pytest.param(backend, model, api, id=f"{backend.label}-{model.name}-{api}")
    if backend.engine in torch.backends.quantized.supported_engines:
        return pytest.param(backend, model, api, id=f"{backend.label}-{model.name}-ptq@{backend.engine}")
    # Lowering needs the engine's kernels; prepare and convert_to_reference_fx still run.
    case_id = f"{backend.label}-{model.name}-ptq-lowering_skipped_engine_{backend.engine}_not_built"
    return pytest.param(backend, model, "ptq_without_lowering", id=case_id)


def _runs(backend: Backend, model: Model, api: str) -> bool:
    return api in model.apis and api in backend.apis and (model.name, api) not in (backend.untouched or ())


CASES = [
    _case(backend, model, api)
    for backend in BACKENDS
    for model in MODELS
    for api in ALL_APIS
    if _runs(backend, model, api)
]


def test_every_builder_runs_every_api():
    """Coverage counts only cases that can fail: no untouched case, nothing of the PT2E config (see BACKENDS).

    test_flow_matches_torch checks, case by case, that each counted case's config changes the flow's
    results compared with an empty BackendConfig.
    """
    consumed = [b for b in BACKENDS if b.consumed_by_fx]
    covered = {(b.builder_id, api) for b in consumed for m in MODELS for api in ALL_APIS if _runs(b, m, api)}
    not_consumed = {b.builder_id for b in BACKENDS} - {b.builder_id for b in consumed}
    assert covered == {(b.id, api) for b in REFERENCED if b.id not in not_consumed for api in ALL_APIS}
    assert {b.builder_id for b in BACKENDS} == {b.id for b in REFERENCED}


@pytest.mark.parametrize(("backend", "model", "api"), CASES)
def test_flow_matches_torch(backend, model, api, request):
    found = case_failures(request.node.callspec.id, backend, model, api, backend.builder.ours()())
    assert not found, "\n".join(found)


# One case per counted backend and flow: the last, whose model (embeddings, layer_norm, ...) is cheap.
_SAMPLE = {
    (backend.label, api.removesuffix("_without_lowering")): case
    for case in CASES
    for backend, _, api in [case.values]
    if backend.consumed_by_fx and backend.untouched is not None
}


@pytest.mark.parametrize(("backend", "model", "api"), _SAMPLE.values())
def test_an_empty_config_fails_the_case(backend, model, api, request):
    """Swapping the config under test for an empty BackendConfig of the same name fails the case."""
    empty = BackendConfig(backend.builder.ours()().name)
    found = case_failures(request.node.callspec.id, backend, model, api, empty)
    assert any(difference.startswith("result") for difference in found), found


def test_an_empty_config_fails_some_case_of_each_unknown_backend():
    """A builder of the user's own (no entry in _SPECIFIC_CASES) touches models nobody listed: some must fail."""
    for backend in (b for b in BACKENDS if b.untouched is None):
        cases = [(model, api) for model in MODELS for api in ALL_APIS if _runs(backend, model, api)]
        empty = BackendConfig(backend.builder.ours()().name)
        assert any(
            any(d.startswith("result") for d in case_failures(backend.label, backend, model, api, empty))
            for model, api in cases
        ), (
            f"{backend.label}: its patterns touch none of the FX flow models, so its cases prove nothing; add a"
            " model its patterns match to MODELS, or an entry with consumed_by_fx=False to _SPECIFIC_CASES"
        )


def test_a_model_an_unknown_backend_does_not_touch_still_compares_ours_with_torch_s():
    """tensorrt's config leaves default ops alone; seen as a user's builder, that case passes on equality."""
    (generic,) = _generic_cases("tensorrt")
    (model,) = [m for m in MODELS if m.name == "default_ops"]
    case_id = "tensorrt-default_ops-ptq@x86"
    assert case_failures(case_id, generic, model, "ptq", generic.builder.ours()()) == []
    # ours is still run against torch's: a config that does touch the model fails the case
    touching = next(b for b in BUILDERS if b.id == "fbgemm").ours()()
    assert any(d.startswith("result") for d in case_failures(case_id, generic, model, "ptq", touching))


def _without(pattern) -> Callable[[BackendConfig], BackendConfig]:
    """A mutation that removes pattern's config, and nothing else."""

    def remove(config: BackendConfig) -> BackendConfig:
        kept = [c for c in config.configs if c.pattern != pattern]
        assert len(kept) == len(config.configs) - 1
        return BackendConfig(config.name).set_backend_pattern_configs(kept)

    return remove


def _with_conv_relu2d_qint8_activations(config: BackendConfig) -> BackendConfig:
    (fused,) = [c for c in config.configs if c.pattern is nni.ConvReLU2d]
    fused.set_dtype_configs([DTypeConfig(input_dtype=torch.qint8, output_dtype=torch.qint8, weight_dtype=torch.qint8)])
    return config


def _with_max_pool2d_own_observer(config: BackendConfig) -> BackendConfig:
    (max_pool,) = [c for c in config.configs if c.pattern is nn.MaxPool2d]
    max_pool.set_observation_type(ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT)
    return config


@pytest.mark.parametrize(
    ("mutate", "model_name", "api", "reported"),
    [
        # (Conv2d, F.relu) fusion looks up the (Conv2d, ReLU) fuser: without it, fuse_fx raises.
        (_without((nn.Conv2d, nn.ReLU)), "conv_bn_relu", "fuse", "result['raised']"),
        # Without it, fc2 and F.relu stay apart: one module fewer fused, the same outputs.
        (_without((nn.Linear, F.relu)), "linear", "fuse", "['fused']['modules']"),
        # The bag stays float, its sibling nn.Embedding is still quantized.
        (_without(nn.EmbeddingBag), "embeddings", "ptq", "['lowered']['modules']"),
        (_with_conv_relu2d_qint8_activations, "conv_bn_relu", "ptq", "['reference']['code']: differs"),
        # Same code; only the observer instances, their statistics and the outputs tell.
        (_with_max_pool2d_own_observer, "shared_qparams", "ptq", "['prepared']['modules']"),
    ],
    ids=[
        "drop_conv2d_relu_fusion",
        "drop_linear_functional_relu_fusion",
        "drop_embedding_bag",
        "conv_relu2d_qint8_dtypes",
        "max_pool2d_own_observer",
    ],
)
def test_harness_reports_a_mutated_config(mutate, model_name, api, reported):
    """One altered pattern config in our fbgemm config is enough for a flow to differ from torch's."""
    backend = next(b for b in BACKENDS if b.label == "fbgemm")
    model = next(m for m in MODELS if m.name == model_name)
    found = compare_flow(api, model, backend, mutate(backend.builder.ours()()), backend.builder.reference_as_declared())
    assert any(reported in difference for difference in found), found
