"""Tool names OpenAI refuses ("Addition tool") are sent under a wire name and the model's calls map back.

The server is an httpx MockTransport (as in test_openai.py): the tests assert the request bodies it
received and the messages the generator and the Agent made of its replies.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import httpx
import pytest

from handrail.components.agents import Agent
from handrail.components.generators.chat._wire_names import WireNames, wire_name
from handrail.core import Secret
from handrail.dataclasses import ChatMessage, StreamingChunk, ToolCall
from handrail.errors import ConfigurationError
from handrail.tools import Tool, create_tool_from_function
from tests.components._helpers import run_in_mode
from tests.components.generators._openai_server import ChunkedBody, RecordedServer, Responder

WIRE = re.compile(r"[A-Za-z0-9_-]{1,64}")
SUMS: list[tuple[int, int]] = []


def add(a: int, b: int) -> int:
    """Add two numbers."""
    SUMS.append((a, b))
    return a + b


def weather(city: str) -> str:
    """Get the weather."""
    return f"sunny in {city}"


ADDITION = create_tool_from_function(add, name="Addition tool")
METEO = create_tool_from_function(weather, name="météo à Genève")
LONG = create_tool_from_function(
    weather, name="a weather tool with a name far longer than the sixty-four characters OpenAI takes"
)


@pytest.fixture(autouse=True)
def _clear() -> None:
    SUMS.clear()


def _body(data: bytes, content_type: str) -> Responder:
    return lambda request: httpx.Response(200, headers={"content-type": content_type}, stream=ChunkedBody(data))


def _event(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip


def _calls(calls: list[tuple[str, str, dict[str, Any]]], mode: str = "sync") -> Responder:
    """A reply calling ``(id, wire name, arguments)``: one completion, or (mode "stream") stream events."""
    wire = [{"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, n, a in calls]
    if mode != "stream":
        message = {"role": "assistant", "content": None, "tool_calls": wire}
        body = {"id": "x", "object": "chat.completion", "created": 1, "model": "m",
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}  # fmt: skip
        return _body(json.dumps(body).encode(), "application/json")
    events = [_event({"tool_calls": [{**call, "index": i}]}) for i, call in enumerate(wire)]
    events.append(_event({}, "tool_calls"))
    data = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
    return _body(data, "text/event-stream")


def _answer(text: str, mode: str = "sync") -> Responder:
    if mode == "stream":
        data = b"data: " + json.dumps(_event({"content": text}, "stop")).encode() + b"\n\ndata: [DONE]\n\n"
        return _body(data, "text/event-stream")
    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    body = {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [choice]}
    return _body(json.dumps(body).encode(), "application/json")


# --------------------------------------------------------------------------- the mapping


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("get_weather", "get_weather"),
        ("Addition tool", "Addition_tool"),
        ("a.b/c", "a_b_c"),
        ("x" * 64, "x" * 64),
    ],
)
def test_a_readable_ascii_name_maps_without_a_hash(name: str, expected: str) -> None:
    assert wire_name(name) == expected


@pytest.mark.parametrize("name", ["météo", "天气", "x" * 65, LONG.name])
def test_non_ascii_and_over_long_names_get_a_stable_hash_suffix(name: str) -> None:
    wire = wire_name(name)
    assert WIRE.fullmatch(wire) and wire == wire_name(name)
    assert re.search(r"_[0-9a-f]{8}$", wire)
    assert wire != wire_name(name + "!")


def test_the_readable_part_is_kept_before_the_hash() -> None:
    assert wire_name("météo").startswith("meteo_")
    assert wire_name("天气").startswith("tool_")
    assert wire_name("x" * 65).startswith("x" * 55 + "_")


def test_an_unknown_wire_name_passes_through_unchanged() -> None:
    names = WireNames.of([ADDITION])
    assert names.original("Addition_tool") == "Addition tool"
    assert names.original("Subtraction_tool") == "Subtraction_tool"


# --------------------------------------------------------------------------- the generator


def _generator(server: RecordedServer, **kwargs: Any) -> Any:
    return server.generator(api_key=Secret.from_token("sk-test"), max_retries=0, **kwargs)


def test_the_request_carries_wire_names_and_the_reply_the_tools_own_names() -> None:
    server = RecordedServer(
        _calls(
            [
                ("c1", "Addition_tool", {"a": 1, "b": 2}),
                ("c2", wire_name(METEO.name), {"city": "Genève"}),
                ("c3", wire_name(LONG.name), {"city": "Oslo"}),
            ]
        )
    )
    gen = _generator(server, tools=[ADDITION, METEO, LONG])

    (reply,) = gen.run([ChatMessage.from_user("1+2? Weather?")])["replies"]

    sent = [tool["function"]["name"] for tool in server.bodies[0]["tools"]]
    assert sent == ["Addition_tool", wire_name(METEO.name), wire_name(LONG.name)]
    assert all(WIRE.fullmatch(name) for name in sent)
    assert server.bodies[0]["tools"][0]["function"]["parameters"] == ADDITION.parameters
    assert reply.tool_calls == [
        ToolCall(tool_name="Addition tool", arguments={"a": 1, "b": 2}, id="c1"),
        ToolCall(tool_name=METEO.name, arguments={"city": "Genève"}, id="c2"),
        ToolCall(tool_name=LONG.name, arguments={"city": "Oslo"}, id="c3"),
    ]


def test_streamed_fragments_and_the_streamed_reply_carry_the_tools_own_names() -> None:
    server = RecordedServer(_calls([("c1", "Addition_tool", {"a": 1, "b": 2})], "stream"))
    chunks: list[StreamingChunk] = []
    gen = _generator(server, tools=[ADDITION], streaming_callback=chunks.append)

    (reply,) = gen.run([ChatMessage.from_user("1+2?")])["replies"]

    assert server.bodies[0]["tools"][0]["function"]["name"] == "Addition_tool"
    assert [d.tool_name for c in chunks for d in c.tool_calls or [] if d.tool_name] == ["Addition tool"]
    assert reply.tool_calls == [ToolCall(tool_name="Addition tool", arguments={"a": 1, "b": 2}, id="c1")]


def test_async_run_maps_names_too() -> None:
    server = RecordedServer(_calls([("c1", "Addition_tool", {"a": 1, "b": 2})]))
    gen = _generator(server, tools=[ADDITION])

    (reply,) = asyncio.run(gen.run_async([ChatMessage.from_user("1+2?")]))["replies"]

    assert [c.tool_name for c in reply.tool_calls] == ["Addition tool"]


def test_history_calls_and_a_named_tool_choice_are_sent_as_wire_names() -> None:
    server = RecordedServer(_answer("3"))
    choice = {"type": "function", "function": {"name": "Addition tool"}}
    gen = _generator(server, tools=[ADDITION], generation_kwargs={"tool_choice": choice})
    call = ToolCall(tool_name="Addition tool", arguments={"a": 1, "b": 2}, id="c1")
    old = ToolCall(tool_name="old tool", arguments={}, id="c0")  # no longer offered: still mapped the same way
    history = [
        ChatMessage.from_user("1+2?"),
        ChatMessage.from_assistant(tool_calls=[old, call]),
        ChatMessage.from_tool("gone", old),
        ChatMessage.from_tool("3", call),
    ]

    gen.run(history)

    body = server.bodies[0]
    assert [c["function"]["name"] for c in body["messages"][1]["tool_calls"]] == ["old_tool", "Addition_tool"]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "Addition_tool"}}
    assert gen.generation_kwargs["tool_choice"]["function"]["name"] == "Addition tool"  # the setting is kept


def test_two_tools_with_one_wire_name_are_refused_naming_both() -> None:
    twin = create_tool_from_function(add, name="Addition_tool")
    with pytest.raises(
        ConfigurationError, match=r"'Addition tool' and 'Addition_tool' would both be sent .* as 'Addition_tool'"
    ):
        _generator(RecordedServer(), tools=[ADDITION, twin])

    server = RecordedServer()
    gen = _generator(server, tools=[ADDITION])
    with pytest.raises(ConfigurationError, match="rename one of them") as info:
        gen.run([ChatMessage.from_user("1+2?")], tools=[twin, create_tool_from_function(add, name="Addition.tool")])
    assert "'Addition_tool' and 'Addition.tool'" in str(info.value)
    assert isinstance(info.value, ValueError)
    assert server.requests == []  # nothing was sent


# --------------------------------------------------------------------------- through the Agent


MODES = pytest.mark.parametrize("mode", ["sync", "async", "stream"])


@MODES
def test_agent_runs_a_tool_named_with_a_space(mode: str) -> None:
    server = RecordedServer(_calls([("c1", "Addition_tool", {"a": 1, "b": 2})], mode), _answer("It is 3.", mode))
    agent = Agent(chat_generator=_generator(server), tools=[ADDITION])

    result = run_in_mode(agent, mode, [ChatMessage.from_user("1+2?")])

    assert SUMS == [(1, 2)]
    assert result["last_message"].text == "It is 3."
    assert result["messages"][1].tool_calls[0].tool_name == "Addition tool"
    assert result["messages"][2].tool_call_result.origin.tool_name == "Addition tool"
    assert result["tool_call_counts"] == {"Addition tool": 1}
    second = server.bodies[1]["messages"]
    assert second[1]["tool_calls"][0]["function"]["name"] == "Addition_tool"
    assert second[2] == {"role": "tool", "tool_call_id": "c1", "content": "3"}


def test_an_unknown_wire_name_gets_the_unknown_tool_error_result_naming_it() -> None:
    server = RecordedServer(_calls([("c1", "Subtraction_tool", {"a": 1, "b": 2})]), _answer("Sorry."))
    agent = Agent(chat_generator=_generator(server), tools=[ADDITION])

    result = agent.run([ChatMessage.from_user("1-2?")])

    tool_result = result["messages"][2].tool_call_result
    assert tool_result.error and tool_result.origin.tool_name == "Subtraction_tool"
    assert "Tool 'Subtraction_tool' not found" in tool_result.result and "Addition tool" in tool_result.result
    assert SUMS == []


def test_a_plain_tool_name_is_sent_and_read_unchanged() -> None:
    plain = Tool(name="add", description="Add.", parameters=ADDITION.parameters, function=add)
    server = RecordedServer(_calls([("c1", "add", {"a": 1, "b": 2})]))
    (reply,) = _generator(server, tools=[plain]).run([ChatMessage.from_user("1+2?")])["replies"]
    assert server.bodies[0]["tools"][0]["function"] == plain.tool_spec
    assert reply.tool_calls[0].tool_name == "add"
