"""The code blocks of README.md and of the pages under docs/: read here, run by tests/test_docs_pages.py.

A block whose first line is exactly ``# needs the embedded model`` (:data:`NEEDS_MODEL`) runs only under the
``model`` marker, one whose first line is ``# needs the temporal extra`` (:data:`NEEDS_TEMPORAL`) only under the
``temporal`` marker (with ``temporalio`` and the dev server binary installed); every other block runs in the
default test run.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

__all__ = ["DOCS", "NEEDS_MODEL", "NEEDS_TEMPORAL", "README", "ROOT", "code_blocks", "needs_model", "needs_temporal",
           "run_block"]  # fmt: skip

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
NEEDS_MODEL = "# needs the embedded model"
NEEDS_TEMPORAL = "# needs the temporal extra"
# A fence's info string may carry attributes after the language (```python title="x.py"): the block still counts.
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def code_blocks(page: str | Path, language: str = "python") -> list[tuple[int, str]]:
    """``(first line, code)`` of each block of ``language`` on ``page`` (a path, or a name under docs/)."""
    path = page if isinstance(page, Path) else DOCS / page
    source = path.read_text(encoding="utf-8")
    return [
        (source.count("\n", 0, m.start()) + 2, m.group(2)) for m in _FENCE.finditer(source) if m.group(1) == language
    ]


def needs_model(code: str) -> bool:
    """Whether a block says, on its first line, that it needs the embedded model."""
    return code.split("\n", 1)[0] == NEEDS_MODEL


def needs_temporal(code: str) -> bool:
    """Whether a block says, on its first line, that it needs the temporal extra (and the dev server binary)."""
    return code.split("\n", 1)[0] == NEEDS_TEMPORAL


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
