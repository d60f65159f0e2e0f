from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from handrail.errors import CorruptRecordError
from handrail.stores.approvals import ApprovalStore
from handrail.stores.snapshot_sqlite import SQLiteSnapshotStore
from handrail.testing.store_suites.approvals import ApprovalStoreSuite, make_approval
from tests.stores.approval_worker import two_processes_decide_an_approval


class TestSQLiteApprovals(ApprovalStoreSuite):
    @pytest.fixture(autouse=True)
    def _path(self, tmp_path: Path) -> None:
        self.path = tmp_path / "db" / "handrail.db"

    def make_store(self) -> ApprovalStore:
        return SQLiteSnapshotStore(self.path)


def _sql(path: Path, statement: str, *params: object) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        return conn.execute(statement, params).fetchall()
    finally:
        conn.close()


def test_the_approval_tables_came_with_schema_version_3(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    store = SQLiteSnapshotStore(path)
    approval = store.create_approval(make_approval(labels=("eu",)))
    assert _sql(path, "SELECT version FROM handrail_schema WHERE store = 'SQLiteSnapshotStore'") == [(4,)]
    assert _sql(path, "SELECT status, version, created_us FROM handrail_approvals") == [
        ("pending", 1, int(approval.created_at.timestamp()) * 1_000_000 + approval.created_at.microsecond)
    ]
    assert _sql(path, "SELECT label, approval_id FROM handrail_approval_labels") == [("eu", approval.id)]


def test_a_version_2_database_gains_the_approval_tables(tmp_path: Path) -> None:
    from handrail.stores import snapshot_sqlite

    path = tmp_path / "old.db"
    old = snapshot_sqlite.SQLiteDatabase(path, store="SQLiteSnapshotStore", migrations=snapshot_sqlite._MIGRATIONS[:2])
    old.connection()
    old.close()
    assert _sql(path, "SELECT version FROM handrail_schema") == [(2,)]
    store = SQLiteSnapshotStore(path)
    store.create_approval(make_approval())
    assert _sql(path, "SELECT version FROM handrail_schema") == [(4,)]


def test_a_changed_audit_row_breaks_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    store = SQLiteSnapshotStore(path)
    approval = store.create_approval(make_approval())
    store.decide_approval(approval.id, "reject", expected_version=1, principal="ann", at=approval.created_at)
    _sql(path, "UPDATE handrail_approval_audit SET data = replace(data, 'ann', 'bob') WHERE seq = 2")
    with pytest.raises(CorruptRecordError, match="hash"):
        store.audit_trail(approval.id)
    _sql(path, "DELETE FROM handrail_approval_audit WHERE seq = 1")
    with pytest.raises(CorruptRecordError, match="damaged"):
        store.audit_trail(approval.id)


def test_reading_a_missing_database_creates_nothing(tmp_path: Path) -> None:
    store = SQLiteSnapshotStore(tmp_path / "none.db")
    assert store.list_approvals().items == () and not (tmp_path / "none.db").exists()


def test_two_processes_deciding_at_once_one_wins(tmp_path: Path) -> None:
    path = tmp_path / "race.db"
    store = SQLiteSnapshotStore(path)
    approval = store.create_approval(make_approval())
    reports = two_processes_decide_an_approval(f"sqlite:///{path}", approval.id, tmp_path / "gate")
    assert [r["outcome"] for r in reports] == ["refused", "won"], reports
    assert store.get_approval(approval.id).decided_by == reports[1]["verdict"]
    assert [e.kind for e in store.audit_trail(approval.id)] == ["created", "decided"]
