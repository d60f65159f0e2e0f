"""The code blocks of the pages under docs/: read once here, run by tests/test_docs_pages.py."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

__all__ = ["DOCS", "code_blocks", "run_block"]

DOCS = Path(__file__).resolve().parents[1] / "docs"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def code_blocks(page: str | Path, language: str = "python") -> list[tuple[int, str]]:
    """``(first line, code)`` of each block of ``language`` on ``page`` (a path, or a name under docs/)."""
    path = page if isinstance(page, Path) else DOCS / page
    source = path.read_text(encoding="utf-8")
    return [
        (source.count("\n", 0, m.start()) + 2, m.group(2)) for m in _FENCE.finditer(source) if m.group(1) == language
    ]


def run_block(page: Path, line: int, code: str) -> None:
    """Run one block as its own module, as a script would run it (functions it defines are importable by name)."""
    name = f"_handrail_docs_{page.stem.replace('-', '_')}_line{line}"
    module = types.ModuleType(name)
    module.__file__ = str(page)
    sys.modules[name] = module
    try:
        exec(compile(code, f"{page}:{line}", "exec"), module.__dict__)
    finally:
        del sys.modules[name]
