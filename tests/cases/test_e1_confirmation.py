"""Reference example E1: an agent with two tools and per-tool confirmation, written as shown.

The example builds an OpenAIChatGenerator; the test then swaps in a ScriptedChatGenerator that
makes the same tool calls (REFERENCE_EXAMPLES.md), and answers the console through stdin.
"""

from __future__ import annotations

import io
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.components.generators.chat import OpenAIChatGenerator
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.human_in_the_loop import (
    AlwaysAskPolicy,
    HumanInTheLoopStrategy,
    NeverAskPolicy,
    SimpleConsoleUI,
)
from handrail.testing import ScriptedChatGenerator
from handrail.tools.tool import Tool

RAN: list[tuple[str, dict[str, Any]]] = []


def calculate(expression: str) -> str:
    RAN.append(("calculator", {"expression": expression}))
    return "391"


def web_search(query: str) -> str:
    RAN.append(("search", {"query": query}))
    return f"Haystack is an open-source framework (query: {query})."


def build_e1(monkeypatch: pytest.MonkeyPatch) -> Agent:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    calculator_tool = Tool(name="calculator", description="A tool for performing mathematical calculations.",
                           parameters={"type": "object", "properties": {"expression": {"type": "string"}},
                                       "required": ["expression"]}, function=calculate)  # fmt: skip
    search_tool = Tool(name="search", description="A tool for searching the web.",
                       parameters={"type": "object", "properties": {"query": {"type": "string"}},
                                   "required": ["query"]}, function=web_search)  # fmt: skip

    agent = Agent(
        chat_generator=OpenAIChatGenerator(),
        tools=[calculator_tool, search_tool],
        confirmation_strategies={
            calculator_tool.name: HumanInTheLoopStrategy(
                confirmation_policy=NeverAskPolicy(), confirmation_ui=SimpleConsoleUI()),
            search_tool.name: HumanInTheLoopStrategy(
                confirmation_policy=AlwaysAskPolicy(), confirmation_ui=SimpleConsoleUI()),
        },
    )  # fmt: skip
    agent.chat_generator = ScriptedChatGenerator(
        [
            ChatMessage.from_assistant(
                tool_calls=[
                    ToolCall("calculator", {"expression": "17 * 23"}, "c1"),
                    ToolCall("search", {"query": "Haystack"}, "c2"),
                ]
            ),
            ChatMessage.from_assistant("Haystack is a framework; 17 * 23 = 391."),
        ]
    )
    return agent


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def run_with_stdin(
    agent: Agent, answers: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[dict[str, Any], str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(answers))
    result = agent.run(messages=[ChatMessage.from_user("Find information about Haystack")])
    assert "messages" in result
    return result, capsys.readouterr().out


def test_confirm(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    result, shown = run_with_stdin(build_e1(monkeypatch), "y\n", monkeypatch, capsys)
    assert shown.count("Tool Execution Request") == 1  # only search asks
    assert "search" in shown and "A tool for searching the web." in shown and "Haystack" in shown
    assert RAN == [("calculator", {"expression": "17 * 23"}), ("search", {"query": "Haystack"})]
    assert result["last_message"].text == "Haystack is a framework; 17 * 23 = 391."


def test_reject_with_feedback(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    agent = build_e1(monkeypatch)
    result, _ = run_with_stdin(agent, "n\nuse the docs instead\n", monkeypatch, capsys)
    assert RAN == [("calculator", {"expression": "17 * 23"})]
    errors = [m.tool_call_result for m in result["messages"] if m.tool_call_result and m.tool_call_result.error]
    assert len(errors) == 1 and errors[0].origin.tool_name == "search"
    assert errors[0].result == (
        "Tool execution for 'search' was rejected by the user. With user feedback: use the docs instead"
    )
    assert agent.chat_generator.calls[1]["messages"] == result["messages"][:-1]  # the model read the rejection


def test_edit_runs_with_the_new_arguments(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    result, _ = run_with_stdin(build_e1(monkeypatch), "m\nHaystack agents\n", monkeypatch, capsys)
    assert RAN == [("calculator", {"expression": "17 * 23"}), ("search", {"query": "Haystack agents"})]
    explanations = [m.text for m in result["messages"] if m.role.value == "user"][1:]
    assert explanations == [
        'The parameters for tool \'search\' were updated by the user to:\n{"query": "Haystack agents"}'
    ]
