"""Lines of code in spec/ against torch's builder sources for the same nine builders, and
what `python -m generator import` writes for torch's fbgemm builder (compacted into
spec/_common.py's op groups, and with --no-compact) next to the hand-written spec/fbgemm.py.

Counts lines that hold code: blank lines, comments and docstrings are left out.
Everything runs locally: the import goes into a temporary copy of spec/ and templates/.
"""

from __future__ import annotations

import ast
import contextlib
import io
import shutil
import sys
import tempfile
import tokenize
from importlib.util import find_spec
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TORCH_SOURCES = (
    "_common_operator_config_utils.py", "fbgemm.py", "qnnpack.py", "executorch.py", "onednn.py",
    "native.py", "x86.py", "tensorrt.py", "_qnnpack_pt2e.py",
)  # fmt: skip


NOT_CODE = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)


def code_lines(source: str) -> int:
    docstring_lines = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docstring_lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in NOT_CODE:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docstring_lines)


def spec_lines() -> int:
    return sum(code_lines(p.read_text()) for p in sorted((ROOT / "spec").glob("*.py")))


def _torch_folder() -> Path:
    return Path(find_spec("torch").submodule_search_locations[0]) / "ao/quantization/backend_config"


def torch_lines() -> int:
    return sum(code_lines((_torch_folder() / name).read_text()) for name in TORCH_SOURCES)


FBGEMM_BUILDER = "torch.ao.quantization.backend_config.fbgemm:get_fbgemm_backend_config"


def imported_lines(target: str = FBGEMM_BUILDER) -> tuple[int, int]:
    """Code lines of the spec `import` writes for `target`: (compacted, --no-compact)."""
    sys.path.insert(0, str(ROOT))
    from generator import cli

    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        for name in ("spec", "templates"):
            shutil.copytree(ROOT / name, project / name, ignore=shutil.ignore_patterns("__pycache__"))
        # Only the shared helpers: backend names are unique across spec/, and spec/fbgemm.py has torch's.
        for spec_file in (project / "spec").glob("[!_]*.py"):
            spec_file.unlink()
        counts = []
        for name, options in (("compacted", []), ("expanded", ["--no-compact"])):
            with contextlib.redirect_stdout(io.StringIO()):
                code = cli.main(["--root", str(project), "import", target, "--name", name, *options])
            if code != 0:
                raise SystemExit(f"import {target} failed with exit code {code}")
            written = project / "spec" / f"{name}.py"
            counts.append(code_lines(written.read_text()))
            written.unlink()  # the next import writes the same backend name
    return counts[0], counts[1]


if __name__ == "__main__":
    print(f"spec/: {spec_lines()} lines of code; torch's nine builders: {torch_lines()} (target: spec <= 700)")
    compacted, expanded = imported_lines()
    hand_written = code_lines((ROOT / "spec" / "fbgemm.py").read_text())
    print(
        f"fbgemm: spec/fbgemm.py by hand: {hand_written}; imported: {compacted} "
        f"(with --no-compact: {expanded}); torch's fbgemm.py: "
        f"{code_lines((_torch_folder() / 'fbgemm.py').read_text())} plus the shared _common_operator_config_utils.py"
    )
