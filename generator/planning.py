"""Planning: which files the generator writes, and which of them are out of date.

Nothing here executes the spec, renders or formats, and nothing imports torch,
Jinja2 or black: `check` decides from this module alone, by comparing each
file's recorded digests with the current inputs. Spec files are read only as
syntax trees, to find the output name and the spec modules they import.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from pathlib import Path

from generator import digests

MATRIX = "support-matrix"
MATRIX_OUTPUT = Path("docs") / "support-matrix.md"


@dataclass(frozen=True)
class Target:
    """A generated file: what it is made from, where it goes and its current input digest.

    `name` is a generated module's name, or MATRIX for the support matrix, which
    is made from every spec file.
    """

    name: str
    source: str
    output: Path
    inputs: str

    @property
    def is_matrix(self) -> bool:
        return self.name == MATRIX


def plan(root: Path) -> list[Target]:
    digester = digests.InputsDigester(root)
    targets = []
    for spec_file in spec_files(root):
        name = module_name(spec_file)
        relative = str(spec_file.relative_to(root))
        targets.append(Target(name, relative, root / "generated" / f"{name}.py", digester.digest(relative)))
    matrix_inputs = digester.matrix_digest([t.source for t in targets])
    return targets + [Target(MATRIX, "spec/", root / MATRIX_OUTPUT, matrix_inputs)]


def freshness(target: Target) -> str:
    """'fresh', 'missing', 'stale' (inputs changed) or 'edited' (body or header changed by hand)."""
    if not target.output.exists():
        return "missing"
    style = digests.comment_style(target.output)
    header, body = digests.split_generated(target.output.read_text(), style)
    if header is None or digests.body_digest(body) != header.body:
        return "edited"
    return "fresh" if header.inputs == target.inputs else "stale"


def orphans(root: Path, targets: list[Target]) -> list[Path]:
    """Generated modules whose spec file is gone."""
    expected = {t.output for t in targets}
    found = []
    for path in sorted((root / "generated").glob("*.py")):
        if path not in expected and path.read_text().startswith(digests.GENERATED_LINE):
            found.append(path)
    return found


def spec_files(root: Path) -> list[Path]:
    """The spec files that describe generated modules, in a stable order."""
    return sorted(p for p in (root / "spec").glob("*.py") if not p.name.startswith("_"))


def module_name(spec_file: Path) -> str:
    """The generated module's name: `Module(name=...)` if given literally, else the file stem.

    Read from the syntax tree so that `check` can map specs to outputs without
    executing them.
    """
    try:
        tree = ast.parse(spec_file.read_text(), str(spec_file))
    except SyntaxError:
        return spec_file.stem
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Module":
            for keyword in node.keywords:
                if keyword.arg == "name" and isinstance(keyword.value, ast.Constant):
                    return str(keyword.value.value)
    return spec_file.stem


def lint_cache_file(root: Path, targets: list[Target]) -> Path:
    """Where the spec lint's findings for the current inputs are cached.

    The findings are a pure function of the spec and generator files that the
    targets' digests cover, plus the lint's own code; executing the spec to
    recompute them is most of what `check` would otherwise spend.
    """
    lint_code = (Path(__file__).parent / "lint.py").read_bytes()
    key = hashlib.sha256("".join(t.inputs for t in targets).encode() + lint_code).hexdigest()
    return root / ".cache" / "generator" / f"lint-{key}.json"
