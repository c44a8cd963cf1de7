"""Orbit's builder for its test chip: numbers spelt as engineers spell them, and constraints that differ
only by how a zero is written (`0`, `0.0`, `-0.0`: three values to torch's comparison of types and reprs).
tests/test_import_spellings.py imports `get_orbit_corners_backend_config`.
"""

import torch
import torch.nn as nn
from torch.ao.quantization.backend_config import BackendConfig, BackendPatternConfig, DTypeConfig, DTypeWithConstraints

# The float accumulator's range, as the hardware manual gives it.
ACCUMULATOR = DTypeWithConstraints(
    dtype=torch.float, quant_min_lower_bound=-(2**70), quant_max_upper_bound=2**70 - 1, scale_min_lower_bound=2**-70
)


def get_orbit_corners_backend_config():
    """Return the `BackendConfig` of Orbit's test chip."""
    configs = [
        BackendPatternConfig(nn.Linear).set_dtype_configs(
            [DTypeConfig(input_dtype=torch.quint8, output_dtype=ACCUMULATOR, weight_dtype=torch.qint8)]
        )
    ]
    for op, lowest in ((nn.ReLU, 0), (nn.ReLU6, 0.0), (nn.Hardtanh, -0.0)):
        output = DTypeWithConstraints(dtype=torch.quint8, scale_min_lower_bound=lowest)
        configs.append(
            BackendPatternConfig(op).set_dtype_configs([DTypeConfig(input_dtype=torch.quint8, output_dtype=output)])
        )
    return BackendConfig("orbit_corners").set_backend_pattern_configs(configs)
