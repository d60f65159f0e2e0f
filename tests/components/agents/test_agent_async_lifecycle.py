"""run_async's set-up and cancellation: claims released, queued calls never marked running, warm-up once and
off the event loop. Waits use events; no assertion is on wall time."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import SNAPSHOT_STATUSES
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.stores import FileSnapshotStore
from handrail.tools import create_tool_from_function

WAIT = 10.0  # seconds an event may take before the test gives up (a deadlock, not a slow machine)


class Stateless:
    """Calls the tools named in ``plan`` once, then answers with the tool results (safe to share)."""

    def __init__(self, plan: list[tuple[str, dict[str, Any]]]) -> None:
        self.plan = plan

    def run(self, messages: list[ChatMessage], tools: Any = None) -> dict[str, Any]:
        if messages[-1].tool_call_result is not None:
            results = [m.tool_call_result.result for m in messages if m.tool_call_result is not None]
            return {"replies": [ChatMessage.from_assistant("done: " + ", ".join(results))]}
        calls = [ToolCall(name, args, f"c{i}") for i, (name, args) in enumerate(self.plan)]
        return {"replies": [ChatMessage.from_assistant(tool_calls=calls)]}

    async def run_async(self, messages: list[ChatMessage], tools: Any = None) -> dict[str, Any]:
        return self.run(messages, tools)  # on the event loop: no worker thread for the model


async def until(condition: Any) -> None:
    for _ in range(int(WAIT / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition did not hold in time")


def test_a_resume_cancelled_while_it_claims_the_snapshot_releases_the_claim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[str] = []

    def pay(amount: int) -> str:
        """Pay."""
        ran.append(str(amount))
        return "paid"

    agent = Agent(
        chat_generator=Stateless([("pay", {"amount": 5})]),
        tools=[create_tool_from_function(pay)],
        confirmation_strategies={"pay": BreakpointConfirmationStrategy(str(tmp_path))},
    )
    with pytest.raises(HITLBreakpointException) as paused:
        agent.run([ChatMessage.from_user("pay")])
    decided = dataclasses.replace(
        paused.value.snapshot, tool_execution_decisions=[ToolExecutionDecision("pay", True, "c0")]
    )
    store = FileSnapshotStore(tmp_path)
    entered, go = threading.Event(), threading.Event()
    claim = FileSnapshotStore.claim

    def slow_claim(self: FileSnapshotStore, snapshot_id: str) -> Any:
        lease = claim(self, snapshot_id)
        entered.set()
        go.wait(WAIT)
        return lease

    monkeypatch.setattr(FileSnapshotStore, "claim", slow_claim)

    async def cancel_during_the_claim() -> None:
        task = asyncio.create_task(agent.run_async([], snapshot=decided))
        await until(entered.is_set)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        go.set()
        await until(lambda: not store.claimed(decided.snapshot_id))

    asyncio.run(cancel_during_the_claim())
    monkeypatch.setattr(FileSnapshotStore, "claim", claim)
    assert ran == []
    result = asyncio.run(agent.run_async([], snapshot=decided))
    assert result["last_message"].text == "done: paid"
    assert ran == ["5"]


def test_a_sync_tool_cancelled_before_its_thread_took_it_is_never_recorded_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[str] = []

    def work(x: str) -> str:
        """Work."""
        ran.append(x)
        return "worked"

    def gated(x: str) -> str:
        """Needs approval."""
        return "gated"

    agent = Agent(
        chat_generator=Stateless([("work", {"x": "1"}), ("gated", {"x": "2"})]),
        tools=[create_tool_from_function(work), create_tool_from_function(gated)],
        confirmation_strategies={"gated": BreakpointConfirmationStrategy(str(tmp_path))},
    )
    agent.warm_up()  # a first run_async would warm up in a worker thread: the tool's must be the first one
    busy, queued = threading.Event(), threading.Event()

    from handrail.core import _tool_threads

    class OneBusyThread(_tool_threads._LoopPool):
        def queue(self, future: Any, call: Any) -> None:
            super().queue(future, call)
            if busy.is_set():
                queued.set()  # the tool's call waits behind the blocked thread

    # blocking tools get one thread
    monkeypatch.setattr(_tool_threads, "_new_pool", lambda: OneBusyThread(1))

    async def cancel_while_queued() -> None:
        release = threading.Event()
        blocker = asyncio.ensure_future(_tool_threads.to_tool_thread(release.wait, WAIT))
        await asyncio.sleep(0)  # the only thread is busy from now on
        busy.set()
        task = asyncio.create_task(agent.run_async([ChatMessage.from_user("go")]))
        await until(queued.is_set)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()
        await blocker

    asyncio.run(cancel_while_queued())
    assert ran == []
    records = FileSnapshotStore(tmp_path).list_snapshots(SNAPSHOT_STATUSES)
    for record in records:
        assert record.status != "running", record.status
        assert all(entry.status != "running" for entry in record.ledger.values()), record.ledger
        assert not FileSnapshotStore(tmp_path).claimed(record.snapshot_id)
    with pytest.raises(HITLBreakpointException):  # the Agent runs again: 'work' runs once, 'gated' pauses
        asyncio.run(agent.run_async([ChatMessage.from_user("go")]))
    assert ran == ["1"]


class SlowToWarm:
    """A generator whose warm-up takes a while and is counted."""

    def __init__(self, wait_for: threading.Event | None = None) -> None:
        self.warmed = 0
        self.wait_for = wait_for
        self.saw_event: bool | None = None

    def warm_up(self) -> None:
        self.warmed += 1
        if self.wait_for is not None:
            self.saw_event = self.wait_for.wait(WAIT)
        else:
            time.sleep(0.1)  # long enough for the other threads to arrive: without a lock each would warm too

    def run(self, messages: list[ChatMessage], tools: Any = None) -> dict[str, Any]:
        return {"replies": [ChatMessage.from_assistant("hi")]}


def test_threads_starting_runs_together_warm_each_object_once() -> None:
    generator = SlowToWarm()
    agent = Agent(chat_generator=generator)
    start = threading.Barrier(8)

    def one_run(_: int) -> str:
        start.wait(WAIT)
        return str(agent.run([ChatMessage.from_user("hi")])["last_message"].text)

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(one_run, range(8))) == ["hi"] * 8
    assert generator.warmed == 1


def test_run_async_warms_up_in_a_worker_thread_not_on_the_event_loop() -> None:
    loop_is_free = threading.Event()
    generator = SlowToWarm(wait_for=loop_is_free)
    agent = Agent(chat_generator=generator)

    async def main() -> str:
        run = asyncio.create_task(agent.run_async([ChatMessage.from_user("hi")]))
        await asyncio.sleep(0)  # the run starts; its warm-up waits for this coroutine to run again
        await asyncio.sleep(0.01)
        loop_is_free.set()
        return str((await run)["last_message"].text)

    assert asyncio.run(main()) == "hi"
    assert generator.saw_event is True  # set by the loop while the warm-up waited in its thread
    assert generator.warmed == 1
