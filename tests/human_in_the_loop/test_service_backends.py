"""Approvals of another backend (a Temporal run's): never due, decided only through their run's deliverer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from handrail.dataclasses.approval import Approval
from handrail.errors import ApprovalClosedError, ApprovalConflictError, ApprovalDecisionError
from handrail.human_in_the_loop.service import ApprovalService
from handrail.stores import FileSnapshotStore, SQLiteSnapshotStore, open_snapshot_store
from tests.stores.conftest import postgres_database, postgres_dsn, postgres_server_dsn  # noqa: F401 - fixtures

NOW = datetime(2026, 1, 2, 12, tzinfo=UTC)


@pytest.fixture(params=["files", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "files":
        made: Any = FileSnapshotStore(tmp_path / "s")
    elif request.param == "sqlite":
        made = SQLiteSnapshotStore(tmp_path / "s.db")
    else:
        made = open_snapshot_store(request.getfixturevalue("postgres_dsn"))
    yield made
    made.close()


def temporal_record(store: Any, call_id: str = "c1", **fields: Any) -> Approval:
    record = Approval.new(
        run_id="run-1", tool_call_id=call_id, snapshot_id="temporal:run-1", agent_name="payer", step=0,
        tool_name="transfer", tool_description="", arguments={"amount": 5, "account": "acme"},
        arguments_schema={"type": "object", "properties": {"amount": {"type": "integer"}, "account": {}}},
        description="", created_at=NOW, expires_at=NOW + timedelta(minutes=5),
        extra={"backend": "temporal", "temporal": {"call_id": call_id}, "injected": ["account"]}, **fields,
    )  # fmt: skip
    stored: Approval = store.create_approval(record)
    return stored


class Run:
    """A stand-in deliverer: what it was sent; refuses with ``refuse`` when set."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.refuse: Exception | None = None

    def __call__(self, approval: Approval, decision: str, **how: Any) -> None:
        if self.refuse is not None:
            raise self.refuse
        self.sent.append((decision, how))


def test_a_record_of_another_backend_is_never_due_nor_swept(store: Any) -> None:
    record = temporal_record(store)
    later = NOW + timedelta(hours=1)
    assert record.backend == "temporal" and not record.due(later)
    assert ApprovalService(store).expire_due(later) == []
    assert store.get_approval(record.id).status == "pending"


def test_without_its_deliverer_it_takes_no_decision_and_nothing_is_recorded(store: Any) -> None:
    record = temporal_record(store)
    with pytest.raises(ApprovalDecisionError, match="belongs to a temporal run"):
        ApprovalService(store, clock=lambda: NOW).decide(record.id, "approve", principal="ana")
    assert store.get_approval(record.id).version == 1


def test_a_decision_goes_to_the_run_first_and_its_refusal_records_nothing(store: Any) -> None:
    record = temporal_record(store)
    run = Run()
    service = ApprovalService(store, clock=lambda: NOW, backends={"temporal": run})
    run.refuse = ApprovalDecisionError("the run refused it", approval_id=record.id)
    with pytest.raises(ApprovalDecisionError, match="the run refused it"):
        service.decide(record.id, "approve", principal="ana")
    assert store.get_approval(record.id).version == 1
    run.refuse = None
    with pytest.raises(ApprovalDecisionError, match="edited arguments"):  # the record's schema first: not sent
        service.decide(record.id, "edit", principal="ana", arguments={"amount": "five"})
    with pytest.raises(ApprovalConflictError):  # a stale If-Match: not sent
        service.decide(record.id, "approve", principal="ana", expected_version=7)
    assert run.sent == []
    late = NOW + timedelta(hours=1)  # past expires_at by the service's clock: the run's timer rules, not this one
    edited = ApprovalService(store, clock=lambda: late, backends={"temporal": run}).decide(
        record.id, "edit", principal="ana", arguments={"amount": 3}, idempotency_key="k"
    )
    assert edited.approval.status == "edited" and edited.approval.arguments == {"amount": 3, "account": "acme"}
    assert run.sent == [("edit", {"principal": "ana", "arguments": {"amount": 3, "account": "acme"},
                                  "feedback": None})]  # fmt: skip
    again = service.decide(record.id, "edit", principal="ana", arguments={"amount": 3}, idempotency_key="k")
    assert again.replayed and len(run.sent) == 1  # a retry is answered from the record, not sent again


def test_the_run_expires_its_record_itself(store: Any) -> None:
    record = temporal_record(store)
    expired = store.expire_approval(record.id, expected_version=1, at=NOW + timedelta(minutes=5, seconds=1))
    assert (expired.status, expired.decision, expired.decided_at) == ("expired", "reject", record.expires_at)
    assert store.audit_trail(record.id)[-1].kind == "expired"
    with pytest.raises(ApprovalClosedError):
        store.expire_approval(record.id, expected_version=2, at=NOW)
