"""Error texts on spans are masked (capture on or off); content attributes are always valid JSON; the history's
messages are encoded once per run."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from handrail.components._json_text import json_safe
from handrail.dataclasses import ChatMessage
from handrail.testing import call, reply
from handrail.tools import create_tool_from_function
from handrail.tracing._content import Content
from tests.tracing._span_helpers import Traced, weather_agent

KEY = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"
BEARER = "Bearer abcdefghijklmnopqrstuvwxyz0123"


def send(to: str) -> str:
    """Sends an email.

    Args:
        to: Whom to.
    """
    raise RuntimeError(f"boom {KEY} {BEARER}")


def odd() -> dict[str, Any]:
    """Returns values JSON has no words for."""

    class Obj:
        def __str__(self) -> str:
            return "an Obj"

    return {"s": {2, 1}, "o": Obj(), "f": float("nan"), "i": -math.inf}


def _texts(span: Any) -> list[str]:
    """What a span says of its error (content attributes, opted in, go through the run's own redaction hooks)."""
    out = [str((span.attributes or {}).get("error.type")), span.status.description or ""]
    for event in span.events:
        out += [str(v) for v in (event.attributes or {}).values()]
    return out


@pytest.mark.parametrize("capture", [False, True])
def test_exception_events_and_statuses_never_hold_key_like_strings(capture: bool) -> None:
    traced = Traced()
    tools = [create_tool_from_function(send)]
    agent = weather_agent(None, [reply(call("send", id="c1", to="ann")), ConnectionError(f"auth failed for {KEY}")],
                          tools=tools)  # fmt: skip
    from handrail.tracing import observer_for

    with pytest.raises(ConnectionError):
        agent.run([ChatMessage.from_user("go")], observers=[observer_for(traced.provider, capture_content=capture)])
    tool = traced.one("execute_tool send")
    chat = traced.named("chat scripted-model")[-1]
    run = traced.agent()
    for span in (tool, chat, run):
        assert span.status.status_code is StatusCode.ERROR
        [event] = [e for e in span.events if e.name == "exception"]
        attributes = event.attributes or {}
        assert set(attributes) >= {"exception.type", "exception.message", "exception.stacktrace"}
        assert "[REDACTED]" in attributes["exception.message"]
        assert "Traceback" in attributes["exception.stacktrace"] and "[REDACTED]" in attributes["exception.stacktrace"]
        for text in _texts(span):
            assert KEY not in text and "abcdefghijklmnopqrstuvwxyz0123" not in text, (span.name, text)
    assert dict(tool.events[0].attributes or {})["exception.type"] == "RuntimeError"
    assert dict(chat.events[0].attributes or {})["exception.message"] == "auth failed for [REDACTED]"


def test_a_result_json_has_no_words_for_is_still_json_without_double_encoding() -> None:
    traced = Traced()
    from handrail.tracing import observer_for

    agent = weather_agent(None, [reply(call("odd", id="c1")), reply("done")], tools=[create_tool_from_function(odd)])
    agent.run([ChatMessage.from_user("go")], observers=[observer_for(traced.provider, capture_content=True)])
    text = (traced.one("execute_tool odd").attributes or {})["gen_ai.tool.call.result"]
    assert json.loads(text, parse_constant=lambda name: pytest.fail(f"not JSON: {name}")) == {
        "s": [1, 2], "o": "an Obj", "f": "NaN", "i": "-Infinity"}  # fmt: skip


def test_json_safe_and_content_data_shapes() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    assert json_safe(loop) == [1, "<circular>"]
    assert json_safe({1: frozenset({"b", "a"}), "t": (math.inf, None)}) == {"1": ["a", "b"], "t": ["Infinity", None]}
    assert Content(100).dumps({"x": {1}, "f": math.nan}) == '{"x":[1],"f":"NaN"}'


def test_each_history_message_is_encoded_once_per_run() -> None:
    calls: list[str] = []

    def redact(text: str) -> str:
        calls.append(text)
        return text

    content = Content(1000, (redact,))
    history = [ChatMessage.from_system("be brief"), ChatMessage.from_user("first")]
    system, first = content.input_messages(history)
    masked_once = len(calls)
    history.append(ChatMessage.from_assistant("second"))
    _, second = content.input_messages(history)
    assert json.loads(second)[:1] == json.loads(first)
    assert len(calls) - masked_once < masked_once + 3  # only the new message (and the system text) were masked again
    assert "first" not in calls[masked_once:]
    # an equal but new message object is encoded anew (the cache is by identity, not by equality)
    history[1] = ChatMessage.from_user("first")
    before = len(calls)
    content.input_messages(history)
    assert "first" in calls[before:]
    assert system is not None and json.loads(system) == [{"type": "text", "content": "be brief"}]
