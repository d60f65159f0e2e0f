"""Fixtures of the end-to-end cases: every case runs through ``Agent.run`` and ``Agent.run_async``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage


class Runner:
    """Calls ``agent.run`` (mode "sync") or ``asyncio.run(agent.run_async(...))`` (mode "async")."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def __call__(self, agent: Agent, messages: list[ChatMessage], **kwargs: Any) -> dict[str, Any]:
        if self.mode == "sync":
            return agent.run(messages, **kwargs)
        return asyncio.run(agent.run_async(messages, **kwargs))

    def __repr__(self) -> str:
        return f"Runner({self.mode})"


@pytest.fixture(params=["sync", "async"])
def run_agent(request: pytest.FixtureRequest) -> Runner:
    return Runner(request.param)
