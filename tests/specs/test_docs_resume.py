"""docs/resume.md covers what it must (its examples run in tests/test_docs_pages.py)."""

from __future__ import annotations

from tests.docs_examples import DOCS, code_blocks


def test_the_page_covers_resume_the_registry_and_the_lookup_order() -> None:
    source = (DOCS / "resume.md").read_text(encoding="utf-8")
    for name in ("handrail.resume(", "resume_async", "register_snapshot_store(", "ToolExecutionDecision.find",
                 "ToolExecutionDecision.same_as"):  # fmt: skip
        assert name in source, name
    assert len(code_blocks("resume.md")) >= 2
