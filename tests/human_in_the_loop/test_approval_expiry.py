"""Expiry (issue 17, item 5): the sweeper's pass applies each due approval's on_expiry into its snapshot."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from handrail import resume
from handrail.errors import ApprovalExpiredError, ConfigurationError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.human_in_the_loop.service import ApprovalService
from handrail.stores import open_snapshot_store
from tests.cases._helpers import asst, result_for
from tests.common_tools import SENT
from tests.human_in_the_loop import test_approval_service as _service
from tests.human_in_the_loop.test_approval_service import _agent, _pause
from tests.stores.conftest import postgres_database, postgres_dsn, postgres_server_dsn  # noqa: F401 - fixtures

store = _service.store  # the fixture: directory, SQLite, PostgreSQL


def _later(minutes: float) -> datetime:
    return datetime.now(UTC) + timedelta(minutes=minutes)


def test_a_due_approval_is_rejected_by_the_sweep_and_the_model_reads_why(store: Any) -> None:
    snapshot_id = _pause(store, [("c1", "transfer", {"amount": 5}), ("c2", "transfer", {"amount": 7})],
                         expires_after=timedelta(minutes=5))  # fmt: skip
    service = ApprovalService(store)
    assert service.expire_due(now=_later(4)) == []
    by_call = {a.tool_call_id: a for a in service.list().items}
    service.decide(by_call["c2"].id, "approve", principal="ann")
    (expired,) = service.expire_due(now=_later(6))
    assert expired.tool_call_id == "c1" and expired.status == "expired" and expired.decision == "reject"
    assert expired.decided_by is None and expired.feedback == "Approval request expired"
    counts = service.counts()
    assert counts["expired"] == 1 and counts["rejected"] == 0 and counts["approved"] == 1
    assert service.expire_due(now=_later(60)) == []  # terminal: a second pass changes nothing
    agent = _agent([asst("done")], store)
    done = resume(snapshot_id, store=store, agent=agent)
    told = "Tool execution for 'transfer' was not approved: the approval request expired (no one decided in time)."
    assert SENT == [7] and result_for(done["messages"], "c1").result == told  # nobody rejected it: not "by the user"
    sent = agent.chat_generator.calls[0]["messages"]  # type: ignore[attr-defined]
    assert any(m.tool_call_result and m.tool_call_result.result == told for m in sent)
    assert [e.kind for e in service.audit_trail(expired.id)] == ["created", "expired"]


def test_an_expired_approval_refuses_decisions_everywhere(store: Any) -> None:
    snapshot_id = _pause(store, [("c1", "transfer", {"amount": 5})], expires_after=timedelta(minutes=5))
    service = ApprovalService(store, clock=lambda: _later(6))
    (approval,) = service.list().items
    service.expire_due()  # the service's clock
    with pytest.raises(ApprovalExpiredError, match="expired"):
        service.decide(approval.id, "approve", principal="ann")
    with pytest.raises(ApprovalExpiredError):
        service.decide(approval.id, "reject", principal="ann", feedback="no")
    assert store.load(snapshot_id).tool_execution_decisions[0].decided_by == "expiry"


def test_expiry_judged_at_a_decision_also_writes_the_snapshot(store: Any) -> None:
    """A decision that finds the approval due expires it (410) and the snapshot gets the expiry, not nothing."""
    snapshot_id = _pause(store, [("c1", "transfer", {"amount": 5})], expires_after=timedelta(minutes=5))
    service = ApprovalService(store, clock=lambda: _later(6))
    (approval,) = service.list().items
    with pytest.raises(ApprovalExpiredError):
        service.decide(approval.id, "approve", principal="ann")
    (decision,) = store.load(snapshot_id).tool_execution_decisions
    assert decision.execute is False and decision.feedback == "Approval request expired"
    resume(snapshot_id, store=store, agent=_agent([asst("ok")], store))
    assert SENT == []


def test_approve_on_expiry_runs_the_call_only_when_configured(store: Any) -> None:
    snapshot_id = _pause(store, [("c1", "transfer", {"amount": 5})], expires_after=timedelta(minutes=5),
                         on_expiry="approve")  # fmt: skip
    (expired,) = ApprovalService(store).expire_due(now=_later(6))
    assert expired.status == "expired" and expired.decision == "approve" and expired.feedback is None
    resume(snapshot_id, store=store, agent=_agent([asst("paid")], store))
    assert SENT == [5]
    kinds = [e.kind for e in ApprovalService(store).audit_trail(expired.id)]
    assert kinds == ["created", "expired", "executed"]


def test_expiry_survives_a_restart(store: Any) -> None:
    _pause(store, [("c1", "transfer", {"amount": 5})], expires_after=timedelta(minutes=5))
    where = getattr(store, "directory", None) or getattr(store, "dsn", None) or f"sqlite:///{store.path}"
    reopened = open_snapshot_store(where)  # a new process's store: nothing carried over in memory
    (expired,) = ApprovalService(reopened).expire_due(now=_later(6))
    assert ApprovalService(store).get(expired.id).approval.status == "expired"
    close = getattr(reopened, "close", None)
    if callable(close):
        close()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"on_expiry": "escalate"}, "on_expiry must be"),
        ({"on_expiry": "approve", "allowed_decisions": ["reject"]}, "needs 'approve'"),
    ],
)
def test_an_invalid_expiry_setting_is_refused(settings: dict[str, Any], message: str, tmp_path: Any) -> None:
    with pytest.raises(ConfigurationError, match=message):
        BreakpointConfirmationStrategy(tmp_path, **settings)


def test_on_expiry_round_trips() -> None:
    strategy = BreakpointConfirmationStrategy("x", on_expiry="approve")
    again = BreakpointConfirmationStrategy.from_dict(strategy.to_dict())
    assert again.on_expiry == "approve" and "on_expiry" not in BreakpointConfirmationStrategy("x").to_dict()[
        "init_parameters"]  # fmt: skip


def test_a_naive_now_is_refused(store: Any) -> None:
    with pytest.raises(ConfigurationError, match="timezone-aware"):
        ApprovalService(store).expire_due(now=datetime(2030, 1, 1))


def test_one_sweep_writes_every_expiry_of_a_paused_step_into_its_snapshot(store: Any) -> None:
    """The sweep writes a run's expiries into its snapshot in one write; the resumed run applies each."""
    calls = [(f"c{i}", "transfer", {"amount": i}) for i in range(1, 6)]
    snapshot_id = _pause(store, calls, expires_after=timedelta(minutes=5))
    service = ApprovalService(store)
    by_call = {a.tool_call_id: a for a in service.list().items}
    service.decide(by_call["c3"].id, "approve", principal="ann")
    expired = service.expire_due(now=_later(6))
    assert sorted(a.tool_call_id for a in expired) == ["c1", "c2", "c4", "c5"]
    decisions = {d.tool_call_id: d for d in store.load(snapshot_id).tool_execution_decisions}
    assert {k: (d.execute, d.decided_by) for k, d in decisions.items()} == {
        "c1": (False, "expiry"), "c2": (False, "expiry"), "c3": (True, "ann"), "c4": (False, "expiry"),
        "c5": (False, "expiry"),
    }  # fmt: skip
    done = resume(snapshot_id, store=store, agent=_agent([asst("done")], store))
    assert SENT == [3] and "approval request expired" in result_for(done["messages"], "c5").result
