"""OpenAIChatGenerator against servers that answer badly: malformed bodies, odd tool calls, dropped connections.

Every failure must be one GenerationError line naming the server (the CLI never shows a
traceback); every tool call the server sent must reach the Agent, neither dropped nor merged.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from handrail.components.agents import Agent
from handrail.components.generators.chat import OpenAIChatGenerator
from handrail.core import Secret
from handrail.dataclasses import ChatMessage, StreamingChunk, ToolCall
from handrail.errors import ConfigurationError, ConfigurationTypeError, GenerationError
from handrail.tools import create_tool_from_function
from tests.components.generators._openai_server import BASE_URL, ChunkedBody, DroppedBody, RecordedServer, Responder

HI = [ChatMessage.from_user("hi")]


def add(a: int, b: int = 0) -> int:
    """Add two numbers."""
    return a + b


ADD = create_tool_from_function(add)


def answering(body: Any, content_type: str = "application/json") -> Responder:
    """A 200 response holding ``body`` (bytes as they are, anything else as JSON)."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return lambda request: httpx.Response(200, headers={"content-type": content_type}, stream=ChunkedBody(data))


def streaming(*events: Any) -> Responder:
    """An SSE stream of ``events`` (bytes as they are, anything else as JSON), then ``[DONE]``."""
    lines = [e if isinstance(e, bytes) else json.dumps(e).encode() for e in events]
    data = b"".join(b"data: " + line + b"\n\n" for line in lines) + b"data: [DONE]\n\n"
    return answering(data, content_type="text/event-stream")


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """One streamed chat completion chunk with one choice."""
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [choice]}


def completion(message: dict[str, Any], finish: str = "stop") -> dict[str, Any]:
    """A non-streamed chat completion with one choice."""
    choice = {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
    return {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [choice]}


def call(arguments: Any, name: str = "add", call_id: str = "call_1") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


async def run(gen: OpenAIChatGenerator, mode: str, **kwargs: Any) -> list[ChatMessage]:
    """Run ``gen`` on "hi" through ``run`` (mode "sync") or ``run_async`` (mode "async")."""
    if mode == "sync":
        return gen.run(HI, **kwargs)["replies"]
    return (await gen.run_async(HI, **kwargs))["replies"]


def ignore(chunk: StreamingChunk) -> None:
    """A streaming callback that only makes the generator stream."""


def assert_one_line(error: GenerationError, *parts: str) -> None:
    message = str(error)
    assert message.startswith(f"The OpenAI-compatible server at {BASE_URL} sent an unusable reply: ")
    assert "\n" not in message
    for part in parts:
        assert part in message
    assert error.url == BASE_URL


MODES = pytest.mark.parametrize("mode", ["sync", "async"])


# --------------------------------------------------------------------------- malformed 200 answers


@MODES
async def test_a_body_that_is_not_json_is_a_generation_error(mode: str) -> None:
    gen = RecordedServer(answering(b"not json")).generator(max_retries=0)

    with pytest.raises(GenerationError) as info:
        await run(gen, mode)

    assert_one_line(info.value, "the response body is not valid JSON")


@MODES
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"unexpected": True}, "the response body has no 'choices'"),
        ([1, 2], "the response body is list [1, 2], not a chat completion object"),
        ({"choices": "many"}, "'choices' is str 'many', not a list"),
        ({"choices": [7]}, "choices[0] is int 7, not a JSON object"),
        ({"choices": [{"index": 0, "message": None}]}, "choices[0] has no message"),
        (completion({"content": 5}), "choices[0].message.content is int 5, not text"),
        (completion({"tool_calls": {"id": "c"}}), "choices[0].message.tool_calls is dict"),
        (completion({"tool_calls": [call("{}", name=["add"])]}), "choices[0].message.tool_calls[0].function.name"),
    ],
    ids=[
        "no-choices-key",
        "array",
        "choices-str",
        "choice-int",
        "no-message",
        "content-int",
        "calls-dict",
        "name-list",
    ],
)
async def test_a_body_that_is_not_a_chat_completion_is_a_generation_error(mode: str, body: Any, expected: str) -> None:
    gen = RecordedServer(answering(body)).generator(max_retries=0)

    with pytest.raises(GenerationError) as info:
        await run(gen, mode)

    assert_one_line(info.value, expected)


@MODES
async def test_a_stream_event_that_is_not_json_is_a_generation_error(mode: str) -> None:
    chunks: list[StreamingChunk] = []
    gen = RecordedServer(streaming(chunk({"content": "Hel"}), b"{not json")).generator(max_retries=0)

    with pytest.raises(GenerationError) as info:
        await run(gen, mode, streaming_callback=chunks.append)

    assert_one_line(info.value, "a stream event is not valid JSON")
    assert [c.content for c in chunks] == ["Hel"]  # what came before the bad event was streamed


@MODES
async def test_a_stream_event_of_the_wrong_shape_is_a_generation_error(mode: str) -> None:
    bad = {"id": "x", "model": "m", "choices": [{"index": 0, "delta": {"content": ["Hel", "lo"]}}]}
    gen = RecordedServer(streaming(bad)).generator(max_retries=0)

    with pytest.raises(GenerationError) as info:
        await run(gen, mode, streaming_callback=ignore)

    assert_one_line(info.value, "a stream event's delta.content is list")


def test_a_callback_error_is_not_taken_for_a_bad_reply() -> None:
    def broken(chunk: StreamingChunk) -> None:
        json.loads("{not json")

    gen = RecordedServer(streaming(chunk({"content": "Hel"}))).generator(max_retries=0)

    with pytest.raises(json.JSONDecodeError):
        gen.run(HI, streaming_callback=broken)


@MODES
async def test_an_error_body_with_status_200_is_reported_with_the_servers_message(mode: str) -> None:
    body = {"error": {"message": "model 'qwen' not found", "type": "invalid_request_error", "code": 404}}
    gen = RecordedServer(answering(body)).generator(max_retries=0)

    with pytest.raises(GenerationError) as info:
        await run(gen, mode)

    assert_one_line(info.value, "the response body is an error, not a chat completion: model 'qwen' not found")


def test_the_servers_error_message_is_escaped_and_clipped() -> None:
    body = {"error": {"message": "bad\x1b[31m request\nline two " + "x" * 1000}}
    gen = RecordedServer(answering(body)).generator(max_retries=0)

    with pytest.raises(GenerationError) as info:
        gen.run(HI)

    assert_one_line(info.value, "bad\\x1b[31m request line two xxx")
    assert "\x1b" not in str(info.value)
    assert len(str(info.value)) < 400


@pytest.mark.parametrize(
    ("body", "expected"),
    [({"error": "overloaded"}, ": overloaded"), ({"error": {"code": 503}}, ': {"code": 503}')],
    ids=["string", "no-message"],
)
def test_an_error_body_without_a_message_is_reported_as_sent(body: Any, expected: str) -> None:
    gen = RecordedServer(answering(body)).generator(max_retries=0)

    with pytest.raises(GenerationError) as info:
        gen.run(HI)

    assert_one_line(info.value, "the response body is an error", expected)


# --------------------------------------------------------------------------- streams cut short


def event(payload: Any) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


HE = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "he"}}]}


@MODES
@pytest.mark.parametrize(
    "data",
    [
        event(HE),
        event(HE) + b'data: {"choices": [{"index": 0, "delta": {"content": "llo"',
        event(HE) + b"data: [DONE]\n\n",
        event(HE) + event({"choices": [], "usage": {"prompt_tokens": 1, "total_tokens": 3}}),
    ],
    ids=["clean-close", "half-written-last-event", "done-without-finish-reason", "usage-without-finish-reason"],
)
async def test_a_stream_that_ends_before_a_finish_reason_is_a_generation_error(mode: str, data: bytes) -> None:
    chunks: list[StreamingChunk] = []
    gen = RecordedServer(answering(data, content_type="text/event-stream")).generator(max_retries=0)

    with pytest.raises(GenerationError) as info:
        await run(gen, mode, streaming_callback=chunks.append)

    assert_one_line(info.value, "the stream ended before the reply was complete: no finish_reason")
    assert [c.content for c in chunks][:1] == ["he"]


@MODES
async def test_a_stream_with_a_finish_reason_and_no_done_is_accepted(mode: str) -> None:
    data = event(HE) + event(chunk({"content": "llo"}, "stop"))
    gen = RecordedServer(answering(data, content_type="text/event-stream")).generator(max_retries=0)

    (reply,) = await run(gen, mode, streaming_callback=ignore)

    assert reply.text == "hello"
    assert reply.meta["finish_reason"] == "stop"


# --------------------------------------------------------------------------- no choices, no stream


@MODES
async def test_zero_choices_is_a_generation_error(mode: str) -> None:
    body = {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": []}
    gen = RecordedServer(answering(body)).generator(max_retries=0)

    with pytest.raises(GenerationError) as info:
        await run(gen, mode)

    assert_one_line(info.value, "it returned no choices")


@MODES
async def test_a_stream_without_any_event_is_a_generation_error(mode: str) -> None:
    gen = RecordedServer(answering(b"not json")).generator(max_retries=0)  # no SSE at all

    with pytest.raises(GenerationError) as info:
        await run(gen, mode, streaming_callback=ignore)

    assert_one_line(info.value, "the stream ended without a single event")


def test_a_stream_without_any_choice_is_a_generation_error() -> None:
    usage = {"id": "x", "model": "m", "choices": [], "usage": {"prompt_tokens": 1, "total_tokens": 1}}
    gen = RecordedServer(streaming(usage)).generator(max_retries=0)

    with pytest.raises(GenerationError) as info:
        gen.run(HI, streaming_callback=ignore)

    assert_one_line(info.value, "it returned no choices")


# --------------------------------------------------------------------------- tool-call arguments


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [({"a": 1, "b": 2}, {"a": 1, "b": 2}), ([1, 2], "[1, 2]"), (5, "5"), (None, {}), ("", {})],
    ids=["object", "array", "number", "null", "empty"],
)
def test_arguments_that_are_not_a_string_are_read(arguments: Any, expected: Any) -> None:
    gen = RecordedServer(answering(completion({"content": None, "tool_calls": [call(arguments)]}))).generator()

    (reply,) = gen.run(HI)["replies"]

    assert reply.tool_calls == [ToolCall(tool_name="add", arguments=expected, id="call_1")]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [({"a": 1}, {"a": 1}), ([1, 2], "[1, 2]"), (True, "true")],
    ids=["object", "array", "bool"],
)
def test_streamed_arguments_that_are_not_a_string_are_read(arguments: Any, expected: Any) -> None:
    delta = {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "add"}}]}
    more = {"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}
    gen = RecordedServer(streaming(chunk(delta), chunk(more), chunk({}, "tool_calls"))).generator()

    (reply,) = gen.run(HI, streaming_callback=ignore)["replies"]

    assert reply.tool_calls == [ToolCall(tool_name="add", arguments=expected, id="call_1")]


def test_the_agent_answers_array_arguments_with_an_error_result() -> None:
    server = RecordedServer(
        answering(completion({"content": None, "tool_calls": [call([1, 2])]}, "tool_calls")),
        answering(completion({"content": "Sorry."})),
    )
    agent = Agent(chat_generator=server.generator(), tools=[ADD])

    result = agent.run(HI)

    tool_message = result["messages"][2]
    assert tool_message.tool_call_result is not None
    assert tool_message.tool_call_result.error is True
    assert tool_message.tool_call_result.origin.arguments == "[1, 2]"
    assert result["last_message"].text == "Sorry."


# --------------------------------------------------------------------------- streamed calls without index or id


def unindexed(name: str | None, arguments: str) -> dict[str, Any]:
    function = {"arguments": arguments} if name is None else {"name": name, "arguments": arguments}
    return chunk({"tool_calls": [{"type": "function", "function": function}]})


def test_streamed_calls_without_index_or_id_are_not_merged() -> None:
    chunks: list[StreamingChunk] = []
    events = [unindexed("add", '{"a": 1}'), unindexed("add", '{"a": 2}'), chunk({}, "tool_calls")]
    gen = RecordedServer(streaming(*events)).generator()

    (reply,) = gen.run(HI, streaming_callback=chunks.append)["replies"]

    assert reply.tool_calls == [
        ToolCall(tool_name="add", arguments={"a": 1}),
        ToolCall(tool_name="add", arguments={"a": 2}),
    ]
    assert [(c.index, c.start) for c in chunks[:2]] == [(0, True), (1, True)]


def test_fragments_without_a_name_continue_the_call_they_follow() -> None:
    events = [
        unindexed("add", '{"a"'),
        unindexed(None, ": 1}"),
        unindexed("sub", '{"a": '),
        unindexed(None, "2}"),
        chunk({}, "tool_calls"),
    ]
    gen = RecordedServer(streaming(*events)).generator()

    (reply,) = gen.run(HI, streaming_callback=ignore)["replies"]

    assert reply.tool_calls == [
        ToolCall(tool_name="add", arguments={"a": 1}),
        ToolCall(tool_name="sub", arguments={"a": 2}),
    ]


def test_fragments_that_repeat_the_name_continue_the_call_until_its_arguments_are_whole() -> None:
    chunks: list[StreamingChunk] = []
    events = [
        unindexed("add", '{"a"'),
        unindexed("add", ": 1"),
        unindexed("add", "}"),
        unindexed("add", '{"a": 2}'),
        chunk({}, "tool_calls"),
    ]
    gen = RecordedServer(streaming(*events)).generator()

    (reply,) = gen.run(HI, streaming_callback=chunks.append)["replies"]

    assert reply.tool_calls == [
        ToolCall(tool_name="add", arguments={"a": 1}),
        ToolCall(tool_name="add", arguments={"a": 2}),
    ]
    assert [(c.index, c.start) for c in chunks[:4]] == [(0, True), (0, False), (0, False), (1, True)]


def test_a_fragment_naming_another_tool_starts_a_new_call_even_mid_arguments() -> None:
    events = [unindexed("add", '{"a"'), unindexed("sub", '{"a": 2}'), chunk({}, "tool_calls")]
    gen = RecordedServer(streaming(*events)).generator()

    (reply,) = gen.run(HI, streaming_callback=ignore)["replies"]

    assert reply.tool_calls == [
        ToolCall(tool_name="add", arguments='{"a"'),
        ToolCall(tool_name="sub", arguments={"a": 2}),
    ]


def object_fragment(arguments: Any, name: str | None = None) -> dict[str, Any]:
    function = {"arguments": arguments} if name is None else {"name": name, "arguments": arguments}
    return chunk({"tool_calls": [{"type": "function", "function": function}]})


@MODES
async def test_object_fragments_of_one_call_are_merged(mode: str) -> None:
    events = [object_fragment({"a": 1}, "add"), object_fragment({"b": 2}), chunk({}, "tool_calls")]
    gen = RecordedServer(streaming(*events)).generator()

    (reply,) = await run(gen, mode, streaming_callback=ignore)

    assert reply.tool_calls == [ToolCall(tool_name="add", arguments={"a": 1, "b": 2})]


def test_object_fragments_that_clash_are_kept_as_sent() -> None:
    events = [object_fragment({"a": 1}, "add"), object_fragment({"a": 2}), chunk({}, "tool_calls")]
    gen = RecordedServer(streaming(*events)).generator()

    (reply,) = gen.run(HI, streaming_callback=ignore)["replies"]

    assert reply.tool_calls == [ToolCall(tool_name="add", arguments='{"a": 1}{"a": 2}')]


def test_object_arguments_under_a_repeated_name_are_separate_calls() -> None:
    events = [object_fragment({"a": 1}, "add"), object_fragment({"a": 2}, "add"), chunk({}, "tool_calls")]
    gen = RecordedServer(streaming(*events)).generator()

    (reply,) = gen.run(HI, streaming_callback=ignore)["replies"]

    assert reply.tool_calls == [
        ToolCall(tool_name="add", arguments={"a": 1}),
        ToolCall(tool_name="add", arguments={"a": 2}),
    ]


def test_fragments_with_an_index_keep_joining_even_when_the_name_repeats() -> None:
    def indexed(arguments: str) -> dict[str, Any]:
        return chunk({"tool_calls": [{"index": 0, "function": {"name": "add", "arguments": arguments}}]})

    gen = RecordedServer(streaming(indexed('{"a"'), indexed(": 1}"), chunk({}, "tool_calls"))).generator()

    (reply,) = gen.run(HI, streaming_callback=ignore)["replies"]

    assert reply.tool_calls == [ToolCall(tool_name="add", arguments={"a": 1})]


# --------------------------------------------------------------------------- connections that break


async def test_connection_lost_mid_stream_async() -> None:
    data = b"".join(b"data: " + json.dumps(chunk({"content": c})).encode() + b"\n\n" for c in ["In ", "Oslo", "."])
    server = RecordedServer(
        lambda request: httpx.Response(
            200, headers={"content-type": "text/event-stream"}, stream=DroppedBody(data, 200)
        )
    )

    with pytest.raises(GenerationError) as info:
        await server.generator(max_retries=0).run_async(HI, streaming_callback=ignore)

    assert str(info.value).startswith(
        f"Lost the connection to the OpenAI-compatible server at {BASE_URL} in the middle of its streamed reply: "
    )


@MODES
async def test_connection_lost_in_the_middle_of_a_body_is_not_called_unreachable(mode: str) -> None:
    data = json.dumps(completion({"content": "In Oslo it is sunny."})).encode()
    server = RecordedServer(
        lambda request: httpx.Response(200, headers={"content-type": "application/json"}, stream=DroppedBody(data, 40))
    )

    with pytest.raises(GenerationError) as info:
        await run(server.generator(max_retries=0), mode)

    assert str(info.value) == (
        f"Lost the connection to the OpenAI-compatible server at {BASE_URL} before its reply was complete: "
        f"peer closed connection without sending complete message body"
    )


# --------------------------------------------------------------------------- init arguments


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"organization": 5}, ConfigurationTypeError, "organization must be a str"),
        ({"http_client": "x"}, ConfigurationTypeError, "http_client must be an httpx.Client, got str"),
        ({"async_http_client": httpx.Client()}, ConfigurationTypeError, "must be an httpx.AsyncClient, got Client"),
        ({"timeout": "5"}, ConfigurationTypeError, "timeout must be a number of seconds, got str"),
        ({"timeout": 0}, ConfigurationError, "timeout must be a positive number"),
        ({"max_retries": "2"}, ConfigurationTypeError, "max_retries must be an integer, got str"),
        ({"max_retries": -1}, ConfigurationError, "max_retries must be an integer ≥ 0"),
    ],
    ids=["organization", "http-client", "async-client", "timeout-str", "timeout-zero", "retries-str", "retries-neg"],
)
def test_init_arguments_of_the_wrong_type_or_value_are_refused(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        OpenAIChatGenerator(api_key=Secret.from_token("k"), **kwargs)
