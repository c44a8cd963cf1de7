"""The project's layout: where a project keeps what the generator reads.

A project is a folder holding `spec/` (one spec file per generated module, and `_`
helper modules), `templates/` and `generated/`; every command is given its root.
"""

from __future__ import annotations

from pathlib import Path


def spec_files(root: Path) -> list[Path]:
    """The spec files that describe generated modules, in a stable order."""
    return sorted(p for p in (root / "spec").glob("*.py") if not p.name.startswith("_"))
