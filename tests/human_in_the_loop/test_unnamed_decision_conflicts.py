"""A decision given without a call id answers the step's only call of its tool, so it is checked as that call's.

Before, such a decision was compared with nothing: a reject without an id beside a recorded approval, or beside
another given decision for the same call, was dropped and the call ran.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import handrail
from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision as D
from handrail.errors import DecisionConflictError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.stores import FileSnapshotStore
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.common_tools import SENT, transfer


@pytest.fixture(autouse=True)
def _sent() -> None:
    SENT.clear()


def _agent(store: Any, replies: list[ChatMessage]) -> Agent:
    return Agent(
        chat_generator=ScriptedChatGenerator(replies),
        tools=[create_tool_from_function(transfer)],
        confirmation_strategies={"transfer": BreakpointConfirmationStrategy(snapshot_store=store)},
    )


def _pause(store: FileSnapshotStore) -> str:
    pay = ChatMessage.from_assistant(tool_calls=[ToolCall("transfer", {"amount": 5}, "c1")])
    with pytest.raises(HITLBreakpointException) as paused:
        _agent(store, [pay]).run([ChatMessage.from_user("pay")])
    snapshot_id = paused.value.snapshot.snapshot_id
    assert snapshot_id is not None
    return snapshot_id


DONE = [ChatMessage.from_assistant("paid")]


def test_a_reject_without_id_beside_a_recorded_approval_is_a_conflict(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path)
    snapshot_id = _pause(store)
    store.record_decision(snapshot_id, D("transfer", True, "c1"), decided_by="ana")
    with pytest.raises(DecisionConflictError, match="'c1'"):
        handrail.resume(snapshot_id, store=store, agent=_agent(store, DONE), decisions=[D("transfer", False)])
    snapshot = store.load(snapshot_id)
    with pytest.raises(DecisionConflictError, match="'c1'"):
        _agent(store, DONE).run(
            [], snapshot=dataclasses.replace(snapshot, tool_execution_decisions=[D("transfer", False)])
        )
    assert SENT == [] and store.load(snapshot_id).status == "paused"
    # the recorded decision given again without an id is that decision: the run goes on
    assert handrail.resume(snapshot_id, store=store, agent=_agent(store, DONE), decisions=[D("transfer", True)])
    assert SENT == [5]


@pytest.mark.parametrize(
    "given",
    [
        [D("transfer", True), D("transfer", False)],
        [D("transfer", True, "c1"), D("transfer", False)],
        [D("transfer", False), D("transfer", True, "c1")],
    ],
)
def test_two_different_given_decisions_for_one_call_are_a_conflict(tmp_path: Path, given: list[D]) -> None:
    store = FileSnapshotStore(tmp_path)
    snapshot_id = _pause(store)
    with pytest.raises(DecisionConflictError, match="Two different decisions were given for call 'c1'"):
        handrail.resume(snapshot_id, store=store, agent=_agent(store, DONE), decisions=given)
    assert SENT == [] and store.load(snapshot_id).status == "paused"


def test_the_same_decision_given_twice_is_one_decision(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path)
    snapshot_id = _pause(store)
    given = [D("transfer", True), D("transfer", True, "c1", final_tool_params={"amount": 5})]
    handrail.resume(snapshot_id, store=store, agent=_agent(store, DONE), decisions=given)
    assert SENT == [5]
