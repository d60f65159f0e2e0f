"""Scripted UIs and input sources shared by the human-in-the-loop tests.

Classes are module-level so serialization round trips can import them by dotted path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from handrail.dataclasses.decisions import ConfirmationUIResult


class ScriptedInput:
    """An ``input_fn`` that answers from a list and raises EOFError when it runs out."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.lines = list(lines)
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if not self.lines:
            raise EOFError
        return self.lines.pop(0)


class Lines:
    """An ``output_fn`` that collects printed lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(line)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


class ScriptedUI:
    """A ConfirmationUI that returns queued answers and records what it was asked and told."""

    label = "scripted"

    def __init__(self, answers: Iterable[ConfirmationUIResult] = ()) -> None:
        self.answers = list(answers)
        self.calls: list[dict[str, Any]] = []
        self.notices: list[str] = []

    def get_user_confirmation(
        self,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        injected_params: dict[str, Any] | None = None,
    ) -> ConfirmationUIResult:
        self.calls.append(
            {
                "tool_name": tool_name,
                "tool_description": tool_description,
                "tool_params": tool_params,
                "injected_params": injected_params,
            }
        )
        return self.answers.pop(0)

    def notify(self, message: str) -> None:
        self.notices.append(message)

    def to_dict(self) -> dict[str, Any]:
        return {"type": f"{__name__}.ScriptedUI", "init_parameters": {}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScriptedUI:
        return cls()


class HaystackStyleUI:
    """A UI written for Haystack: no injected_params, no notify, no label, no to_dict."""

    def __init__(self, answer: ConfirmationUIResult) -> None:
        self.answer = answer

    def get_user_confirmation(
        self, tool_name: str, tool_description: str, tool_params: dict[str, Any]
    ) -> ConfirmationUIResult:
        return self.answer


class QueueUI:
    """An async-only UI fed by an asyncio.Queue (like a web page or a chat would be)."""

    label = "web"

    def __init__(self) -> None:
        self.requests: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.answers: asyncio.Queue[ConfirmationUIResult] = asyncio.Queue()
        self.notices: list[str] = []

    async def get_user_confirmation_async(
        self,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        injected_params: dict[str, Any] | None = None,
    ) -> ConfirmationUIResult:
        await self.requests.put({"tool_name": tool_name, "tool_params": tool_params, "injected": injected_params})
        return await self.answers.get()

    async def notify_async(self, message: str) -> None:
        self.notices.append(message)


DEEP = 5_000  # far past the default recursion limit of 1,000


def nested(depth: int, leaf: Any = 1) -> dict[str, Any]:
    """Tool arguments ``{"x": {"a": {"a": ... leaf}}}`` nested ``depth`` levels under ``x``."""
    value: Any = leaf
    for _ in range(depth):
        value = {"a": value}
    return {"x": value}
