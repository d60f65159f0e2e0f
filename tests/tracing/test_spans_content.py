"""Content on spans only when asked for, as GenAI-schema JSON, redacted, without secrets, cut short (TR-T7, TR-9)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import handrail.tracing
from handrail.core._secret_values import register_secret_value
from handrail.dataclasses import ChatMessage
from handrail.hooks import RedactionHook
from handrail.testing import call, reply, user
from handrail.tools import create_tool_from_function
from tests.tracing._span_helpers import Traced, weather_agent

CONTENT = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.tool.definitions",
           "gen_ai.tool.call.arguments", "gen_ai.tool.call.result")  # fmt: skip


def _attributes(traced: Traced) -> list[dict[str, Any]]:
    return [dict(s.attributes or {}) for s in traced.spans()]


def _run(traced: Traced, monkeypatch: pytest.MonkeyPatch, env: str | None, **kwargs: Any) -> None:
    if env is None:
        monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    else:
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", env)
    handrail.tracing.enable(traced.provider, **kwargs)
    try:
        agent = weather_agent(None, system_prompt="You are terse.")
        agent.run([user("weather in Paris?")])
    finally:
        handrail.tracing.disable()


@pytest.mark.parametrize(("env", "capture"), [(None, None), ("true", False), (None, False), ("false", None)])
def test_no_content_unless_asked_for(monkeypatch: pytest.MonkeyPatch, env: str | None, capture: bool | None) -> None:
    traced = Traced()
    _run(traced, monkeypatch, env, capture_content=capture)
    assert len(traced.spans()) == 4
    assert not any(key in a for a in _attributes(traced) for key in CONTENT)


@pytest.mark.parametrize(("env", "capture"), [("true", None), ("TRUE", None), (None, True)])
def test_content_when_asked_for(monkeypatch: pytest.MonkeyPatch, env: str | None, capture: bool | None) -> None:
    traced = Traced()
    _run(traced, monkeypatch, env, capture_content=capture)
    chat1, chat2 = traced.named("chat scripted-model")
    a1, a2 = chat1.attributes or {}, chat2.attributes or {}
    assert json.loads(a1["gen_ai.system_instructions"]) == [{"type": "text", "content": "You are terse."}]
    assert json.loads(a1["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "weather in Paris?"}]}]  # fmt: skip
    asked = {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}
    assert json.loads(a1["gen_ai.output.messages"]) == [
        {"role": "assistant", "finish_reason": "tool_calls", "parts": [asked]}]  # fmt: skip
    definitions = json.loads(a1["gen_ai.tool.definitions"])
    assert [d["name"] for d in definitions] == ["get_weather", "explode"]
    assert definitions[0]["type"] == "function" and definitions[0]["description"].startswith("Get the weather")
    second_input = json.loads(a2["gen_ai.input.messages"])
    assert second_input[-1] == {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1",
                                                           "response": "sunny in Paris"}]}  # fmt: skip
    tool = traced.one("execute_tool get_weather").attributes or {}
    assert json.loads(tool["gen_ai.tool.call.arguments"]) == {"city": "Paris"}
    assert tool["gen_ai.tool.call.result"] == "sunny in Paris"


def leak(token: str) -> str:
    """Echo a token.

    Args:
        token: The token.
    """
    return f"the token is {token} and the key is sk-abcdefghijklmnopqrstuvwx"


def test_content_is_redacted_masked_and_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "s3cr3t-TRACE-zq81-VALUE-x7y6w5v4"
    register_secret_value(secret)
    traced = Traced()
    long_text = "word " * 400
    replies = [reply(call("leak", id="c1", token=secret)), reply(long_text)]
    agent = weather_agent(None, replies, tools=[create_tool_from_function(leak)],
                          hooks={"after_tool": [RedactionHook()]})  # fmt: skip
    handrail.tracing.enable(traced.provider, capture_content=True, max_content_chars=100,
                            redact=lambda text: text.replace("Paris", "[CITY]"))  # fmt: skip
    try:
        agent.run([user("Use the key sk-zyxwvutsrqponmlkjihgfedc in Paris")])
    finally:
        handrail.tracing.disable()
    everything = json.dumps(_attributes(traced))
    assert secret not in everything  # a known secret value: never on a span
    assert "sk-abcdefghijklmnopqrstuvwx" not in everything and "sk-zyxwvutsrqponmlkjihgfedc" not in everything
    assert "[REDACTED]" in everything  # the run's RedactionHook masked them
    assert "Paris" not in everything and "[CITY]" in everything  # and so did enable's redact
    chat2 = traced.named("chat scripted-model")[1].attributes or {}
    [output] = json.loads(chat2["gen_ai.output.messages"])
    text = output["parts"][0]["content"]
    assert text.startswith("word word") and text.endswith("[1900 more characters]") and len(text) < 130
    tool = traced.one("execute_tool leak").attributes or {}
    assert "***" in tool["gen_ai.tool.call.arguments"] and "[REDACTED]" in tool["gen_ai.tool.call.result"]


def test_agent_tracer_provider_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    traced = Traced()
    weather_agent(traced.provider, [ChatMessage.from_assistant("hi")]).run([user("hello")])
    assert "gen_ai.input.messages" in (traced.one("chat scripted-model").attributes or {})
