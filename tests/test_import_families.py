"""`import` of an in-house builder written with helpers, loops and local variables, into a project that
has no torch backend in spec/ (`python -m generator init`'s): the spec says it in the spec's own words.

tests/support/inhouse/orbit_dsp/helpers.py calls a conv-family helper once for Conv1d and once for Conv2d,
loops over binary, share-qparams and fixed-qparams op lists, and binds its dtype configs to local variables
of the builder. Its spec: the conv family as one loop over its numbers (`nn[f"Conv{d}d"]`), each pattern in
the section torch's builders give its kind (found from the pattern itself: no torch spec is there to ask),
the builder's own local names for its constants; and the generated module equals the builder.
"""

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from generator import model
from generator.importer import sections
from generator.review.equality import compare_backend_configs
from tests.support import init_projects

PACKAGE = Path(__file__).parent / "support" / "inhouse" / "orbit_dsp"
TARGET = "orbit_dsp.helpers:get_orbit_dsp_backend_config"


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """(project, site): a project `init` started, the orbit_dsp package imported into it and regenerated."""
    project, site = init_projects.started(tmp_path_factory.mktemp("families"), PACKAGE)
    for args in (("import", TARGET, "--name", "orbit"), ("regenerate",)):
        done = init_projects.generator(project, site, *args)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
    return project, site


def spec_text(imported) -> str:
    return (imported[0] / "spec" / "orbit.py").read_text()


def test_the_project_has_no_torch_backend_to_learn_sections_from(imported):
    project, _ = imported
    assert sorted(p.name for p in (project / "spec").glob("*.py")) == [
        "my_backend.py",
        "orbit.py",
    ]
    example = (project / "spec" / "my_backend.py").read_text()
    for family in ("conv1d", "binary ops", "share qparams ops", "fixed qparams ops"):
        assert f'section="{family}"' not in example


def test_the_generated_builder_equals_the_in_house_builder(imported, monkeypatch):
    project, site = imported
    monkeypatch.syspath_prepend(str(site))
    for name in [n for n in sys.modules if n == "orbit_dsp" or n.startswith("orbit_dsp.")]:
        monkeypatch.delitem(sys.modules, name)
    from orbit_dsp.helpers import get_orbit_dsp_backend_config

    path = project / "generated" / "orbit.py"
    spec = importlib.util.spec_from_file_location("families_orbit_generated", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ours, theirs = module.get_orbit_dsp_backend_config(), get_orbit_dsp_backend_config()
    assert compare_backend_configs("orbit", ours, theirs) == []
    assert [c.pattern for c in ours.configs] == [c.pattern for c in theirs.configs]


def test_the_spec_is_no_longer_than_the_builder_it_replaces(imported):
    spec = spec_text(imported).splitlines()
    builder = (PACKAGE / "helpers.py").read_text().splitlines()
    assert len(spec) <= len(builder), (len(spec), len(builder))
    code = [line for line in spec if line.strip()]
    assert len(code) <= len([line for line in builder if line.strip()])
    # dtype-config lists of one short name are written out, as the builder writes them
    assert "[weighted_int8]" in spec_text(imported) and "_dtype_configs = [" not in spec_text(imported)


def test_the_conv_helper_called_per_dimension_is_one_loop_over_its_numbers(imported):
    spec = spec_text(imported)
    assert spec.count("for d in (1, 2)") == 1, spec
    for name in ('nn[f"Conv{d}d"]', 'nnqat[f"Conv{d}d"]', 'nnqr[f"Conv{d}d"]', 'nn[f"BatchNorm{d}d"]',
                 'sequential(nni[f"ConvReLU{d}d"])', 'nni[f"ConvBnReLU{d}d"]', 'section=f"conv{d}d"'):  # fmt: skip
        assert name in spec, name
    # no name of the family is written out per dimension
    assert not re.search(
        r"\b(?:nn|nni|nnqat|nnqr)\.(?:Conv|ConvReLU|ConvBn|ConvBnReLU|BatchNorm)[12]d\b",
        spec,
    ), spec
    # the conv family's 8 patterns, 8 binary, 5 share-qparams and 3 fixed-qparams ones, and Linear: 25
    # patterns, written as 8 configs in loop bodies and 1 on its own
    assert len(re.findall(r"\bconfig\(", spec)) == 9, spec


def test_each_pattern_is_in_the_section_its_kind_has_in_torch(imported):
    project, _ = imported
    matrix = (project / "docs" / "support-matrix.md").read_text()
    families = re.findall(r"^### (.+)$", matrix, re.MULTILINE)
    for family in (
        "conv1d",
        "conv2d",
        "linear",
        "binary ops",
        "share qparams ops",
        "fixed qparams ops",
    ):
        assert family in families, families
    assert "other" not in families, matrix
    spec = spec_text(imported)
    assert 'section="binary ops"' in spec and 'section="share qparams ops"' in spec
    assert 'section="fixed qparams ops"' in spec and 'section="linear"' in spec


def test_constants_have_the_names_the_builder_gave_its_local_variables(imported):
    spec = spec_text(imported)
    defined = re.findall(r"^(\w+) = (?:DTypeWithConstraints|DTypeConfig)\(", spec, re.MULTILINE)
    assert defined == [
        "act",
        "sigmoid_out",
        "weighted_int8",
        "plain_int8",
        "fixed_int8",
    ], spec
    assert "act = DTypeWithConstraints(dtype=torch.quint8, scale_min_lower_bound=2**-12)\n" in spec


def pattern(value, section="", **settings) -> model.PatternConfig:
    return model.PatternConfig(pattern=value, dtype_configs=(), section=section, **settings)


def ref(path: str) -> model.TorchRef:
    return model.TorchRef(path)


@pytest.mark.parametrize(
    "config, section",
    [
        (pattern(ref("torch.nn.Conv3d")), "conv3d"),
        (pattern(ref("torch.nn.functional.conv_transpose1d")), "conv1d"),
        (pattern((ref("torch.nn.Conv2d"), ref("torch.nn.BatchNorm2d"), ref("torch.nn.ReLU"))), "conv2d"),
        (pattern(ref("torch.ao.nn.intrinsic.ConvBnReLU1d"), root_module=ref("torch.nn.Conv1d")), "conv1d"),
        (pattern((ref("torch.nn.Linear"), ref("torch.nn.ReLU"))), "linear"),
        (pattern(ref("torch.nn.functional.linear")), "linear"),
        (pattern((ref("operator.add"), ref("torch.nn.ReLU"))), "binary ops"),
        (pattern(ref("torch.mul")), "binary ops"),
        (pattern(ref("torch.cat"), observation_type="OUTPUT_SHARE_OBSERVER_WITH_INPUT"), "cat"),
        (pattern(ref("torch.nn.BatchNorm2d")), "batchnorm"),
        (pattern(ref("torch.nn.LSTM")), "rnn"),
        (pattern(ref("torch.nn.EmbeddingBag")), "embedding"),
        (pattern(ref("torch.nn.Hardtanh"), observation_type="OUTPUT_SHARE_OBSERVER_WITH_INPUT"), "share qparams ops"),
        (pattern("permute", observation_type="OUTPUT_SHARE_OBSERVER_WITH_INPUT"), "share qparams ops"),
        (pattern(ref("torch.nn.Hardtanh")), ""),
        (pattern((ref("torch.nn.ReLU"), ref("torch.nn.Dropout"))), ""),
        # torch's reversed nested format is built on its innermost op
        (model.PatternConfig(pattern=None, pattern_complex_format=(ref("torch.nn.ReLU"), (ref("torch.nn.BatchNorm2d"),
         ref("torch.nn.Conv2d"))), dtype_configs=()), "conv2d"),  # fmt: skip
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_a_pattern_no_family_of_the_project_holds_is_placed_by_what_it_is(config, section):
    assert sections.intrinsic(config) == section
