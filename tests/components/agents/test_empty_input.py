"""``Agent.run([])`` with no system prompt returns at once, as in Haystack: empty messages, no model call."""

from __future__ import annotations

from handrail.components.agents import Agent
from handrail.testing import ScriptedChatGenerator
from handrail.testing.builders import reply


async def test_an_empty_input_without_a_system_prompt_does_not_call_the_model() -> None:
    model = ScriptedChatGenerator([reply("should not be read")])
    agent = Agent(chat_generator=model)
    result = agent.run([])
    assert result["messages"] == [] and "last_message" not in result
    assert result["exit_reason"] == "empty_input" and result["step_count"] == 0
    assert (await agent.run_async([]))["messages"] == []
    assert model.calls == []  # never called


def test_a_system_prompt_is_an_input_the_model_answers() -> None:
    agent = Agent(chat_generator=ScriptedChatGenerator([reply("hello")]), system_prompt="Greet the user.")
    result = agent.run([])
    assert result["last_message"].text == "hello" and result["exit_reason"] == "text"
