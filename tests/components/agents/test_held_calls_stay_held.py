"""A call held for a decision at a pause runs only as a decision says, whatever agent resumes it.

A resumed run is checked against the paused agent's tools, prompts and schema, not its confirmation strategies.
So the resuming agent may have no strategy for a held call's tool: the call must still not run without a
decision (it is held again), and a decision recorded for it (a rejection too) is applied.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from handrail import Agent
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.stores import FileSnapshotStore
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.common_tools import SENT, transfer


def _asking() -> ChatMessage:
    return ChatMessage.from_assistant(tool_calls=[ToolCall(tool_name="transfer", arguments={"amount": 5}, id="c1")])


def _paused(folder: Path) -> HITLBreakpointException:
    agent = Agent(
        chat_generator=ScriptedChatGenerator([_asking()]),
        tools=[create_tool_from_function(transfer)],
        confirmation_strategies={"transfer": BreakpointConfirmationStrategy(str(folder))},
    )
    with pytest.raises(HITLBreakpointException) as paused:
        agent.run([ChatMessage.from_user("pay")])
    return paused.value


def _without_strategies(replies: list[ChatMessage]) -> Agent:
    return Agent(chat_generator=ScriptedChatGenerator(replies), tools=[create_tool_from_function(transfer)])


@pytest.fixture(autouse=True)
def _sent() -> None:
    SENT.clear()


def test_an_undecided_held_call_is_held_again(tmp_path: Path) -> None:
    paused = _paused(tmp_path)
    with pytest.raises(HITLBreakpointException) as again:
        _without_strategies([ChatMessage.from_assistant("done")]).run([], snapshot=paused.snapshot)
    assert SENT == []
    assert again.value.tool_call_ids == ["c1"]


def test_a_rejection_recorded_for_a_held_call_is_applied(tmp_path: Path) -> None:
    paused = _paused(tmp_path)
    store = FileSnapshotStore(tmp_path)
    snapshot_id = paused.snapshot.snapshot_id
    assert snapshot_id is not None
    store.record_decision(snapshot_id, ToolExecutionDecision("transfer", False, "c1", "no"), decided_by="ana")
    result = _without_strategies([ChatMessage.from_assistant("not paid")]).run([], snapshot=store.load(snapshot_id))
    assert SENT == []
    rejected = [m.tool_call_result for m in result["messages"] if m.tool_call_result is not None]
    assert len(rejected) == 1 and rejected[0].error is True


def test_an_approval_given_for_a_held_call_runs_it_once(tmp_path: Path) -> None:
    paused = _paused(tmp_path)
    decided = dataclasses.replace(
        paused.snapshot, tool_execution_decisions=[ToolExecutionDecision("transfer", True, "c1")]
    )
    result = _without_strategies([ChatMessage.from_assistant("paid")]).run([], snapshot=decided)
    assert SENT == [5]
    assert result["last_message"].text == "paid"
