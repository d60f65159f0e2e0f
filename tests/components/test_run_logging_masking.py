"""Run log records mask key-like strings in error texts as the -vv preview does; their values are valid JSON."""

from __future__ import annotations

import json
import logging
import math
from typing import Any

import pytest

from handrail import Agent
from handrail.components._run_logging import preview
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function

KEY = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"
TOKEN = "abcdefghijklmnopqrstuvwxyz0123"


def send(to: str) -> str:
    """Send an email."""
    raise RuntimeError(f"boom {KEY} Bearer {TOKEN}")


def _records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("handrail.run")]


def test_tool_model_and_run_errors_are_masked_with_the_default_patterns(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="handrail.run")
    replies: list[Any] = [ChatMessage.from_assistant(tool_calls=[ToolCall("send", {"to": "ann"}, id="c1")]),
                          ConnectionError(f"auth failed for key {KEY}")]  # fmt: skip
    agent = Agent(chat_generator=ScriptedChatGenerator(replies), tools=[create_tool_from_function(send)])
    with pytest.raises(ConnectionError):
        agent.run([ChatMessage.from_user("go")])
    records = _records(caplog)
    failed = {(r.event, r.getMessage()) for r in records if r.levelno == logging.WARNING}
    assert {event for event, _ in failed} == {"tool_call", "model_call", "run_ended"}
    for event, text in failed:
        assert KEY not in text and TOKEN not in text, (event, text)
        assert "[REDACTED]" in text, (event, text)
    assert any(text.endswith("ConnectionError: auth failed for key [REDACTED]") for _, text in failed)


def test_the_preview_is_json_without_nan_or_double_encoding() -> None:
    class Obj:
        def __str__(self) -> str:
            return "an Obj"

    shown = preview({"s": {1, 2}, "o": Obj(), "f": math.nan, "k": KEY})
    assert json.loads(shown, parse_constant=lambda name: pytest.fail(name)) == {
        "s": [1, 2], "o": "an Obj", "f": "NaN", "k": "[REDACTED]"}  # fmt: skip
