from __future__ import annotations

import json
from pathlib import Path

import pytest

from handrail.errors import CorruptRecordError
from handrail.stores.approvals import ApprovalStore
from handrail.stores.snapshot_file import FileSnapshotStore
from handrail.testing.store_suites.approvals import ApprovalStoreSuite, make_approval
from tests.stores.approval_worker import two_processes_decide_an_approval


class TestFileApprovals(ApprovalStoreSuite):
    @pytest.fixture(autouse=True)
    def _folder(self, tmp_path: Path) -> None:
        self.folder = tmp_path / "snapshots"

    def make_store(self) -> ApprovalStore:
        return FileSnapshotStore(self.folder, lock_timeout=5)


def test_an_approval_is_one_private_file_beside_the_snapshots(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path)
    approval = store.create_approval(make_approval())
    path = store.approval_path(approval.id)
    assert path == tmp_path / "approvals" / f"{approval.id}.json" and path.stat().st_mode & 0o777 == 0o600
    data = json.loads(path.read_bytes())
    assert data["approval"] == approval.to_dict() and [e["kind"] for e in data["audit"]] == ["created"]
    assert store.list_pending() == []  # the approvals folder is not a snapshot


def test_a_changed_audit_entry_breaks_the_chain(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path)
    approval = store.create_approval(make_approval())
    store.decide_approval(approval.id, "approve", expected_version=1, principal="ann", at=approval.created_at)
    path = store.approval_path(approval.id)
    data = json.loads(path.read_bytes())
    data["audit"][1]["principal"] = "mallory"
    path.write_text(json.dumps(data))
    with pytest.raises(CorruptRecordError, match="hash"):
        store.audit_trail(approval.id)
    del data["audit"][0]
    data["audit"][0]["principal"] = "ann"
    path.write_text(json.dumps(data))
    with pytest.raises(CorruptRecordError, match="audit trail"):
        store.audit_trail(approval.id)


def test_two_processes_deciding_at_once_one_wins(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path / "s")
    approval = store.create_approval(make_approval())
    reports = two_processes_decide_an_approval(str(tmp_path / "s"), approval.id, tmp_path / "gate")
    assert [r["outcome"] for r in reports] == ["refused", "won"], reports
    assert reports[0]["type"] == "ApprovalClosedError"
    assert store.get_approval(approval.id).decided_by == reports[1]["verdict"]
    assert [e.kind for e in store.audit_trail(approval.id)] == ["created", "decided"]
