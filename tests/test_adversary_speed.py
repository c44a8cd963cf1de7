"""Adversarial checks of issue 20's speed-ups: each guards a defect found by attacking them as a user would."""

import subprocess
import sys

import black

from tests.conftest import ROOT
from tests.test_format_speed import assert_same_black

QUOTED_SPEC = '''"""A backend whose fuser is a partial with a string holding single quotes."""

from generator.dsl import Backend, DTypeConfig, Module, config, partial, torch

cfg = DTypeConfig(input_dtype=torch.qint8, output_dtype=torch.qint8, weight_dtype=torch.qint8, bias_dtype=torch.float)

MODULE = Module(
    doc="Quotes.",
    backends=[
        Backend(
            name="quotes",
            builder="get_quotes_backend_config",
            doc="Return it.",
            configs=[
                config(
                    (torch.nn.Conv2d, torch.nn.ReLU),
                    [cfg],
                    fuser_method=partial(torch.ao.quantization.fuser_method_mappings.fuse_conv_bn, "x', 'y"),
                ),
            ],
        )
    ],
)
'''


def test_a_double_quoted_string_holding_single_quotes_is_not_rewritten():
    """entry_layout turned `"x', 'y"` into `"x", "y"` (two strings): it took `', '` for a plain string."""
    entry = 'BackendPatternConfig((nn.Conv2d, nn.ReLU))\n.set_fuser_method(partial(f, "x\', \'y"))\n,\n'
    layout = assert_same_black(entry)
    assert layout is None or "\"x', 'y\"" in layout
    plain = "BackendPatternConfig(torch.relu)\n.set_fuser_method(partial(f, 'x', \"a'b\", 'y'))\n,\n"
    assert_same_black(plain)


def test_regenerate_keeps_a_string_argument_as_the_spec_spells_it(project):
    (project / "spec" / "quotes.py").write_text(QUOTED_SPEC)
    done = subprocess.run([sys.executable, "-m", "generator", "regenerate"], cwd=project, capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    written = (project / "generated" / "quotes.py").read_text()
    assert ".set_fuser_method(partial(fuse_conv_bn, \"x', 'y\"))" in written
    assert black.format_str(written, mode=black.Mode()) == written


def test_the_format_cache_is_keyed_by_entry_layout_too(tmp_path, monkeypatch):
    """black is given entry_layout's prediction, so a piece formatted under an older entry_layout (one that
    rewrote `"x', 'y"` as `"x", "y"`, which the cache's check of the code cannot tell apart) must not be reused."""
    from pathlib import Path

    from generator import entry_layout, formatting

    before = formatting._style_key()
    changed = tmp_path / "entry_layout.py"
    changed.write_text(Path(entry_layout.__file__).read_text() + "\n# another prediction\n")
    monkeypatch.setattr(entry_layout, "__file__", str(changed))
    assert formatting._style_key() != before
