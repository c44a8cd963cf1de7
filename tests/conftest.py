"""Shared fixtures. torch needs its backend_config.utils imported before builders run."""

import shutil
import sys
from pathlib import Path

import pytest
import torch.ao.quantization.backend_config.utils  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def copy_project(destination: Path) -> Path:
    """A copy of what regenerate reads and writes, to run the generator on safely."""
    for folder in ("spec", "templates", "generated", "docs"):
        shutil.copytree(ROOT / folder, destination / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return destination


@pytest.fixture
def project(tmp_path) -> Path:
    return copy_project(tmp_path / "project")
