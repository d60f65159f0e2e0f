"""C11 — every model input holds exactly one system message, first; continuing a chat never adds one."""

from __future__ import annotations

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.cases._helpers import asst, system_positions, user

SYSTEM = ChatMessage.from_system("You are S.")


def test_one_system_message(run_agent):
    gen = ScriptedChatGenerator([asst("hi"), asst("hi again")])
    agent = Agent(chat_generator=gen, system_prompt="You are S.")

    first = run_agent(agent, [user("a")])
    second = run_agent(agent, [*first["messages"], user("b")])

    assert len(gen.calls) == 2
    for call in gen.calls:
        assert system_positions(call["messages"]) == [0]
        assert call["messages"][0] == SYSTEM
    assert gen.calls[0]["messages"] == [SYSTEM, user("a")]
    assert gen.calls[1]["messages"] == [SYSTEM, user("a"), asst("hi"), user("b")]
    assert first["messages"] == [SYSTEM, user("a"), asst("hi")]
    assert second["messages"] == [SYSTEM, user("a"), asst("hi"), user("b"), asst("hi again")]


def test_one_system_message_in_every_step_of_a_tool_loop(run_agent):
    def ping() -> str:
        return "pong"

    gen = ScriptedChatGenerator(
        [asst(calls=[("c1", "ping", {})]), asst("first"), asst(calls=[("c2", "ping", {})]), asst("second")]
    )
    agent = Agent(chat_generator=gen, tools=[create_tool_from_function(ping)], system_prompt="You are S.")

    first = run_agent(agent, [user("a")])
    run_agent(agent, [*first["messages"], user("b")])

    assert len(gen.calls) == 4
    for call in gen.calls:
        assert system_positions(call["messages"]) == [0]
        assert call["messages"][0] == SYSTEM


def test_run_time_prompt_replaces_the_leading_system_message(run_agent):
    gen = ScriptedChatGenerator([asst("hi"), asst("hi again")])
    agent = Agent(chat_generator=gen, system_prompt="You are S.")

    first = run_agent(agent, [user("a")])
    second = run_agent(agent, [*first["messages"], user("b")], system_prompt="You are T.")

    assert gen.calls[1]["messages"][0] == ChatMessage.from_system("You are T.")
    assert system_positions(gen.calls[1]["messages"]) == [0]
    assert system_positions(second["messages"]) == [0]


@pytest.mark.parametrize("init_prompt", ["You are S.", None])
def test_input_system_message_is_kept_and_init_prompt_not_added(run_agent, init_prompt):
    gen = ScriptedChatGenerator([asst("hi")])
    agent = Agent(chat_generator=gen, system_prompt=init_prompt)
    own = ChatMessage.from_system("You are mine.")

    result = run_agent(agent, [own, user("a")])

    assert gen.calls[0]["messages"] == [own, user("a")]
    assert result["messages"][0] == own
    assert system_positions(result["messages"]) == [0]


def test_input_messages_are_not_modified(run_agent):
    gen = ScriptedChatGenerator([asst("hi")])
    agent = Agent(chat_generator=gen, system_prompt="You are S.")
    history = [user("a")]

    run_agent(agent, history, system_prompt="You are T.")

    assert history == [user("a")]
