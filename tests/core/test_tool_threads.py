"""Blocking tools under run_async run in handrail's own pool of the event loop: never asyncio's default executor,
nested runs never deadlock on a saturated pool, and a sync run interrupted by Ctrl-C still waits for its calls.

Waits use events and barriers with generous timeouts (a deadlock fails the test instead of hanging it); no
assertion is on wall time."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from handrail import Agent, ChatMessage, ToolCall
from handrail.core._tool_threads import to_tool_thread
from handrail.errors import ConfigurationError
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function, set_tool_thread_limit, tool_thread_limit

WAIT = 10.0


@pytest.fixture
def two_threads() -> Iterator[None]:
    """Pools of two threads per event loop: two blocking calls saturate one."""
    before = tool_thread_limit()
    set_tool_thread_limit(2)
    try:
        yield
    finally:
        set_tool_thread_limit(before)


def _agent(function: Callable[..., Any], count: int, **kwargs: Any) -> Agent:
    tool = create_tool_from_function(function)
    step = ChatMessage.from_assistant(
        tool_calls=[ToolCall(tool_name=tool.name, arguments={"n": i}, id=f"c{i}") for i in range(count)]
    )
    generator = ScriptedChatGenerator([step, ChatMessage.from_assistant("done")])
    return Agent(chat_generator=generator, tools=[tool], **kwargs)


def _results(out: dict[str, Any]) -> list[str]:
    return [m.tool_call_result.result for m in out["messages"] if m.tool_call_result is not None]


def test_the_limit_is_an_int_of_at_least_one() -> None:
    for bad in (0, -1, 2.5, True, "8"):
        with pytest.raises(ConfigurationError, match="set_tool_thread_limit"):
            set_tool_thread_limit(bad)  # type: ignore[arg-type]
    assert tool_thread_limit() >= 200  # the default holds 200 concurrent runs' blocking calls (W5)


def test_the_limit_has_a_documented_upper_bound() -> None:
    before = tool_thread_limit()
    for bad in (4097, 10**9):
        with pytest.raises(ConfigurationError, match=r"from 1 to 4096, got "):
            set_tool_thread_limit(bad)
    assert tool_thread_limit() == before
    set_tool_thread_limit(4096)
    set_tool_thread_limit(before)


async def test_raising_the_limit_moves_the_calls_still_queued_to_a_pool_of_the_new_size() -> None:
    before = tool_thread_limit()
    set_tool_thread_limit(1)
    meet = threading.Barrier(3, timeout=WAIT)  # broken unless the three calls run at once
    first_started = threading.Event()

    def wait_for_all(n: int) -> int:
        first_started.set()
        meet.wait()
        return n

    try:
        calls = [asyncio.ensure_future(to_tool_thread(wait_for_all, n)) for n in range(3)]
        await asyncio.to_thread(first_started.wait, WAIT)  # one call runs, two wait in the pool of one thread
        set_tool_thread_limit(3)
        assert await asyncio.gather(*calls) == [0, 1, 2]
    finally:
        set_tool_thread_limit(before)


async def test_a_call_cancelled_while_queued_in_a_retired_pool_never_starts() -> None:
    before = tool_thread_limit()
    set_tool_thread_limit(1)
    release, started = threading.Event(), []

    def hold(n: int) -> int:
        started.append(n)
        release.wait(WAIT)
        return n

    try:
        running = asyncio.ensure_future(to_tool_thread(hold, 0))
        queued = asyncio.ensure_future(to_tool_thread(hold, 1))
        await asyncio.sleep(0)
        queued.cancel()
        set_tool_thread_limit(2)
        release.set()
        assert await running == 0
        with pytest.raises(asyncio.CancelledError):
            await queued
        assert await to_tool_thread(hold, 2) == 2
        assert started == [0, 2]
    finally:
        set_tool_thread_limit(before)


async def test_blocking_tools_under_run_async_run_in_handrails_pool_not_the_default_executor() -> None:
    def where(n: int) -> str:
        """Where."""
        return threading.current_thread().name

    names = _results(await _agent(where, 3).run_async([ChatMessage.from_user("x")]))
    assert len(names) == 3
    assert all(name.startswith("handrail-tool") for name in names), names


async def test_eight_blocking_calls_of_a_step_run_at_once() -> None:
    """asyncio's default executor has min(32, CPUs + 4) threads: on a 2-core machine 8 calls ran in two waves."""
    meet = threading.Barrier(8, timeout=WAIT)

    def wait_for_all(n: int) -> str:
        """All eight meet here."""
        meet.wait()
        return "met"

    assert _results(await _agent(wait_for_all, 8).run_async([ChatMessage.from_user("x")])) == ["met"] * 8


async def test_calls_that_end_together_each_get_their_own_outcome() -> None:
    """Outcomes reach the loop in batches: each still goes to its own call, failures included."""
    meet = threading.Barrier(40, timeout=WAIT)

    def echo_or_fail(n: int) -> str:
        """Echo n, or fail for odd n."""
        meet.wait()  # all forty end at about the same time
        if n % 2:
            raise ValueError(f"odd {n}")
        return f"even {n}"

    agent = _agent(echo_or_fail, 40, tool_concurrency_limit=40)
    out = await agent.run_async([ChatMessage.from_user("x")])
    results = [m.tool_call_result for m in out["messages"] if m.tool_call_result is not None]
    assert [r.error for r in results] == [bool(n % 2) for n in range(40)]
    assert all(f"{'odd' if n % 2 else 'even'} {n}" in r.result for n, r in enumerate(results))


async def test_a_blocking_tool_raising_stop_iteration_fails_its_call_instead_of_hanging_the_run() -> None:
    def exhausted(n: int) -> str:
        """Next on an empty iterator."""
        return str(next(iter([])))

    out = await _agent(exhausted, 2).run_async([ChatMessage.from_user("x")])
    results = [m.tool_call_result for m in out["messages"] if m.tool_call_result is not None]
    assert [r.error for r in results] == [True, True]
    assert all("StopIteration" in r.result for r in results)


def _run_to_end(main: Callable[[], Any]) -> Any:
    """Run ``main`` in a daemon thread: a deadlock fails the test instead of hanging the suite."""
    out: list[Any] = []
    runner = threading.Thread(target=lambda: out.append(main()), daemon=True)
    runner.start()
    runner.join(6 * WAIT)
    assert out, "the run did not finish: its nested run waited on the saturated pool"
    return out[0]


def _nested_agent() -> Agent:
    inner_meet = threading.Barrier(2, timeout=WAIT)

    def inner(n: int) -> str:
        """Both inner calls must run at once: they need two threads while the outer ones hold theirs."""
        inner_meet.wait()
        return "in"

    return _agent(inner, 2)


def _outer_run(start_nested: Callable[[asyncio.AbstractEventLoop], dict[str, Any]]) -> list[str]:
    outer_meet = threading.Barrier(2, timeout=WAIT)

    async def main() -> list[str]:
        loop = asyncio.get_running_loop()

        def outer(n: int) -> str:
            """Holds one of the pool's two threads while its nested run works."""
            outer_meet.wait()  # both outer calls hold the pool's threads now
            return "+".join(_results(start_nested(loop)))

        return _results(await _agent(outer, 2).run_async([ChatMessage.from_user("x")]))

    return _run_to_end(lambda: asyncio.run(main()))  # type: ignore[no-any-return]


@pytest.mark.usefixtures("two_threads")
def test_a_nested_run_async_in_a_blocking_tool_completes_while_the_pool_is_saturated() -> None:
    def nested(loop: asyncio.AbstractEventLoop) -> dict[str, Any]:
        return asyncio.run(_nested_agent().run_async([ChatMessage.from_user("inner")]))

    assert _outer_run(nested) == ["in+in", "in+in"]


@pytest.mark.usefixtures("two_threads")
def test_a_nested_run_started_on_a_thread_that_is_not_the_pools_completes_while_it_is_saturated() -> None:
    """A tool's own helper thread (a timeout wrapper) starts the nested run: it has a loop, and a pool, of its own."""

    def nested(loop: asyncio.AbstractEventLoop) -> dict[str, Any]:
        done: list[dict[str, Any]] = []
        helper = threading.Thread(
            target=lambda: done.append(asyncio.run(_nested_agent().run_async([ChatMessage.from_user("inner")])))
        )
        helper.start()
        helper.join(3 * WAIT)
        return done[0]

    assert _outer_run(nested) == ["in+in", "in+in"]


@pytest.mark.usefixtures("two_threads")
def test_a_nested_run_scheduled_on_the_outer_loop_completes_while_its_pool_is_saturated() -> None:
    """The nested run's blocking calls are made on behalf of the calls holding the pool: they run beside it."""

    def nested(loop: asyncio.AbstractEventLoop) -> dict[str, Any]:
        run = _nested_agent().run_async([ChatMessage.from_user("inner")])
        return asyncio.run_coroutine_threadsafe(run, loop).result(3 * WAIT)

    assert _outer_run(nested) == ["in+in", "in+in"]


def _main_thread_waits_for_a_call() -> bool:
    """Whether the main thread is inside ``Future.result`` (the run waits for its calls)."""
    frame = sys._current_frames().get(threading.main_thread().ident or 0)
    while frame is not None:
        if frame.f_code.co_name == "result" and "concurrent" in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False


def test_ctrl_c_during_a_sync_run_waits_for_the_calls_already_running() -> None:
    started, finished = threading.Event(), threading.Event()

    def work(n: int) -> str:
        """Call 1 presses Ctrl-C once call 0 runs and the run waits for it; call 0 goes on a while after that."""
        if n == 1:
            started.wait(WAIT)
            for _ in range(int(WAIT / 0.01)):
                if _main_thread_waits_for_a_call():
                    break
                threading.Event().wait(0.01)
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
            return "pressed"
        started.set()
        threading.Event().wait(0.5)  # still running when the interrupt reaches the run
        finished.set()
        return "finished"

    assert threading.current_thread() is threading.main_thread()
    with pytest.raises(KeyboardInterrupt):
        _agent(work, 2).run([ChatMessage.from_user("x")])
    assert finished.is_set()


def test_a_forked_child_does_not_use_the_parents_pool_whose_threads_it_lacks() -> None:
    from handrail.core._tool_threads import to_tool_thread

    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(to_tool_thread(str, "parent")) == "parent"  # the loop's pool has a thread
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            signal.alarm(int(WAIT))  # a call queued for a thread that does not exist would hang: end instead
            ok = loop.run_until_complete(to_tool_thread(str, "child")) == "child"
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        loop.close()
    assert os.waitstatus_to_exitcode(status) == 0


def test_the_interpreter_waits_at_exit_for_a_blocking_call_its_run_stopped_waiting_for(tmp_path: Any) -> None:
    import subprocess

    marker = tmp_path / "written"
    script = f"""
import asyncio, time
from pathlib import Path
from handrail.core._tool_threads import to_tool_thread

def slow() -> None:
    time.sleep(0.5)
    Path({str(marker)!r}).write_text("done")

async def main() -> None:
    try:
        await asyncio.wait_for(to_tool_thread(slow), 0.01)
    except TimeoutError:
        pass

asyncio.run(main())
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=WAIT * 3)
    assert marker.read_text() == "done"


def test_a_pools_threads_end_with_its_event_loop() -> None:
    import gc
    import time

    def names() -> set[str]:
        return {t.name for t in threading.enumerate() if t.name.startswith("handrail-tool")}

    before = names()
    for _ in range(5):
        asyncio.run(to_tool_thread(str, "x"))  # a loop of its own each time, one thread in its pool
    gc.collect()
    deadline = time.monotonic() + WAIT
    while len([t for t in threading.enumerate() if t.name.startswith("handrail-tool")]) > len(before):
        assert time.monotonic() < deadline, names()
        time.sleep(0.01)


def test_a_thread_of_the_pool_runs_many_calls() -> None:
    async def main() -> set[str]:
        seen: set[str] = set()
        for _ in range(20):
            seen.add(await to_tool_thread(lambda: threading.current_thread().name))
        return seen

    assert len(asyncio.run(main())) == 1  # one call at a time: the same thread, not a new one per call
