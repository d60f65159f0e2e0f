"""Every ``python`` block of every page under docs/ runs as it stands (its asserts are the checks).

Each block runs as its own module, as a script would, in a fresh temporary working directory.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def _blocks() -> list[tuple[Path, int, str]]:
    found = []
    for page in sorted(DOCS.glob("**/*.md")):
        source = page.read_text(encoding="utf-8")
        for match in _FENCE.finditer(source):
            if match.group(1) == "python":
                found.append((page, source.count("\n", 0, match.start()) + 2, match.group(2)))
    return found


def test_the_pages_have_examples() -> None:
    assert len({page for page, _, _ in _blocks()}) >= 3


@pytest.mark.parametrize(
    ("page", "line", "code"),
    [pytest.param(*b, id=f"{b[0].relative_to(DOCS)}:{b[1]}") for b in _blocks()],
)
def test_docs_example_runs(page: Path, line: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    name = f"_handrail_docs_{page.stem.replace('-', '_')}_line{line}"
    module = types.ModuleType(name)
    module.__file__ = str(page)
    sys.modules[name] = module
    try:
        exec(compile(code, f"{page}:{line}", "exec"), module.__dict__)
    finally:
        del sys.modules[name]
