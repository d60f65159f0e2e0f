"""One Agent instance run concurrently from threads and asyncio tasks keeps every run separate.

An Agent holds no per-run state on itself.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from handrail.components.agents import Agent
from handrail.dataclasses import ChatRole
from handrail.tools import create_tool_from_function

from .._helpers import USAGE, EchoGenerator, user

RUNS = 8


def check_result(out: dict[str, Any], text: str) -> None:
    messages = out["messages"]
    assert [m.role for m in messages] == [ChatRole.USER, ChatRole.ASSISTANT, ChatRole.TOOL, ChatRole.ASSISTANT]
    assert messages[0].text == text
    assert messages[1].tool_calls[0].arguments == {"text": text}
    assert messages[1].tool_calls[0].id == f"id-{text}"
    assert messages[2].tool_call_result.result == text
    assert messages[2].tool_call_result.origin.id == f"id-{text}"
    assert messages[3].text == f"done: {text}"
    assert out["last_message"] is messages[-1]
    assert out["step_count"] == 2
    assert out["tool_call_counts"] == {"echo": 1}
    assert out["token_usage"] == {k: 2 * v for k, v in USAGE.items()}
    assert out["exit_reason"] == "text"
    assert out["seen"] == [text]


def test_one_agent_from_eight_threads() -> None:
    barrier = threading.Barrier(RUNS, timeout=10)

    def echo(text: str) -> dict[str, Any]:
        barrier.wait()  # every run is inside its tool step at the same time
        return {"text": text}

    tool = create_tool_from_function(
        echo, outputs_to_state={"seen": {"source": "text"}}, outputs_to_string={"source": "text"}
    )
    agent = Agent(chat_generator=EchoGenerator(), tools=[tool], state_schema={"seen": {"type": list[str]}})
    texts = [f"message-{i}" for i in range(RUNS)]
    with ThreadPoolExecutor(max_workers=RUNS) as pool:
        outs = list(pool.map(lambda t: agent.run([user(t)]), texts))
    for out, text in zip(outs, texts, strict=True):
        check_result(out, text)


async def test_one_agent_from_eight_asyncio_tasks() -> None:
    barrier = asyncio.Barrier(RUNS)

    async def echo(text: str) -> dict[str, Any]:
        await asyncio.wait_for(barrier.wait(), 10)
        return {"text": text}

    tool = create_tool_from_function(
        echo, outputs_to_state={"seen": {"source": "text"}}, outputs_to_string={"source": "text"}
    )
    agent = Agent(chat_generator=EchoGenerator(), tools=[tool], state_schema={"seen": {"type": list[str]}})
    texts = [f"task-{i}" for i in range(RUNS)]
    outs = await asyncio.gather(*(agent.run_async([user(t)]) for t in texts))
    for out, text in zip(outs, texts, strict=True):
        check_result(out, text)


def test_concurrent_runs_with_different_run_arguments() -> None:
    barrier = threading.Barrier(4, timeout=10)

    def echo(text: str) -> str:
        barrier.wait()
        return text

    agent = Agent(chat_generator=EchoGenerator(), tools=[create_tool_from_function(echo)], system_prompt="base")

    def one(i: int) -> dict[str, Any]:
        return agent.run([user(f"u{i}")], system_prompt=f"sys{i}" if i % 2 else None)

    with ThreadPoolExecutor(max_workers=4) as pool:
        outs = list(pool.map(one, range(4)))
    for i, out in enumerate(outs):
        assert out["messages"][0].text == (f"sys{i}" if i % 2 else "base")
        assert out["messages"][1].text == f"u{i}"
        assert out["last_message"].text == f"done: u{i}"
    assert agent.system_prompt == "base"
