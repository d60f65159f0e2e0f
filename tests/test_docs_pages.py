"""Every ``python`` block of every page under docs/ runs as it stands (its asserts are the checks).

Each block runs as its own module, as a script would, in a fresh temporary working directory; the snapshot
store registry is put back as it was after each one (a block may register a scheme).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from handrail.stores import _snapshot_locations as locations
from tests.docs_examples import DOCS, code_blocks, run_block

PAGES = sorted(DOCS.glob("**/*.md"))
BLOCKS = [(page, line, code) for page in PAGES for line, code in code_blocks(page)]


@pytest.fixture(autouse=True)
def _registry() -> Iterator[None]:
    saved = dict(locations._FACTORIES)
    yield
    locations._FACTORIES.clear()
    locations._FACTORIES.update(saved)


@pytest.mark.parametrize("page", [p for p in PAGES if p.name != "index.md"], ids=lambda p: str(p.relative_to(DOCS)))
def test_every_page_has_an_example(page: Path) -> None:
    assert code_blocks(page), f"{page.name} has no python example"


@pytest.mark.parametrize(
    ("page", "line", "code"), [pytest.param(*b, id=f"{b[0].relative_to(DOCS)}:{b[1]}") for b in BLOCKS]
)
def test_docs_example_runs(page: Path, line: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run_block(page, line, code)
