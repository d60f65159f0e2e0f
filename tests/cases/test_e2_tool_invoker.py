"""E2 — ToolInvoker on its own, written as REFERENCE_EXAMPLES.md shows it (``handrail`` imports)."""

from __future__ import annotations

import asyncio

import pytest

from handrail.components.tools import ToolInvoker
from handrail.dataclasses import ChatMessage, ChatRole, State, ToolCall
from handrail.tools import Tool


def test_e2_tool_invoker():
    # --- the example, as documented ---
    def dummy_weather_function(city: str):
        return f"The weather in {city} is 20 degrees."

    tool = Tool(
        name="weather_tool",
        description="A tool to get the weather",
        function=dummy_weather_function,
        parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    )
    message = ChatMessage.from_assistant(tool_calls=[ToolCall(tool_name="weather_tool", arguments={"city": "Berlin"})])
    result = ToolInvoker(tools=[tool]).run(messages=[message])
    # --- the expectations ---
    check(result, message)


def dummy_weather_function(city: str):
    return f"The weather in {city} is 20 degrees."


TOOL = Tool(
    name="weather_tool",
    description="A tool to get the weather",
    function=dummy_weather_function,
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def check(result: dict, message: ChatMessage) -> None:
    assert set(result) == {"tool_messages", "state"}
    assert isinstance(result["state"], State)
    assert len(result["tool_messages"]) == 1
    tool_message = result["tool_messages"][0]
    assert isinstance(tool_message, ChatMessage)
    assert tool_message.role is ChatRole.TOOL
    assert len(tool_message.tool_call_results) == 1
    tool_call_result = tool_message.tool_call_result
    assert "The weather in Berlin is 20 degrees." in tool_call_result.result
    assert tool_call_result.result == "The weather in Berlin is 20 degrees."
    assert tool_call_result.error is False
    assert tool_call_result.origin.tool_name == message.tool_call.tool_name
    assert tool_call_result.origin.arguments == message.tool_call.arguments


def run_example(mode: str, call: ToolCall) -> tuple[dict, ChatMessage]:
    message = ChatMessage.from_assistant(tool_calls=[call])
    invoker = ToolInvoker(tools=[TOOL])
    if mode == "sync":
        return invoker.run(messages=[message]), message
    return asyncio.run(invoker.run_async(messages=[message])), message


def test_e2_tool_invoker_async():
    result, message = run_example("async", ToolCall(tool_name="weather_tool", arguments={"city": "Berlin"}))

    check(result, message)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_e2_origin_equals_the_tool_call(mode):
    call = ToolCall(tool_name="weather_tool", arguments={"city": "Berlin"})
    result, _ = run_example(mode, call)

    assert result["tool_messages"][0].tool_call_result.origin == call


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_e2_origin_equals_a_tool_call_that_has_an_id(mode):
    call = ToolCall(tool_name="weather_tool", arguments={"city": "Berlin"}, id="call_abc")
    result, _ = run_example(mode, call)

    assert result["tool_messages"][0].tool_call_result.origin == call
