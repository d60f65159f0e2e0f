"""Policies for teams (issue 17, item 6) on real stores: rules over arguments, quorum, separation of duties,
the policy judged again on edited arguments, and the audit trail of every vote."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from handrail import resume
from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.service import Principal
from handrail.errors import (
    ApprovalConflictError,
    ApprovalDecisionError,
    IdempotencyKeyReusedError,
    PermissionDeniedError,
)
from handrail.human_in_the_loop import AskWhenPolicy, BreakpointConfirmationStrategy
from handrail.human_in_the_loop.service import ApprovalService
from handrail.stores import FileSnapshotStore, SQLiteSnapshotStore, open_snapshot_store
from handrail.stores.approvals import ApprovalFilter
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.cases._helpers import asst, result_for, user
from tests.stores.conftest import postgres_database, postgres_dsn, postgres_server_dsn  # noqa: F401 - fixtures

PAID: list[tuple[int, str | None]] = []


def pay(amount: int, memo: str | None = None) -> str:
    """Pay an invoice.

    Args:
        amount: How much.
        memo: What for.
    """
    PAID.append((amount, memo))
    return f"paid {amount}"


@pytest.fixture(params=["directory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "directory":
        made: Any = FileSnapshotStore(tmp_path / "snaps")
    elif request.param == "sqlite":
        made = SQLiteSnapshotStore(tmp_path / "a.db")
    else:
        made = open_snapshot_store(request.getfixturevalue("postgres_dsn"))
    PAID.clear()
    yield made
    close = getattr(made, "close", None)
    if callable(close):
        close()


TEAM: dict[str, Any] = {"confirmation_policy": AskWhenPolicy("amount > 100"), "quorum": 2,
                        "quorum_when": "amount > 1000"}  # fmt: skip


def _agent(replies: list[ChatMessage], store: Any, **settings: Any) -> Agent:
    strategy = BreakpointConfirmationStrategy(snapshot_store=store, **{**TEAM, **settings})
    return Agent(chat_generator=ScriptedChatGenerator(replies), tools=[create_tool_from_function(pay)],
                 confirmation_strategies={"pay": strategy})  # fmt: skip


def _pause(store: Any, arguments: dict[str, Any], **settings: Any) -> tuple[str, Any]:
    """Run until the call pauses; returns the snapshot id and the one pending approval."""
    with pytest.raises(HITLBreakpointException) as info:
        _agent([asst(calls=[("c1", "pay", arguments)])], store, **settings).run([user("pay")])
    snapshot_id = info.value.snapshot.snapshot_id
    assert snapshot_id is not None
    (approval,) = ApprovalService(store).list(ApprovalFilter(run_id=snapshot_id)).items
    return snapshot_id, approval


def _finish(store: Any, snapshot_id: str, text: str = "done") -> dict[str, Any]:
    return resume(snapshot_id, store=store, agent=_agent([asst(text)], store))


# -- a rule decides whether to ask ----------------------------------------------------------------


def test_below_the_threshold_the_call_runs_without_a_pause(store: Any) -> None:
    done = _agent([asst(calls=[("c1", "pay", {"amount": 50})]), asst("paid")], store).run([user("pay")])
    assert done["last_message"].text == "paid" and PAID == [(50, None)]
    assert ApprovalService(store).counts()["pending"] == 0 and store.list_snapshots() == []


def test_above_the_threshold_the_call_pauses_with_the_quorum_its_arguments_need(store: Any) -> None:
    _, small = _pause(store, {"amount": 500})
    assert PAID == [] and small.quorum == 1 and small.status == "pending"
    assert small.extra["policy"] == {"ask_when": "amount > 100", "quorum": 2, "quorum_when": "amount > 1000"}
    _, large = _pause(store, {"amount": 5000})
    assert large.quorum == 2 and large.run_id != small.run_id


def test_a_rule_that_fails_on_the_arguments_asks_and_needs_the_full_quorum(store: Any) -> None:
    """Fail closed: 'memo' is missing, so neither rule can judge the call; it pauses and needs two approvers."""
    settings = {"confirmation_policy": AskWhenPolicy("memo != 'routine'"), "quorum_when": "memo == 'big'"}
    with pytest.warns(RuntimeWarning, match="'memo' is undefined; a person is asked"):
        _, approval = _pause(store, {"amount": 5}, **settings)
    assert approval.quorum == 2 and "'memo' is undefined" in approval.extra["rule_error"]


# -- quorum ---------------------------------------------------------------------------------------


def test_two_distinct_approvers_are_needed_and_the_call_then_runs_once(store: Any) -> None:
    snapshot_id, approval = _pause(store, {"amount": 5000})
    service = ApprovalService(store)
    first = service.decide(approval.id, "approve", principal="ann")
    assert (first.approval.status, first.approval.version, first.replayed) == ("pending", 2, False)
    assert store.load(snapshot_id).tool_execution_decisions == []  # written only once it is decided
    again = service.decide(approval.id, "approve", principal="ann")  # the same approver again: a replay
    assert again.replayed and again.approval.version == 2 and again.approval.status == "pending"
    with pytest.raises(ApprovalDecisionError, match="ann approved these arguments already"):
        service.decide(approval.id, "approve", principal="ann", feedback="really")  # not a second vote either
    done = service.decide(approval.id, "approve", principal="bob")
    assert (done.approval.status, done.approval.version, done.approval.decided_by) == ("approved", 3, "bob")
    assert done.approval.approvers == ("ann", "bob")
    assert service.decide(approval.id, "approve", principal="ann").replayed  # ann's retry, after the decision
    (decision,) = store.load(snapshot_id).tool_execution_decisions
    assert decision.execute and decision.decided_by == "bob"
    events = [(e.kind, e.data["status"]) for e in store.events_after(0).events if e.data["approval_id"] == approval.id]
    assert events == [("approval.created", "pending"), ("approval.voted", "pending"), ("approval.decided", "approved")]
    _finish(store, snapshot_id)
    assert PAID == [(5000, None)]
    trail = service.audit_trail(approval.id)
    assert [(e.kind, e.principal, e.decision) for e in trail] == [
        ("created", None, None), ("voted", "ann", "approve"), ("decided", "bob", "approve"), ("executed", None, None)
    ]  # fmt: skip
    assert trail[1].details["approvers"] == ["ann"] and trail[2].details == {"quorum": 2, "approvers": ["ann", "bob"]}


def test_one_reject_decides_and_its_feedback_reaches_the_model(store: Any) -> None:
    snapshot_id, approval = _pause(store, {"amount": 5000})
    service = ApprovalService(store)
    service.decide(approval.id, "approve", principal="ann")
    rejected = service.decide(approval.id, "reject", principal="bob", feedback="not this month")
    assert rejected.approval.status == "rejected" and rejected.approval.decided_by == "bob"
    done = _finish(store, snapshot_id)
    assert PAID == [] and "not this month" in result_for(done["messages"], "c1").result
    assert [e.kind for e in service.audit_trail(approval.id)] == ["created", "voted", "decided"]


def test_concurrent_approvers_without_a_version_both_count(store: Any) -> None:
    """Two approvers at once, no If-Match: the second vote meets the first and is counted on the new version."""
    snapshot_id, approval = _pause(store, {"amount": 5000})
    barrier = threading.Barrier(2)
    results: list[Any] = []

    def vote(name: str) -> None:
        service = ApprovalService(store)
        barrier.wait()
        results.append(service.decide(approval.id, "approve", principal=name))

    threads = [threading.Thread(target=vote, args=(name,)) for name in ("ann", "bob")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.approval.status for r in results) == ["approved", "pending"]
    kinds = [e.kind for e in ApprovalService(store).audit_trail(approval.id)]
    assert kinds == ["created", "voted", "decided"]
    _finish(store, snapshot_id)
    assert PAID == [(5000, None)]


def test_a_stale_version_or_a_reused_key_is_refused(store: Any) -> None:
    _, approval = _pause(store, {"amount": 5000})
    service = ApprovalService(store)
    service.decide(approval.id, "approve", principal="ann", expected_version=1, idempotency_key="k-ann")
    with pytest.raises(ApprovalConflictError, match="version 2"):
        service.decide(approval.id, "approve", principal="bob", expected_version=1)
    assert service.decide(approval.id, "approve", principal="ann", idempotency_key="k-ann").replayed
    with pytest.raises(IdempotencyKeyReusedError):
        service.decide(approval.id, "reject", principal="ann", idempotency_key="k-ann")
    assert service.get(approval.id).approval.version == 2


# -- separation of duties -------------------------------------------------------------------------


def test_the_initiator_may_not_approve_where_the_policy_forbids_it(store: Any) -> None:
    snapshot_id, approval = _pause(store, {"amount": 500}, initiator_may_approve=False, metadata={"initiator": "ann"})
    assert (approval.initiator, approval.initiator_may_approve) == ("ann", False)
    service = ApprovalService(store)
    for principal in ("ann", Principal("ann", "approver")):
        with pytest.raises(PermissionDeniedError, match="ann started this run") as caught:
            service.decide(approval.id, "approve", principal=principal)
        assert caught.value.principal == "ann"
    with pytest.raises(PermissionDeniedError):
        service.decide(approval.id, "edit", principal="ann", arguments={"amount": 200})
    assert service.get(approval.id).approval.version == 1 and len(service.audit_trail(approval.id)) == 1
    assert service.decide(approval.id, "approve", principal="bob").approval.status == "approved"
    _finish(store, snapshot_id)
    assert PAID == [(500, None)]


def test_the_initiator_may_still_reject_and_may_approve_by_default(store: Any) -> None:
    _, barred = _pause(store, {"amount": 500}, initiator_may_approve=False, metadata={"initiator": "ann"})
    assert ApprovalService(store).decide(barred.id, "reject", principal="ann").approval.status == "rejected"
    _, free = _pause(store, {"amount": 700}, metadata={"initiator": "ann"})
    assert ApprovalService(store).decide(free.id, "approve", principal="ann").approval.status == "approved"


# -- the policy judged again on edited arguments --------------------------------------------------


def test_an_edit_that_crosses_the_quorum_rule_needs_another_approver(store: Any) -> None:
    snapshot_id, approval = _pause(store, {"amount": 500})
    service = ApprovalService(store)
    edited = service.decide(approval.id, "edit", principal="ann", arguments={"amount": 5000})
    assert (edited.approval.status, edited.approval.quorum, edited.approval.approvers) == ("pending", 2, ("ann",))
    done = service.decide(approval.id, "approve", principal="bob")
    assert done.approval.status == "edited" and done.approval.decision == "edit"
    out = _finish(store, snapshot_id)
    assert PAID == [(5000, None)] and any("5000" in m.text for m in out["messages"] if m.text)


def test_an_edit_below_the_rules_is_decided_by_its_editor_alone(store: Any) -> None:
    """Approvals of the old arguments no longer count; the new ones need one approver (the editor)."""
    snapshot_id, approval = _pause(store, {"amount": 5000})
    service = ApprovalService(store)
    service.decide(approval.id, "approve", principal="ann")
    edited = service.decide(approval.id, "edit", principal="bob", arguments={"amount": 50})
    assert (edited.approval.status, edited.approval.quorum, edited.approval.decided_by) == ("edited", 1, "bob")
    _finish(store, snapshot_id)
    assert PAID == [(50, None)]


def test_after_an_edit_earlier_approvals_must_be_given_again(store: Any) -> None:
    snapshot_id, approval = _pause(store, {"amount": 5000})
    service = ApprovalService(store)
    service.decide(approval.id, "approve", principal="ann")
    edited = service.decide(approval.id, "edit", principal="cy", arguments={"amount": 6000})
    assert edited.approval.status == "pending" and edited.approval.approvers == ("cy",)
    done = service.decide(approval.id, "approve", principal="ann")  # ann approves the new arguments
    assert done.approval.status == "edited" and done.approval.approvers == ("cy", "ann")
    _finish(store, snapshot_id)
    assert PAID == [(6000, None)]


def test_an_edit_the_rules_cannot_judge_is_refused_with_a_pointer(store: Any) -> None:
    snapshot_id, approval = _pause(store, {"amount": 500, "memo": "rent"}, quorum_when="memo == 'big'")
    service = ApprovalService(store)
    with pytest.raises(ApprovalDecisionError, match="the policy cannot judge them") as caught:
        service.decide(approval.id, "edit", principal="ann", arguments={"amount": 400})  # memo left out
    assert caught.value.errors[0]["pointer"] == "/memo" and "'memo' is undefined" in caught.value.errors[0]["message"]
    assert service.get(approval.id).approval.version == 1 and store.load(snapshot_id).tool_execution_decisions == []


def test_expiry_of_a_pending_quorum_keeps_its_votes(store: Any) -> None:
    from datetime import UTC, datetime, timedelta

    _, approval = _pause(store, {"amount": 5000}, expires_after=timedelta(minutes=5))
    service = ApprovalService(store)
    service.decide(approval.id, "approve", principal="ann")
    (expired,) = service.expire_due(now=datetime.now(UTC) + timedelta(minutes=6))
    assert (
        expired.status == "expired" and expired.decision == "reject" and [v.principal for v in expired.votes] == ["ann"]
    )
