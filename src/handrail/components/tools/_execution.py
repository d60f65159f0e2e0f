"""Executing tool invocations: the I/O half of the tool step, sync and async.

A step with a single call runs inline (no thread pool). Several calls run concurrently,
at most ``max_workers`` at once, each under a copy of the caller's context variables;
outcomes come back in call order whatever order the tools finish in.
"""

from __future__ import annotations

import contextvars
import inspect
import threading
from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

from handrail.components.tools._effects import CallObserver, Emit, Invocation, Outcome, RunCalls
from handrail.core._tool_threads import run_coroutine_sync, to_tool_thread
from handrail.dataclasses.streaming import StreamingCallback
from handrail.errors import ToolInvocationError

__all__ = ["drive_async", "drive_sync", "emit_async", "run_calls_async", "run_calls_sync"]

T = TypeVar("T")


def _call_sync(inv: Invocation) -> Outcome:
    """Call the tool's sync function; an async-only tool runs on an event loop of its own."""
    tool = inv.tool
    try:
        if tool.function is None:
            assert tool.async_function is not None
            return True, run_coroutine_sync(tool.async_function, **inv.kwargs)
        return True, tool.function(**inv.kwargs)
    except Exception as exc:
        return False, exc


async def _call_async(inv: Invocation) -> Outcome:
    tool = inv.tool
    try:
        if tool.async_function is not None:
            return True, await tool.async_function(**inv.kwargs)
        assert tool.function is not None
        return await to_tool_thread(_call_sync, inv)
    except Exception as exc:
        return False, exc


class _Deferred:
    """The outcomes of a batch's calls whose durable write may wait for the next call's start.

    An observer makes a call's start durable before the call runs, and that write holds every outcome noted
    before it: while calls of the batch are still to start, an ended call's outcome rides on the next start's
    write instead of taking one of its own. The last calls' outcomes are written as they end, and every outcome
    is durable before the batch returns (:meth:`flush`).
    """

    def __init__(self, observer: CallObserver, count: int) -> None:
        self._observer = observer
        self._left = count
        self._lock = threading.Lock()
        self._tickets: list[Any] = []

    def take(self) -> None:
        """A call of the batch starts."""
        with self._lock:
            self._left -= 1

    def ended(self, ticket: Any) -> None:
        """A call's outcome is noted (``ticket``): written now, or with the next start's write."""
        with self._lock:
            if self._left > 0:
                self._tickets.append(ticket)
                return
        self._observer.make_durable(ticket)

    def flush(self) -> None:
        """Make every deferred outcome durable (the batch ends); outcomes noted later are written as they come.

        (A cancelled ``run_async`` flushes while its sync tools may still run in their threads.)
        """
        with self._lock:
            self._left = 0
            tickets, self._tickets = self._tickets, []
        for ticket in tickets:
            self._observer.make_durable(ticket)


def _observed_sync(deferred: _Deferred, observer: CallObserver) -> Callable[[Invocation], Outcome]:
    def call(inv: Invocation) -> Outcome:
        deferred.take()
        observer.started(inv)
        outcome = _call_sync(inv)
        deferred.ended(observer.record_finished(inv, outcome))
        return outcome

    return call


def run_calls_sync(effect: RunCalls) -> list[Outcome]:
    """Run the invocations in threads (inline when there is one) and return outcomes in order."""
    invocations, observer = effect.invocations, effect.observer
    deferred = None if observer is None else _Deferred(observer, len(invocations))
    call = _call_sync if observer is None or deferred is None else _observed_sync(deferred, observer)
    if len(invocations) == 1:
        return [call(invocations[0])]
    from concurrent.futures import ThreadPoolExecutor  # imported on first use: keeps `import handrail` fast

    try:
        with ThreadPoolExecutor(max_workers=min(effect.max_workers, len(invocations))) as pool:
            futures = [pool.submit(contextvars.copy_context().run, call, inv) for inv in invocations]
            return [f.result() for f in futures]
    finally:
        if deferred is not None:
            deferred.flush()  # after the pool's threads ended: every outcome noted is written


async def _observed_async(observer: CallObserver | None, inv: Invocation, deferred: _Deferred | None) -> Outcome:
    if observer is None or deferred is None:
        return await _call_async(inv)
    if inv.tool.async_function is None and inv.tool.function is not None:
        deferred.take()
        return await _detached(observer, inv, deferred)
    import asyncio

    deferred.take()
    ticket = observer.record_started(inv)
    try:
        await asyncio.sleep(0)  # the other calls starting now note theirs too: one write covers them all
    except BaseException:  # cancelled before the call started: it stays as it was
        observer.make_durable(observer.record_not_started(inv))
        raise
    observer.make_durable(ticket)
    outcome = await _call_async(inv)
    deferred.ended(observer.record_finished(inv, outcome))
    return outcome


async def _detached(observer: CallObserver, inv: Invocation, deferred: _Deferred) -> Outcome:
    """A sync tool under ``run_async`` with an observer: its worker thread records its own outcome.

    A cancelled run leaves the thread running to its end, and what it did must still reach the ledger; the
    observer is told when the thread is done (``worker_ended``), or at once when the cancellation came before
    the thread took the call (the call then never runs, and its record stays ``pending``: the thread, not the
    event loop, records ``running`` once it has taken the call).
    """
    observer.worker_started(inv)
    state = ["queued"]
    guard = threading.Lock()

    def work(inv: Invocation) -> Outcome:
        with guard:
            if state[0] == "abandoned":
                return False, ToolInvocationError(f"Call '{inv.call.id}' was cancelled before it ran.", inv.tool.name)
            state[0] = "running"
        try:
            observer.started(inv)
            outcome = _call_sync(inv)
            deferred.ended(observer.record_finished(inv, outcome))
            return outcome
        finally:
            observer.worker_ended(inv)

    try:
        return await to_tool_thread(work, inv)
    except BaseException:
        with guard:
            abandoned = state[0] == "queued"
            state[0] = "abandoned" if abandoned else state[0]
        if abandoned:
            observer.worker_ended(inv)
        raise


async def run_calls_async(effect: RunCalls) -> list[Outcome]:
    """Await the invocations concurrently (bounded by a semaphore) and return outcomes in order."""
    invocations, observer = effect.invocations, effect.observer
    deferred = None if observer is None else _Deferred(observer, len(invocations))
    if len(invocations) == 1:
        return [await _observed_async(observer, invocations[0], deferred)]
    import asyncio

    limit = asyncio.Semaphore(effect.max_workers)

    async def guarded(inv: Invocation) -> Outcome:
        async with limit:
            return await _observed_async(observer, inv, deferred)

    try:
        return list(await asyncio.gather(*(guarded(inv) for inv in invocations)))
    finally:
        if deferred is not None:
            deferred.flush()  # also when cancelled: outcomes noted are written (synchronously)


async def emit_async(callback: StreamingCallback, effect: Emit) -> None:
    """Send a chunk to a sync or async callback."""
    result = callback(effect.chunk)
    if inspect.isawaitable(result):
        await result


def drive_sync(
    machine: Generator[Any, Any, T], other: Callable[[Any], Any] | None, callback: StreamingCallback | None
) -> T:
    """Execute a machine's effects synchronously until it returns; return its value.

    Args:
        machine: A generator yielding ``RunCalls``, ``Emit`` and other effects.
        other: Executes any other effect (e.g. a model call); None when there are none.
        callback: Receives the chunks of ``Emit`` effects.
    """
    value: Any = None
    while True:
        try:
            effect = machine.send(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        kind = type(effect)
        if kind is RunCalls:
            value = run_calls_sync(effect)
        elif kind is Emit:
            assert callback is not None
            callback(effect.chunk)
            value = None
        else:
            assert other is not None, f"no executor for effect {effect!r}"
            value = other(effect)


async def drive_async(
    machine: Generator[Any, Any, T],
    other: Callable[[Any], Awaitable[Any]] | None,
    callback: StreamingCallback | None,
) -> T:
    """Async twin of :func:`drive_sync`: tools are awaited, callbacks may be async."""
    value: Any = None
    while True:
        try:
            effect = machine.send(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        kind = type(effect)
        if kind is RunCalls:
            value = await run_calls_async(effect)
        elif kind is Emit:
            assert callback is not None
            await emit_async(callback, effect)
            value = None
        else:
            assert other is not None, f"no executor for effect {effect!r}"
            value = await other(effect)
