"""C06 — a tool with no arguments: empty arguments mean {}; non-object JSON is an error result."""

from __future__ import annotations

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, StreamingChunk
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool, create_tool_from_function
from tests.cases._helpers import asst, requested_calls, result_for, streamed_call, tool_results, user


def make_now() -> tuple[Tool, list[str]]:
    ran: list[str] = []

    def now() -> str:
        ran.append("now")
        return "12:00"

    return create_tool_from_function(now), ran


NO_ARGUMENTS: dict[str, ChatMessage | list[StreamingChunk]] = {
    "streamed-no-fragment": streamed_call("c1", "now", []),
    "streamed-empty-fragment": streamed_call("c1", "now", [""]),
    "streamed-whitespace": streamed_call("c1", "now", [" ", "\n"]),
    "empty-string": asst(calls=[("c1", "now", "")]),
    "whitespace-string": asst(calls=[("c1", "now", "  \n\t")]),
    "empty-object-string": asst(calls=[("c1", "now", "{}")]),
    "empty-dict": asst(calls=[("c1", "now", {})]),
}


@pytest.mark.parametrize("first", NO_ARGUMENTS.values(), ids=NO_ARGUMENTS.keys())
def test_tool_with_no_arguments_runs_once(run_agent, first):
    now, ran = make_now()
    gen = ScriptedChatGenerator([first, asst("It is 12:00")])
    agent = Agent(chat_generator=gen, tools=[now])

    result = run_agent(agent, [user("time?")])

    assert ran == ["now"]
    assert len(gen.calls) == 2
    answer = result_for(result["messages"], "c1")
    assert answer.error is False
    assert answer.result == "12:00"
    assert not any("JSON" in r.result for r in tool_results(result["messages"]))
    assert result["last_message"].text == "It is 12:00"
    assert result["exit_reason"] == "text"


NON_OBJECTS = ["null", "[]", "5", '"now"', "true", '[{"a": 1}]']


@pytest.mark.parametrize("transport", ["message", "stream"])
@pytest.mark.parametrize("raw", NON_OBJECTS)
def test_non_object_arguments_give_an_error_result(run_agent, raw, transport):
    now, ran = make_now()
    first = asst(calls=[("c1", "now", raw)]) if transport == "message" else streamed_call("c1", "now", [raw])
    gen = ScriptedChatGenerator([first, asst("sorry")])
    agent = Agent(chat_generator=gen, tools=[now])

    result = run_agent(agent, [user("time?")])

    assert ran == []
    assert len(gen.calls) == 2
    answer = result_for(gen.calls[1]["messages"], "c1")
    assert answer.error is True
    assert "must be a JSON object" in answer.result
    assert "now" in answer.result
    # The call is kept as the model sent it: never dropped, its raw text untouched.
    assert [(c.id, c.arguments) for c in requested_calls(result["messages"])] == [("c1", raw)]
    assert result["last_message"].text == "sorry"
    assert result["exit_reason"] == "text"
