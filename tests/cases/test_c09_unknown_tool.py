"""C09 — a call to an unknown tool gets an error result naming it and listing the real tools."""

from __future__ import annotations

import pytest

from handrail.components.agents import Agent
from handrail.errors import ToolNotFoundException
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool, create_tool_from_function
from tests.cases._helpers import asst, result_for, user


def make_lookup() -> tuple[Tool, list[str]]:
    ran: list[str] = []

    def lookup(topic: str) -> str:
        ran.append(topic)
        return f"all about {topic}"

    return create_tool_from_function(lookup), ran


def script() -> ScriptedChatGenerator:
    return ScriptedChatGenerator(
        [
            asst(calls=[("c1", "occra_information", {})]),
            asst(calls=[("c2", "lookup", {"topic": "occra"})]),
            asst("here you go"),
        ]
    )


def check(result, gen, ran) -> None:
    assert len(gen.calls) == 3
    unknown = result_for(gen.calls[1]["messages"], "c1")
    assert unknown.error is True
    assert "occra_information" in unknown.result
    assert "lookup" in unknown.result
    assert ran == ["occra"]
    assert result_for(result["messages"], "c2").result == "all about occra"
    assert result["last_message"].text == "here you go"
    assert result["exit_reason"] == "text"
    assert result["tool_call_counts"]["lookup"] == 1


def test_unknown_tool_name(run_agent):
    lookup, ran = make_lookup()
    gen = script()
    agent = Agent(chat_generator=gen, tools=[lookup])

    result = run_agent(agent, [user("tell me about occra")])

    check(result, gen, ran)


def test_unknown_name_in_exit_conditions_does_not_end_the_run(run_agent):
    lookup, ran = make_lookup()
    gen = script()
    agent = Agent(chat_generator=gen, tools=[lookup], exit_conditions=["text", "occra_information"])

    with pytest.warns(UserWarning, match="occra_information"):
        result = run_agent(agent, [user("tell me about occra")])

    check(result, gen, ran)


def test_unknown_and_known_call_in_one_step(run_agent):
    lookup, ran = make_lookup()
    gen = ScriptedChatGenerator(
        [asst(calls=[("c1", "occra_information", {}), ("c2", "lookup", {"topic": "occra"})]), asst("done")]
    )
    agent = Agent(chat_generator=gen, tools=[lookup])

    result = run_agent(agent, [user("tell me about occra")])

    assert ran == ["occra"]
    assert result_for(result["messages"], "c1").error is True
    assert result_for(result["messages"], "c2").error is False
    assert [m.tool_call_result.origin.id for m in result["messages"] if m.tool_call_result] == ["c1", "c2"]
    assert len(gen.calls) == 2


def test_unknown_tool_raises_in_raise_mode(run_agent):
    lookup, ran = make_lookup()
    gen = script()
    agent = Agent(chat_generator=gen, tools=[lookup], raise_on_tool_invocation_failure=True)

    with pytest.raises(ToolNotFoundException, match="occra_information") as info:
        run_agent(agent, [user("tell me about occra")])

    assert "lookup" in str(info.value)
    assert len(gen.calls) == 1
    assert ran == []
