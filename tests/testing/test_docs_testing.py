"""The example of docs/testing.md runs as it stands."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def _blocks() -> list[tuple[int, str]]:
    source = DOCS.read_text(encoding="utf-8")
    found = [m for m in _FENCE.finditer(source) if m.group(1) == "python"]
    return [(source.count("\n", 0, m.start()) + 2, m.group(2)) for m in found]


def test_the_page_has_an_example() -> None:
    assert _blocks()


@pytest.mark.parametrize(("line", "code"), [pytest.param(*b, id=f"line{b[0]}") for b in _blocks()])
def test_docs_examples_run(line: int, code: str) -> None:
    """Run each python block as its own module, as if it were a script (its asserts are the checks)."""
    name = f"_handrail_docs_testing_line{line}"
    module = types.ModuleType(name)
    module.__file__ = str(DOCS)
    sys.modules[name] = module
    try:
        exec(compile(code, f"{DOCS}:{line}", "exec"), module.__dict__)
    finally:
        del sys.modules[name]
