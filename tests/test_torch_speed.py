"""What keeps the torch side fast, with the same results: the comparator's shared verdicts, one spec load per diff.

Speed itself is measured in benchmarks/speed.py; these tests prove that what makes
it fast holds, and that a shortcut never changes an answer.
"""

from __future__ import annotations

import traceback
import types

import pytest
import torch
import torch.ao.nn.intrinsic as nni
from torch.ao.quantization.backend_config import get_fbgemm_backend_config
from torch.ao.quantization.backend_config.x86 import get_x86_backend_config
from torch.ao.quantization.fuser_method_mappings import _sequential_wrapper2

from generator import cli, compare, reviewing
from tests.conftest import ROOT


@pytest.fixture
def counted_trials(monkeypatch) -> list:
    """Every behavioural trial of fuser methods the comparator runs, from an empty verdict cache."""
    monkeypatch.setattr(compare, "_BEHAVIOUR_VERDICTS", {})
    monkeypatch.setattr(compare, "_REPRESENTATIVES", {})
    trials = []
    real = compare._fuser_behaviour_difference

    def counted(ours, theirs, config):
        trials.append((ours, theirs))
        return real(ours, theirs, config)

    monkeypatch.setattr(compare, "_fuser_behaviour_difference", counted)
    return trials


def _generated_x86():
    """A fresh run of generated/x86.py: its fuser methods are new function objects each time."""
    path = ROOT / "generated" / "x86.py"
    return reviewing._module_from_source("generated_x86_copy", path.read_text(), str(path))


def test_equivalent_copies_of_fuser_methods_share_one_verdict(counted_trials) -> None:
    # Each backend of a diff has its own module's functions and torch's fresh closures.
    first = compare.compare_backend_configs("x86", _generated_x86().get_x86_backend_config(), get_x86_backend_config())
    tried = len(counted_trials)
    assert tried > 0  # the generated module's own fuser methods are compared by behaviour
    second = compare.compare_backend_configs("x86", _generated_x86().get_x86_backend_config(), get_x86_backend_config())
    assert len(counted_trials) == tried
    assert first == second == []


def _fuse_conv_relu(is_qat, conv, relu):
    return nni.ConvReLU1d(conv, relu)


def _with_globals(function, **names):
    return types.FunctionType(function.__code__, {**function.__globals__, **names}, function.__name__)


@pytest.mark.parametrize("right_first", [True, False])
def test_same_bytecode_with_other_globals_gets_its_own_verdict(counted_trials, right_first) -> None:
    config = next(c for c in get_fbgemm_backend_config().configs if c.pattern == (torch.nn.Conv1d, torch.nn.ReLU))
    theirs = _sequential_wrapper2(nni.ConvReLU1d)
    right = _with_globals(_fuse_conv_relu)
    wrong = _with_globals(_fuse_conv_relu, nni=types.SimpleNamespace(ConvReLU1d=nni.ConvReLU2d))
    order = [right, wrong] if right_first else [wrong, right]
    verdicts = {id(f): compare.callables_match("fuser_method", f, theirs, config) for f in order}
    assert verdicts[id(right)] == (True, "same behaviour")
    assert verdicts[id(wrong)][0] is False
    assert len(counted_trials) == 2


def test_trials_seed_only_the_cpu_generator(monkeypatch) -> None:
    # torch.manual_seed also queues a seeding of each accelerator not yet initialised,
    # capturing the stack each time: milliseconds a trial, most of a diff --against-torch.
    config = next(c for c in get_fbgemm_backend_config().configs if c.pattern == (torch.nn.Conv1d, torch.nn.ReLU))
    stacks = []
    monkeypatch.setattr(traceback, "format_stack", lambda *args: stacks.append(args) or [])
    state = torch.get_rng_state()
    assert compare._fuser_behaviour_difference(_fuse_conv_relu, _sequential_wrapper2(nni.ConvReLU1d), config) is None
    assert stacks == []
    assert torch.equal(torch.get_rng_state(), state)  # the caller's random state is left as it was


SAYS_LOADED = '\nimport sys\n\nprint("spec/x86.py ran", file=sys.stderr)\n'


def test_diff_against_torch_runs_the_spec_once(project, capsys) -> None:
    x86 = project / "spec" / "x86.py"
    x86.write_text(x86.read_text() + SAYS_LOADED)
    assert cli.main(["--root", str(project), "regenerate"]) == 0
    capsys.readouterr()
    assert cli.main(["--root", str(project), "diff", "--against-torch"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("no differences in ")
    assert err.count("spec/x86.py ran") == 1
