"""black formats only what is new: formatted pieces are cached by content, and no cache can change output;
black formats while the static checks run, and writes what it writes for the whole module."""

import json
import re

import black
import pytest

from generator import cache, cli
from generator.building import check_memo, formatting, pipeline, rendering, resolution
from generator.freshness import planning
from tests.support.builders import GENERATED_MODULES
from tests.support.projects import ROOT, at_one_path_fixture

one_path_project = at_one_path_fixture("formatting")  # a fresh copy per test, at one path (see there)

MATRIX = "docs/support-matrix.md"


@pytest.fixture(scope="module")
def rendered():
    """(output, unformatted source, black's whole-module result) of the spec module with the fewest patterns."""
    modules = [m for m in pipeline.load(ROOT, validate=False) if any(b.backend.configs for b in m.backends)]
    module = min(modules, key=lambda m: sum(len(b.backend.configs) for b in m.backends))
    source = rendering.render_module(module, ROOT / "templates")
    unmarked = source.replace(formatting.BLOCK_MARKER, "").replace(formatting.ENTRY_MARKER + "\n", "")
    return module.spec.output, source, black.format_str(unmarked, mode=black.Mode())


def formatted(source, output, folder, monkeypatch):
    """What the formatter makes of `source` with the cache of a project at `folder`, and the texts black was given."""
    given = []
    real = formatting.format_blocks

    def counting(texts, output):
        given.extend(texts)
        return real(texts, output)

    monkeypatch.setattr(formatting, "format_blocks", counting)
    with formatting.Formatter(1, folder) as formatter:
        text = formatter.submit(source, output)()
    return text, given


def test_pieces_join_into_what_black_makes_of_the_whole_module(rendered, tmp_path, monkeypatch):
    output, source, whole = rendered
    assert formatting.ENTRY_MARKER in source  # the module really is cut into entries
    text, given = formatted(source, output, tmp_path, monkeypatch)
    assert text == whole
    assert (ROOT / output).read_text().endswith(whole)
    again, given = formatted(source, output, tmp_path, monkeypatch)
    assert (again, given) == (whole, [])  # a second time, black is not run at all


@pytest.mark.parametrize(
    "new_config, laid_out",
    [("a_dtype_config_not_seen_before", True), ("a_dtype_config_not_seen_before | operator.or_", False)],
    ids=["laid out without black", "a shape only black lays out"],
)
def test_a_new_entry_is_the_only_thing_black_formats(rendered, tmp_path, monkeypatch, new_config, laid_out):
    """A new entry black's layout is known for is written without black; any other, black formats alone."""
    output, source, _ = rendered
    formatted(source, output, tmp_path, monkeypatch)
    head, marker, rest = source.partition(formatting.ENTRY_MARKER + "\n")
    entry = rest.split(marker)[0]
    # The same pattern registered once more, with another dtype config list: one new entry.
    extra = entry.replace(".set_dtype_configs([", f".set_dtype_configs([{new_config}, ")
    assert extra != entry
    edited = head + marker + extra + marker + rest
    text, given = formatted(edited, output, tmp_path, monkeypatch)
    unmarked = edited.replace(formatting.BLOCK_MARKER, "").replace(marker, "")
    assert text == black.format_str(unmarked, mode=black.Mode())
    if laid_out:
        assert given == []
    else:
        assert len(given) == 1 and given[0].count(marker) == 1 and new_config in given[0]


def format_entries(project):
    """(the project's cache of formatted pieces, the names of its entries: one per output)."""
    kept = cache.Cache(project, cache.FORMAT)
    return kept, kept.names()


def _entries(kept, name):
    return kept.read(name), json.loads(kept.read(name).payload)


def _altered(text):
    """The same layout with different code: what a corrupt or forged entry might hold."""
    return text.replace("BackendPatternConfig", "BackendPatternConfog").replace("_config", "_confog")


def _corrupt_text(kept, name):
    _, pieces = _entries(kept, name)
    altered = json.dumps({k: _altered(t) for k, t in pieces.items()}, sort_keys=True).encode()
    kept.path(name).write_bytes(kept.path(name).read_bytes()[:64] + altered)  # the checksum of the sound entry


def _forged_with_valid_checksums(kept, name):
    entry, pieces = _entries(kept, name)
    kept.put(entry.key, json.dumps({k: _altered(t) for k, t in pieces.items()}).encode(), name)


def _truncated(kept, name):
    data = kept.path(name).read_bytes()
    kept.path(name).write_bytes(data[: len(data) // 2])


def _wrong_shape(kept, name):
    entry, pieces = _entries(kept, name)
    kept.put(entry.key, json.dumps({k: {"text": t} for k, t in pieces.items()}).encode(), name)


@pytest.mark.parametrize("corrupt", [_corrupt_text, _forged_with_valid_checksums, _truncated, _wrong_shape])
def test_a_corrupt_or_forged_cache_cannot_change_output(rendered, tmp_path, monkeypatch, corrupt):
    output, source, whole = rendered
    formatted(source, output, tmp_path, monkeypatch)
    kept, (name,) = format_entries(tmp_path)
    corrupt(kept, name)
    text, given = formatted(source, output, tmp_path, monkeypatch)
    assert text == whole and given  # black formatted what it could not trust
    assert formatted(source, output, tmp_path, monkeypatch) == (whole, [])  # and the cache was made whole


def test_regenerate_with_a_forged_cache_writes_what_black_writes(one_path_project):
    """Through the CLI: every cached piece of a module forged, another module's cache file cut short
    (the two smallest, so that black has least to do again)."""
    outputs = [f"generated/{module}.py" for module in GENERATED_MODULES] + [MATRIX]
    assert cli.main(["--root", str(one_path_project), "regenerate", "--force", "--jobs", "1"]) == 0
    kept, names = format_entries(one_path_project)
    names.sort(key=lambda name: kept.path(name).stat().st_size)
    assert len(names) == len(GENERATED_MODULES) >= 2
    _forged_with_valid_checksums(kept, names[0])
    _truncated(kept, names[1])
    assert cli.main(["--root", str(one_path_project), "regenerate", "--force", "--jobs", "2"]) == 0
    for output in outputs:
        assert (one_path_project / output).read_bytes() == (ROOT / output).read_bytes(), output


def test_a_builder_whose_list_opens_on_a_line_too_long_is_what_black_makes_of_it_whole(rendered, tmp_path, monkeypatch):
    output, source, _ = rendered
    long_name = "a_backend_whose_name_is_long_enough_to_push_the_opening_line_past_black_s_line_length"
    edited = re.sub(r"BackendConfig\((['\"])", rf"BackendConfig(\g<1>{long_name}", source, count=1)
    assert edited != source
    text, _ = formatted(edited, output, tmp_path, monkeypatch)
    unmarked = edited.replace(formatting.BLOCK_MARKER, "").replace(formatting.ENTRY_MARKER + "\n", "")
    assert text == black.format_str(unmarked, mode=black.Mode())


def made_from(source: str) -> list[str]:
    """The generated modules made from the project file `source`, as the committed manifest records them."""
    outputs = json.loads((ROOT / "generated" / "manifest.json").read_text())["outputs"]
    modules = {f"generated/{module}.py" for module in GENERATED_MODULES}
    return sorted(output for output, entry in outputs.items() if output in modules and source in entry["inputs"])


def test_torch_names_are_validated_once_black_has_the_new_pieces(one_path_project, monkeypatch):
    """Checking torch names waits for torch when one is new: the formatting workers are already at work by then
    (known names are checked once every module has been handed to them; a new one is looked up in a child,
    see tests/test_forked.py)."""
    kept, _ = format_entries(one_path_project)
    rebuilt = made_from("spec/_common.py")  # what the edit below makes regenerate build again
    smallest = min((kept.path(output) for output in rebuilt), key=lambda path: path.stat().st_size)
    smallest.unlink()  # something new for black, and little
    common = one_path_project / "spec" / "_common.py"
    common.write_text(common.read_text() + "# an edit\n")
    events = []
    real_submit, real_finish = formatting.Formatter.submit, resolution.Validation.finish

    def submit(self, source, output):
        events.append("submit")
        return real_submit(self, source, output)

    def finish(self):
        if not self.finished:
            events.append(f"validate, workers started: {formatter_pools[-1].pool is not None}")
        return real_finish(self)

    formatter_pools = []
    real_init = formatting.Formatter.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        formatter_pools.append(self)

    monkeypatch.setattr(formatting.Formatter, "submit", submit)
    monkeypatch.setattr(formatting.Formatter, "__init__", init)
    monkeypatch.setattr(resolution.Validation, "finish", finish)
    assert cli.main(["--root", str(one_path_project), "regenerate", "--jobs", "2"]) == 0
    # Every module made from spec/_common.py (a backend of the user's own need not import it) goes to black.
    assert len(rebuilt) >= 2 and events == ["submit"] * len(rebuilt) + ["validate, workers started: True"]
    for output in [f"generated/{module}.py" for module in GENERATED_MODULES] + [MATRIX]:
        assert (one_path_project / output).read_bytes() == (ROOT / output).read_bytes(), output


def test_each_module_is_checked_once_while_black_formats(tmp_path, monkeypatch):
    """The static checks run on the rendered text, before black's results are awaited, and not again."""
    checked, awaited = [], []
    real_check, real_submit = pipeline.check_module, formatting.Formatter.submit

    def check(text, output):
        checked.append((output, bool(awaited)))
        return real_check(text, output)

    def submit(self, source, output):
        result = real_submit(self, source, output)
        return lambda: awaited.append(output) or result()

    monkeypatch.setattr(pipeline, "check_module", check)
    monkeypatch.setattr(formatting.Formatter, "submit", submit)
    monkeypatch.setattr(check_memo, "passed", lambda *args: False)  # every text checked (the memo: test_caches)
    modules = pipeline.load(ROOT, validate=False)
    targets = [t for t in planning.plan(ROOT) if not t.is_matrix]
    with formatting.Formatter(1, tmp_path) as formatter:
        texts = pipeline.build(ROOT, modules, targets, formatter)
    assert sorted(output for output, _ in checked) == sorted(m.spec.output for m in modules)
    assert not any(after for _, after in checked)
    assert all((ROOT / t.relative).read_text() == texts[t.name] for t in targets)


def test_the_format_cache_is_keyed_by_entry_layout_too(tmp_path, monkeypatch):
    """black is given entry_layout's prediction, so a piece formatted under an older entry_layout (one that
    rewrote `"x', 'y"` as `"x", "y"`, which the cache's check of the code cannot tell apart) must not be reused."""
    from pathlib import Path

    from generator.building import entry_layout, formatting

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
    from generator.building import formatting, pipeline, rendering

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
