"""Generic tests for generated builders, above all those with no reference builder
(tests/support/backend_checks.py).

Every builder the spec describes is checked against the spec's own expansion and
for fresh objects per call; those without a reference builder (nothing to equal
field by field) also build in a fresh interpreter and drive real FX flows on a
model made from their own patterns. tests/test_tutorial_backend.py runs the same
checks on the backend of PyTorch's BackendConfig tutorial.
"""

import pytest

from tests.support import backend_checks as checks
from tests.support.builders import BUILDERS

UNREFERENCED = [b for b in BUILDERS if not b.reference]


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.id)
def test_built_config_equals_the_spec_s_own_expansion(builder):
    differences = checks.expansion_differences(builder)
    assert not differences, "\n".join(differences[:20])


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.id)
def test_each_call_returns_fresh_objects(builder):
    assert not checks.shared_objects(builder)


def test_every_backend_without_a_reference_builds_in_a_fresh_interpreter():
    """(test_generated_code covers every builder the same way; this one also checks what is built.)"""
    assert not checks.fresh_interpreter_failures(UNREFERENCED)


def test_fx_flows_run_with_every_backend_without_a_reference():
    """One test, not one per backend: spec/ may have none (tests/test_tutorial_backend.py always has one)."""
    problems = [f"{b.id}: {problem}" for b in UNREFERENCED for problem in checks.flow_problems(b)]
    assert not problems, "\n".join(problems)
