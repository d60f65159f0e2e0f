"""C05 — streaming callbacks, sync and async: chunks arrive in order; async ones are refused by sync runs."""

from __future__ import annotations

import asyncio
import gc
import warnings
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, StreamingChunk, ToolCall, ToolCallDelta
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool, create_tool_from_function
from tests.cases._helpers import result_for, user


def tool_call_chunks() -> list[StreamingChunk]:
    """A streamed call to capital whose arguments arrive in three fragments."""
    return [
        StreamingChunk(index=0, start=True, tool_calls=[ToolCallDelta(index=0, tool_name="capital", id="c1")]),
        StreamingChunk(index=0, tool_calls=[ToolCallDelta(index=0, arguments='{"coun')]),
        StreamingChunk(index=0, tool_calls=[ToolCallDelta(index=0, arguments='try": "Fr')]),
        StreamingChunk(index=0, tool_calls=[ToolCallDelta(index=0, arguments='ance"}')]),
        StreamingChunk(finish_reason="tool_calls"),
    ]


def text_chunks() -> list[StreamingChunk]:
    return [
        StreamingChunk(content="Par", index=0, start=True),
        StreamingChunk(content="is", index=0),
        StreamingChunk(finish_reason="stop"),
    ]


def make_capital() -> tuple[Tool, list[str]]:
    ran: list[str] = []

    def capital(country: str) -> str:
        ran.append(country)
        return "Paris"

    return create_tool_from_function(capital), ran


def make_gen() -> ScriptedChatGenerator:
    return ScriptedChatGenerator([tool_call_chunks(), text_chunks()])


def check_sequence(seen: list[StreamingChunk]) -> None:
    """Tool-call chunks, one chunk with the tool result, the tool step's closing chunk, text chunks."""
    calls, texts = tool_call_chunks(), text_chunks()
    assert len(seen) == len(calls) + 2 + len(texts), seen
    assert seen[: len(calls)] == calls
    result_chunk = seen[len(calls)]
    assert result_chunk.tool_call_result is not None
    assert result_chunk.tool_call_result.result == "Paris"
    assert result_chunk.tool_call_result.error is False
    assert result_chunk.tool_call_result.origin == ToolCall("capital", {"country": "France"}, "c1")
    closing = seen[len(calls) + 1]
    assert closing.tool_call_result is None
    assert closing.finish_reason == "tool_call_results"
    assert closing.content == ""
    assert seen[len(calls) + 2 :] == texts
    assert [c for c in seen if c.tool_call_result is not None] == [result_chunk]


def check_result(result: dict[str, Any], gen: ScriptedChatGenerator, ran: list[str]) -> None:
    assert len(gen.calls) == 2
    assert ran == ["France"]
    assert result["exit_reason"] == "text"
    assert result["last_message"].text == "Paris"
    assembled = result["messages"][1]
    assert assembled.tool_calls == [ToolCall("capital", {"country": "France"}, "c1")]
    assert result_for(gen.calls[1]["messages"], "c1").result == "Paris"


class SyncOnly:
    """A chat generator without run_async: the async run calls its run in a worker thread."""

    def __init__(self, inner: ScriptedChatGenerator) -> None:
        self.inner = inner

    def run(self, messages: list[ChatMessage], tools: Any = None, streaming_callback: Any = None):
        return self.inner.run(messages, tools=tools, streaming_callback=streaming_callback)


def recorders() -> tuple[list[StreamingChunk], Any, Any]:
    seen: list[StreamingChunk] = []

    async def async_cb(chunk: StreamingChunk) -> None:
        await asyncio.sleep(0)
        seen.append(chunk)

    def sync_cb(chunk: StreamingChunk) -> None:
        seen.append(chunk)

    return seen, async_cb, sync_cb


async def test_async_streaming_callback():
    capital, ran = make_capital()
    gen = make_gen()
    seen, async_cb, _ = recorders()
    agent = Agent(chat_generator=gen, tools=[capital])

    result = await agent.run_async([user("Capital of France?")], streaming_callback=async_cb)

    check_sequence(seen)
    check_result(result, gen, ran)


@pytest.mark.parametrize(
    "how", ["async-run-sync-cb", "async-run-init-async-cb", "async-run-sync-only-generator", "sync-run-sync-cb"]
)
def test_every_callback_path_sees_the_same_sequence(how):
    capital, ran = make_capital()
    gen = make_gen()
    seen, async_cb, sync_cb = recorders()
    messages = [user("Capital of France?")]
    if how == "async-run-sync-cb":
        result = asyncio.run(Agent(chat_generator=gen, tools=[capital]).run_async(messages, sync_cb))
    elif how == "async-run-init-async-cb":
        agent = Agent(chat_generator=gen, tools=[capital], streaming_callback=async_cb)
        result = asyncio.run(agent.run_async(messages))
    elif how == "async-run-sync-only-generator":
        agent = Agent(chat_generator=SyncOnly(gen), tools=[capital])
        result = asyncio.run(agent.run_async(messages, streaming_callback=async_cb))
    else:
        result = Agent(chat_generator=gen, tools=[capital]).run(messages, streaming_callback=sync_cb)

    check_sequence(seen)
    check_result(result, gen, ran)


@pytest.mark.parametrize("where", ["run", "init"])
def test_async_callback_is_refused_by_sync_run_before_any_model_call(where):
    capital, ran = make_capital()
    gen = make_gen()
    seen, async_cb, _ = recorders()
    if where == "init":
        agent = Agent(chat_generator=gen, tools=[capital], streaming_callback=async_cb)
        kwargs: dict[str, Any] = {}
    else:
        agent = Agent(chat_generator=gen, tools=[capital])
        kwargs = {"streaming_callback": async_cb}

    with pytest.raises(TypeError, match="streaming_callback"):
        agent.run([user("Capital of France?")], **kwargs)

    assert gen.calls == []
    assert ran == []
    assert seen == []


class AsyncCallable:
    """An async callback that is an object with ``async def __call__`` (not a coroutine function)."""

    def __init__(self) -> None:
        self.seen: list[StreamingChunk] = []

    async def __call__(self, chunk: StreamingChunk) -> None:
        await asyncio.sleep(0)
        self.seen.append(chunk)


def test_async_callable_object_with_an_async_generator_sees_the_sequence():
    capital, ran = make_capital()
    gen = make_gen()
    cb = AsyncCallable()

    result = asyncio.run(Agent(chat_generator=gen, tools=[capital]).run_async([user("Capital?")], cb))

    check_sequence(cb.seen)
    check_result(result, gen, ran)


def test_async_callable_object_is_refused_by_sync_run_before_any_model_call():
    capital, ran = make_capital()
    gen = make_gen()
    cb = AsyncCallable()
    agent = Agent(chat_generator=gen, tools=[capital])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "coroutine ... was never awaited" while the bug lasts
        try:
            with pytest.raises(TypeError, match="streaming_callback"):
                agent.run([user("Capital of France?")], streaming_callback=cb)
        finally:
            gc.collect()

    assert gen.calls == []
    assert ran == []


def test_async_callable_object_with_a_sync_only_generator_sees_the_sequence():
    capital, ran = make_capital()
    gen = make_gen()
    cb = AsyncCallable()
    agent = Agent(chat_generator=SyncOnly(gen), tools=[capital])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "coroutine ... was never awaited" while the bug lasts
        try:
            result = asyncio.run(agent.run_async([user("Capital of France?")], streaming_callback=cb))
        finally:
            gc.collect()

    check_sequence(cb.seen)
    check_result(result, gen, ran)
