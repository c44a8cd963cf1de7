"""The nine builders torch 2.13.0 ships and the generated modules that replace them.

Written out by hand, independently of spec/, so that a builder the spec forgets
still fails the tests.
"""

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Builder:
    module: str  # generated/<module>.py
    torch_module: str  # torch.ao.quantization.backend_config.<torch_module>
    function: str
    dict_function: str | None = None

    @property
    def reference(self) -> str | None:
        """Dotted path of the dynamic builder this one must equal (None: no reference)."""
        return f"torch.ao.quantization.backend_config.{self.torch_module}.{self.function}"

    @property
    def id(self) -> str:
        return self.function.removeprefix("get_").removesuffix("_backend_config")

    def ours(self):
        return getattr(importlib.import_module(f"generated.{self.module}"), self.function)

    def theirs(self):
        module = importlib.import_module(f"torch.ao.quantization.backend_config.{self.torch_module}")
        return getattr(module, self.function)


BUILDERS = [
    Builder("fbgemm", "fbgemm", "get_fbgemm_backend_config"),
    Builder("qnnpack", "qnnpack", "get_qnnpack_backend_config"),
    Builder("executorch", "executorch", "get_executorch_backend_config"),
    Builder("onednn", "onednn", "get_onednn_backend_config"),
    Builder("native", "native", "get_native_backend_config", "get_native_backend_config_dict"),
    Builder(
        "native",
        "native",
        "get_test_only_legacy_native_backend_config",
        "get_test_only_legacy_native_backend_config_dict",
    ),
    Builder("x86", "x86", "get_x86_backend_config"),
    Builder("tensorrt", "tensorrt", "get_tensorrt_backend_config", "get_tensorrt_backend_config_dict"),
    Builder("qnnpack_pt2e", "_qnnpack_pt2e", "get_qnnpack_pt2e_backend_config"),
]
REFERENCED = [b for b in BUILDERS if b.reference]
GENERATED_MODULES = sorted({b.module for b in BUILDERS})
