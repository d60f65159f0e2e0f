"""An Agent driving the built-in tools with a scripted model (the README demo, without a model)."""

from __future__ import annotations

from typing import Any

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ChatRole, ToolCall
from handrail.testing import ScriptedChatGenerator, call, reply
from handrail.tools.builtin import calculator, search


def tool_results(out: dict[str, Any]) -> list[Any]:
    return [m.tool_call_result for m in out["messages"] if m.role is ChatRole.TOOL]


def test_search_then_calculate() -> None:
    gen = ScriptedChatGenerator(
        [
            reply(call("search", {"query": "Maplebrook population area"}, "c1")),
            reply(call("calculator", {"expression": "48213 / 12.7"}, "c2")),
            ChatMessage.from_assistant("Maplebrook has about 3796 residents per square kilometre."),
        ]
    )
    agent = Agent(chat_generator=gen, tools=[calculator, search])
    out = agent.run([ChatMessage.from_user("What is the population density of Maplebrook?")])

    assert out["exit_reason"] == "text"
    assert out["tool_call_counts"] == {"calculator": 1, "search": 1}
    found, computed = tool_results(out)
    assert found.error is False
    assert found.result.startswith("[maplebrook.md]") and "48213" in found.result
    assert (computed.result, computed.error) == (repr(48213 / 12.7), False)
    assert [t.name for t in gen.calls[0]["tools"]] == ["calculator", "search"]
    assert gen.calls[2]["messages"][-1].tool_call_result.result == computed.result
    gen.assert_complete()


def test_a_refused_expression_goes_back_to_the_model_as_an_error() -> None:
    gen = ScriptedChatGenerator(
        [
            reply(call("calculator", {"expression": "__import__('os').system('echo hi')"}, "c1")),
            reply(call("calculator", {"expression": "9 ** 9 ** 9"}, "c2")),
            reply(call("calculator", {"expression": "48,213 / 12.7"}, "c3")),
            ChatMessage.from_assistant("I cannot compute that."),
        ]
    )
    out = Agent(chat_generator=gen, tools=[calculator]).run([ChatMessage.from_user("hack")])
    imported, tower, separators = tool_results(out)
    assert imported.error is True and "Only the allowed functions can be called" in imported.result
    assert tower.error is True and "too large" in tower.result
    assert separators.error is True and "without thousands separators" in separators.result
    assert out["exit_reason"] == "text"


def test_invalid_arguments_never_reach_the_tools() -> None:
    gen = ScriptedChatGenerator(
        [
            reply(call("search", {"q": "Haystack"}, "c1")),
            reply(call("calculator", {"expression": 5}, "c2")),
            ChatMessage.from_assistant("done"),
        ]
    )
    out = Agent(chat_generator=gen, tools=[calculator, search]).run([ChatMessage.from_user("x")])
    assert [r.error for r in tool_results(out)] == [True, True]


async def test_both_tools_in_one_step_async() -> None:
    gen = ScriptedChatGenerator(
        [
            ChatMessage.from_assistant(
                tool_calls=[
                    ToolCall(tool_name="search", arguments={"query": "Haystack"}, id="a"),
                    ToolCall(tool_name="calculator", arguments={"expression": "2 ** 10"}, id="b"),
                ]
            ),
            ChatMessage.from_assistant("ok"),
        ]
    )
    out = await Agent(chat_generator=gen, tools=[calculator, search]).run_async([ChatMessage.from_user("x")])
    found, computed = tool_results(out)
    assert found.result.startswith("[haystack.md]")
    assert computed.result == "1024"


def test_an_agent_with_the_builtin_tools_round_trips() -> None:
    agent = Agent(chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant("hi")]), tools=[calculator, search])
    restored = Agent.from_dict(agent.to_dict())
    assert restored.tools == [calculator, search]
