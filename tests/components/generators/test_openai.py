"""OpenAIChatGenerator against recorded HTTP exchanges, replayed through an injected httpx transport.

No network and no patching of SDK internals: every test hands the SDK an ``httpx.Client`` /
``httpx.AsyncClient`` whose ``MockTransport`` serves recorded responses (fixtures/openai/) in
order and records the requests, so the tests can assert what the server received.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import httpx
import pytest

from handrail.components.agents import Agent
from handrail.components.generators.chat import OpenAIChatGenerator
from handrail.core import Secret
from handrail.dataclasses import ChatMessage, StreamingChunk, ToolCall
from handrail.errors import ConfigurationError, ConfigurationTypeError, GenerationError, SerializationError
from handrail.tools import Tool, create_tool_from_function
from tests.components.generators._openai_server import (
    BASE_URL,
    FIXTURES,
    DroppedBody,
    RecordedServer,
    failing,
    recorded,
)

MODEL = "gpt-4o-mini"


# --------------------------------------------------------------------------- tools and callbacks


def weather(city: str) -> dict[str, Any]:
    """Get the current weather for a city."""
    return {"city": city, "sky": "sunny", "celsius": 7}


def local_time(city: str, tz: bool = False) -> str:
    """Get the local time in a city."""
    return f"14:05 in {city}" + (" (CET)" if tz else "")


WEATHER = create_tool_from_function(weather)
LOCAL_TIME = create_tool_from_function(local_time)


def print_chunk(chunk: StreamingChunk) -> None:
    """A module-level (serializable) streaming callback."""


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)


# --------------------------------------------------------------------------- plain replies and the request


def test_text_reply_and_request_body() -> None:
    server = RecordedServer(recorded("completion_text.json"))
    gen = server.generator(generation_kwargs={"temperature": 0.2, "max_tokens": 64})
    messages = [ChatMessage.from_system("Answer briefly."), ChatMessage.from_user("Capital of Norway?", name="ana")]

    replies = gen.run(messages, generation_kwargs={"temperature": 0.0, "seed": 7})["replies"]

    (request,) = server.requests
    assert str(request.url) == f"{BASE_URL}/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test-123"
    assert server.bodies[0] == {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "Capital of Norway?", "name": "ana"},
        ],
        "temperature": 0.0,
        "max_tokens": 64,
        "seed": 7,
    }
    (reply,) = replies
    assert reply.text == "The capital of Norway is Oslo."
    assert reply.tool_calls == []
    assert reply.meta["model"] == "gpt-4o-mini-2024-07-18"
    assert reply.meta["index"] == 0
    assert reply.meta["finish_reason"] == "stop"
    assert reply.meta["usage"]["prompt_tokens"] == 24
    assert reply.meta["usage"]["completion_tokens"] == 8
    assert reply.meta["usage"]["total_tokens"] == 32
    assert reply.meta["usage"]["completion_tokens_details"]["reasoning_tokens"] == 0
    json.dumps(reply.to_dict())  # meta stays JSON-compatible


def test_tool_call_reply_keeps_invalid_arguments_raw() -> None:
    server = RecordedServer(recorded("completion_tool_calls.json"))
    gen = server.generator(tools=[WEATHER])

    (reply,) = gen.run([ChatMessage.from_user("Weather in Oslo and Bergen?")])["replies"]

    assert server.bodies[0]["tools"] == [{"type": "function", "function": WEATHER.tool_spec}]
    assert reply.text is None
    assert reply.tool_calls == [
        ToolCall(tool_name="weather", arguments={"city": "Oslo"}, id="call_Lp3sQe8vRk2WmZ0uYt6NbH1c"),
        ToolCall(tool_name="weather", arguments='{"city": "Ber', id="call_Xa9dFg4HjK7lMn2PqR5sTu8v"),
    ]
    assert reply.meta["finish_reason"] == "tool_calls"
    assert reply.meta["usage"]["total_tokens"] == 94


def test_tools_strict_and_run_time_tools_override_init_tools() -> None:
    server = RecordedServer(*[recorded("completion_text.json")] * 3)
    gen = server.generator(tools=[WEATHER], tools_strict=True)

    gen.run([ChatMessage.from_user("a")])
    gen.run([ChatMessage.from_user("b")], tools=[LOCAL_TIME])
    gen.run([ChatMessage.from_user("c")], tools=[])

    first, second, third = server.bodies
    assert first["tools"] == [{"type": "function", "function": {**WEATHER.tool_spec, "strict": True}}]
    assert [t["function"]["name"] for t in second["tools"]] == ["local_time"]
    assert "tools" not in third


def test_tools_strict_of_a_run_wins_over_the_init_one() -> None:
    server = RecordedServer(*[recorded("completion_text.json")] * 2)
    gen = server.generator(tools=[WEATHER])
    gen.run([ChatMessage.from_user("a")], tools_strict=True)
    gen.run([ChatMessage.from_user("b")])
    first, second = server.bodies
    assert first["tools"][0]["function"]["strict"] is True
    assert "strict" not in second["tools"][0]["function"]
    with pytest.raises(ConfigurationTypeError, match="tools_strict"):
        gen.run([ChatMessage.from_user("c")], tools_strict="yes")  # type: ignore[arg-type]
    assert len(server.requests) == 2  # refused before anything was sent


def test_history_in_wire_format() -> None:
    server = RecordedServer(recorded("completion_text.json"))
    gen = server.generator()
    oslo = ToolCall(tool_name="weather", arguments={"city": "Zürich"}, id="call_1")
    raw = ToolCall(tool_name="weather", arguments='{"city": Bergen}', id="call_2")
    history = [
        ChatMessage.from_user("Weather?"),
        ChatMessage.from_assistant(tool_calls=[oslo, raw]),
        ChatMessage.from_tool('{"sky": "sunny"}', origin=oslo),
        ChatMessage.from_tool("Invalid JSON arguments", origin=raw, error=True),
        ChatMessage.from_assistant("Sunny in Zürich; which Bergen?", name="bot"),
        ChatMessage.from_user("Norway."),
    ]

    gen.run(history)

    assert server.bodies[0]["messages"] == [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Zürich"}'},
                },
                {"id": "call_2", "type": "function", "function": {"name": "weather", "arguments": '{"city": Bergen}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"sky": "sunny"}'},
        {"role": "tool", "tool_call_id": "call_2", "content": "Invalid JSON arguments"},
        {"role": "assistant", "content": "Sunny in Zürich; which Bergen?", "name": "bot"},
        {"role": "user", "content": "Norway."},
    ]


@pytest.mark.parametrize(
    "message",
    [
        ChatMessage.from_assistant(tool_calls=[ToolCall(tool_name="weather", arguments={})]),
        ChatMessage.from_tool("sunny", origin=ToolCall(tool_name="weather", arguments={})),
    ],
    ids=["call", "result"],
)
def test_a_call_without_id_is_refused_before_sending(message: ChatMessage) -> None:
    server = RecordedServer()
    with pytest.raises(ConfigurationError, match=r"messages\[1\].*'weather' has no .*id"):
        server.generator().run([ChatMessage.from_user("hi"), message])
    assert server.requests == []


# --------------------------------------------------------------------------- streaming


@pytest.mark.parametrize("fixture", ["stream_parallel_tool_calls.sse", "stream_parallel_tool_calls_interleaved.sse"])
def test_streamed_parallel_tool_calls_are_assembled(fixture: str) -> None:
    server = RecordedServer(recorded(fixture))
    chunks: list[StreamingChunk] = []
    gen = server.generator(tools=[WEATHER, LOCAL_TIME], streaming_callback=chunks.append)

    (reply,) = gen.run([ChatMessage.from_user("Weather in Oslo, time in Zürich?")])["replies"]

    body = server.bodies[0]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert reply.text is None
    assert reply.tool_calls == [
        ToolCall(tool_name="weather", arguments={"city": "Oslo"}, id="call_Wq81kXo2HnT4vB6yLd0Pa3Ze"),
        ToolCall(tool_name="local_time", arguments={"city": "Zürich", "tz": True}, id="call_7GmZr2QeUo9sKc1VbX4yTn5L"),
    ]
    assert reply.meta["finish_reason"] == "tool_calls"
    assert reply.meta["model"] == "gpt-4o-mini-2024-07-18"
    assert reply.meta["usage"]["prompt_tokens"] == 118
    assert reply.meta["usage"]["total_tokens"] == 170

    # The callback saw every SSE event, in the order sent.
    events = [json.loads(line[6:]) for line in (FIXTURES / fixture).read_text("utf-8").splitlines() if line[6:7] == "{"]
    assert len(chunks) == len(events)
    sent = [
        (tc["index"], tc.get("id"), tc["function"].get("arguments"))
        for e in events
        for c in e["choices"]
        for tc in c["delta"].get("tool_calls", [])
    ]
    seen = [(d.index, d.id, d.arguments) for c in chunks for d in c.tool_calls or []]
    assert seen == sent
    starts = [c for c in chunks if c.start]
    assert [c.tool_calls[0].tool_name for c in starts if c.tool_calls] == ["weather", "local_time"]
    assert chunks[-2].finish_reason == "tool_calls"
    assert chunks[-1].meta["usage"]["completion_tokens"] == 52
    assert chunks[-1].content == "" and chunks[-1].tool_calls is None


def test_streamed_text_reply() -> None:
    server = RecordedServer(recorded("stream_text.sse"))
    chunks: list[StreamingChunk] = []
    gen = server.generator()

    (reply,) = gen.run([ChatMessage.from_user("Weather?")], streaming_callback=chunks.append)["replies"]

    assert reply.text == "In Oslo it is sunny and 7 °C; in Zürich it is 14:05."
    assert "".join(c.content for c in chunks) == reply.text
    assert [c.start for c in chunks if c.content] == [True, False, False, False, False]
    assert reply.meta["finish_reason"] == "stop"
    assert reply.meta["usage"] == chunks[-1].meta["usage"]
    assert reply.meta["usage"]["total_tokens"] == 217


async def test_streamed_parallel_tool_calls_async_with_async_callback() -> None:
    server = RecordedServer(recorded("stream_parallel_tool_calls.sse"))
    chunks: list[StreamingChunk] = []

    async def collect(chunk: StreamingChunk) -> None:
        chunks.append(chunk)

    gen = server.generator(tools=[WEATHER, LOCAL_TIME])
    (reply,) = (await gen.run_async([ChatMessage.from_user("Oslo? Zürich?")], streaming_callback=collect))["replies"]

    assert [c.arguments for c in reply.tool_calls] == [{"city": "Oslo"}, {"city": "Zürich", "tz": True}]
    assert [c.id for c in reply.tool_calls] == ["call_Wq81kXo2HnT4vB6yLd0Pa3Ze", "call_7GmZr2QeUo9sKc1VbX4yTn5L"]
    assert len(chunks) == 11
    assert reply.meta["usage"]["total_tokens"] == 170


async def test_run_async_without_streaming_and_with_a_sync_callback() -> None:
    server = RecordedServer(recorded("completion_text.json"), recorded("stream_text.sse"))
    gen = server.generator()
    chunks: list[StreamingChunk] = []

    plain = (await gen.run_async([ChatMessage.from_user("Capital?")]))["replies"][0]
    streamed = (await gen.run_async([ChatMessage.from_user("Weather?")], streaming_callback=chunks.append))["replies"]

    assert plain.text == "The capital of Norway is Oslo."
    assert streamed[0].text == "In Oslo it is sunny and 7 °C; in Zürich it is 14:05."
    assert len(chunks) == 8


def test_run_time_callback_beats_init_callback() -> None:
    server = RecordedServer(recorded("stream_text.sse"))
    init_chunks: list[StreamingChunk] = []
    run_chunks: list[StreamingChunk] = []
    gen = server.generator(streaming_callback=init_chunks.append)

    gen.run([ChatMessage.from_user("Weather?")], streaming_callback=run_chunks.append)

    assert init_chunks == [] and len(run_chunks) == 8


def test_sync_run_refuses_an_async_callback() -> None:
    async def collect(chunk: StreamingChunk) -> None:  # pragma: no cover - never called
        pass

    server = RecordedServer()
    with pytest.raises(ConfigurationTypeError, match="run_async"):
        server.generator().run([ChatMessage.from_user("hi")], streaming_callback=collect)
    assert server.requests == []


def test_streaming_several_choices_is_refused() -> None:
    server = RecordedServer()
    with pytest.raises(ConfigurationError, match="n=2"):
        server.generator(generation_kwargs={"n": 2}).run([ChatMessage.from_user("hi")], streaming_callback=print_chunk)


# --------------------------------------------------------------------------- generation kwargs


@pytest.mark.parametrize("key", ["stream", "model", "messages", "tools"])
def test_reserved_generation_kwargs_are_refused(key: str) -> None:
    with pytest.raises(ConfigurationError, match=f"'{key}'"):
        OpenAIChatGenerator(generation_kwargs={key: True})


def test_unknown_generation_kwargs_point_to_extra_body() -> None:
    server = RecordedServer(recorded("completion_text.json"))
    gen = server.generator()
    with pytest.raises(ConfigurationError, match=r"\['top_k'\].*extra_body"):
        gen.run([ChatMessage.from_user("hi")], generation_kwargs={"top_k": 20})
    assert server.requests == []

    gen.run([ChatMessage.from_user("hi")], generation_kwargs={"extra_body": {"top_k": 20}, "tool_choice": "auto"})
    assert server.bodies[0]["top_k"] == 20
    assert server.bodies[0]["tool_choice"] == "auto"


# --------------------------------------------------------------------------- the Agent against the server


def test_agent_end_to_end_sync() -> None:
    server = RecordedServer(recorded("completion_tool_call_oslo.json"), recorded("completion_final_answer.json"))
    agent = Agent(chat_generator=server.generator(), tools=[WEATHER], system_prompt="Use tools.")

    result = agent.run([ChatMessage.from_user("Weather in Oslo?")])

    assert result["exit_reason"] == "text"
    assert result["last_message"].text == "It is sunny in Oslo, 7 °C."
    assert result["token_usage"] == {"prompt_tokens": 170, "completion_tokens": 27, "total_tokens": 197}
    assert result["tool_call_counts"] == {"weather": 1}
    second = server.bodies[1]
    assert second["messages"] == [
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Weather in Oslo?"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_Lp3sQe8vRk2WmZ0uYt6NbH1c",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_Lp3sQe8vRk2WmZ0uYt6NbH1c",
            "content": '{"city": "Oslo", "sky": "sunny", "celsius": 7}',
        },
    ]
    assert [t["function"]["name"] for t in second["tools"]] == ["weather"]


async def test_agent_end_to_end_async_streaming_parallel_calls() -> None:
    server = RecordedServer(recorded("stream_parallel_tool_calls.sse"), recorded("stream_text.sse"))
    chunks: list[StreamingChunk] = []

    async def collect(chunk: StreamingChunk) -> None:
        chunks.append(chunk)

    agent = Agent(chat_generator=server.generator(), tools=[WEATHER, LOCAL_TIME])
    result = await agent.run_async([ChatMessage.from_user("Weather in Oslo, time in Zürich?")], collect)

    assert result["exit_reason"] == "text"
    assert result["last_message"].text == "In Oslo it is sunny and 7 °C; in Zürich it is 14:05."
    assert result["tool_call_counts"] == {"weather": 1, "local_time": 1}
    assert result["token_usage"]["total_tokens"] == 170 + 217
    tool_messages = server.bodies[1]["messages"][2:]
    oslo = json.dumps(weather("Oslo"))
    assert tool_messages == [
        {"role": "tool", "tool_call_id": "call_Wq81kXo2HnT4vB6yLd0Pa3Ze", "content": oslo},
        {"role": "tool", "tool_call_id": "call_7GmZr2QeUo9sKc1VbX4yTn5L", "content": "14:05 in Zürich (CET)"},
    ]
    assert sum(1 for c in chunks if c.tool_call_result is not None) == 2


# --------------------------------------------------------------------------- failures


def test_unreachable_server_gives_one_line_error_with_the_url() -> None:
    server = RecordedServer(failing(httpx.ConnectError, "[Errno 111] Connection refused"))
    gen = server.generator(api_base_url="http://127.0.0.1:9/v1", max_retries=0)

    with pytest.raises(GenerationError) as info:
        gen.run([ChatMessage.from_user("hi")])

    message = str(info.value)
    assert "\n" not in message
    assert "http://127.0.0.1:9/v1" in message
    assert "Connection refused" in message
    assert info.value.url == "http://127.0.0.1:9/v1"
    assert info.value.status_code is None


async def test_unreachable_server_async() -> None:
    server = RecordedServer(failing(httpx.ConnectError, "All connection attempts failed"))
    gen = server.generator(api_base_url="http://localhost:11434/v1", max_retries=0)

    with pytest.raises(GenerationError, match=r"^Cannot reach .* at http://localhost:11434/v1: All connection") as info:
        await gen.run_async([ChatMessage.from_user("hi")], streaming_callback=print_chunk)
    assert "\n" not in str(info.value)


def test_connection_lost_mid_stream_names_the_url() -> None:
    data = (FIXTURES / "stream_text.sse").read_bytes()
    server = RecordedServer(
        lambda request: httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=DroppedBody(data))
    )
    chunks: list[StreamingChunk] = []

    with pytest.raises(GenerationError) as info:
        server.generator(max_retries=0).run([ChatMessage.from_user("hi")], streaming_callback=chunks.append)

    assert str(info.value) == (
        f"Lost the connection to the OpenAI-compatible server at {BASE_URL} in the middle of its streamed "
        f"reply: peer closed connection without sending complete message body"
    )
    assert info.value.url == BASE_URL
    assert chunks and chunks[-1].content == "In Oslo"  # what arrived before the drop was streamed


def test_timeout_and_retries_come_from_the_sdk() -> None:
    server = RecordedServer(
        failing(httpx.ReadTimeout, "timed out"),
        recorded("error_401.json", status=503, headers={"retry-after-ms": "1"}),
        recorded("completion_text.json"),
    )
    gen = server.generator(timeout=12.5, max_retries=2)

    reply = gen.run([ChatMessage.from_user("hi")])["replies"][0]

    assert reply.text == "The capital of Norway is Oslo."
    assert len(server.requests) == 3
    assert server.requests[-1].extensions["timeout"]["read"] == 12.5

    no_retry = RecordedServer(failing(httpx.ReadTimeout, "timed out")).generator(max_retries=0)
    with pytest.raises(GenerationError, match=r"llm\.test:8000/v1 did not answer in time"):
        no_retry.run([ChatMessage.from_user("hi")])


def test_error_status_carries_status_and_message() -> None:
    server = RecordedServer(recorded("error_401.json", status=401))
    gen = server.generator(api_key=Secret.from_token("sk-wrong"))

    with pytest.raises(GenerationError) as info:
        gen.run([ChatMessage.from_user("hi")])

    assert info.value.status_code == 401
    assert str(info.value).startswith(
        f"The OpenAI-compatible server at {BASE_URL} answered HTTP 401: Incorrect API key"
    )
    assert "\n" not in str(info.value)


def test_a_wrong_base_url_gives_a_short_one_line_error() -> None:
    page = "<html>\n<head><title>404 Not Found</title></head>\n<body>" + "x" * 2000 + "</body>\n</html>"
    server = RecordedServer(lambda request: httpx.Response(404, headers={"content-type": "text/html"}, text=page))

    with pytest.raises(GenerationError) as info:
        server.generator(api_base_url="http://llm.test:8000").run([ChatMessage.from_user("hi")])

    message = str(info.value)
    assert info.value.status_code == 404
    assert message.startswith("The OpenAI-compatible server at http://llm.test:8000 answered HTTP 404:")
    assert "\n" not in message and len(message) < 500


# --------------------------------------------------------------------------- the API key


def test_missing_env_var_is_reported_on_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    server = RecordedServer(recorded("completion_text.json"))
    gen = server.generator(api_key=Secret.from_env_var("OPENAI_API_KEY"))  # built without the variable

    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        gen.run([ChatMessage.from_user("hi")])
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        gen.warm_up()
    assert server.requests == []

    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    gen.run([ChatMessage.from_user("hi")])
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-env"


def test_local_server_without_a_key() -> None:
    server = RecordedServer(recorded("completion_text.json"))
    gen = server.generator(api_key=Secret.from_env_var("OPENAI_API_KEY", strict=False))

    gen.run([ChatMessage.from_user("hi")])

    assert server.requests[0].headers["authorization"] == "Bearer none"


def test_api_key_must_be_a_secret() -> None:
    with pytest.raises(ConfigurationTypeError, match="Secret"):
        OpenAIChatGenerator(api_key="sk-plain")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- serialization


def test_default_generator_builds_and_serializes_without_the_key() -> None:
    data = OpenAIChatGenerator().to_dict()
    assert data == {
        "type": "handrail.components.generators.chat.openai.OpenAIChatGenerator",
        "init_parameters": {
            "api_key": {"type": "env_var", "env_vars": ["OPENAI_API_KEY"], "strict": True},
            "model": "gpt-4o-mini",
            "streaming_callback": None,
            "api_base_url": None,
            "organization": None,
            "generation_kwargs": {},
            "timeout": None,
            "max_retries": None,
            "tools": None,
            "tools_strict": False,
            "http_client_kwargs": None,
        },
    }


def test_round_trip_never_writes_the_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_LLM_KEY", "sk-very-secret-value")
    gen = RecordedServer().generator(
        api_key=Secret.from_env_var(["MY_LLM_KEY", "OPENAI_API_KEY"]),
        model="qwen2.5-7b-instruct",
        streaming_callback=print_chunk,
        generation_kwargs={"temperature": 0.1},
        timeout=30.0,
        max_retries=1,
        tools=[WEATHER],
        tools_strict=True,
        organization="org-1",
    )
    gen.warm_up()

    data = gen.to_dict()
    text = json.dumps(data)
    assert "sk-very-secret-value" not in text
    params = data["init_parameters"]
    assert params["api_key"] == {"type": "env_var", "env_vars": ["MY_LLM_KEY", "OPENAI_API_KEY"], "strict": True}
    assert params["streaming_callback"] == f"{__name__}.print_chunk"
    assert "http_client" not in params and "async_http_client" not in params

    snapshot = json.loads(text)
    again = OpenAIChatGenerator.from_dict(snapshot)
    assert snapshot == json.loads(text)  # not modified
    assert again.to_dict() == data
    assert again.api_key.resolve_value() == "sk-very-secret-value"
    assert again.streaming_callback is print_chunk
    assert isinstance(again.tools, list) and isinstance(again.tools[0], Tool)
    assert again.tools[0].name == "weather"


def test_a_token_key_is_never_serialized() -> None:
    gen = OpenAIChatGenerator(api_key=Secret.from_token("sk-very-secret-value"))
    with pytest.raises(SerializationError, match="plain text") as info:
        gen.to_dict()
    assert "sk-very-secret-value" not in str(info.value)
    assert "sk-very-secret-value" not in repr(gen.api_key)


def test_agent_with_the_generator_round_trips() -> None:
    agent = Agent(chat_generator=OpenAIChatGenerator(model="llama3.1", api_base_url=BASE_URL), tools=[WEATHER])
    again = Agent.from_dict(agent.to_dict())
    assert isinstance(again.chat_generator, OpenAIChatGenerator)
    assert again.chat_generator.api_base_url == BASE_URL
    assert again.to_dict() == agent.to_dict()


# --------------------------------------------------------------------------- imports


def test_importing_handrail_does_not_import_the_sdk() -> None:
    code = (
        "import sys, handrail, handrail.components.generators.chat as chat\n"
        "assert 'openai' not in sys.modules\n"
        "chat.OpenAIChatGenerator\n"
        "print('openai' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"  # the SDK loads when a generator is built, not on import
