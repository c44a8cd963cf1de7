"""What torch's setters store unchecked, and builders that change what they return by running, are one
line from `import` (exit 2, nothing written), never an internal error or a module that differs from the
builder once the builder's module is imported afresh.

Found by attacking `import` with builders of odd but reachable shapes: a string or int for an
ObservationType, constraints given as a bias dtype, a None in a dtype-config list, subclasses of torch's
classes that answer otherwise than torch's flow reads, and a builder that rebinds a module-level name the
generated module imports.
"""

import sys
import textwrap

import pytest

from generator import cli
from generator.review.equality import compare_backend_configs

HEADER = """
import torch
import torch.ao.nn.intrinsic as nni
import torch.nn as nn
from torch.ao.quantization.backend_config import (
    BackendConfig, BackendPatternConfig, DTypeConfig, DTypeWithConstraints, ObservationType,
)

dc = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8)


def backend(*configs):
    return BackendConfig("odd").set_backend_pattern_configs(list(configs))
"""


@pytest.fixture
def vendor(fresh_project, monkeypatch):
    """A package `odd_vendor` outside the project, importable as an installed package is; its module holds
    HEADER plus the source given."""
    site = fresh_project.parent / "site"
    (site / "odd_vendor").mkdir(parents=True)
    (site / "odd_vendor" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(site))
    for name in [m for m in sys.modules if m.startswith("odd_vendor")]:
        monkeypatch.delitem(sys.modules, name)

    def write(source: str) -> str:
        (site / "odd_vendor" / "builders.py").write_text(HEADER + textwrap.dedent(source))
        return "odd_vendor.builders"

    return write


def files(project):
    return {p: p.read_bytes() for p in sorted(project.rglob("*")) if p.is_file() and ".cache" not in p.parts}


def refused(project, capsys, *args):
    before = files(project)
    code = cli.main(["--root", str(project), "import", *args])
    captured = capsys.readouterr()
    assert code == 2, captured
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "internal error" not in lines[0], lines
    assert files(project) == before
    return lines[0]


@pytest.mark.parametrize(
    "pattern_config, says",
    [
        ("BackendPatternConfig(nn.Linear).set_dtype_configs([dc]).set_observation_type(0)",
         "pattern nn.Linear: observation_type is 0, not an ObservationType"),
        ('BackendPatternConfig(nn.Linear).set_dtype_configs([dc]).set_observation_type("OUTPUT_SHARE_OBSERVER_WITH_INPUT")',
         "pattern nn.Linear: observation_type is 'OUTPUT_SHARE_OBSERVER_WITH_INPUT', not an ObservationType"),
        ("BackendPatternConfig(nn.Linear).set_dtype_configs([dc])._set_num_tensor_args_to_observation_type({0: 1})",
         "pattern nn.Linear: num_tensor_args_to_observation_type maps 0 to 1"),
        ("BackendPatternConfig(nn.Linear).set_dtype_configs([DTypeConfig(input_dtype=torch.quint8, "
         "output_dtype=torch.quint8, bias_dtype=DTypeWithConstraints(dtype=torch.float))])",
         "pattern nn.Linear: a dtype config's bias_dtype is DTypeWithConstraints("),
        ('BackendPatternConfig(nn.Linear).set_dtype_configs([DTypeConfig(input_dtype="quint8", '
         "output_dtype=torch.float)])",
         "pattern nn.Linear: a dtype config's input_dtype is 'quint8', not a torch dtype"),
        ("BackendPatternConfig(nn.Linear).set_dtype_configs([dc, None])",
         "pattern nn.Linear: dtype_configs holds a NoneType, not a DTypeConfig"),
    ],
    ids=["observation type int", "observation type str", "num tensor args", "bias constraints", "dtype str", "None"],
)
def test_a_value_torch_stores_unchecked_is_one_line_naming_the_pattern_and_field(
    fresh_project, capsys, vendor, pattern_config, says
):
    module = vendor(f"def get_odd():\n    return backend({pattern_config})\n")
    line = refused(fresh_project, capsys, f"{module}:get_odd")
    assert says in line, line


def test_subclasses_of_torchs_classes_are_refused_and_the_comparator_tells_them_apart(fresh_project, capsys, vendor):
    module = vendor("""
        class FewerConfigs(BackendConfig):
            @property
            def configs(self):  # torch's flow reads the patterns elsewhere, so this hides one from import
                return super().configs[:1]


        class MyPatternConfig(BackendPatternConfig):
            pass


        def get_subclass():
            return FewerConfigs("odd").set_backend_pattern_configs(
                [BackendPatternConfig(nn.Linear).set_dtype_configs([dc]),
                 BackendPatternConfig(nn.Conv2d).set_dtype_configs([dc])])


        def get_pattern_subclass():
            return backend(MyPatternConfig(nn.Linear).set_dtype_configs([dc]))
    """)
    line = refused(fresh_project, capsys, f"{module}:get_subclass")
    assert "a FewerConfigs, a subclass of BackendConfig" in line and "return a BackendConfig" in line
    line = refused(fresh_project, capsys, f"{module}:get_pattern_subclass")
    assert "pattern nn.Linear: a MyPatternConfig, a subclass of BackendPatternConfig" in line

    from odd_vendor.builders import BackendConfig, FewerConfigs

    differences = compare_backend_configs("odd", BackendConfig("odd"), FewerConfigs("odd"))
    assert [d.field for d in differences] == ["type"], differences


def test_a_builder_that_rebinds_what_the_generated_module_imports_is_refused(fresh_project, capsys, vendor):
    """The generated module would import FUSER as the module binds it, not what the builder made it."""
    module = vendor("""
        class Fuser:
            def __init__(self, special):
                self.special = special

            def __call__(self, is_qat, conv, relu):
                return nni.ConvReLU2d(conv, relu)


        FUSER = Fuser(False)


        def get_rebinding():
            global FUSER
            FUSER = Fuser(True)
            return backend(BackendPatternConfig((nn.Conv2d, nn.ReLU)).set_dtype_configs([dc]).set_fuser_method(FUSER))


        def get_steady():
            return backend(BackendPatternConfig((nn.Conv2d, nn.ReLU)).set_dtype_configs([dc]).set_fuser_method(FUSER))
    """)
    line = refused(fresh_project, capsys, f"{module}:get_rebinding")
    assert "get_rebinding() rebinds odd_vendor.builders.FUSER when it runs" in line, line
    assert "odd_vendor/builders.py" in line
    # the same fuser, bound once, imports
    assert cli.main(["--root", str(fresh_project), "import", f"{module}:get_steady"]) == 0
    assert "written   spec/steady.py: 1 pattern\n" in capsys.readouterr().out


@pytest.mark.parametrize(
    "name, says",
    [
        ("manifest", "generated/manifest.py is a file of the generated/ package itself"),
        ("_helper", "a leading underscore makes spec/_helper.py a helper module"),
    ],
)
def test_a_spec_name_regenerate_would_refuse_is_refused_first(fresh_project, capsys, name, says):
    target = "tests.support.user_builder:get_user_backend_config"
    line = refused(fresh_project, capsys, target, "--name", name)
    assert says in line, line


def test_a_target_that_is_not_callable_is_said_to_be_so(fresh_project, capsys, vendor):
    module = vendor("HOLDER = {'name': 'not a builder'}\n")
    line = refused(fresh_project, capsys, f"{module}:HOLDER", "--name", "holder")
    assert line == "error: odd_vendor.builders.HOLDER is a dict, not a function; name the function that returns " \
        "the BackendConfig", line
