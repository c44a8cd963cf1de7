"""Adversarial checks of issue 20's speed-ups: each guards a defect found by attacking them as a user would."""

import black

from tests.test_entry_layout import assert_same_black

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


def test_regenerate_keeps_a_string_argument_as_the_spec_spells_it(fresh_project, capsys):
    """Through the command, in this process: its new torch names would make a fresh interpreter import torch."""
    from generator import cli

    (fresh_project / "spec" / "quotes.py").write_text(QUOTED_SPEC)
    assert cli.main(["--root", str(fresh_project), "regenerate"]) == 0, capsys.readouterr().err
    written = (fresh_project / "generated" / "quotes.py").read_text()
    assert ".set_fuser_method(partial(fuse_conv_bn, \"x', 'y\"))" in written
    assert black.format_str(written, mode=black.Mode()) == written


def test_the_format_cache_is_keyed_by_entry_layout_too(tmp_path, monkeypatch):
    """black is given entry_layout's prediction, so a piece formatted under an older entry_layout (one that
    rewrote `"x', 'y"` as `"x", "y"`, which the cache's check of the code cannot tell apart) must not be reused."""
    from pathlib import Path

    from generator.build import entry_layout, formatting

    before = formatting._style_key()
    changed = tmp_path / "entry_layout.py"
    changed.write_text(Path(entry_layout.__file__).read_text() + "\n# another prediction\n")
    monkeypatch.setattr(entry_layout, "__file__", str(changed))
    assert formatting._style_key() != before


FMT_OFF_SPEC = '''"""A backend with a section that says `fmt: off`: black leaves what follows it in the list alone."""

from generator.dsl import Backend, DTypeConfig, Module, config, torch

a_dtype_config_with_a_name_long_enough_to_make_lines_split = DTypeConfig(
    input_dtype=torch.quint8, output_dtype=torch.quint8, weight_dtype=torch.qint8, bias_dtype=torch.float
)
dtypes = [a_dtype_config_with_a_name_long_enough_to_make_lines_split]

MODULE = Module(
    doc="Sections.",
    backends=[
        Backend(
            name="sections",
            builder="get_sections_backend_config",
            doc="Return it.",
            configs=[
                config(torch.nn.Conv2d, dtypes, section="conv"),
                config(torch.nn.Conv3d, dtypes, section="fmt: off"),
                config(torch.nn.functional.linear, dtypes, root_module=torch.nn.Linear, section="linear"),
                config(torch.nn.functional.conv2d, dtypes),
            ],
        )
    ],
)
'''


def _black_of_whole_module(project, name):
    """black's output for the module as rendered, whole, without the generator's markers and header."""
    from generator.build import formatting, pipeline, rendering

    (module,) = [m for m in pipeline.load(project, validate=False) if f"get_{name}_backend_config" in str(m)]
    rendered = rendering.render_module(module, project / "templates")
    unmarked = rendered.replace(formatting.BLOCK_MARKER, "").replace(formatting.ENTRY_MARKER + "\n", "")
    return black.format_str(unmarked, mode=black.Mode())


def test_a_section_that_turns_black_off_gives_what_black_gives_for_the_whole_module(fresh_project):
    """A `# fmt: off` comment in one entry reaches the entries after it: entries formatted one by one (or
    batched apart, or taken from the cache) were formatted where black leaves the whole module's alone."""
    from generator import cli

    spec = fresh_project / "spec" / "sections.py"
    spec.write_text(FMT_OFF_SPEC.replace('section="fmt: off"', 'section="conv3d"'))
    assert cli.main(["--root", str(fresh_project), "regenerate", "--jobs", "1"]) == 0  # every entry in the cache
    spec.write_text(FMT_OFF_SPEC)
    whole = _black_of_whole_module(fresh_project, "sections")  # of the same spec and templates for both runs
    for jobs in ("1", "2"):
        assert cli.main(["--root", str(fresh_project), "regenerate", "--force", "--jobs", jobs]) == 0
        written = (fresh_project / "generated" / "sections.py").read_text()
        assert "# fmt: off" in written
        assert written.split("\n", 2)[2] == whole
