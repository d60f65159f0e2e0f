from __future__ import annotations

from pathlib import Path

import pytest

from handrail.stores.approvals import ApprovalStore
from handrail.stores.snapshot_postgres import PostgresSnapshotStore
from handrail.testing.store_suites.approvals import ApprovalStoreSuite, make_approval
from tests.stores.approval_worker import two_processes_decide_an_approval

pytestmark = pytest.mark.postgres


class TestPostgresApprovals(ApprovalStoreSuite):
    @pytest.fixture(autouse=True)
    def _database(self, postgres_dsn: str) -> None:
        self.dsn = postgres_dsn

    def make_store(self) -> ApprovalStore:
        return PostgresSnapshotStore(self.dsn)


def test_two_processes_deciding_at_once_one_wins(postgres_dsn: str, tmp_path: Path) -> None:
    store = PostgresSnapshotStore(postgres_dsn)
    try:
        approval = store.create_approval(make_approval())
        url = store.locator("x").rpartition("#")[0]
        reports = two_processes_decide_an_approval(url, approval.id, tmp_path / "gate")
        assert [r["outcome"] for r in reports] == ["refused", "won"], reports
        assert store.get_approval(approval.id).decided_by == reports[1]["verdict"]
        assert [e.kind for e in store.audit_trail(approval.id)] == ["created", "decided"]
    finally:
        store.close()
