"""Lines of code in spec/ against torch's builder sources for the same nine builders.

Counts lines that hold code: blank lines, comments and docstrings are left out.
"""

from __future__ import annotations

import ast
import io
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


def torch_lines() -> int:
    folder = Path(find_spec("torch").submodule_search_locations[0]) / "ao/quantization/backend_config"
    return sum(code_lines((folder / name).read_text()) for name in TORCH_SOURCES)


if __name__ == "__main__":
    print(f"spec/: {spec_lines()} lines of code; torch's nine builders: {torch_lines()} (target: spec <= 700)")
