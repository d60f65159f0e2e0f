"""Arguments nested deeper than the recursion limit never crash a run with a confirmation strategy.

Asking a person about them used to raise RecursionError out of ``Agent.run`` from ``copy.deepcopy``. The
model's arguments are now refused at the parse boundary when nested more than
``handrail.core.json_data.MAX_DEPTH`` levels (an error result, nobody is asked); a strategy called directly
with deeper arguments still decides them.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.decisions import ConfirmationUIResult, ToolExecutionDecision
from handrail.human_in_the_loop import (
    AlwaysAskPolicy,
    AskOncePolicy,
    BlockingConfirmationStrategy,
    SimpleConsoleUI,
)
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function

from ._helpers import DEEP, Lines, ScriptedInput, ScriptedUI, nested


def depth_of(value: Any) -> int:
    depth = 0
    while isinstance(value, dict) and "a" in value:
        value, depth = value["a"], depth + 1
    return depth


def anyarg(x: dict) -> str:  # type: ignore[type-arg]
    """Take any object."""
    return "ran"


def run_agent(strategy: BlockingConfirmationStrategy, mode: str) -> list[ChatMessage]:
    args = '{"x":' + '{"a":' * 600 + "1" + "}" * 601  # the model's arguments, as JSON text
    call = ChatMessage.from_assistant(tool_calls=[ToolCall("anyarg", args, id="c1")])
    replies = [call, ChatMessage.from_assistant("ok")]
    agent = Agent(
        chat_generator=ScriptedChatGenerator(replies),
        tools=[create_tool_from_function(anyarg)],
        confirmation_strategies={"anyarg": strategy},
    )
    messages = [ChatMessage.from_user("go")]
    result = agent.run(messages) if mode == "sync" else asyncio.run(agent.run_async(messages))
    out: list[ChatMessage] = result["messages"]
    return out


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("policy", [AlwaysAskPolicy, AskOncePolicy])
def test_a_deeply_nested_call_is_refused_before_anyone_is_asked(mode: str, policy: type[Any]) -> None:
    prompts = ScriptedInput(["y"])
    ui = SimpleConsoleUI(input_fn=prompts, output_fn=Lines())
    strategy = BlockingConfirmationStrategy(confirmation_policy=policy(), confirmation_ui=ui)
    messages = run_agent(strategy, mode)
    results = [m.tool_call_result for m in messages if m.tool_call_result is not None]
    assert len(results) == 1 and results[0].error
    assert "values nested more than 64 levels deep are refused" in results[0].result
    assert prompts.lines == ["y"]  # nobody was asked about arguments that cannot run
    assert messages[-1].text == "ok"


@pytest.mark.parametrize("answer", ["confirm", "modify-same", "modify"])
def test_the_strategy_decides_arguments_nested_past_the_recursion_limit(answer: str) -> None:
    params = nested(DEEP)
    edited = nested(DEEP, leaf=2)
    ui = ScriptedUI(
        [
            {
                "confirm": ConfirmationUIResult("confirm"),
                "modify-same": ConfirmationUIResult("modify", new_tool_params=nested(DEEP)),
                "modify": ConfirmationUIResult("modify", new_tool_params=edited),
            }[answer]
        ]
    )
    strategy = BlockingConfirmationStrategy(confirmation_policy=AskOncePolicy(), confirmation_ui=ui)
    decision = strategy.run(
        tool_name="anyarg",
        tool_description="d",
        tool_params=params,
        tool_call_id="c1",
        validate_params=lambda p: None,
    )
    final = edited if answer == "modify" else None
    assert decision == ToolExecutionDecision("anyarg", True, "c1", final_tool_params=final, decided_by="scripted")
    shown = ui.calls[0]["tool_params"]
    assert depth_of(shown["x"]) == DEEP
    assert shown["x"] is not params["x"]  # the UI got a copy


def test_the_console_ui_shows_and_keeps_arguments_nested_past_the_recursion_limit() -> None:
    sink = Lines()
    ui = SimpleConsoleUI(input_fn=ScriptedInput(["m", ""]), output_fn=sink)
    params = nested(DEEP)
    result = ui.get_user_confirmation("anyarg", "d", params)
    assert result == ConfirmationUIResult("modify", new_tool_params=params)
    assert '  x: {"a": {"a": ' in sink.text
    assert sink.text.count('{"a": ') == DEEP
