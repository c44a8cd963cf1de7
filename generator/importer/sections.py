"""Import, placed: each imported pattern in the family (`section`) torch's backends give it.

The support matrix has a table per section and a row per (section, pattern), so an
imported backend whose patterns have no section shows its `nn.Linear` in a row of
its own under "other", beside torch's `nn.Linear` row, and a `·` there. Each pattern
that has no section yet (the spec `import --force` replaces may have given it one:
`round_trip.recover`) gets one, decided the way the project's backends place the
same pattern: the families of the project's other spec files and of the op groups
of `spec/_common.py` (torch's: conv1d/2d/3d, linear, binary ops, share qparams ops,
fixed qparams ops, ...).

- The same pattern: the section most backends give it with the same observation type
  (executorch shares `F.elu`'s observer and puts it under "share qparams ops"; six
  others put it under "default ops"), else the section most give it at all.
- A fusion of the backend's own, `(nn.Conv2d, nn.ReLU6)`: the family whose fusions
  start with the same op (`(nn.Conv2d, ...)` are conv2d's).
- Else by what the pattern is, as torch's own families are named, so that a project with
  no torch backends in spec/ places a team's builder too (`intrinsic`): the op it is built
  around (its root module, else the op a fusion starts from) names its family (`nn.Conv2d`,
  `nni.ConvBnReLU2d`, `F.conv2d`: "conv2d"; `nn.Linear`: "linear"; `operator.add`, `torch.mul`
  and their fusions: "binary ops"; `torch.cat`: "cat"; batch norms, layer norms, embeddings,
  rnns); an op that shares its input's observer is a "share qparams ops"; one whose
  activations have fixed qparams a "fixed qparams ops".

Else it stays in "other". Sections change no pattern: only the matrix and the
comments of the generated module.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

from generator import model, process

SHARE_QPARAMS = "share qparams ops"
FIXED_QPARAMS = "fixed qparams ops"
SHARE_OBSERVER = "OUTPUT_SHARE_OBSERVER_WITH_INPUT"


class Families:
    """The project's sections, counted per pattern: who places what where."""

    def __init__(self, configs):
        self.by_key: dict[object, Counter] = {}
        self.by_key_and_type: dict[tuple, Counter] = {}
        self.by_first_op: dict[object, Counter] = {}
        for config in configs:
            if not config.section:
                continue
            self.by_key.setdefault(config.key, Counter())[config.section] += 1
            self.by_key_and_type.setdefault((config.key, config.observation_type), Counter())[config.section] += 1
            first = _first_op(config)
            if first is not None:
                self.by_first_op.setdefault(first, Counter())[config.section] += 1

    def section(self, config: model.PatternConfig) -> str:
        for counts in (
            self.by_key_and_type.get((config.key, config.observation_type)),
            self.by_key.get(config.key),
            self.by_first_op.get(_first_op(config)) if _first_op(config) is not None else None,
        ):
            if counts:
                return _most(counts)
        return intrinsic(config)


# The family of the op a pattern is built around, by the last part of its path, as torch's builders name them.
_FAMILIES = (
    (re.compile(r"(?:Conv|ConvTranspose|ConvReLU|ConvBn|ConvBnReLU|ConvAdd|ConvAddReLU)([123])d"), r"conv\1d"),
    (re.compile(r"(?:conv|conv_transpose)([123])d"), r"conv\1d"),
    (re.compile(r"Linear(?:ReLU|Bn1d|LeakyReLU|Tanh)?|linear"), "linear"),
    (re.compile(r"(?:BatchNorm|BNReLU)[123]d"), "batchnorm"),
    (re.compile(r"LayerNorm|layer_norm"), "layer norm"),
    (re.compile(r"Embedding|EmbeddingBag|embedding|embedding_bag"), "embedding"),
    (re.compile(r"LSTM|GRU|RNNCell|LSTMCell|GRUCell"), "rnn"),
)
_BINARY_OPS = {"operator.add", "torch.add", "operator.mul", "torch.mul", "operator.iadd", "operator.imul"}
_CAT = {"torch.cat", "torch.concat", "torch.concatenate"}


def intrinsic(config: model.PatternConfig) -> str:
    """The section torch's builders give a pattern like this one, by what it is: its family's (see the module's
    docstring), else "share qparams ops" or "fixed qparams ops" for a single op that is one, else ""."""
    root = _root_op(config)
    if isinstance(root, model.TorchRef):
        if root.path in _BINARY_OPS:
            return "binary ops"
        if root.path in _CAT:
            return "cat"
        last = root.path.rsplit(".", 1)[-1]
        for family, section in _FAMILIES:
            if match := family.fullmatch(last):
                return match.expand(section)
    if _single(config):
        if config.observation_type == SHARE_OBSERVER:
            return SHARE_QPARAMS
        if _fixed_qparams(config):
            return FIXED_QPARAMS
    return ""


def _root_op(config: model.PatternConfig):
    """The op a pattern is built around: its root module, else a fusion's first op (the innermost of a
    pattern in torch's reversed nested format: `(nn.ReLU, (nn.BatchNorm2d, nn.Conv2d))` is built on Conv2d)."""
    if config.root_module is not None:
        return config.root_module
    if config.pattern is not None:
        pattern = config.pattern
        while isinstance(pattern, tuple) and pattern:
            pattern = pattern[0]
        return pattern
    pattern = config.pattern_complex_format
    while isinstance(pattern, tuple) and len(pattern) > 1:
        pattern = pattern[1]
    return pattern[0] if isinstance(pattern, tuple) and pattern else pattern


def _single(config: model.PatternConfig) -> bool:
    return not isinstance(config.key, tuple)


def place(spec, root: Path, path: Path):
    """`spec` (a `reading.ImportedSpec`) with a section for each pattern the project's
    families hold; patterns with a section already keep it."""
    configs = spec.backend.configs
    if all(c.section for c in configs):
        return spec
    families = Families(_project_configs(root, path, spec))
    placed = tuple(c if c.section else replace(c, section=families.section(c)) for c in configs)
    return replace(spec, backend=replace(spec.backend, configs=placed))


def _project_configs(root: Path, path: Path, spec) -> list[model.PatternConfig]:
    """The patterns of the project's other spec files and of spec/_common.py's op groups."""
    from generator.errors import GeneratorError
    from generator.loading import loader

    found: list[model.PatternConfig] = []
    try:
        # As regenerate will load them; kept, so that the check of backend names after this takes them as they are.
        modules = loader.load_modules(root, exclude=path, reuse=True, keep=True)
    except GeneratorError:
        modules = []  # the other spec files are broken: regenerate says so; place by the op groups
    for module in modules:
        for backend in module.backends:
            found += [c for c in backend.configs if isinstance(c, model.PatternConfig)]
    return found + _group_configs(root, spec)


def _group_configs(root: Path, spec) -> list[model.PatternConfig]:
    """What each op group of spec/_common.py builds, with the builder's dtype-config lists: the op groups are
    spec code, run in a child process that ends with whatever they do (none, if it ends without an answer)."""
    with process.Forked(_group_configs_here, root, spec, when_lost=[]) as child:
        return child.result()


def _group_configs_here(root: Path, spec) -> list[model.PatternConfig]:
    from generator.importer import compaction

    common = compaction.load_common(root)
    if common is None:
        return []
    lists = list(dict.fromkeys(c.dtype_configs for c in spec.backend.configs if c.dtype_configs))
    found: dict[object, model.PatternConfig] = {}
    for name in compaction.GROUP_OPTIONS:
        function = getattr(common, name, None)
        if not callable(function):
            continue
        for dtype_configs in lists:
            built = compaction.expanded_call(function, ((None, dtype_configs),))
            if built:
                for config in built:
                    found.setdefault((config.key, config.observation_type), config)
                break
    return list(found.values())


def _first_op(config: model.PatternConfig):
    """The op a flat simple pattern `(op, ...)` starts with, else None."""
    pattern = config.pattern
    if isinstance(pattern, tuple) and pattern and not any(isinstance(p, tuple) for p in pattern):
        return pattern[0]
    return None


def _fixed_qparams(config: model.PatternConfig) -> bool:
    for dtype_config in config.dtype_configs:
        output = getattr(dtype_config, "output_dtype", None)
        if isinstance(output, model.DTypeWithConstraints):
            bounds = output.bounds
            if bounds.get("scale_exact_match") is not None and bounds.get("zero_point_exact_match") is not None:
                return True
    return isinstance(config.dtype_configs[0], model.FixedQParams) if config.dtype_configs else False


def _most(counts: Counter) -> str:
    """The section most backends give; a tie goes to the first in alphabetical order (deterministic)."""
    return min(counts, key=lambda section: (-counts[section], section))
