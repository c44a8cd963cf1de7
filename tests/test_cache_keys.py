"""Every cache is keyed by everything its value depends on: a warm checkout and a fresh one (no caches) always
agree. The torch-names cache is keyed by torch and Python, so it keeps only what depends on them alone: what a
name of the project's own modules is (an importable() fuser) is looked up again on every run."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.projects import ROOT

FUSERS = '''\
"""The backend's own fuser, which the generated module imports by name."""

import torch


def fuse_conv_relu(is_qat, conv, relu):
    return torch.ao.nn.intrinsic.ConvReLU2d(conv, relu)
'''


def generator(project: Path, *args: str) -> subprocess.CompletedProcess:
    """A command in a fresh interpreter, with the project's my_pkg importable from anywhere (as installed)."""
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(project)]))
    return subprocess.run([sys.executable, "-m", "generator", "--root", str(project), *args], cwd=project,
                          env=environment, capture_output=True, text=True)  # fmt: skip


def test_a_renamed_importable_function_is_refused_by_a_warm_checkout_as_by_a_fresh_one(project_with_only):
    project = project_with_only("x86")
    (project / "my_pkg").mkdir()
    (project / "my_pkg" / "__init__.py").write_text("")
    fusers = project / "my_pkg" / "fusers.py"
    fusers.write_text(FUSERS)
    spec = (ROOT / "tests" / "custom_backends" / "tutorial" / "spec" / "my_backend.py").read_text()
    spec = spec.replace("    config,\n", "    config,\n    importable,\n", 1)
    using = 'fuser_method=importable("my_pkg.fusers.fuse_conv_relu")'
    (project / "spec" / "my_backend.py").write_text(spec.replace("fuser_method=sequential(nni.ConvReLU2d)", using))
    done = generator(project, "regenerate")  # the torch-names cache now knows the name
    assert done.returncode == 0, done.stderr
    assert "from my_pkg.fusers import fuse_conv_relu" in (project / "generated" / "my_backend.py").read_text()
    fusers.write_text(FUSERS.replace("def fuse_conv_relu(", "def fuse_conv_relu_renamed("))
    fresh = Path(shutil.copytree(project, project.parent / "fresh", ignore=shutil.ignore_patterns(".cache")))
    warm, cold = generator(project, "regenerate"), generator(fresh, "regenerate")
    assert cold.returncode == 2 and "my_pkg.fusers.fuse_conv_relu" in cold.stderr, cold.stdout + cold.stderr
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    warm, cold = generator(project, "check"), generator(fresh, "check")
    assert warm.returncode != 0 and (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout,
                                                                                     cold.stderr)  # fmt: skip
