"""C02 — the step limit is reported, and every requested call still has its result."""

from __future__ import annotations

import itertools

from handrail.components.agents import Agent
from handrail.dataclasses import ChatRole
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool, create_tool_from_function
from tests.cases._helpers import asst, requested_calls, result_for, tool_results, user


def make_probe() -> tuple[Tool, list[int]]:
    counter = itertools.count(1)
    ran: list[int] = []

    def probe() -> int:
        n = next(counter)
        ran.append(n)
        return n

    return create_tool_from_function(probe), ran


def test_step_limit_is_reported(run_agent):
    probe, ran = make_probe()
    gen = ScriptedChatGenerator(
        [asst(calls=[("c1", "probe", {})]), asst(calls=[("c2", "probe", {})]), asst("never reached")]
    )
    agent = Agent(chat_generator=gen, tools=[probe], max_agent_steps=2)

    result = run_agent(agent, [user("probe twice")])

    assert len(gen.calls) == 2
    assert result["exit_reason"] == "max_agent_steps"
    assert result["step_count"] == 2
    assert ran == [1, 2]
    assert result["tool_call_counts"] == {"probe": 2}
    messages = result["messages"]
    assert [c.id for c in requested_calls(messages)] == ["c1", "c2"]
    assert result_for(messages, "c1").result == "1"
    assert result_for(messages, "c2").result == "2"
    assert not any(r.error for r in tool_results(messages))
    assert [m.role for m in messages] == [ChatRole.USER, *[ChatRole.ASSISTANT, ChatRole.TOOL] * 2]
    assert result["last_message"] is messages[-1]


def test_every_call_of_the_last_step_has_a_result(run_agent):
    probe, ran = make_probe()
    gen = ScriptedChatGenerator(
        [
            asst(calls=[("c1", "probe", {})]),
            asst(calls=[("c2", "probe", {}), ("c3", "probe", {}), ("c4", "probe", {})]),
        ]
    )
    agent = Agent(chat_generator=gen, tools=[probe], max_agent_steps=2)

    result = run_agent(agent, [user("probe")])

    assert len(gen.calls) == 2
    assert result["exit_reason"] == "max_agent_steps"
    assert result["step_count"] == 2
    assert sorted(ran) == [1, 2, 3, 4]
    messages = result["messages"]
    for call in requested_calls(messages):
        assert result_for(messages, call.id).error is False
    assert [r.origin.id for r in tool_results(messages)] == ["c1", "c2", "c3", "c4"]
    assert result["tool_call_counts"] == {"probe": 4}


def test_zero_steps_calls_no_model(run_agent):
    probe, ran = make_probe()
    gen = ScriptedChatGenerator([asst("never reached")])
    agent = Agent(chat_generator=gen, tools=[probe], max_agent_steps=0)

    result = run_agent(agent, [user("nothing")])

    assert gen.calls == []
    assert ran == []
    assert result["exit_reason"] == "max_agent_steps"
    assert result["step_count"] == 0
    assert result["messages"] == [user("nothing")]
    assert result["last_message"] is result["messages"][-1]
