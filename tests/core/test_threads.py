"""The shared pool for blocking tool calls: bounds per step, reuse, nested runs, forked children."""

from __future__ import annotations

import contextvars
import multiprocessing
import threading
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from handrail import Agent
from handrail.core import threads
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.cases._helpers import tool_results
from tests.components._helpers import ThreadProbe, call, calls_msg, reply, user


def _agent(tool_name: str, function: object, count: int, **kwargs: object) -> Agent:
    gen = ScriptedChatGenerator([calls_msg(*[call(tool_name, {"n": i}, f"c{i}") for i in range(count)]), reply("ok")])
    return Agent(chat_generator=gen, tools=[create_tool_from_function(function)], **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(("limit", "expected"), [(None, 8), (3, 3)])
async def test_blocking_tools_under_run_async_run_up_to_the_step_limit_at_once(
    limit: int | None, expected: int
) -> None:
    """Not held to asyncio's default executor (6 threads on a 2-core machine): 8 at once by default."""
    probe = ThreadProbe(expected)

    def work(n: int) -> int:
        probe.enter()
        return n

    kwargs = {} if limit is None else {"tool_concurrency_limit": limit}
    out = await _agent("work", work, 10, **kwargs).run_async([user("hi")])
    assert [r.result for r in tool_results(out["messages"])] == [str(i) for i in range(10)]
    assert probe.peak == expected


def test_blocking_calls_run_on_the_reused_tool_threads_under_run_and_run_async() -> None:
    names: list[str] = []

    def where(n: int) -> str:
        names.append(threading.current_thread().name)
        return "ok"

    import asyncio

    for _ in range(3):
        _agent("where", where, 4).run([user("hi")])
    asyncio.run(_agent("where", where, 1).run_async([user("hi")]))
    assert len(names) == 13
    assert all(name.startswith("handrail-tool") for name in names), names


def test_context_variables_reach_the_tool_threads() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    seen: list[str] = []

    def read(n: int) -> str:
        seen.append(var.get())
        return "ok"

    var.set("caller")
    _agent("read", read, 3).run([user("hi")])
    assert seen == ["caller"] * 3


@pytest.fixture
def small_pool() -> Iterator[None]:
    """A shared pool of 3 threads, so that nested steps would starve it if they used it too."""
    saved = threads._pool
    threads._pool = ThreadPoolExecutor(3, "handrail-tool", initializer=threads._mark_worker)
    try:
        yield
    finally:
        threads._pool.shutdown(wait=False)
        threads._pool = saved


@pytest.mark.usefixtures("small_pool")
def test_a_run_inside_a_tool_thread_uses_a_private_pool_and_never_waits_on_the_shared_one() -> None:
    outer_barrier = threading.Barrier(3, timeout=10)
    inner_barriers = [threading.Barrier(3, timeout=10) for _ in range(3)]

    def outer(n: int) -> str:
        outer_barrier.wait()  # the 3 outer calls fill the shared pool

        barrier = inner_barriers[n]

        def inner(n: int) -> str:
            barrier.wait()  # the 3 inner calls of one outer call run at once, beside the busy shared pool
            return "in"

        out = _agent("inner", inner, 3).run([user("inner")])
        return ",".join(r.result for r in tool_results(out["messages"]))

    results: list[dict[str, object]] = []
    runner = threading.Thread(target=lambda: results.append(_agent("outer", outer, 3).run([user("outer")])))
    runner.daemon = True  # a regression deadlocks: fail instead of hanging the suite
    runner.start()
    runner.join(60)
    assert results, "the outer run did not finish: its nested steps waited on the busy shared pool"
    messages = results[0]["messages"]
    assert [r.result for r in tool_results(messages)] == ["in,in,in"] * 3  # type: ignore[arg-type]
    assert not any(r.error for r in tool_results(messages))  # type: ignore[arg-type]


def test_the_first_exception_comes_after_every_started_call_finished() -> None:
    finished = threading.Event()
    release = threading.Event()

    def slow() -> str:
        release.wait(10)
        finished.set()
        return "slow"

    def fail() -> str:
        release.set()
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        threads.run_in_threads([slow, fail], 2)
    assert finished.is_set()


async def test_stop_iteration_from_a_tool_thread_becomes_a_runtime_error() -> None:
    def exhausted() -> None:
        next(iter([]))

    with pytest.raises(RuntimeError, match="StopIteration") as info:
        await threads.to_tool_thread(exhausted)
    assert isinstance(info.value.__cause__, StopIteration)


def _child_step(queue: multiprocessing.Queue[list[str]]) -> None:
    def echo(n: int) -> str:
        return f"child {n}"

    out = _agent("echo", echo, 3).run([user("hi")])
    queue.put([r.result for r in tool_results(out["messages"])])


def test_a_forked_child_starts_its_own_pool() -> None:
    """The parent's pool threads do not exist in a forked child; its steps must not queue work on them."""
    barrier = threading.Barrier(8, timeout=10)
    threads.run_in_threads([barrier.wait] * 8, 8)  # the parent's pool has 8 idle threads, none in the child
    ctx = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue[list[str]] = ctx.Queue()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12+: fork with threads running
        child = ctx.Process(target=_child_step, args=(queue,))
        child.start()
    try:
        assert queue.get(timeout=30) == ["child 0", "child 1", "child 2"]
    finally:
        child.join(30)
        if child.is_alive():
            child.kill()
    assert child.exitcode == 0
