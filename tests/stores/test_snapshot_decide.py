"""``SnapshotStoreBase.decide``: record a decision and say whether this call recorded it or found it there."""

from __future__ import annotations

from pathlib import Path

import pytest

from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.stores import FileSnapshotStore, SQLiteSnapshotStore
from tests.human_in_the_loop.test_snapshots import paused_snapshot


@pytest.mark.parametrize("kind", ["dir", "sqlite"])
def test_decide_says_whether_it_recorded_the_decision(tmp_path: Path, kind: str) -> None:
    store = FileSnapshotStore(tmp_path) if kind == "dir" else SQLiteSnapshotStore(tmp_path / "s.db")
    try:
        sid = store.save(paused_snapshot())
        decision = ToolExecutionDecision("transfer", execute=True, tool_call_id="c1")
        first, recorded = store.decide(sid, decision, decided_by="ann")
        assert recorded and first.ledger["c1"].decided_by == "ann"
        second, again = store.decide(sid, decision, decided_by="bo")
        assert not again and second.ledger["c1"].decided_by == "ann"
        assert [d.decided_by for d in second.tool_execution_decisions] == ["ann"]
        assert store.record_decision(sid, decision, decided_by="cy").ledger["c1"].decided_by == "ann"
    finally:
        store.close()
