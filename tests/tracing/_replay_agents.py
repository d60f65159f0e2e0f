"""Agents, tools and a scripted person shared by the recording and replay tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from handrail.components.agents import Agent
from handrail.dataclasses.decisions import ConfirmationUIResult
from handrail.human_in_the_loop import AlwaysAskPolicy, BlockingConfirmationStrategy
from handrail.testing import ScriptedChatGenerator, call, reply
from handrail.tools import tool

PROMPT = "You add numbers."


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Person:
    """A ConfirmationUI answering from a list (and failing loudly when asked more: a replay must not ask)."""

    def __init__(self, answers: list[ConfirmationUIResult]) -> None:
        self.answers = list(answers)
        self.asked: list[dict[str, Any]] = []

    def get_user_confirmation(self, tool_name: str, tool_description: str, tool_params: dict[str, Any],
                              injected_params: dict[str, Any] | None = None) -> ConfirmationUIResult:  # fmt: skip
        self.asked.append(tool_params)
        if not self.answers:
            raise AssertionError(f"nobody should be asked about {tool_name}({tool_params})")
        return self.answers.pop(0)


def three_calls() -> list[Any]:
    """One step with three calls (to be approved, rejected and edited), then the answer."""
    return [reply(call("add", id="c1", a=1, b=2), call("add", id="c2", a=3, b=4), call("add", id="c3", a=5, b=6)),
            reply("Done.")]  # fmt: skip


def approving_agent(replies: list[Any], person: Person, *, prompt: str = PROMPT, **more: Any) -> Agent:
    strategy = BlockingConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), confirmation_ui=person)
    return Agent(chat_generator=ScriptedChatGenerator(replies), tools=[add], system_prompt=prompt,
                 confirmation_strategies={"add": strategy}, **more)  # fmt: skip


def approve_reject_edit() -> Person:
    return Person([ConfirmationUIResult("confirm"), ConfirmationUIResult("reject", feedback="not that one"),
                   ConfirmationUIResult("modify", new_tool_params={"a": 50, "b": 6})])  # fmt: skip


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(text) for text in path.read_text().splitlines()]


def write_lines(path: Path, data: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in data))
