"""The examples of docs/resume.md run as they stand."""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from handrail.stores import _snapshot_locations as locations

DOCS = Path(__file__).resolve().parents[2] / "docs" / "resume.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def _blocks() -> list[tuple[int, str]]:
    source = DOCS.read_text(encoding="utf-8")
    found = [m for m in _FENCE.finditer(source) if m.group(1) == "python"]
    return [(source.count("\n", 0, m.start()) + 2, m.group(2)) for m in found]


@pytest.fixture(autouse=True)
def _registry() -> Iterator[None]:
    """A block may register a scheme: the registry is left as it was."""
    saved = dict(locations._FACTORIES)
    yield
    locations._FACTORIES.clear()
    locations._FACTORIES.update(saved)


def test_the_page_covers_resume_the_registry_and_the_lookup_order() -> None:
    source = DOCS.read_text(encoding="utf-8")
    for name in ("handrail.resume(", "resume_async", "register_snapshot_store(", "ToolExecutionDecision.find",
                 "ToolExecutionDecision.same_as"):  # fmt: skip
        assert name in source, name
    assert len(_blocks()) >= 2


@pytest.mark.parametrize(("line", "code"), [pytest.param(*b, id=f"line{b[0]}") for b in _blocks()])
def test_docs_examples_run(line: int, code: str) -> None:
    """Run each python block as its own module, as if it were a script (its asserts are the checks)."""
    name = f"_handrail_docs_resume_line{line}"
    module = types.ModuleType(name)
    module.__file__ = str(DOCS)
    sys.modules[name] = module
    try:
        exec(compile(code, f"{DOCS}:{line}", "exec"), module.__dict__)
    finally:
        del sys.modules[name]
