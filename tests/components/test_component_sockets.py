"""The built-in components' sockets: what a Pipeline can connect to them."""

from __future__ import annotations

from typing import Any

import pytest

from handrail import Agent, ChatMessage, State, Tool, ToolCall, ToolInvoker
from handrail.components.generators.chat import LlamaCppChatGenerator, OpenAIChatGenerator
from handrail.core.component import MISSING, input_sockets, is_component, output_sockets, types_compatible
from handrail.core.secret import Secret
from handrail.errors import ConfigurationError
from handrail.testing import ScriptedChatGenerator


def _weather(city: str) -> str:
    return f"sunny in {city}"


WEATHER = Tool(
    name="weather",
    description="Weather.",
    function=_weather,
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def _generators() -> list[Any]:
    return [
        ScriptedChatGenerator([]),
        OpenAIChatGenerator(api_key=Secret.from_token("sk-test")),
        LlamaCppChatGenerator(),
    ]


@pytest.mark.parametrize("generator", _generators(), ids=lambda g: type(g).__name__)
def test_chat_generators_take_messages_and_give_replies(generator: Any) -> None:
    assert is_component(generator)
    inputs = input_sockets(generator)
    common = {"messages", "tools", "streaming_callback", "generation_kwargs"}
    extra = {"tools_strict"} if isinstance(generator, OpenAIChatGenerator) else set()  # Haystack's run has it
    assert set(inputs) == common | extra
    assert inputs["messages"].type == list[ChatMessage] and inputs["messages"].is_mandatory
    assert all(inputs[n].default is None for n in ("tools", "streaming_callback", "generation_kwargs"))
    assert {n: s.type for n, s in output_sockets(generator).items()} == {"replies": list[ChatMessage]}


def test_generators_keep_their_own_serialization() -> None:
    data = ScriptedChatGenerator([ChatMessage.from_assistant("hi")]).to_dict()
    assert data["init_parameters"]["replies"][0]["message"]["role"] == "assistant"
    assert ScriptedChatGenerator.from_dict(data).run([])["replies"][0].text == "hi"


def test_tool_invoker_sockets_and_run_through_them() -> None:
    invoker = ToolInvoker(tools=[WEATHER])
    inputs = input_sockets(invoker)
    assert inputs["messages"].is_mandatory and inputs["messages"].type == list[ChatMessage]
    assert not inputs["state"].is_mandatory and inputs["state"].default is None
    assert {n: s.type for n, s in output_sockets(invoker).items()} == {
        "tool_messages": list[ChatMessage],
        "state": State,
    }
    # A generator's replies fit the invoker's messages; its tool messages fit an Agent's messages.
    assert types_compatible(output_sockets(ScriptedChatGenerator([]))["replies"].type, inputs["messages"].type)
    call = ToolCall(tool_name="weather", arguments={"city": "Oslo"}, id="c1")
    out = invoker.run(messages=[ChatMessage.from_assistant(tool_calls=[call])])
    assert set(out) == set(output_sockets(invoker))
    assert out["tool_messages"][0].tool_call_result.result == "sunny in Oslo"


def _agent(**kwargs: Any) -> Agent:
    return Agent(chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant("done")]), **kwargs)


def test_agent_inputs_are_run_parameters_state_keys_and_prompt_variables() -> None:
    agent = _agent(
        state_schema={"documents": {"type": list[str]}},
        user_prompt="Hello {{ name }}, you are {{ age }}.",
        required_variables=["name"],
    )
    inputs = input_sockets(agent)
    assert inputs["messages"].is_mandatory and inputs["messages"].type == list[ChatMessage]
    assert inputs["system_prompt"].default is None and inputs["allow_drift"].default is False
    assert (inputs["documents"].type, inputs["documents"].default) == (list[str], None)
    assert inputs["name"].default is MISSING and inputs["age"].default is None
    assert "kwargs" not in inputs
    assert {n: s.type for n, s in output_sockets(agent).items()} == {
        "messages": list[ChatMessage],
        "last_message": ChatMessage,
        "step_count": int,
        "token_usage": dict[str, Any],
        "tool_call_counts": dict[str, int],
        "exit_reason": str,
        "documents": list[str],
    }


def test_agent_outputs_match_what_run_returns() -> None:
    agent = _agent(state_schema={"documents": {"type": list[str]}})
    result = agent.run(messages=[ChatMessage.from_user("hi")], documents=["a"])
    assert set(result) == set(output_sockets(agent))
    assert result["documents"] == ["a"]


def test_agent_sockets_follow_reassignment() -> None:
    agent = _agent()
    assert "topic" not in input_sockets(agent) and "notes" not in output_sockets(agent)
    agent.user_prompt = "Tell me about {{ topic }}."
    agent.required_variables = "*"
    agent.state_schema = {"notes": {"type": str}}
    assert input_sockets(agent)["topic"].is_mandatory
    assert input_sockets(agent)["notes"].type is str and output_sockets(agent)["notes"].type is str
    agent.user_prompt = None
    agent.required_variables = None
    agent.state_schema = None
    assert "topic" not in input_sockets(agent) and "notes" not in output_sockets(agent)


def test_an_invalid_reassigned_template_adds_no_sockets_and_the_run_reports_it() -> None:
    agent = _agent()
    agent.user_prompt = "{{ broken"
    assert set(input_sockets(agent)) == set(input_sockets(Agent))
    with pytest.raises(ConfigurationError, match="not a valid Jinja2 template"):
        agent.run([ChatMessage.from_user("x")])


def test_agents_have_their_own_sockets() -> None:
    first = _agent(state_schema={"a": {"type": int}})
    second = _agent(state_schema={"b": {"type": int}})
    assert "a" in input_sockets(first) and "a" not in input_sockets(second)
    assert "b" in output_sockets(second) and "b" not in output_sockets(first)


def test_none_for_state_keys_and_prompt_variables_means_not_given() -> None:
    # What a Pipeline passes for unconnected optional inputs: every socket's default.
    agent = _agent(state_schema={"notes": {"type": list[str]}}, user_prompt="Hi {{ name }}.")
    defaults = {n: s.default for n, s in input_sockets(agent).items() if not s.is_mandatory}
    result = agent.run(messages=[], **defaults)
    assert result["messages"][0].text == "Hi ."  # not "Hi None."
    assert "notes" not in result
    with pytest.raises(ConfigurationError, match=r"Unexpected run arguments \['other'\]"):
        agent.run(messages=[], other=None)
