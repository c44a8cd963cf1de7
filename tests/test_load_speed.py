"""What makes the load stage fast keeps it right: the template bytecode cache and the refs walk."""

import os
import subprocess
import sys

import pytest

from generator import pipeline
from generator.expansion import torch_refs
from generator.model import TorchRef
from tests.builders import GENERATED_MODULES
from tests.conftest import ROOT

OUTPUTS = [f"generated/{module}.py" for module in GENERATED_MODULES] + ["docs/support-matrix.md"]


def regenerate(project, *args):
    """A real run in a fresh interpreter: in-process runs keep compiled templates in memory."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "generator", "--root", str(project), "regenerate", *args],
                          cwd=project, env=env, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done


def template_cache_files(project):
    return sorted((project / ".cache" / "generator" / "templates").glob("*.bin"))


def _literal_changed(data: bytes) -> bytes:
    """The same code with one of its string constants altered, its checksum left as it was."""
    for literal in (b"BackendPatternConfig", b"DTypeConfig", b"def ", b"import "):
        if literal in data:
            return data.replace(literal, literal[:-1] + bytes([literal[-1] ^ 1]), 1)
    return data[:-1] + bytes([data[-1] ^ 1])


CORRUPTIONS = {
    "truncated": lambda data: data[: len(data) // 2],
    "empty": lambda data: b"",
    "garbage": lambda data: os.urandom(len(data)),
    "literal changed": _literal_changed,
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_corrupt_template_cache_cannot_change_output(project, corruption):
    regenerate(project, "--force")
    files = template_cache_files(project)
    assert len(files) >= len(list((project / "templates").rglob("*.j2"))) >= 2
    corrupted = {}
    for path in files:
        corrupted[path] = CORRUPTIONS[corruption](path.read_bytes())
        path.write_bytes(corrupted[path])
    regenerate(project, "--force")
    for output in OUTPUTS:
        assert (project / output).read_bytes() == (ROOT / output).read_bytes(), output
    assert all(path.read_bytes() != corrupted[path] for path in files)  # compiled again, and replaced


def test_an_edited_template_is_compiled_again(project):
    regenerate(project, "--force")
    module_template = project / "templates" / "module.py.j2"
    module_template.write_text(module_template.read_text() + "# edited by a test\n")
    regenerate(project)
    for module in GENERATED_MODULES:
        assert "# edited by a test\n" in (project / "generated" / f"{module}.py").read_text(), module


def every_ref(value):
    """Every TorchRef inside a model value, depth first, in field order: each occurrence walked."""
    if isinstance(value, TorchRef):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from every_ref(item)
    elif hasattr(value, "__dataclass_fields__"):
        for name in value.__dataclass_fields__:
            if name != "location":
                yield from every_ref(getattr(value, name))


def test_walking_shared_values_once_finds_every_ref_first_used_where_the_full_walk_does():
    """importability reports each package's first use, and rendering imports what the refs name."""
    for module in pipeline.load(ROOT, validate=False):
        full = list(every_ref(module))
        found = torch_refs(module)
        assert len(found) < len(full), module.spec.name  # it does skip shared values
        assert [id(r) for r in dict.fromkeys(full)] == [id(r) for r in dict.fromkeys(found)], module.spec.name
        assert list(dict.fromkeys(full)) == list(dict.fromkeys(found)), module.spec.name
