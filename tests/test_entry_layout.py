"""black confirms rather than reformats: pattern entries are laid out as black will lay them out
(generator/building/entry_layout.py) and the templates render black's style, and neither changes what black writes,
whatever a spec spells (a string argument is written as the spec spells it)."""

import itertools

import black
import pytest

from generator.building import entry_layout, formatting, output_check, pipeline, rendering
from tests.support import random_entries
from tests.support.projects import ROOT

MODE = black.Mode()


@pytest.fixture(scope="module")
def blocks():
    """Every block of every module of the committed spec, as the formatter cuts them."""
    modules = pipeline.load(ROOT, validate=False)
    sources = [rendering.render_module(m, ROOT / "templates") for m in modules]
    return [formatting.Block(b) for source in sources for b in formatting.split_blocks(source)]


def black_of_entry(entry: str) -> str:
    """What black makes of one rendered entry, in the wrapper the formatter puts it in."""
    return black.format_str(formatting._WRAP_HEAD + formatting._ENTRY_LINE + entry + formatting._WRAP_TAIL, mode=MODE)


def laid_out_wrapped(layout: str) -> str:
    return formatting._WRAP_HEAD + formatting._FORMATTED_MARKER + layout + formatting._WRAP_TAIL


def assert_same_black(entry: str) -> str | None:
    """The entry's layout, when there is one, is what black makes of the entry: it is written without black."""
    layout = entry_layout.laid_out(entry)
    if layout is not None:
        assert laid_out_wrapped(layout) == black_of_entry(entry), entry
    return layout


def test_every_entry_of_the_spec_is_laid_out_as_black_lays_it_out(blocks):
    """black makes the same of each predicted layout as of the rendered entry, and that is the layout itself:
    black's first pass changes nothing, so it makes no second (all entries at once, as the formatter batches them)."""
    entries = sorted({e.text for block in blocks for e in block.entries})
    layouts = {text: entry_layout.laid_out(text) for text in entries}
    predicted = [text for text in entries if layouts[text] is not None]
    assert len(predicted) >= 0.95 * len(entries)  # the shapes the template renders are the ones predicted
    rendered = formatting._WRAP_HEAD + "".join(formatting._ENTRY_LINE + t for t in predicted) + formatting._WRAP_TAIL
    laid_out = formatting._WRAP_HEAD + "".join(formatting._FORMATTED_MARKER + layouts[t] for t in predicted)
    laid_out += formatting._WRAP_TAIL
    by_black = black.format_str(rendered, mode=MODE)
    for text, black_entry, layout in zip(predicted, by_black.split(formatting._FORMATTED_MARKER)[1:], split(laid_out)):
        assert layout == black_entry.removesuffix(formatting._WRAP_TAIL), text
    assert laid_out == by_black  # so black, which keeps its own output, gives it back in one pass


def split(wrapped: str) -> list[str]:
    return [e.removesuffix(formatting._WRAP_TAIL) for e in wrapped.split(formatting._FORMATTED_MARKER)[1:]]


def test_the_rest_of_each_module_is_rendered_in_blacks_style(blocks):
    """Imports, dtype configs, functions and each builder around its entries: black has nothing to change."""
    for block in blocks:
        piece = block.skeleton or block.whole
        assert black.format_str(piece.text, mode=MODE) == piece.text


def entry(*segments: str, comments: tuple[str, ...] = ()) -> str:
    """A pattern entry as the builder template renders it."""
    indent = entry_layout.INDENT
    return "".join(f"{indent}{line}\n" for line in [*comments, *segments]) + ",\n"


def names(length: int, count: int) -> list[str]:
    """`count` distinct names that make a list `[a, b, ...]` exactly `length` characters long."""
    base = [f"n{i}_" for i in range(count)]
    room = length - 2 - 2 * (count - 1) - sum(map(len, base))
    return [name + "x" * (room // count + (i < room % count)) for i, name in enumerate(base)]


# Lines around black's line length (88): each entry below has a line, or a part black may split
# off, of 87 to 90 characters, so a prediction off by one in any rule changes black's result.
AROUND_THE_LIMIT = range(56, 82)


@pytest.mark.parametrize("length", AROUND_THE_LIMIT)
def test_a_dtype_config_list_near_the_line_length(length):
    for count in (1, 2, 3):
        listed = f"[{', '.join(names(length, count))}]"
        for pattern in ("nn.Conv2d", "(nn.Conv2d, nn.BatchNorm2d, nn.ReLU)"):
            assert_same_black(entry(f"BackendPatternConfig({pattern})", f".set_dtype_configs({listed})"))
            three = entry(
                f"BackendPatternConfig({pattern})", f".set_dtype_configs({listed})", ".set_root_module(nn.Conv2d)"
            )
            assert_same_black(three)
            last = entry(
                f"BackendPatternConfig({pattern})", ".set_root_module(nn.Conv2d)", f".set_dtype_configs({listed})"
            )
            assert_same_black(last)


@pytest.mark.parametrize("length", AROUND_THE_LIMIT)
def test_long_names_and_patterns_near_the_line_length(length):
    long_name = "m." + "a" * (length - 2)
    shapes = [
        (f"BackendPatternConfig({long_name})", ".set_dtype_configs([d])"),
        (f"BackendPatternConfig({long_name[: length - 22]})", ".set_dtype_configs([d])"),
        ("BackendPatternConfig(nn.Linear)", f".set_dtype_configs([{'x' * (length - 12)}, e])"),
        ("BackendPatternConfig(nn.Linear)", f".set_dtype_configs([{'x' * (length - 12)}, e])", ".set_root_module(a)"),
        (f"BackendPatternConfig(({long_name[:40]}, nn.ReLU))", f".set_dtype_configs([{'d' * (length - 30)}])"),
        (f"BackendPatternConfig(({long_name[:30]}, nn.ReLU))", f".set_dtype_configs([{'d' * (length - 10)}, e])"),
        (f"BackendPatternConfig(({long_name}, nn.ReLU))", f".set_dtype_configs([{'d' * (length - 40)}, e])"),
        ("BackendPatternConfig(nn.Linear)", f".set_root_module({long_name})"),
        ("BackendPatternConfig(nn.Linear)", ".set_dtype_configs([d])", f".set_fuser_method({long_name})"),
        (f"BackendPatternConfig(({long_name}, nn.ReLU))", ".set_dtype_configs([d])", ".set_root_module(nn.Linear)"),
        ("BackendPatternConfig(nn.Linear)", f"._set_input_type_to_index({{'{'w' * (length - 30)}': 1, 'bias': 2}})"),
        ("BackendPatternConfig()", f"._set_pattern_complex_format((nn.ReLU, ({long_name}, nn.Conv2d)))"),
        ("BackendPatternConfig(nn.Linear)", f".set_{'x' * (length - 10)}(nn.Linear)"),
        ("BackendPatternConfig(nn.Linear)", ".set_dtype_configs([d])", f".set_x({'a' * (length - 14)}, bbbb)"),
        ("BackendPatternConfig(nn.Linear)", f".set_x({'a' * (length - 14)}, bbbb)"),
    ]
    for segments in shapes:
        assert_same_black(entry(*segments))


def test_odd_spellings_are_laid_out_safely_or_not_at_all():
    odd = [
        entry("BackendPatternConfig('add')", ".set_dtype_configs([d])"),
        entry('BackendPatternConfig("it\'s")', ".set_dtype_configs([d])", ".set_root_module(nn.Linear)"),
        entry("BackendPatternConfig('a\\'b')", ".set_dtype_configs([d])"),
        entry("BackendPatternConfig((nn.ReLU,))", ".set_dtype_configs([d])"),
        entry("BackendPatternConfig(nn.ReLU)", ".set_dtype_configs([d, e,])"),
        entry("BackendPatternConfig(nn.ReLU)", ".set_dtype_configs([d])", comments=("# fmt: off",)),
        entry("BackendPatternConfig(nn.ReLU)", ".set_dtype_configs([d])", comments=("# type: ignore",)),
        entry("BackendPatternConfig(nn.ReLU)", ".set_dtype_configs([d])", comments=("#no space", "# two")),
        entry("BackendPatternConfig(nn.ReLU)", ".set_dtype_configs([d])", comments=("# été " + "x" * 90,)),
        entry("BackendPatternConfig(nn.Rélu)", ".set_dtype_configs([d])" + " " * 80),
        entry("BackendPatternConfig(f(a, b=1))", ".set_dtype_configs([d])", ".set_fuser_method(g(h(x), y))"),
        entry("BackendPatternConfig(nn.ReLU)", ".set_dtype_configs([d])  # a trailing comment"),
        entry("BackendPatternConfig(nn.ReLU)", ".set_dtype_configs([d]).set_root_module(nn.ReLU)"),
        entry("BackendPatternConfig(nn.ReLU)", ".set_x(a, " + "b" * 80 + ")"),
        entry("BackendPatternConfig(nn.ReLU)", ".set_dtype_configs([d])", "._set_x(", "  {", "0: A,", "    }", ")"),
        entry("BackendPatternConfig(nn.ReLU)", ".set_dtype_configs([d])", "._set_x(", "{", "    0: A", "    }", ")"),
        entry("BackendPatternConfig(nn.ReLU)", "._set_x(", "    {", "        0: A,", "    }", ")"),
        entry(
            "BackendPatternConfig(nn.ReLU)",
            ".set_dtype_configs([d])",
            "._set_num_tensor_args_to_observation_type(",
            "    {",
            *(f"        {i}: ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT," for i in range(3)),
            "    }",
            ")",
            "._set_input_type_to_index({'weight': 1})",
        ),
    ]
    for text in odd:
        assert_same_black(text)


@pytest.mark.parametrize("seed", range(2))
def test_random_entries_are_laid_out_as_black_lays_them_out_or_not_at_all(seed):
    """Entries of every shape the template renders, with values and spellings a spec may give (odd ones
    too), at lengths around the line length: a layout given is black's, byte for byte."""
    count, laid_out, wrong = random_entries.check(700, seed)
    assert wrong == []
    assert laid_out >= count // 4  # not a test of refusals alone


def test_the_template_spells_imports_and_strings_as_black_does():
    """black_style.j2 lays out a long `from ... import a, b` and quotes a string as black does, at every length."""
    macros = rendering.make_environment(ROOT / "templates").get_template("black_style.j2").module
    module = "torch.ao.quantization.backend_config"
    lines = []
    for length, count in itertools.product(range(80, 96), (1, 2, 3)):
        room = length - len(f"from {module} import ") - 2 * (count - 1)
        imported = [f"N{i}" + "x" * (room // count - 2 + (i < room % count)) for i in range(count)]
        lines.append(f"from {module} import {', '.join(imported)}")
        assert len(lines[-1]) == length
        lines.append(f"from {module} import {', '.join(f'{name} as {name[:3]}' for name in imported)}")
    lines += ["import torch", "import torch.nn as nn", "from torch import (a, b)", "from m import " + "é" * 90 + ", b"]
    for line in lines:
        text = str(macros.import_line(line)) + "\n"
        assert black.format_str(text, mode=MODE) == black.format_str(line + "\n", mode=MODE), line
    for text in ["x86", "", "it's", 'say "hi"', "a\\b", "tab\there", "été", "a\nb", "{{ x }}", "#"]:
        spelt = str(macros.string(text))
        assert black.format_str(f"x = {spelt}\n", mode=MODE) == black.format_str(f"x = {text!r}\n", mode=MODE), text
        assert eval(spelt) == text


def test_a_dict_kept_open_by_its_trailing_comma_is_laid_out_exactly_however_it_is_indented():
    text = "            BackendPatternConfig(a)\n.s([d])\n._x(\n{\n0: A,\n}\n)\n,\n"
    layout = assert_same_black(text)
    assert layout is not None and laid_out_wrapped(layout) == black_of_entry(text)


def test_bindings_are_checked_without_the_entries_only_when_the_markers_are_the_template_s(blocks):
    """An entry binds no module-level name, so the names check may skip the entries (most of the text);
    a text with an entry marker the template did not write (a spec's text may hold one) is checked whole."""
    module = min(pipeline.load(ROOT, validate=False), key=lambda m: len(rendering.render_module(m, ROOT / "templates")))
    text = rendering.render_module(module, ROOT / "templates")
    lines = sum(len(b.backend.configs) + 1 for b in module.backends if b.backend.configs)
    stripped = formatting.without_entries(text, lines)
    assert formatting.ENTRY_MARKER not in stripped and len(stripped) < len(text)
    def verbs(source):  # each module-level name with how it is bound, each time (lines move up)
        return {name: [verb for _, verb in found] for name, found in output_check.module_bindings(source).items()}

    assert verbs(stripped) == verbs(text)
    forged = text.replace(formatting.BLOCK_MARKER, formatting.BLOCK_MARKER + formatting.ENTRY_MARKER + "\n", 1)
    assert formatting.without_entries(forged, lines) == forged


def test_a_builder_s_only_entry_is_laid_out_as_black_lays_out_the_whole_module():
    """black splits a list's only element, a chain of three or more calls after a comment, before each call
    even when it fits (with no comma between elements, the chain's dots are the highest delimiters); as
    one of several it keeps it on one line. The formatter, which lays out and batches entries as elements
    of longer lists, must write what black writes for the whole module."""
    head = 'def get_{}_config() -> BackendConfig:\n    return BackendConfig("a").set_backend_pattern_configs(\n'
    head += "        [\n"
    tail = "        ]\n    )\n"
    chains = [
        ("BackendPatternConfig(F.relu)", ".set_dtype_configs([d])", ".set_qat_module(nn.ReLU)"),
        ("BackendPatternConfig(F.relu)", ".set_dtype_configs([d])", ".set_root_module(a)", ".set_qat_module(b)"),
        ("BackendPatternConfig(F.relu)", ".set_dtype_configs([d])"),
        ("BackendPatternConfig(F.relu)", ".set_dtype_configs([d])", ".set_qat_module(nn.ReLU" + "x" * 20 + ")"),
    ]
    for chain in chains:
        one = entry(*chain, comments=("# other",))
        two = [entry(*chain, comments=("# other",)), entry(*chain)]
        builders = [head.format("one") + formatting._ENTRY_LINE + one + formatting._ENTRY_LINE + tail]
        builders.append(head.format("two") + "".join(formatting._ENTRY_LINE + e for e in two))
        builders[-1] += formatting._ENTRY_LINE + tail
        source = "import torch\n" + "".join(formatting.BLOCK_MARKER + builder for builder in builders)
        with formatting.Formatter(1) as formatter:
            written = formatter.submit(source, "generated/one.py")()
        unmarked = source.replace(formatting.BLOCK_MARKER, "").replace(formatting._ENTRY_LINE, "")
        assert written == black.format_str(unmarked, mode=MODE), chain


def test_an_entry_black_formats_alone_is_laid_out_as_one_of_its_builder_s_entries():
    """An entry entry_layout does not lay out goes to black in a batch, maybe the only one: black must lay it
    out as an element of a longer list (a short chain of calls on one line), as it does in the module."""
    head = 'def get_config() -> BackendConfig:\n    return BackendConfig("a").set_backend_pattern_configs(\n'
    head += "        [\n"
    refused = entry("BackendPatternConfig(F.relu)", ".set_dtype_configs([d])", ".set_x(x, k=(a))", comments=("# a",))
    assert entry_layout.laid_out(refused) is None  # black keeps the redundant parentheses: not predicted
    for entries in ([refused, entry("BackendPatternConfig(F.relu)")], [entry("BackendPatternConfig(a)"), refused]):
        source = "import torch\n" + formatting.BLOCK_MARKER + head
        source += "".join(formatting._ENTRY_LINE + e for e in entries) + formatting._ENTRY_LINE + "        ]\n    )\n"
        with formatting.Formatter(1) as formatter:
            written = formatter.submit(source, "generated/one.py")()
        unmarked = source.replace(formatting.BLOCK_MARKER, "").replace(formatting._ENTRY_LINE, "")
        assert written == black.format_str(unmarked, mode=MODE)


def test_characters_python_does_not_take_for_space_are_not_stripped_away():
    """str.strip() strips the ASCII separators \\x1c-\\x1f, which Python cannot parse: black refuses such an
    entry, so a layout must not quietly make it valid. Other control characters are black's to judge too."""
    pattern, dtypes = "BackendPatternConfig(nn.Conv2d)", ".set_dtype_configs([d])"
    for char in "\x1c\x1d\x1e\x1f\x0b\x0c\r\t\x00\x7f":
        odd = [
            entry(pattern + char, dtypes),
            entry(char + pattern, dtypes),
            entry(pattern, dtypes, comments=(char + "# conv",)),
            entry(pattern, dtypes, comments=("# conv" + char,)),
        ]
        for text in odd:
            try:
                by_black = black_of_entry(text)
            except black.parsing.InvalidInput:
                by_black = None
            layout = entry_layout.laid_out(text)
            assert layout is None or laid_out_wrapped(layout) == by_black, repr(text)


def test_a_dict_kept_open_is_laid_out_only_when_black_keeps_each_item_as_it_is():
    """The items of a dict kept open by its trailing comma: black puts two on one line on two lines, and
    splits a long one at its brackets; an item without brackets it cannot split, however long."""
    pattern, dtypes = "BackendPatternConfig(nn.Conv2d)", ".set_dtype_configs([d])"
    items = [
        "0: f(" + "a" * 90 + "),",
        "0: (" + "a" * 40 + ", " + "b" * 40 + "),",
        "0: [" + "a" * 40 + ", " + "b" * 40 + "],",
        "0: A, 1: B,",
        "0: ObservationType." + "A" * 90 + ",",
        "1" * 90 + ": ObservationType.A,",
        "-1: ObservationType.A,",
    ]
    for item in items:
        assert_same_black(entry(pattern, dtypes, "._set_x(", "{", item, "}", ")"))
        assert_same_black(entry(pattern, dtypes, "._set_x(", "{", "0: A,", item, "}", ")", ".set_y(a)"))
    assert entry_layout.laid_out(entry(pattern, dtypes, "._set_x(", "{", items[-1], "}", ")")) is not None


def test_a_comment_that_reads_like_a_marker_is_kept():
    """A section or a reason is spec text: `section="generator: format-entry"` renders the marker's text,
    indented, in a comment. Only the template's markers (lines of their own) cut the blocks and entries;
    the comment is written, as black writes it."""
    head = 'def get_config() -> BackendConfig:\n    return BackendConfig("a").set_backend_pattern_configs(\n'
    head += "        [\n"
    comments = [("# generator: format-entry",), ("# Changed on purpose: generator: format-entry",)]
    comments += [("# generator: format-block",), ("# generator: format-block", "# generator: format-entry")]
    for comment in comments:
        entries = [entry("BackendPatternConfig(a)", comments=("# other",))]
        entries.append(entry("BackendPatternConfig(b)", comments=comment))
        source = "import torch\n" + formatting.BLOCK_MARKER + head
        source += "".join(formatting._ENTRY_LINE + e for e in entries) + formatting._ENTRY_LINE + "        ]\n    )\n"
        with formatting.Formatter(1) as formatter:
            written = formatter.submit(source, "generated/one.py")()
        unmarked = source.replace("\n" + formatting.BLOCK_MARKER, "\n").replace("\n" + formatting._ENTRY_LINE, "\n")
        assert all(c in unmarked for c in comment) and written == black.format_str(unmarked, mode=MODE)


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
