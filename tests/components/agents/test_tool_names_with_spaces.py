"""A tool named with a space ("Addition tool", as Haystack allows) through the Agent, approval and a snapshot."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from handrail.components.agents import Agent
from handrail.components.tools import ToolInvoker
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import load_snapshot
from handrail.human_in_the_loop import BreakpointConfirmationStrategy, get_tool_calls_and_descriptions_from_snapshot
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool, Toolset, create_tool_from_function, tool
from tests.cases._helpers import asst, result_for, user

NAME = "Addition tool"
SUMS: list[tuple[int, int]] = []


def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first.
        b: The second.
    """
    SUMS.append((a, b))
    return a + b


@pytest.fixture(autouse=True)
def _clear() -> None:
    SUMS.clear()


def _agent(replies: list[ChatMessage], directory: Path) -> Agent:
    return Agent(
        chat_generator=ScriptedChatGenerator(replies),
        tools=[create_tool_from_function(add, name=NAME)],
        confirmation_strategies={NAME: BreakpointConfirmationStrategy(str(directory))},
    )


def test_every_way_of_making_a_tool_accepts_the_name() -> None:
    made = [
        Tool(name=NAME, description="Add.", parameters={"type": "object", "properties": {}}, function=add),
        create_tool_from_function(add, name=NAME),
        tool(name=NAME)(add),
    ]
    assert [t.name for t in made] == [NAME] * 3
    assert NAME in Toolset([made[0]])
    assert Tool.from_dict(made[1].to_dict()).name == NAME


def test_the_tool_invoker_runs_it() -> None:
    invoker = ToolInvoker(tools=[create_tool_from_function(add, name=NAME)])
    call = ToolCall(tool_name=NAME, arguments={"a": 1, "b": 2}, id="c1")
    (message,) = invoker.run(messages=[ChatMessage.from_assistant(tool_calls=[call])])["tool_messages"]
    assert message.tool_call_result is not None and message.tool_call_result.result == "3"
    assert message.tool_call_result.origin.tool_name == NAME


def test_approval_pause_and_resume_through_a_snapshot_file(tmp_path: Path) -> None:
    with pytest.raises(HITLBreakpointException) as info:
        _agent([asst(calls=[("c1", NAME, {"a": 1, "b": 2})])], tmp_path).run([user("1+2?")])
    assert (info.value.tool_name, info.value.tool_call_id) == (NAME, "c1")
    assert SUMS == []

    snap = load_snapshot(info.value.snapshot_file_path)
    assert json.loads(Path(info.value.snapshot_file_path).read_text())["status"] == "paused"
    calls, descriptions = get_tool_calls_and_descriptions_from_snapshot(snap)
    assert [c["tool_name"] for c in calls] == [NAME]
    assert descriptions[NAME].startswith("Add two numbers")

    decisions = [ToolExecutionDecision(NAME, True, "c1")]
    result = _agent([asst("It is 3.")], tmp_path).run(
        [], snapshot=dataclasses.replace(snap, tool_execution_decisions=decisions)
    )
    assert SUMS == [(1, 2)]
    assert result_for(result["messages"], "c1").result == "3"
    assert result["last_message"].text == "It is 3."
    assert result["tool_call_counts"] == {NAME: 1}


def test_a_rejection_names_the_tool(tmp_path: Path) -> None:
    with pytest.raises(HITLBreakpointException) as info:
        _agent([asst(calls=[("c1", NAME, {"a": 1, "b": 2})])], tmp_path).run([user("1+2?")])
    snap = load_snapshot(info.value.snapshot_file_path)
    decisions = [ToolExecutionDecision(NAME, False, "c1")]
    result = _agent([asst("Not done.")], tmp_path).run(
        [], snapshot=dataclasses.replace(snap, tool_execution_decisions=decisions)
    )
    rejected = result_for(result["messages"], "c1")
    assert rejected.error and rejected.result == f"Tool execution for '{NAME}' was rejected by the user."
    assert SUMS == []


def test_exit_condition_by_the_name() -> None:
    agent = Agent(
        chat_generator=ScriptedChatGenerator([asst(calls=[("c1", NAME, {"a": 2, "b": 2})])]),
        tools=[create_tool_from_function(add, name=NAME)],
        exit_conditions=[NAME],
    )
    result = agent.run([user("2+2?")])
    assert result["exit_reason"] == NAME and SUMS == [(2, 2)]
