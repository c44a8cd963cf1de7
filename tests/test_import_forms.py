"""Forms torch's BackendConfig accepts, imported: each regenerates a module proven equal to the builder,
or is refused in one line naming the pattern (exit 2, nothing written).

- a nested simple pattern, `((nn.BatchNorm1d, nn.Conv1d), nn.ReLU)`, as builders in torch 1.13's style
  have them: torch keeps it as given and reverses only its outer tuple for matching;
- a fuser reachable by a dotted path that gives an equal bound method, not the same object: a
  classmethod of an importable class, a method of a module-level instance; and a staticmethod;
- `dtype_configs` set to one DTypeConfig instead of a list: torch stores it, its flow cannot use it.
"""

import importlib.util
import textwrap

import pytest

from generator.importer.object_paths import object_path
from generator.review.callables import callables_match
from generator.review.equality import compare_backend_configs
from generator.spelling import user_module
from tests.support.builders import unused_backend_name
from tests.support.cli_runs import run
from tests.support.projects import ROOT


def snapshot(project):
    """Every file of the project but the generator's caches."""
    files = (p for p in sorted(project.rglob("*")) if p.is_file() and ".cache" not in p.relative_to(project).parts)
    return {p.relative_to(project): p.read_bytes() for p in files}


def installed_package(project, monkeypatch, package: str, source: str):
    """A vendor package on sys.path wherever a generated module runs (as an installed one is)."""
    site = project.parent / "site"
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text("")
    (site / package / "backend.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(site))
    return site


def load_generated(path):
    spec = importlib.util.spec_from_file_location(f"forms_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def import_regenerate_and_compare(capsys, project, target: str, name: str = "config"):
    """Import `target` (each pattern written out, so the spec shows how each form is spelt), regenerate, and
    compare the generated builder with the original; the spec text."""
    code, out = run(capsys, "--root", str(project), "import", target, "--no-compact")
    assert code == 0, out
    assert out.startswith(f"written   spec/{name}.py: "), out
    code, out = run(capsys, "--root", str(project), "regenerate")
    assert code == 0, out
    module_name, function = target.split(":")
    original = getattr(importlib.import_module(module_name), function)()
    generated = getattr(load_generated(project / "generated" / f"{name}.py"), function)()
    assert compare_backend_configs(name, generated, original) == []
    return (project / "spec" / f"{name}.py").read_text(), generated, original


NESTED = """
    import torch
    import torch.ao.nn.intrinsic as nni
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.ao.quantization.backend_config import BackendConfig, BackendPatternConfig, DTypeConfig

    int8 = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8,
                       bias_dtype=torch.float)


    def get_config():
        configs = []
        for conv, bn, fused in ((nn.Conv1d, nn.BatchNorm1d, nni.ConvBnReLU1d),
                                (nn.Conv2d, nn.BatchNorm2d, nni.ConvBnReLU2d)):
            for relu in (nn.ReLU, F.relu):
                configs.append(BackendPatternConfig(((bn, conv), relu)).set_dtype_configs([int8])
                               .set_fused_module(fused))
        # Three ops whose first is nested with a number in it, as a getitem pattern has.
        configs.append(BackendPatternConfig(((torch.add, nn.Conv2d, 0), nn.ReLU, nn.Identity))
                       .set_dtype_configs([int8]))
        return BackendConfig("nested").set_backend_pattern_configs(configs)
"""


def test_nested_simple_patterns_import_regenerate_and_prove_equal(fresh_project, capsys, monkeypatch):
    installed_package(fresh_project, monkeypatch, "forms_nested", NESTED)
    text, generated, original = import_regenerate_and_compare(capsys, fresh_project, "forms_nested.backend:get_config")
    assert "config(((nn.BatchNorm1d, nn.Conv1d), nn.ReLU), [int8]" in "".join(text.split("\n"))
    assert "config(((torch.add, nn.Conv2d, 0), nn.ReLU, nn.Identity)" in text
    # torch keeps the pattern as given and keys it by its outer tuple reversed, on both sides.
    patterns = [c.pattern for c in generated.configs]
    assert patterns == [c.pattern for c in original.configs]
    import torch.nn as nn

    assert patterns[0] == ((nn.BatchNorm1d, nn.Conv1d), nn.ReLU)
    assert list(generated._pattern_complex_format_to_config)[0] == (nn.ReLU, (nn.BatchNorm1d, nn.Conv1d))
    code, out = run(capsys, "--root", str(fresh_project), "check")
    assert code == 0, out


METHODS = """
    import torch
    import torch.nn as nn
    from torch.ao.quantization.backend_config import BackendConfig, BackendPatternConfig, DTypeConfig

    int8 = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8)


    class ConvReLU62d(nn.Sequential):
        def __init__(self, conv, relu6):
            super().__init__(conv, relu6)

        @classmethod
        def fuser_method(cls, is_qat, conv, relu6):
            return cls(conv, relu6)


    class Fusers:
        def __init__(self, kind):
            self.kind = kind

        @staticmethod
        def fuse_static(is_qat, conv, relu):
            return nn.Sequential(conv, relu)

        def fuse(self, is_qat, conv, relu):
            return self.kind(conv, relu)


    FUSERS = Fusers(nn.Sequential)


    def _config(pattern, fuser):
        return BackendPatternConfig(pattern).set_dtype_configs([int8]).set_fuser_method(fuser)


    def get_config():
        return BackendConfig("methods").set_backend_pattern_configs([
            _config((nn.Conv2d, nn.ReLU6), ConvReLU62d.fuser_method).set_fused_module(ConvReLU62d),
            _config((nn.Conv1d, nn.ReLU), Fusers.fuse_static),
            _config((nn.Conv2d, nn.ReLU), FUSERS.fuse),
        ])


    def get_unbound_config():
        # a method of an instance no module-level name holds has no dotted path
        fuser = Fusers(nn.Sequential).fuse
        return BackendConfig("methods").set_backend_pattern_config(_config((nn.Conv2d, nn.ReLU), fuser))
"""


def test_classmethods_staticmethods_and_bound_methods_import_by_their_dotted_path(fresh_project, capsys, monkeypatch):
    installed_package(fresh_project, monkeypatch, "forms_methods", METHODS)
    text, generated, original = import_regenerate_and_compare(capsys, fresh_project, "forms_methods.backend:get_config")
    flat = "".join(text.split())
    assert 'fuser_method=importable("forms_methods.backend.ConvReLU62d.fuser_method")' in flat
    assert 'fuser_method=importable("forms_methods.backend.Fusers.fuse_static")' in flat
    assert 'fuser_method=importable("forms_methods.backend.FUSERS.fuse")' in flat
    module_text = (fresh_project / "generated" / "config.py").read_text()
    assert "from forms_methods.backend import ConvReLU62d, FUSERS, Fusers" in module_text
    assert ".set_fuser_method(ConvReLU62d.fuser_method)" in module_text
    # The path gives an equal bound method (the same function bound to the same object), not the same object.
    ours, theirs = generated.configs[0].fuser_method, original.configs[0].fuser_method
    assert ours == theirs and ours is not theirs
    assert generated.configs[1].fuser_method is original.configs[1].fuser_method  # a staticmethod is its function
    assert generated.configs[2].fuser_method == original.configs[2].fuser_method


def test_a_method_of_an_instance_no_global_holds_is_refused_in_one_line(fresh_project, capsys, monkeypatch):
    installed_package(fresh_project, monkeypatch, "forms_unbound", METHODS)
    before = snapshot(fresh_project)
    code, out = run(capsys, "--root", str(fresh_project), "import", "forms_unbound.backend:get_unbound_config")
    assert code == 2, out
    assert out.startswith("error: pattern (nn.Conv2d, nn.ReLU): cannot name fuser_method forms_unbound.backend."
                          "Fusers.fuse: it is not a public torch name, not importable by path") and out.count("\n") == 1
    assert snapshot(fresh_project) == before


class _Owner:
    @classmethod
    def made(cls, is_qat, a, b):
        return cls

    def fuse(self, is_qat, a, b):
        return self


OWNER = _Owner()


def test_equal_bound_methods_are_equal_to_the_proof_and_others_are_not():
    """`Class.a_classmethod` read twice gives two bound methods, `==` and not `is`; a method bound to
    another object is another callable."""
    import torch.nn as nn
    from torch.ao.quantization.backend_config import BackendPatternConfig

    config = BackendPatternConfig((nn.Conv2d, nn.ReLU))
    assert _Owner.made is not _Owner.made
    assert callables_match("fuser_method", _Owner.made, _Owner.made, config) == (True, "equivalent code")
    assert callables_match("fuser_method", OWNER.fuse, OWNER.fuse, config) == (True, "equivalent code")
    other = _Owner()
    equal, how = callables_match("fuser_method", other.fuse, OWNER.fuse, config)
    assert how != "equivalent code"
    assert object_path(_Owner.made) == f"{__name__}._Owner.made"
    assert object_path(OWNER.fuse) == f"{__name__}.OWNER.fuse"
    assert object_path(other.fuse) is None


def test_a_dotted_user_name_imports_its_owner_from_the_longest_module_prefix():
    assert user_module("tests.test_import_forms._Owner.made") == "tests.test_import_forms"
    assert user_module("json.decoder.JSONDecoder.decode") == "json.decoder"
    assert user_module("os.path.join") == "os.path"  # no file of os, yet a module of its own
    assert user_module("no_such_package.module.name") == "no_such_package.module"  # as before: all but the last


ONE_DTYPE_CONFIG = """
    import torch
    import torch.nn as nn
    from torch.ao.quantization.backend_config import BackendConfig, BackendPatternConfig, DTypeConfig

    int8 = DTypeConfig(input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8)


    def get_config():
        return BackendConfig("one").set_backend_pattern_configs([
            BackendPatternConfig(nn.Conv2d).set_dtype_configs([int8]),
            BackendPatternConfig((nn.Linear, nn.ReLU)).set_dtype_configs(int8),
        ])


    def get_tuple_config():
        pattern = BackendPatternConfig(nn.Linear).set_dtype_configs((int8,))
        return BackendConfig("one").set_backend_pattern_config(pattern)
"""


@pytest.mark.parametrize(
    "function, line",
    [
        ("get_config", "error: pattern (nn.Linear, nn.ReLU): dtype_configs is one DTypeConfig, not a list of them: "
                       "torch stores it, but its quantization flow iterates it and fails; give set_dtype_configs a "
                       "list ([dtype_config])\n"),
        ("get_tuple_config", "error: pattern nn.Linear: dtype_configs is a tuple, not a list of DTypeConfigs: "
                             "torch's flow may iterate it, but a generated module builds a list and the equality "
                             "proof compares the container's type too, so no spec could be proven equal; give "
                             "set_dtype_configs a list\n"),
    ],
)
def test_dtype_configs_that_are_not_a_list_are_one_line_naming_the_pattern(
    fresh_project, capsys, monkeypatch, function, line
):
    installed_package(fresh_project, monkeypatch, f"forms_one_{function}", ONE_DTYPE_CONFIG)
    before = snapshot(fresh_project)
    code, out = run(capsys, "--root", str(fresh_project), "import", f"forms_one_{function}.backend:{function}")
    assert (code, out) == (2, line)
    assert snapshot(fresh_project) == before


def test_the_inhouse_builders_classmethod_fuser_is_imported_by_its_path(fresh_project, capsys, monkeypatch):
    """tests/support/inhouse/acme_npu registers `ConvReLU62d.fuser_method`: once refused as "not importable
    by path"; now it is named by that path, and whatever import writes is proven equal first."""
    import shutil

    site = fresh_project.parent / "site"
    shutil.copytree(ROOT / "tests" / "support" / "inhouse" / "acme_npu", site / "acme_npu")
    monkeypatch.syspath_prepend(str(site))
    name = unused_backend_name("acme_npu")  # the project may have an ACME NPU of its own
    target = "acme_npu.backend:get_acme_npu_backend_config"
    code, out = run(capsys, "--root", str(fresh_project), "import", target, "--name", name)
    assert code == 0, out
    assert "not importable" not in out, out
    flat = "".join((fresh_project / "spec" / f"{name}.py").read_text().split())
    assert 'fuser_method=importable("acme_npu.backend.ConvReLU62d.fuser_method")' in flat
