"""Runs started in the service: durable from the start, paused for approval, resumed, their record kept current."""

from __future__ import annotations

from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.errors import ConfigurationError, PermissionDeniedError, RunNotFoundError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.human_in_the_loop.service import ApprovalService
from handrail.server import Resumer, RunLauncher, UnknownAgentError
from handrail.testing import FunctionChatGenerator
from handrail.tools import create_tool_from_function
from tests.server._agents import SENT, pay_replies, payer, transfer


@pytest.fixture
def store(any_store: Any) -> Any:
    """A directory, SQLite or PostgreSQL store (``any_store``)."""
    return any_store


def _kinds(store: Any, run_id: str) -> list[str]:
    found = store.events_after(0).events
    return [e.kind for e in found if e.data.get("run_id") == run_id and e.kind.startswith("run.")]


def test_a_started_run_pauses_is_approved_finishes_and_its_record_has_the_result(store: Any) -> None:
    resumer = Resumer(store, agents={"payer": payer})
    launcher = resumer.launcher
    try:
        record = launcher.start_run("payer", ["pay 5"], initiator="alice")
        assert record.status == "queued" and record.initiator == "alice" and record.agent_name == "payer"
        assert record.input["messages"][0]["content"] == [{"text": "pay 5"}]
        assert launcher.wait(30)
        view = launcher.get_run(record.run_id)
        assert view.record.status == "paused" and SENT == []
        (pending,) = view.pending
        assert pending.run_id == record.run_id and pending.agent_name == "payer"  # the record's id is the run id
        metadata = store.load(view.record.snapshot_id).metadata
        assert metadata["initiator"] == "alice" and metadata["agent_name"] == "payer"
        assert metadata["run_id"] == record.run_id
        ApprovalService(store).decide(pending.id, "approve", principal="bob")
        assert resumer.run_once().outcomes == {record.run_id: "finished"}
        done = launcher.get_run(record.run_id)
        assert done.pending == () and done.record.status == "finished" and SENT == [5]
        assert done.record.result == {
            "last_message": ChatMessage.from_assistant("paid: sent 5").to_dict(), "exit_reason": "text",
            "step_count": 2,
        }  # fmt: skip
        assert _kinds(store, record.run_id) == ["run.started", "run.paused", "run.resumed", "run.finished"]
    finally:
        resumer.stop()


def test_the_initiator_of_a_service_run_may_not_approve_it_where_the_policy_says_so(sqlite_store: Any) -> None:
    launcher = RunLauncher(sqlite_store, agents={"payer": lambda s: payer(s, initiator_may_approve=False)})
    try:
        record = launcher.start_run("payer", ["pay 9"], initiator="alice")
        assert launcher.wait(30)
        (pending,) = launcher.get_run(record.run_id).pending
        assert pending.initiator == "alice"
        with pytest.raises(PermissionDeniedError):
            ApprovalService(sqlite_store).decide(pending.id, "approve", principal="alice")
        ApprovalService(sqlite_store).decide(pending.id, "approve", principal="bob")
    finally:
        launcher.close()


def _budgeted(store: Any) -> Agent:
    return Agent(chat_generator=FunctionChatGenerator(pay_replies), tools=[create_tool_from_function(transfer)],
                 confirmation_strategies={"transfer": BreakpointConfirmationStrategy(snapshot_store=store)},
                 state_schema={"budget": {"type": int}})  # fmt: skip


def test_state_inputs_reach_the_run_and_its_record(sqlite_store: Any) -> None:
    launcher = RunLauncher(sqlite_store, agents={"budgeted": _budgeted})
    try:
        record = launcher.start_run("budgeted", [{"role": "user", "content": [{"text": "pay 1"}], "meta": {}}],
                                    state={"budget": 100})  # fmt: skip
        assert record.input["state"] == {"budget": 100}
        assert sqlite_store.load(record.run_id).state["budget"] == 100
    finally:
        launcher.close()


@pytest.mark.parametrize(
    ("agent", "messages", "state", "error", "words"),
    [
        ("nobody", ["hi"], None, UnknownAgentError, "No agent named 'nobody' in this service (agents: budgeted)"),
        ("budgeted", [], None, ConfigurationError, "1 to 1000 messages"),
        ("budgeted", "hi", None, TypeError, "a list of messages"),
        ("budgeted", [ChatMessage.from_tool("42", origin=ToolCall("transfer", {}, "c1"))], None, ConfigurationError,
         "messages[0] holds tool calls or tool results"),
        ("budgeted", [{"role": "tool"}], None, ConfigurationError, "messages[0]"),
        ("budgeted", ["hi"], {"snapshot": "x"}, ConfigurationError, "'snapshot' is not a state input"),
        ("budgeted", ["hi"], {"step_count": 3}, ConfigurationError, "'step_count' is not a state input"),
        ("budgeted", ["hi"], {"nope": 1}, ValueError, "nope"),
        ("budgeted", ["hi"], {"budget": float("nan")}, ConfigurationError, "JSON data"),
        ("budgeted", ["hi"], {"budget": object()}, ConfigurationError, "JSON data"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_before_anything_is_written(
    sqlite_store: Any, agent: str, messages: Any, state: Any, error: type[Exception], words: str
) -> None:
    launcher = RunLauncher(sqlite_store, agents={"budgeted": _budgeted})
    try:
        with pytest.raises(error) as info:
            launcher.start_run(agent, messages, state=state)
        assert words in str(info.value)
    finally:
        launcher.close()
    assert sqlite_store.list_runs() == [] and sqlite_store.known_ids() == []


def test_tool_calls_in_the_input_are_refused(sqlite_store: Any) -> None:
    from handrail.testing import call, reply

    launcher = RunLauncher(sqlite_store, agents={"budgeted": _budgeted})
    try:
        with pytest.raises(ConfigurationError, match=r"messages\[1\] holds tool calls"):
            launcher.start_run("budgeted", ["pay 1", reply(call("transfer", {"amount": 1}, "c9"))])
    finally:
        launcher.close()
    assert sqlite_store.list_runs() == []


def test_a_queued_run_whose_process_died_is_taken_over(sqlite_store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    store = sqlite_store
    launcher = RunLauncher(store, agents={"payer": payer})
    monkeypatch.setattr(store, "claim_run", lambda run_id: None)  # the process dies right after the record
    record = launcher.start_run("payer", ["pay 3"])
    monkeypatch.undo()
    launcher.close()
    assert store.get_run(record.run_id).status == "queued"
    resumer = Resumer(store, agents={"payer": payer})
    try:
        report = resumer.run_once()
        assert report.took_over == (record.run_id,) and report.outcomes == {record.run_id: "waiting"}
        assert store.get_run(record.run_id).status == "paused"
    finally:
        resumer.stop()


def test_an_unknown_run_is_not_found(sqlite_store: Any) -> None:
    launcher = RunLauncher(sqlite_store, agents={"payer": payer})
    try:
        with pytest.raises(RunNotFoundError):
            launcher.get_run("payer_chat_generator_0_2030_01_01_00_00_00_00000000")
    finally:
        launcher.close()
