"""Under run_async, no store call blocks the event loop: a sync store's calls run in worker threads."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path
from typing import Any

import pytest

import handrail
from handrail import Agent
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.stores.snapshot_file import FileSnapshotStore
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Toolset, create_tool_from_function

WRITE_SECONDS = 0.2


class SlowStore(FileSnapshotStore):
    """A directory store whose every write and claim takes 200 ms (a slow database, in a sync client)."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.slow_calls: list[str] = []

    def _slow(self, name: str) -> None:
        self.slow_calls.append(name)
        time.sleep(WRITE_SECONDS)

    def create(self, *args: Any, **kwargs: Any) -> Any:
        self._slow("create")
        return super().create(*args, **kwargs)

    def replace(self, *args: Any, **kwargs: Any) -> Any:
        self._slow("replace")
        return super().replace(*args, **kwargs)

    def append_entries(self, *args: Any, **kwargs: Any) -> Any:
        self._slow("append_entries")
        return super().append_entries(*args, **kwargs)

    def continue_in(self, *args: Any, **kwargs: Any) -> Any:
        self._slow("continue_in")
        return super().continue_in(*args, **kwargs)

    def claim(self, *args: Any, **kwargs: Any) -> Any:
        self._slow("claim")
        return super().claim(*args, **kwargs)


def pay(amount: int) -> str:
    """Pay an amount."""
    return f"paid {amount}"


def agent(store: SlowStore, replies: list[ChatMessage]) -> Agent:
    return Agent(
        chat_generator=ScriptedChatGenerator(replies),
        tools=[create_tool_from_function(pay)],
        confirmation_strategies={"pay": BreakpointConfirmationStrategy(snapshot_store=store)},
    )


async def pause_and_resume(store: SlowStore, call_id: str) -> dict[str, Any]:
    asking = ChatMessage.from_assistant(tool_calls=[ToolCall(tool_name="pay", arguments={"amount": 3}, id=call_id)])
    with pytest.raises(HITLBreakpointException) as paused:
        await agent(store, [asking]).run_async([ChatMessage.from_user("pay 3")])
    snapshot_id = paused.value.snapshot.snapshot_id
    assert snapshot_id is not None
    return await handrail.resume_async(
        snapshot_id, store=store, agent=agent(store, [ChatMessage.from_assistant("done")]),
        decisions=[ToolExecutionDecision("pay", True, call_id)],
    )  # fmt: skip


async def longest_gap_while(work: Any) -> float:
    """The longest time the event loop left a coroutine that ticks every 10 ms waiting, while ``work`` ran."""
    gaps: list[float] = []
    stop = asyncio.Event()

    async def tick() -> None:
        last = time.monotonic()
        while not stop.is_set():
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last - 0.01)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.02)
    try:
        await work
    finally:
        stop.set()
        await ticker
    return max(gaps)


def test_a_slow_sync_store_does_not_block_the_event_loop(tmp_path: Path) -> None:
    store = SlowStore(tmp_path / "approvals")

    async def main() -> tuple[dict[str, Any], float]:
        await pause_and_resume(store, "warm")  # imports and first warm-up out of the way
        store.slow_calls.clear()
        outcome: dict[str, Any] = {}

        async def work() -> None:
            outcome.update(await pause_and_resume(store, "measured"))

        gap = await longest_gap_while(work())
        return outcome, gap

    result, gap = asyncio.run(main())
    assert result["last_message"].text == "done"
    # the pause, the claim of the resume, the writes around the call and the done record all went to the store
    assert {"create", "claim", "replace"} <= set(store.slow_calls)
    assert len(store.slow_calls) >= 4
    assert gap < 0.05, f"the event loop was blocked for {gap * 1000:.0f} ms"


class ConnectedToolset(Toolset):
    """A toolset that has its tools only once warmed up (as an MCP toolset after connecting)."""

    def __init__(self) -> None:
        super().__init__([])

    def warm_up(self) -> None:
        if not self.tools:
            self.tools = [create_tool_from_function(pay)]


def test_a_toolset_is_warmed_before_its_tools_are_listed_for_the_first_run(tmp_path: Path) -> None:
    def make(replies: list[ChatMessage]) -> Agent:
        return Agent(
            chat_generator=ScriptedChatGenerator(replies),
            tools=ConnectedToolset(),
            confirmation_strategies={"pay": BreakpointConfirmationStrategy(str(tmp_path))},
        )

    asking = ChatMessage.from_assistant(tool_calls=[ToolCall(tool_name="pay", arguments={"amount": 1}, id="p1")])
    with pytest.raises(HITLBreakpointException) as paused:
        make([asking]).run([ChatMessage.from_user("pay")])
    assert list(paused.value.snapshot.fingerprint["tools"]) == ["pay"]  # listed after the warm-up
    snapshot = dataclasses.replace(
        paused.value.snapshot, tool_execution_decisions=[ToolExecutionDecision("pay", True, "p1")]
    )
    result = make([ChatMessage.from_assistant("paid")]).run([], snapshot=snapshot)  # no drift: same tools
    assert result["last_message"].text == "paid"
