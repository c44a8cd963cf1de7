"""A module fixture that keeps what exists before a test module runs out of full garbage collections.

torch, pytest and the test modules make ~2*10^5 objects that live to the end of the run. Every
full collection scans them all (~0.15 CPU-s each on this machine), and modules that build many
BackendConfigs or FX models trigger dozens. gc.freeze() moves them to the permanent generation
while the module runs; nothing is freed or kept differently, only not scanned again.
Use: `from tests.frozen_imports import imports_out_of_full_collections  # noqa: F401` (autouse).
"""

import gc

import pytest


@pytest.fixture(autouse=True, scope="module")
def imports_out_of_full_collections():
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()
