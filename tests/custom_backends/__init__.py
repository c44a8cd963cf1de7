"""Generic checks for any generated builder, above all one with no reference builder to equal.

Without a reference, a generated builder is checked against what it is made from
and what it is for:
- it imports and builds in a fresh interpreter, and every call returns fresh objects;
- the BackendConfig it builds equals the spec's own expansion, field by field, read
  back from the built objects (names resolved to torch objects, dtype configs to the
  module's named constants, template functions to the module's functions);
- real FX flows run with it on a small seeded model made from its own patterns:
  prepare_fx, calibration and convert_to_reference_fx; prepare_qat_fx with a training
  step where QAT modules exist; fuse_fx where fusions exist. Each flow must show the
  backend's patterns taking effect (fused, QAT and reference quantized modules).

`tests/test_custom_backends.py` runs these on the spec's backends, and
`tests/test_tutorial_backend.py` on the backend of PyTorch's BackendConfig tutorial,
laid over a copy of the project from `tests/custom_backends/tutorial/`.
"""
