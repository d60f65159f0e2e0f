"""Executing tool invocations: the I/O half of the tool step, sync and async.

A step with a single call runs inline (no thread pool). Several calls run concurrently,
at most ``max_workers`` at once, each under a copy of the caller's context variables;
outcomes come back in call order whatever order the tools finish in.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from handrail.components.effects import ToolInvocation
from handrail.components.tools._effects import CallObserver, Invocation, Outcome
from handrail.core._threads import to_thread
from handrail.core._tool_threads import run_coroutine_sync, to_tool_thread
from handrail.errors import ToolInvocationError

__all__ = ["run_calls_async", "run_calls_sync"]

if TYPE_CHECKING:
    from handrail.components.drivers import RunObserver


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

    def ended(self, ticket: Any) -> Any:
        """A call's outcome is noted (``ticket``): the ticket to write now, or None (a later start writes it)."""
        with self._lock:
            if self._left > 0:
                self._tickets.append(ticket)
                return None
        return ticket

    def rest(self) -> list[Any]:
        """The batch ends: the tickets still to write (outcomes noted later are written as they come)."""
        with self._lock:
            self._left = 0
            tickets, self._tickets = self._tickets, []
        return tickets

    def flush(self) -> None:
        """Write every deferred outcome (in the calling thread)."""
        for ticket in self.rest():
            self._observer.make_durable(ticket)


def _watched(
    call: Callable[[Invocation], Outcome], watchers: Sequence[RunObserver], events: dict[int, ToolInvocation]
) -> Callable[[Invocation], Outcome]:
    """``call`` that tells the run's observers when each tool call starts and ends."""
    from handrail.components.drivers import notify_ended, notify_started

    def run(inv: Invocation) -> Outcome:
        event = events[id(inv)]
        began = notify_started(watchers, event)
        outcome = call(inv)
        ok, value = outcome
        notify_ended(watchers, event, began, value if ok else None, None if ok else value)
        return outcome

    return run


def _observed_sync(
    deferred: _Deferred, observer: CallObserver, call: Callable[[Invocation], Outcome]
) -> Callable[[Invocation], Outcome]:
    def run(inv: Invocation) -> Outcome:
        deferred.take()
        observer.started(inv)
        outcome = call(inv)
        ticket = deferred.ended(observer.record_finished(inv, outcome))
        if ticket is not None:
            observer.make_durable(ticket)
        return outcome

    return run


def _events(invocations: list[Invocation], events: list[ToolInvocation]) -> dict[int, ToolInvocation]:
    return {id(inv): event for inv, event in zip(invocations, events, strict=True)}


def run_calls_sync(
    invocations: list[Invocation], max_workers: int, observer: CallObserver | None = None,
    watchers: Sequence[RunObserver] = (), events: list[ToolInvocation] | None = None,
) -> list[Outcome]:  # fmt: skip
    """Run the invocations in threads (inline when there is one) and return outcomes in order.

    Args:
        invocations: The calls to run.
        max_workers: At most this many at once.
        observer: Makes each call's start and outcome durable (the run's ledger), or None.
        watchers: The run's observers, told when each call starts and ends (``events`` names the calls).
        events: The effect's item of each invocation (required with ``watchers``).
    """
    call: Callable[[Invocation], Outcome] = _call_sync
    if watchers:
        assert events is not None
        call = _watched(call, watchers, _events(invocations, events))
    deferred = None if observer is None else _Deferred(observer, len(invocations))
    if observer is not None and deferred is not None:
        call = _observed_sync(deferred, observer, call)
    if len(invocations) == 1:
        return [call(invocations[0])]
    from concurrent.futures import ThreadPoolExecutor  # imported on first use: keeps `import handrail` fast

    try:
        with ThreadPoolExecutor(max_workers=min(max_workers, len(invocations))) as pool:
            futures = [pool.submit(contextvars.copy_context().run, call, inv) for inv in invocations]
            return [f.result() for f in futures]
    finally:
        if deferred is not None:
            deferred.flush()  # after the pool's threads ended: every outcome noted is written


async def in_thread_unsplit(function: Callable[..., Any], /, *args: Any) -> Any:
    """Run blocking ``function`` (a store write) in a worker thread, off the event loop.

    A cancellation of the awaiting task waits for the function to end before it is raised: a write is never
    left half done while the run goes on unwinding (releasing its claim, for one).
    """
    import asyncio

    task = asyncio.ensure_future(to_thread(function, *args))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        while not task.done():
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                continue
            except Exception:
                break
        raise


async def _durable(observer: CallObserver, ticket: Any) -> None:
    """Make ``ticket`` durable without blocking the event loop (no write to make: nothing to wait for)."""
    if ticket is not None:
        await in_thread_unsplit(observer.make_durable, ticket)


async def _observed_async(
    observer: CallObserver | None, inv: Invocation, deferred: _Deferred | None, watch: _Watch | None
) -> Outcome:
    if observer is None or deferred is None:
        return await _call_watched(inv, watch)
    if inv.tool.async_function is None and inv.tool.function is not None:
        deferred.take()
        return await _detached(observer, inv, deferred, watch)
    import asyncio

    deferred.take()
    ticket = observer.record_started(inv)
    try:
        await asyncio.sleep(0)  # the other calls starting now note theirs too: one write covers them all
    except BaseException:  # cancelled before the call started: it stays as it was
        observer.make_durable(observer.record_not_started(inv))
        raise
    await _durable(observer, ticket)
    outcome = await _call_watched(inv, watch)
    await _durable(observer, deferred.ended(observer.record_finished(inv, outcome)))
    return outcome


class _Watch:
    """The run's observers and the effect item of each invocation."""

    def __init__(self, watchers: Sequence[RunObserver], events: dict[int, ToolInvocation]) -> None:
        self.watchers = watchers
        self.events = events


async def _call_watched(inv: Invocation, watch: _Watch | None) -> Outcome:
    if watch is None:
        return await _call_async(inv)
    from handrail.components.drivers import notify_ended, notify_started

    event = watch.events[id(inv)]
    began = notify_started(watch.watchers, event)
    outcome = await _call_async(inv)
    ok, value = outcome
    notify_ended(watch.watchers, event, began, value if ok else None, None if ok else value)
    return outcome


async def _detached(observer: CallObserver, inv: Invocation, deferred: _Deferred, watch: _Watch | None) -> Outcome:
    """A sync tool under ``run_async`` with an observer: its worker thread records its own outcome.

    A cancelled run leaves the thread running to its end, and what it did must still reach the ledger; the
    observer is told when the thread is done (``worker_ended``), or at once when the cancellation came before
    the thread took the call (the call then never runs, and its record stays ``pending``: the thread, not the
    event loop, records ``running`` once it has taken the call).
    """
    observer.worker_started(inv)
    state = ["queued"]
    guard = threading.Lock()
    call = _call_sync if watch is None else _watched(_call_sync, watch.watchers, watch.events)

    def work(inv: Invocation) -> Outcome:
        with guard:
            if state[0] == "abandoned":
                return False, ToolInvocationError(f"Call '{inv.call.id}' was cancelled before it ran.", inv.tool.name)
            state[0] = "running"
        try:
            observer.started(inv)
            outcome = call(inv)
            ticket = deferred.ended(observer.record_finished(inv, outcome))
            if ticket is not None:
                observer.make_durable(ticket)
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


async def run_calls_async(
    invocations: list[Invocation], max_workers: int, observer: CallObserver | None = None,
    watchers: Sequence[RunObserver] = (), events: list[ToolInvocation] | None = None,
) -> list[Outcome]:  # fmt: skip
    """Await the invocations concurrently (bounded by a semaphore) and return outcomes in order.

    Arguments as :func:`run_calls_sync`; durable writes run in worker threads, never on the event loop.
    """
    if len(invocations) == 1 and observer is None and not watchers:
        return [await _call_async(invocations[0])]  # the common case, without the layers below
    watch = None
    if watchers:
        assert events is not None
        watch = _Watch(watchers, _events(invocations, events))
    deferred = None if observer is None else _Deferred(observer, len(invocations))
    if len(invocations) == 1:
        outcomes = [await _observed_async(observer, invocations[0], deferred, watch)]
    else:
        import asyncio

        limit = asyncio.Semaphore(max_workers)

        async def guarded(inv: Invocation) -> Outcome:
            async with limit:
                return await _observed_async(observer, inv, deferred, watch)

        try:
            outcomes = list(await asyncio.gather(*(guarded(inv) for inv in invocations)))
        except BaseException:
            if deferred is not None:
                deferred.flush()  # cancelled or failed: outcomes noted are written (synchronously)
            raise
    if deferred is not None and observer is not None:
        for ticket in deferred.rest():
            await _durable(observer, ticket)
    return outcomes
