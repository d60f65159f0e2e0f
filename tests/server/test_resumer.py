"""The resumer on real stores: a decided pause is continued once, by itself; expiry; failures stay in their run."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.service import RunRecord
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.human_in_the_loop.service import ApprovalService
from handrail.server import Resumer
from handrail.stores.approvals import ApprovalFilter
from handrail.testing import FunctionChatGenerator
from handrail.tools import create_tool_from_function
from tests.server._agents import SENT, pay_replies, payer


@pytest.fixture
def store(any_store: Any) -> Any:
    """A directory, SQLite or PostgreSQL store (``any_store``)."""
    return any_store


def pause(store: Any, text: str, **settings: Any) -> str:
    """Run the payer from Python (not through the service) until it pauses; the paused snapshot's id."""
    with pytest.raises(HITLBreakpointException) as info:
        payer(store, **settings).run([_user(text)])
    snapshot_id = info.value.snapshot.snapshot_id
    assert snapshot_id is not None
    return snapshot_id


def _user(text: str) -> Any:
    from handrail.testing import user

    return user(text)


def approve_all(store: Any, run_id: str, decision: str = "approve", **extra: Any) -> None:
    service = ApprovalService(store)
    for approval in service.list(ApprovalFilter(run_id=run_id, status="pending")).items:
        service.decide(approval.id, decision, principal="bob", **extra)  # type: ignore[arg-type]


def events(store: Any, kind: str) -> list[Any]:
    return [e for e in store.events_after(0).events if e.kind == kind]


def test_a_decided_pause_resumes_by_itself_and_its_tool_runs_once(store: Any) -> None:
    run_id = pause(store, "pay 5 7")
    resumer = Resumer(store, agents={"payer": payer})
    try:
        assert resumer.run_once().resumed == ()  # both calls wait for a person
        service = ApprovalService(store)
        first, second = sorted(service.list(ApprovalFilter(run_id=run_id)).items, key=lambda a: a.tool_call_id)
        service.decide(first.id, "approve", principal="bob")
        assert resumer.run_once().resumed == () and SENT == []  # one decided, one pending: it waits
        service.decide(second.id, "approve", principal="bob")
        report = resumer.run_once()
        assert report.outcomes == {run_id: "finished"}
        assert sorted(SENT) == [5, 7]
        record = store.get_run(run_id)
        assert record.status == "finished" and record.agent_name == "payer"
        assert record.result["last_message"]["content"][0]["text"] == "paid: sent 5; sent 7"
        assert record.result["exit_reason"] == "text" and record.result["step_count"] == 2
        assert resumer.run_once().resumed == () and sorted(SENT) == [5, 7]  # never continued twice
        assert [e.data["status"] for e in events(store, "run.finished")] == ["finished"]
    finally:
        resumer.stop()


def test_the_background_loop_wakes_on_a_decision_and_reports_each_change(store: Any) -> None:
    run_id = pause(store, "pay 3")
    seen: list[tuple[str, str]] = []
    finished = threading.Event()

    def report(what: str, record: RunRecord) -> None:
        seen.append((what, record.run_id))
        if what in ("finished", "failed"):
            finished.set()

    with Resumer(store, agents={"payer": payer}, report=report):
        approve_all(store, run_id)
        assert finished.wait(30), seen
    assert SENT == [3]
    assert seen == [("resumed", run_id), ("finished", run_id)]


def test_a_run_that_pauses_again_is_a_new_pause_resumed_when_decided(store: Any) -> None:
    run_id = pause(store, "pay 1 | 2")
    resumer = Resumer(store, agents={"payer": payer})
    try:
        approve_all(store, run_id)
        assert resumer.run_once().outcomes == {run_id: "paused"} or store.get_run(run_id).status == "paused"
        record = store.get_run(run_id)
        assert record.status == "paused" and SENT == [1]
        pending = ApprovalService(store).list(ApprovalFilter(run_id=run_id, status="pending")).items
        assert [a.tool_call_id for a in pending] == ["c1_0"] and pending[0].snapshot_id == record.snapshot_id
        approve_all(store, run_id, "reject", feedback="not today")
        assert resumer.run_once().outcomes == {run_id: "finished"}
        text = store.get_run(run_id).result["last_message"]["content"][0]["text"]
        assert SENT == [1] and "not today" in text
    finally:
        resumer.stop()


def test_an_expired_approval_resumes_with_the_expiry_rejection(store: Any) -> None:
    run_id = pause(store, "pay 9", expires_after=timedelta(hours=1))
    later = [datetime.now(UTC)]
    resumer = Resumer(store, agents={"payer": lambda s: payer(s, expires_after=timedelta(hours=1))},
                      clock=lambda: later[0])  # fmt: skip
    try:
        assert resumer.run_once().expired == ()  # not due yet
        later[0] += timedelta(hours=2)
        report = resumer.run_once()
        assert len(report.expired) == 1 and report.outcomes == {run_id: "finished"}
        text = store.get_run(run_id).result["last_message"]["content"][0]["text"]
        assert SENT == [] and "the approval request expired" in text
        assert ApprovalService(store).get(report.expired[0]).approval.status == "expired"
    finally:
        resumer.stop()


def _failing_agent(store: Any) -> Agent:
    def transfer(amount: int) -> str:
        """Send money through a bank that is closed.

        Args:
            amount: How much.
        """
        raise RuntimeError("the bank is closed")

    strategy = BreakpointConfirmationStrategy(snapshot_store=store)
    return Agent(chat_generator=FunctionChatGenerator(pay_replies), tools=[create_tool_from_function(transfer)],
                 confirmation_strategies={"transfer": strategy}, raise_on_tool_invocation_failure=True)  # fmt: skip


def test_a_failing_run_is_recorded_failed_and_the_others_still_resume(sqlite_store: Any) -> None:
    store = sqlite_store
    with pytest.raises(HITLBreakpointException) as info:
        _failing_agent(store).run([_user("pay 4")])
    failing = info.value.snapshot
    failing_id = failing.snapshot_id
    # the snapshot's agent name picks the factory: this run's snapshot is relabelled "failing"
    lease = store.claim(failing_id)
    store.replace(failing_id, _with_metadata(store.load(failing_id), agent_name="failing"))
    lease.release()
    good = pause(store, "pay 6")
    resumer = Resumer(store, agents={"payer": payer, "failing": _failing_agent})
    try:
        approve_all(store, failing_id)
        approve_all(store, good)
        report = resumer.run_once()
        assert report.outcomes == {failing_id: "failed", good: "finished"}
        record = store.get_run(failing_id)
        assert record.status == "failed"
        assert record.error is not None and "\n" not in record.error and "the bank is closed" in record.error
        assert [e.data["run_id"] for e in events(store, "run.failed")] == [failing_id]
        assert SENT == [6]
    finally:
        resumer.stop()


def _with_metadata(snapshot: Any, **extra: Any) -> Any:
    import dataclasses

    return dataclasses.replace(snapshot, metadata={**snapshot.metadata, **extra})


def test_a_decision_its_decider_did_not_write_into_the_snapshot_is_written_after_the_grace(store: Any) -> None:
    run_id = pause(store, "pay 8")
    (approval,) = ApprovalService(store).list(ApprovalFilter(run_id=run_id)).items
    # the approval is decided (its compare-and-set) and the decider died before writing the snapshot's decision
    store.decide_approval(approval.id, "approve", expected_version=1, principal="bob", at=datetime.now(UTC))
    assert store.load(run_id).tool_execution_decisions == []
    resumer = Resumer(store, agents={"payer": payer})
    resumer.launcher.driver.sync_grace = 0.05
    try:
        assert resumer.run_once().outcomes == {run_id: "finished"}
        assert SENT == [8]
    finally:
        resumer.stop()


def test_a_run_whose_agent_this_process_does_not_know_is_left_as_it_is(sqlite_store: Any) -> None:
    store = sqlite_store
    run_id = pause(store, "pay 2")
    approve_all(store, run_id)
    resumer = Resumer(store, agents={"failing": _failing_agent})  # another agent (another definition)
    try:
        assert resumer.run_once().outcomes == {run_id: "unknown agent"}
        assert store.load(run_id).status == "paused" and SENT == []
    finally:
        resumer.stop()
    knowing = Resumer(store, agents={"payer": payer})  # a process that knows the agent continues it
    try:
        assert knowing.run_once().outcomes == {run_id: "finished"}
    finally:
        knowing.stop()
    assert SENT == [2]


def test_finding_decided_runs_reads_no_snapshot_while_nothing_happens(sqlite_store: Any) -> None:
    store = sqlite_store
    runs = [pause(store, f"pay {n}") for n in range(200)]
    resumer = Resumer(store, agents={"payer": payer})
    decoded: list[str] = []
    real = store._decode

    def counting(snapshot_id: str, *args: Any) -> Any:
        decoded.append(snapshot_id)
        return real(snapshot_id, *args)

    store._decode = counting
    try:
        assert resumer.run_once().resumed == ()  # the start: one look at every paused snapshot
        assert len(decoded) == 200
        decoded.clear()
        for _ in range(3):
            assert resumer.run_once().resumed == ()
        assert decoded == []  # passes with no event read no snapshot, however many runs are paused
        approve_all(store, runs[17])
        assert resumer.run_once().outcomes == {runs[17]: "finished"}
        assert SENT == [17] and len(set(decoded)) <= 3  # the decided run's snapshots only
    finally:
        resumer.stop()


def _running_record(store: Any, run_id: str) -> None:
    now = datetime.now(UTC)
    store.create_run(RunRecord(run_id=run_id, agent_name="payer", status="running", created_at=now, updated_at=now,
                               snapshot_id=run_id))  # fmt: skip


def test_a_run_whose_process_died_before_its_resume_began_is_taken_over(sqlite_store: Any) -> None:
    store = sqlite_store
    run_id = pause(store, "pay 11")
    approve_all(store, run_id)
    _running_record(store, run_id)  # its driver recorded 'running', then its process died (the claim went with it)
    resumer = Resumer(store, agents={"payer": payer})
    try:
        report = resumer.run_once()
        assert report.took_over == (run_id,) and report.outcomes == {run_id: "finished"} and SENT == [11]
    finally:
        resumer.stop()


def test_a_run_resumed_elsewhere_is_left_to_it_and_its_end_recorded(sqlite_store: Any) -> None:
    store = sqlite_store
    run_id = pause(store, "pay 12")
    approve_all(store, run_id)
    _running_record(store, run_id)
    resumer = Resumer(store, agents={"payer": payer}, takeover_interval=0.001)
    try:
        with store.claim(run_id):  # another process (handrail resume by hand) holds the snapshot now
            assert resumer.run_once().outcomes == {run_id: "held"}
            assert store.get_run(run_id).status == "running" and SENT == []
        assert resumer.run_once().outcomes == {run_id: "finished"} and SENT == [12]
    finally:
        resumer.stop()


def test_a_wake_after_a_decision_sends_the_run_without_waiting_for_the_loop(store: Any) -> None:
    run_id = pause(store, "pay 13")
    resumer = Resumer(store, agents={"payer": payer})
    try:
        assert resumer.run_once().resumed == ()
        approve_all(store, run_id)
        assert resumer.wake().resumed == (run_id,)
        assert resumer.launcher.wait(30) and SENT == [13] and store.get_run(run_id).status == "finished"
    finally:
        resumer.stop()
