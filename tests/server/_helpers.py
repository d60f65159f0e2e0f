"""Pausing runs into a store and resuming them, for the HTTP tests."""

from __future__ import annotations

from typing import Any

import pytest

from handrail import resume
from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.cases._helpers import asst, user
from tests.common_tools import SENT, transfer


def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: Which one.
    """
    return f"read {path}"


def agent(replies: list[ChatMessage], store: Any, **settings: Any) -> Agent:
    strategy = BreakpointConfirmationStrategy(snapshot_store=store, **settings)
    tools = [create_tool_from_function(transfer), create_tool_from_function(read_file)]
    return Agent(
        chat_generator=ScriptedChatGenerator(replies),
        tools=tools,
        confirmation_strategies={"transfer": strategy, "read_file": strategy},
    )


def pause(store: Any, calls: list[tuple[str, str, dict[str, Any]]], **settings: Any) -> str:
    """Run an agent whose one reply makes ``calls`` until it pauses; the paused snapshot's id."""
    SENT.clear()
    with pytest.raises(HITLBreakpointException) as info:
        agent([asst(calls=calls)], store, **settings).run([user("pay")])
    snapshot_id = info.value.snapshot.snapshot_id
    assert snapshot_id is not None
    return snapshot_id


def finish(store: Any, snapshot_id: str, text: str = "done") -> tuple[dict[str, Any], ScriptedChatGenerator]:
    """Resume the paused run to its end (the model answers ``text``); the result and the model (its calls)."""
    resumed = agent([asst(text)], store)
    result = resume(snapshot_id, store=store, agent=resumed)
    generator = resumed.chat_generator
    assert isinstance(generator, ScriptedChatGenerator)
    return result, generator
