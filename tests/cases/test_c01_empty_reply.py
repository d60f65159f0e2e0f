"""C01 — an empty reply is not an answer: it does not end the run."""

from __future__ import annotations

from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, StreamingChunk
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool, create_tool_from_function
from tests.cases._helpers import asst, result_for, user


def make_lookup() -> tuple[Tool, list[str]]:
    ran: list[str] = []

    def lookup(id: str) -> dict[str, Any]:
        ran.append(id)
        return {"id": id, "ok": True}

    return create_tool_from_function(lookup), ran


EMPTY_REPLIES: dict[str, ChatMessage | list[StreamingChunk]] = {
    "empty-text": asst(""),
    "whitespace-text": asst("  \n\t "),
    "no-content": asst(None),
    "empty-with-stop": asst("", meta={"finish_reason": "stop"}),
    "streamed-empty": [StreamingChunk(content=""), StreamingChunk(finish_reason="stop")],
}


@pytest.mark.parametrize("empty", EMPTY_REPLIES.values(), ids=EMPTY_REPLIES.keys())
def test_empty_reply_is_not_an_answer(run_agent, empty):
    lookup, ran = make_lookup()
    gen = ScriptedChatGenerator([empty, asst(calls=[("c1", "lookup", {"id": "7"})]), asst("final answer")])
    agent = Agent(chat_generator=gen, tools=[lookup], max_agent_steps=5)

    result = run_agent(agent, [user("find 7")])

    assert len(gen.calls) == 3
    assert ran == ["7"]
    assert result["last_message"].text == "final answer"
    assert result["last_message"] is result["messages"][-1]
    assert result["exit_reason"] == "text"
    assert result["step_count"] == 3
    assert result["tool_call_counts"] == {"lookup": 1}
    # The model's third input carries lookup's result for c1.
    answer = result_for(gen.calls[2]["messages"], "c1")
    assert answer.result == '{"id": "7", "ok": true}'
    assert answer.error is False
    assert gen.calls[0]["messages"] == [user("find 7")]


def test_only_empty_replies_run_into_the_step_limit(run_agent):
    lookup, ran = make_lookup()
    gen = ScriptedChatGenerator([asst("")] * 3 + [asst("never reached")])
    agent = Agent(chat_generator=gen, tools=[lookup], max_agent_steps=3)

    result = run_agent(agent, [user("find 7")])

    assert len(gen.calls) == 3
    assert ran == []
    assert result["exit_reason"] == "max_agent_steps"
    assert result["step_count"] == 3


@pytest.mark.parametrize("reason", ["length", "content_filter"])
def test_empty_reply_cut_off_by_the_provider_ends_with_that_reason(run_agent, reason):
    lookup, ran = make_lookup()
    gen = ScriptedChatGenerator([asst("", meta={"finish_reason": reason}), asst("never reached")])
    agent = Agent(chat_generator=gen, tools=[lookup], max_agent_steps=5)

    result = run_agent(agent, [user("find 7")])

    assert len(gen.calls) == 1
    assert ran == []
    assert result["exit_reason"] == reason
    assert result["step_count"] == 1


def test_agent_without_tools_returns_after_its_one_reply_even_when_empty(run_agent):
    gen = ScriptedChatGenerator([asst(""), asst("never reached")])
    agent = Agent(chat_generator=gen, max_agent_steps=5)

    result = run_agent(agent, [user("hello")])

    assert len(gen.calls) == 1
    assert result["exit_reason"] == "text"
    assert result["last_message"] == asst("")
