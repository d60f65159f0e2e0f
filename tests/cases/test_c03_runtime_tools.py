"""C03 — tools given only at run time; exit tools named before the tools exist."""

from __future__ import annotations

import pytest

from handrail.components.agents import Agent
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool, create_tool_from_function
from tests.cases._helpers import asst, result_for, user


def make_tools() -> tuple[list[Tool], list[tuple[str, str]]]:
    ran: list[tuple[str, str]] = []

    def weather(city: str) -> str:
        ran.append(("weather", city))
        return f"sunny in {city}"

    def submit(x: str) -> str:
        ran.append(("submit", x))
        return x

    return [create_tool_from_function(weather), create_tool_from_function(submit)], ran


def test_tools_given_only_at_run_time(run_agent):
    tools, ran = make_tools()
    gen = ScriptedChatGenerator(
        [
            asst(calls=[("c1", "weather", {"city": "Oslo"})]),
            asst(calls=[("c2", "submit", {"x": "done"})]),
            asst("plain answer"),
        ]
    )
    # Construction succeeds, and without a warning (filterwarnings=error would turn one into a failure).
    agent = Agent(chat_generator=gen, exit_conditions=["text", "submit"])

    result = run_agent(agent, [user("weather in Oslo?")], tools=tools)

    assert len(gen.calls) == 2
    assert result["exit_reason"] == "submit"
    assert result["step_count"] == 2
    assert ran == [("weather", "Oslo"), ("submit", "done")]
    assert result_for(result["messages"], "c1").result == "sunny in Oslo"
    assert result_for(result["messages"], "c2").result == "done"
    assert result["last_message"].tool_call_result.result == "done"
    assert result["tool_call_counts"] == {"weather": 1, "submit": 1}
    for call in gen.calls:
        assert [t.name for t in call["tools"]] == ["weather", "submit"]
    assert agent.tools == []  # run-time tools leave no trace on the instance

    # A second run without tools offers the model no tools (and warns that "submit" is missing).
    with pytest.warns(UserWarning, match="submit"):
        second = run_agent(agent, [user("just talk")])

    assert len(gen.calls) == 3
    assert not gen.calls[2]["tools"]
    assert gen.calls[2]["messages"] == [user("just talk")]
    assert second["exit_reason"] == "text"
    assert second["last_message"].text == "plain answer"
    assert len(ran) == 2


def test_exit_tool_that_errored_does_not_end_the_run(run_agent):
    tools, ran = make_tools()
    gen = ScriptedChatGenerator(
        [
            asst(calls=[("c1", "submit", {})]),  # misses the required "x": an error result, no exit
            asst(calls=[("c2", "submit", {"x": "done"})]),
        ]
    )
    agent = Agent(chat_generator=gen, exit_conditions=["submit"])

    result = run_agent(agent, [user("submit")], tools=tools)

    assert len(gen.calls) == 2
    assert result_for(result["messages"], "c1").error is True
    assert ran == [("submit", "done")]
    assert result["exit_reason"] == "submit"
