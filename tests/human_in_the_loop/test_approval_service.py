"""The approval service on real stores: records created at the pause, decisions, the resume, the audit trail."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from handrail import resume
from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.service import Principal
from handrail.errors import (
    ApprovalClosedError,
    ApprovalConflictError,
    ApprovalDecisionError,
    ApprovalExpiredError,
    DecisionConflictError,
    IdempotencyKeyReusedError,
    PermissionDeniedError,
)
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.human_in_the_loop.service import ApprovalService
from handrail.stores import FileSnapshotStore, SQLiteSnapshotStore, open_snapshot_store
from handrail.stores.approvals import ApprovalFilter
from handrail.stores.snapshot_file import FileSnapshotStore as _Files
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.cases._helpers import asst, result_for, user
from tests.common_tools import SENT, transfer
from tests.stores.conftest import postgres_database, postgres_dsn, postgres_server_dsn  # noqa: F401 - fixtures


@pytest.fixture(params=["directory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "directory":
        made: Any = FileSnapshotStore(tmp_path / "snaps")
    elif request.param == "sqlite":
        made = SQLiteSnapshotStore(tmp_path / "a.db")
    else:
        made = open_snapshot_store(request.getfixturevalue("postgres_dsn"))
    yield made
    close = getattr(made, "close", None)
    if callable(close):
        close()


def _agent(replies: list[ChatMessage], store: Any, **settings: Any) -> Agent:
    strategy = BreakpointConfirmationStrategy(snapshot_store=store, **settings)
    return Agent(chat_generator=ScriptedChatGenerator(replies), tools=[create_tool_from_function(transfer)],
                 confirmation_strategies={"transfer": strategy})  # fmt: skip


def _pause(store: Any, calls: list[tuple[str, str, dict[str, Any]]], **settings: Any) -> str:
    SENT.clear()
    with pytest.raises(HITLBreakpointException) as info:
        _agent([asst(calls=calls)], store, **settings).run([user("pay")])
    snapshot_id = info.value.snapshot.snapshot_id
    assert snapshot_id is not None
    return snapshot_id


def test_a_pause_creates_one_pending_approval_per_held_call(store: Any) -> None:
    calls = [("c1", "transfer", {"amount": 5}), ("c2", "transfer", {"amount": 7})]
    settings: dict[str, Any] = {"description": "Pay **it**?", "expires_after": timedelta(hours=1),
                                "allowed_decisions": ["approve", "reject"]}  # fmt: skip
    snapshot_id = _pause(store, calls, **settings)
    service = ApprovalService(store)
    items = sorted(service.list(ApprovalFilter(status="pending")).items, key=lambda a: a.tool_call_id)
    assert [(a.tool_call_id, a.arguments) for a in items] == [("c1", {"amount": 5}), ("c2", {"amount": 7})]
    first = items[0]
    assert first.run_id == snapshot_id == first.snapshot_id and first.step == 0
    assert first.tool_description == "Send money." and first.arguments_schema["required"] == ["amount"]
    assert first.description == "Pay **it**?" and first.allowed_decisions == ("approve", "reject")
    assert first.expires_at is not None and first.expires_at - first.created_at == timedelta(hours=1)
    assert service.counts()["pending"] == 2
    detail = service.get(first.id, context_messages=1)
    assert len(detail.messages) == 1 and detail.messages[0].tool_calls[0].id == "c1"
    assert [e.kind for e in service.audit_trail(first.id)] == ["created"]


def test_without_settings_an_approval_allows_every_decision_and_never_expires(store: Any) -> None:
    _pause(store, [("c1", "transfer", {"amount": 5})])
    (approval,) = ApprovalService(store).list().items
    assert approval.allowed_decisions == ("approve", "edit", "reject") and approval.expires_at is None
    assert approval.description == ""


def test_approve_then_resume_runs_the_call_once_and_the_trail_says_so(store: Any) -> None:
    snapshot_id = _pause(store, [("c1", "transfer", {"amount": 5})])
    service = ApprovalService(store)
    (approval,) = service.list().items
    result = service.decide(approval.id, "approve", principal="ann", arguments={"amount": 999})  # ignored
    assert result.approval.status == "approved" and result.approval.decided_by == "ann" and not result.replayed
    assert result.approval.arguments == {"amount": 5}
    done = resume(snapshot_id, store=store, agent=_agent([asst("paid")], store))
    assert done["last_message"].text == "paid" and SENT == [5]
    trail = service.audit_trail(approval.id)
    assert [e.kind for e in trail] == ["created", "decided", "executed"]
    assert trail[1].principal == "ann" and trail[2].outcome == "ok"
    assert trail[0].args_digest == trail[2].args_digest == approval.args_digest


def test_two_concurrent_deciders_one_wins_the_other_is_told_who(store: Any) -> None:
    _pause(store, [("c1", "transfer", {"amount": 5})])
    (approval,) = ApprovalService(store).list().items
    outcomes: list[Any] = []
    barrier = threading.Barrier(2)

    def decide(principal: str, decision: Any) -> None:
        service = ApprovalService(store)
        barrier.wait()
        try:
            outcomes.append(service.decide(approval.id, decision, principal=principal, expected_version=1))
        except ApprovalConflictError as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=decide, args=a) for a in (("ann", "approve"), ("bob", "reject"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    won = [o for o in outcomes if not isinstance(o, Exception)]
    lost = [o for o in outcomes if isinstance(o, Exception)]
    assert len(won) == 1 and len(lost) == 1
    winner = won[0].approval
    assert isinstance(lost[0], ApprovalConflictError) and lost[0].current.decided_by == winner.decided_by
    if isinstance(lost[0], ApprovalClosedError):
        assert winner.decided_by in str(lost[0]) and str(winner.decision) in str(lost[0])
    assert [e.kind for e in ApprovalService(store).audit_trail(approval.id)].count("decided") == 1


def test_an_identical_retry_returns_the_stored_result_and_another_body_is_refused(store: Any) -> None:
    _pause(store, [("c1", "transfer", {"amount": 5})])
    service = ApprovalService(store)
    (approval,) = service.list().items
    first = service.decide(approval.id, "reject", principal="ann", feedback="too much", idempotency_key="k1")
    again = service.decide(approval.id, "reject", principal="ann", feedback="too much", idempotency_key="k1")
    assert again.replayed and again.approval == first.approval
    same_person = service.decide(approval.id, "reject", principal="ann", feedback="too much")
    assert same_person.replayed
    with pytest.raises(IdempotencyKeyReusedError):
        service.decide(approval.id, "approve", principal="ann", idempotency_key="k1")
    with pytest.raises(ApprovalClosedError, match="ann"):
        service.decide(approval.id, "approve", principal="bob")
    assert [e.kind for e in service.audit_trail(approval.id)] == ["created", "decided"]


def test_a_stale_version_is_a_conflict(store: Any) -> None:
    _pause(store, [("c1", "transfer", {"amount": 5})])
    service = ApprovalService(store)
    (approval,) = service.list().items
    with pytest.raises(ApprovalConflictError) as info:
        service.decide(approval.id, "approve", principal="ann", expected_version=7)
    assert not isinstance(info.value, ApprovalClosedError)
    assert service.get(approval.id).approval.status == "pending"


@pytest.mark.parametrize(
    ("arguments", "pointer"),
    [({"amount": 5, "memo": "x"}, "/memo"), ({"amount": "five"}, "/amount"), ({}, "")],
)
def test_a_bad_edit_is_refused_and_nothing_changes(store: Any, arguments: dict[str, Any], pointer: str) -> None:
    snapshot_id = _pause(store, [("c1", "transfer", {"amount": 5})])
    service = ApprovalService(store)
    (approval,) = service.list().items
    with pytest.raises(ApprovalDecisionError) as info:
        service.decide(approval.id, "edit", principal="ann", arguments=arguments)
    assert pointer in [e["pointer"] for e in info.value.errors]
    with pytest.raises(ApprovalDecisionError, match="rename"):
        service.decide(approval.id, "edit", principal="ann", arguments={"amount": 6}, tool_name="other")
    assert service.get(approval.id).approval == approval
    assert store.load(snapshot_id).tool_execution_decisions == []
    assert [e.kind for e in service.audit_trail(approval.id)] == ["created"]


def test_a_valid_edit_runs_with_the_edited_arguments(store: Any) -> None:
    snapshot_id = _pause(store, [("c1", "transfer", {"amount": 5})])
    service = ApprovalService(store)
    (approval,) = service.list().items
    edited = service.decide(approval.id, "edit", principal="ann", arguments={"amount": 3}).approval
    assert edited.status == "edited" and edited.arguments == {"amount": 3}
    done = resume(snapshot_id, store=store, agent=_agent([asst("paid")], store))
    assert SENT == [3] and result_for(done["messages"], "c1").result == "sent 3"
    assert service.audit_trail(approval.id)[-1].args_digest == edited.args_digest


def test_a_rejections_feedback_reaches_the_model(store: Any) -> None:
    snapshot_id = _pause(store, [("c1", "transfer", {"amount": 5})])
    service = ApprovalService(store)
    (approval,) = service.list().items
    service.decide(approval.id, "reject", principal="ann", feedback="ask the owner first")
    agent = _agent([asst("ok")], store)
    resume(snapshot_id, store=store, agent=agent)
    sent = agent.chat_generator.calls[0]["messages"]  # type: ignore[attr-defined]
    assert SENT == [] and any("ask the owner first" in (m.tool_call_result.result if m.tool_call_result else "")
                              for m in sent)  # fmt: skip
    assert [e.kind for e in service.audit_trail(approval.id)] == ["created", "decided"]


def test_a_decision_not_allowed_is_refused(store: Any) -> None:
    _pause(store, [("c1", "transfer", {"amount": 5})], allowed_decisions=["approve", "reject"])
    service = ApprovalService(store)
    (approval,) = service.list().items
    with pytest.raises(ApprovalDecisionError, match="allows approve, reject"):
        service.decide(approval.id, "edit", principal="ann", arguments={"amount": 1})


def test_an_expired_approval_cannot_be_decided(store: Any) -> None:
    _pause(store, [("c1", "transfer", {"amount": 5})], expires_after=timedelta(minutes=5))
    later: Callable[[], datetime] = lambda: datetime.now(UTC) + timedelta(minutes=6)  # noqa: E731
    service = ApprovalService(store, clock=later)
    (approval,) = service.list().items
    with pytest.raises(ApprovalExpiredError):
        service.decide(approval.id, "approve", principal="ann")
    assert service.get(approval.id).approval.status == "expired"
    with pytest.raises(ApprovalExpiredError):
        ApprovalService(store).decide(approval.id, "approve", principal="ann")


def test_a_decision_recorded_the_old_way_updates_the_approval(store: Any) -> None:
    snapshot_id = _pause(store, [("c1", "transfer", {"amount": 5}), ("c2", "transfer", {"amount": 7})])
    service = ApprovalService(store)
    store.record_decision(snapshot_id, ToolExecutionDecision("transfer", True, "c1"), decided_by="ana")
    by_call = {a.tool_call_id: a for a in service.list().items}
    assert by_call["c1"].status == "approved" and by_call["c1"].decided_by == "ana"
    service.decide(by_call["c2"].id, "reject", principal="bob", feedback="no")
    with pytest.raises(DecisionConflictError):
        store.record_decision(snapshot_id, ToolExecutionDecision("transfer", True, "c2"), decided_by="ana")
    store.record_decision(snapshot_id, ToolExecutionDecision("transfer", False, "c2", feedback="no"), decided_by="x")
    assert service.get(by_call["c2"].id).approval.decided_by == "bob"


def test_a_call_held_again_is_the_same_pending_approval(store: Any) -> None:
    snapshot_id = _pause(store, [("c1", "transfer", {"amount": 5}), ("c2", "transfer", {"amount": 7})])
    service = ApprovalService(store)
    by_call = {a.tool_call_id: a for a in service.list().items}
    service.decide(by_call["c1"].id, "approve", principal="ann")
    with pytest.raises(HITLBreakpointException) as info:
        resume(snapshot_id, store=store, agent=_agent([asst("unused")], store))
    assert SENT == [5] and info.value.snapshot.snapshot_id != snapshot_id
    assert len(service.list().items) == 2 and service.counts()["pending"] == 1
    service.decide(by_call["c2"].id, "approve", principal="ann")
    assert service.snapshot_of(by_call["c2"].id) == info.value.snapshot.snapshot_id
    resume(info.value.snapshot.snapshot_id or "", store=store, agent=_agent([asst("paid")], store))
    assert SENT == [5, 7]
    assert [e.kind for e in service.audit_trail(by_call["c2"].id)] == ["created", "decided", "executed"]


class _Plain:
    """A snapshot store of the user's own (here: a wrapper) that keeps no approval records."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        if name in {"create_approval", "get_approval", "list_approvals", "decide_approval", "audit_trail"}:
            raise AttributeError(name)
        return getattr(self._inner, name)


def test_a_store_without_approval_records_still_pauses_and_resumes(tmp_path: Path) -> None:
    files = _Files(tmp_path)
    plain = _Plain(files)
    snapshot_id = _pause(plain, [("c1", "transfer", {"amount": 5})])
    assert files.list_approvals().items == ()
    with pytest.raises(TypeError, match="no approval records"):
        ApprovalService(plain)
    plain.record_decision(snapshot_id, ToolExecutionDecision("transfer", True, "c1"), decided_by="ana")
    resume(snapshot_id, store=plain, agent=_agent([asst("paid")], plain))
    assert SENT == [5] and files.list_approvals().items == ()


@pytest.mark.parametrize(
    ("principal", "allowed"),
    [
        (Principal("vic", "viewer"), False),
        (Principal("rita", "approver", tools=("read_*",)), False),
        (Principal("tom", "approver", tools=("trans*",)), True),
        (Principal("ada", "admin", tools=("read_*",)), True),
    ],
)
def test_a_principal_decides_only_the_tools_its_role_allows(store: Any, principal: Principal, allowed: bool) -> None:
    _pause(store, [("c1", "transfer", {"amount": 5})])
    service = ApprovalService(store)
    (approval,) = service.list().items
    if allowed:
        assert service.decide(approval.id, "approve", principal=principal).approval.decided_by == principal.name
        return
    with pytest.raises(PermissionDeniedError, match=rf"{principal.name} \({principal.role}\) may not decide") as info:
        service.decide(approval.id, "approve", principal=principal)
    assert info.value.principal == principal.name
    assert (
        service.get(approval.id).approval.status == "pending" and service.audit_trail(approval.id)[-1].kind == "created"
    )
