"""The spec: compact descriptions of torch's quantization backend configs.

`_common.py` holds the op groups several backends share; every other module
describes one generated module (`generated/<same name>.py`) in a `MODULE` value.
"""
