"""E3 — a Pipeline chat generator → ConditionalRouter → ToolInvoker, as REFERENCE_EXAMPLES.md shows it.

A ScriptedChatGenerator stands in for the OpenAI generator; the weather tool returns temperature and
humidity. The example itself runs once, verbatim but for the generator; the other tests vary it.
"""

from __future__ import annotations

# typing.List is part of the example: the tests check it is the same socket type as list.
# ruff: noqa: UP006, UP035
import asyncio
import json
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any, List

import pytest

from handrail import Pipeline
from handrail.components.routers import ConditionalRouter
from handrail.components.tools import ToolInvoker
from handrail.dataclasses import ChatMessage, ChatRole, ToolCall
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool

WEATHER = {"temp": "14°C", "humidity": "72%"}


def weather(location: str) -> dict[str, str]:
    """Return the current weather of a location (module level, so pipelines holding it serialize)."""
    return dict(WEATHER)


weather_tool = Tool(
    name="weather",
    description="Get the current temperature and humidity of a location.",
    function=weather,
    parameters={"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
)

CALL = ToolCall(tool_name="weather", arguments={"location": "Berlin"}, id="call_1")
QUESTION = "What is the weather in Berlin?"


def routes(output_type: Any = List[ChatMessage]) -> list[dict[str, Any]]:
    return [
        {
            "condition": "{{replies[0].tool_calls | length > 0}}",
            "output": "{{replies}}",
            "output_name": "there_are_tool_calls",
            "output_type": output_type,
        },
        {
            "condition": "{{replies[0].tool_calls | length == 0}}",
            "output": "{{replies}}",
            "output_name": "final_replies",
            "output_type": output_type,
        },
    ]


def build(reply: ChatMessage, output_type: Any = List[ChatMessage]) -> tuple[Pipeline, ScriptedChatGenerator]:
    chat_generator = ScriptedChatGenerator([reply], tools=[weather_tool])
    pipeline = Pipeline()
    pipeline.add_component("generator", chat_generator)
    pipeline.add_component("router", ConditionalRouter(routes(output_type), unsafe=True))
    pipeline.add_component("tool_invoker", ToolInvoker(tools=[weather_tool]))
    pipeline.connect("generator.replies", "router")
    pipeline.connect("router.there_are_tool_calls", "tool_invoker.messages")
    return pipeline, chat_generator


def check_tool_result(result: dict[str, dict[str, Any]]) -> None:
    tool_messages = result["tool_invoker"]["tool_messages"]
    assert len(tool_messages) == 1
    message = tool_messages[0]
    assert message.role is ChatRole.TOOL
    assert len(message.tool_call_results) == 1
    tool_result = message.tool_call_result
    assert tool_result.error is False
    assert json.loads(tool_result.result) == WEATHER
    assert "14°C" in tool_result.result  # non-ASCII text is not escaped
    assert tool_result.origin == CALL
    assert tool_result.origin.tool_name == "weather"
    assert tool_result.origin.arguments == {"location": "Berlin"}
    assert "final_replies" not in result.get("router", {})


def test_e3_pipeline():
    # --- the example, as documented (ScriptedChatGenerator in place of OpenAIChatGenerator) ---
    tool_invoker = ToolInvoker(tools=[weather_tool])
    chat_generator = ScriptedChatGenerator([ChatMessage.from_assistant(tool_calls=[CALL])], tools=[weather_tool])
    routes = [
        {
            "condition": "{{replies[0].tool_calls | length > 0}}",
            "output": "{{replies}}",
            "output_name": "there_are_tool_calls",
            "output_type": List[ChatMessage],
        },
        {
            "condition": "{{replies[0].tool_calls | length == 0}}",
            "output": "{{replies}}",
            "output_name": "final_replies",
            "output_type": List[ChatMessage],
        },
    ]
    router = ConditionalRouter(routes, unsafe=True)

    pipeline = Pipeline()
    pipeline.add_component("generator", chat_generator)
    pipeline.add_component("router", router)
    pipeline.add_component("tool_invoker", tool_invoker)
    pipeline.connect("generator.replies", "router")
    pipeline.connect("router.there_are_tool_calls", "tool_invoker.messages")

    result = pipeline.run({"messages": [ChatMessage.from_user(QUESTION)]})
    # --- the expectations ---
    check_tool_result(result)
    assert [m.text for m in chat_generator.calls[0]["messages"]] == [QUESTION]
    chat_generator.assert_complete()


def test_e3_a_text_answer_ends_in_the_router_final_replies():
    answer = ChatMessage.from_assistant("It is 14°C in Berlin.")
    pipeline, generator = build(answer)

    result = pipeline.run({"messages": [ChatMessage.from_user(QUESTION)]})

    assert result["router"]["final_replies"] == [answer]
    assert "tool_invoker" not in result
    generator.assert_complete()


@pytest.mark.parametrize("output_type", [List[ChatMessage], list[ChatMessage]], ids=["typing.List", "list"])
def test_e3_typing_list_and_list_are_the_same_socket_type(output_type):
    pipeline, _ = build(ChatMessage.from_assistant(tool_calls=[CALL]), output_type)

    check_tool_result(pipeline.run({"messages": [ChatMessage.from_user(QUESTION)]}))


def test_e3_runs_async():
    pipeline, _ = build(ChatMessage.from_assistant(tool_calls=[CALL]))

    check_tool_result(asyncio.run(pipeline.run_async({"messages": [ChatMessage.from_user(QUESTION)]})))


def test_e3_nested_input_data_works_too():
    pipeline, _ = build(ChatMessage.from_assistant(tool_calls=[CALL]))

    check_tool_result(pipeline.run({"generator": {"messages": [ChatMessage.from_user(QUESTION)]}}))


def test_e3_survives_a_yaml_round_trip():
    pipeline, _ = build(ChatMessage.from_assistant(tool_calls=[CALL]))

    text = pipeline.dumps()
    assert "ConditionalRouter" in text
    assert "list[handrail.dataclasses.chat_message.ChatMessage]" in text
    rebuilt = Pipeline.loads(text, allowed_modules=("tests",))

    check_tool_result(rebuilt.run({"messages": [ChatMessage.from_user(QUESTION)]}))
    assert rebuilt.to_dict() == pipeline.to_dict()


# --------------------------------------------------------------------------- examples/tool_invoker_pipeline.py

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tool_invoker_pipeline.py"


def test_the_example_runs_scripted_as_a_script():
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--scripted"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )

    assert done.returncode == 0, done.stderr
    assert "tool call : weather({'location': 'Berlin'})" in done.stdout
    assert '"temp": "14°C", "humidity": "72%"' in done.stdout
    assert "route     : tools (scripted model" in done.stdout


def test_the_example_reads_the_scripted_switch_from_the_environment(monkeypatch, capsys):
    monkeypatch.setenv("HANDRAIL_EXAMPLE_SCRIPTED", "1")
    monkeypatch.setattr(sys, "argv", [str(EXAMPLE), "Is it humid in Berlin?"])

    with pytest.raises(SystemExit) as info:
        runpy.run_path(str(EXAMPLE), run_name="__main__")

    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "question  : Is it humid in Berlin?" in out
    assert '"humidity": "72%"' in out
