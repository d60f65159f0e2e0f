"""Where tool code runs when its kind does not match the run's: handrail's own threads and event loops.

Blocking (sync) tools under ``run_async`` run in a pool of handrail's own, never in asyncio's default
executor (``min(32, CPUs + 4)`` threads, shared with everything else on the loop). The rules:

- **One pool per event loop**, of at most :func:`tool_thread_limit` threads (256 by default; set it with
  :func:`set_tool_thread_limit`). Threads start on demand and are reused by later calls on that loop; the pool
  ends with its loop (when the loop is garbage-collected). Runs on other loops (other threads, or an
  ``asyncio.run`` started inside a tool) never wait on it, so a nested run always has threads of its own.
- **A call made on behalf of one that holds a thread of the pool gets a thread outside the bound.** A blocking
  tool that starts a run on its own loop (``asyncio.run_coroutine_threadsafe``) waits for that run's blocking
  calls; queued behind a saturated pool they would wait forever. Such calls are recognised through context
  variables (a pool thread marks its context; a coroutine scheduled from it carries the mark).
- A cancelled run does not stop a thread (Python cannot): the call runs to its end and records its outcome.
  Unlike with the default executor, ``asyncio.run`` does not wait for it; the interpreter does, at exit.

Sync ``run`` does not use the pool: a step's calls run on threads of their own that the step waits for, also
when it is interrupted (Ctrl-C). An async-only tool under ``run`` runs on an event loop of its own
(:func:`run_coroutine_sync`).
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import functools
import os
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from handrail.errors import ConfigurationError

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "DEFAULT_TOOL_THREAD_LIMIT",
    "MAX_TOOL_THREAD_LIMIT",
    "run_coroutine_sync",
    "set_tool_thread_limit",
    "to_tool_thread",
    "tool_thread_limit",
]

T = TypeVar("T")

DEFAULT_TOOL_THREAD_LIMIT = 256
"""Threads per event loop for blocking tools: I/O-bound calls (HTTP, databases) mostly wait, so the bound is
set by how many may wait at once (200 concurrent runs with one blocking call each), not by the CPU count."""

MAX_TOOL_THREAD_LIMIT = 4096
"""The highest :func:`set_tool_thread_limit` accepts: each thread reserves a stack (8 MiB of address space on
Linux) and the system caps a process's threads; beyond this many waiting calls, use an async tool instead."""

_limit = DEFAULT_TOOL_THREAD_LIMIT
_lock = threading.Lock()
_pools: weakref.WeakKeyDictionary[object, _LoopPool] = weakref.WeakKeyDictionary()
_unkeyed: _LoopPool | None = None  # for a loop that cannot be weakly referenced
_held: contextvars.ContextVar[object | None] = contextvars.ContextVar("handrail_tool_pool_held", default=None)


def tool_thread_limit() -> int:
    """The most threads a loop's pool for blocking tools runs at once (:data:`DEFAULT_TOOL_THREAD_LIMIT`)."""
    return _limit


def set_tool_thread_limit(limit: int) -> None:
    """Set the most threads per event loop for blocking (sync) tools under ``run_async``.

    Pools made from now on use it. Existing pools are retired: calls running in them run to their end (so for
    a moment more threads than ``limit`` may run), and the calls still queued in them, like later calls, go to
    a new pool of the new size. Each run still runs at most its own ``tool_concurrency_limit``
    (``max_workers``) calls at once.

    Args:
        limit: An int from 1 to :data:`MAX_TOOL_THREAD_LIMIT` (4096).

    Raises:
        ConfigurationError: When ``limit`` is not an int from 1 to :data:`MAX_TOOL_THREAD_LIMIT`.

    Examples:
        >>> from handrail.tools import set_tool_thread_limit, tool_thread_limit
        >>> before = tool_thread_limit()
        >>> set_tool_thread_limit(512)
        >>> tool_thread_limit()
        512
        >>> set_tool_thread_limit(before)
    """
    global _limit, _unkeyed
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_TOOL_THREAD_LIMIT:
        raise ConfigurationError(
            f"set_tool_thread_limit needs an integer from 1 to {MAX_TOOL_THREAD_LIMIT}, got {limit!r:.100}."
        )
    with _lock:
        _limit = limit
        retired = [*_pools.values(), *([_unkeyed] if _unkeyed is not None else [])]
        _pools.clear()
        _unkeyed = None
    for pool in retired:  # its queued calls are queued again in their loop's new pool
        pool.retire()


def _pool_for(loop: object) -> _LoopPool:
    global _unkeyed
    with _lock:
        try:
            pool = _pools.get(loop)
        except TypeError:  # not weakly referenceable: one pool for all such loops
            pool = _unkeyed = _unkeyed or _new_pool()
            return pool
        if pool is None:
            pool = _pools[loop] = _new_pool()
            weakref.finalize(loop, pool.stop)  # its threads end with the loop
        return pool


def _new_pool() -> _LoopPool:
    return _LoopPool(_limit)


Item = tuple["asyncio.Future[Any]", Callable[[], Any]]


class _LoopPool:
    """An event loop's threads for blocking calls, handing outcomes back to the loop in batches.

    Threads start on demand, up to ``limit``, and take calls from one queue (a call is queued with its loop's
    future; one cancelled while queued never starts). Each finished call appends its outcome to a list, and only
    the call that finds the list empty wakes the loop: calls that end together cost the loop one wake-up, not one
    each (``run_in_executor`` wakes it per call, and pays for a ``concurrent.futures.Future`` and its callbacks).
    The threads are daemons; the interpreter waits at exit for the calls already queued (:func:`_wait_at_exit`).
    """

    def __init__(self, limit: int) -> None:
        from queue import SimpleQueue  # imported on first use: keeps `import handrail` fast

        self.limit = limit
        self._queue: SimpleQueue[Item | None] = SimpleQueue()
        self._lock = threading.Lock()
        self._quiet = threading.Condition(self._lock)
        self._threads = 0
        self._idle = 0
        """Threads free for a queued call that no earlier call counted on (a new call then starts no thread)."""
        self._pending = 0
        """Calls queued or running."""
        self._stopped = False
        self._exiting = False
        self._finished: list[tuple[asyncio.Future[Any], bool, Any]] = []
        _all_pools.add(self)

    def submit(self, loop: asyncio.AbstractEventLoop, call: Callable[[], Any]) -> asyncio.Future[Any]:
        """Queue ``call``; the returned future gets its outcome. Cancelling the future unqueues a call not started."""
        future = loop.create_future()
        self.queue(future, call)
        return future

    def queue(self, future: asyncio.Future[Any], call: Callable[[], Any]) -> None:
        """Queue ``call`` for ``future``, on the future's loop (in the loop's current pool, if this one is retired)."""
        try:
            self._put((future, call))
        except RuntimeError:  # retired meanwhile, or no thread can start (the interpreter is shutting down)
            current = _pool_for(future.get_loop())
            if current is self:
                raise
            current.queue(future, call)

    def _put(self, item: Item) -> None:
        with self._lock:
            if self._stopped:
                raise RuntimeError("this pool is retired")
            self._pending += 1
            if self._idle:
                self._idle -= 1
                start = False
            else:
                start = self._threads < self.limit
                if start:
                    self._threads += 1
        if start:
            try:
                threading.Thread(target=self._work, name=f"handrail-tool-{self._threads}", daemon=True).start()
            except RuntimeError:
                with self._lock:
                    self._threads -= 1
                    if not self._threads:  # no thread would ever take the call
                        self._pending -= 1
                        raise
        self._queue.put(item)

    def _work(self) -> None:
        take, lock = self._queue.get, self._lock
        while (item := take()) is not None:
            future, call = item
            outcome: tuple[asyncio.Future[Any], bool, Any] | None = None
            if not future.cancelled():  # a call cancelled while queued never starts
                try:
                    outcome = (future, True, call())
                except BaseException as exc:  # handed to the awaiting task, as run_in_executor does
                    outcome = (future, False, exc)
            with lock:
                self._idle += 1
                self._pending -= 1
                first = False
                if outcome is not None:
                    self._finished.append(outcome)
                    first = len(self._finished) == 1
                if self._exiting and not self._pending:
                    self._quiet.notify_all()
            if first:
                try:
                    future.get_loop().call_soon_threadsafe(self._drain)
                except RuntimeError:  # the loop is closed: nobody awaits these outcomes any more
                    with lock:
                        self._finished.clear()
            item = future = call = outcome = None  # type: ignore[assignment]  # nothing kept alive while idle

    def _drain(self) -> None:
        with self._lock:
            finished, self._finished = self._finished, []
        for future, ok, value in finished:
            if future.done():  # cancelled meanwhile
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

    def stop(self) -> None:
        """Let each thread end once the calls queued so far have run (the pool's loop is gone)."""
        with self._lock:
            self._stopped = True
            threads = self._threads
        for _ in range(threads):
            self._queue.put(None)

    def retire(self) -> None:
        """Stop, handing the calls not started yet to their loop's current pool (:func:`set_tool_thread_limit`)."""
        from queue import Empty

        with self._lock:
            self._stopped = True
        while True:
            try:
                item = self._queue.get_nowait()
            except Empty:
                break
            if item is None:
                continue
            with self._lock:
                self._pending -= 1
            future, call = item
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody awaits this call any more
                future.get_loop().call_soon_threadsafe(_requeue, future, call)
        self.stop()

    def wait_quiet(self) -> None:
        """Wait until every call queued in this pool has run."""
        with self._lock:
            self._exiting = True
            while self._pending:
                self._quiet.wait()


_all_pools: weakref.WeakSet[_LoopPool] = weakref.WeakSet()


def _wait_at_exit() -> None:
    # The threads are daemons (an idle one must not keep the interpreter alive): calls already queued or running
    # still end before it exits, as with the default executor.
    for pool in list(_all_pools):
        pool.wait_quiet()


atexit.register(_wait_at_exit)


def _requeue(future: asyncio.Future[Any], call: Callable[[], Any]) -> None:
    if future.done():
        return
    try:
        _pool_for(future.get_loop()).queue(future, call)
    except RuntimeError as exc:  # no thread can start any more (the interpreter is shutting down)
        future.set_exception(exc)


def _forget_pools() -> None:
    # A forked child has none of the parent's threads: its pools would queue calls that never run.
    global _lock, _unkeyed
    _lock = threading.Lock()
    _pools.clear()
    _all_pools.clear()
    _unkeyed = None


os.register_at_fork(after_in_child=_forget_pools)


def _holding(pool: object, function: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
    """Run ``function`` marked as holding a thread of ``pool`` (runs inside a copied context)."""
    _held.set(pool)
    try:
        return function(*args, **kwargs)
    except StopIteration as exc:  # it cannot cross an asyncio Future (the awaiting task would hang)
        name = getattr(function, "__qualname__", repr(function))
        raise RuntimeError(f"{name} raised StopIteration (e.g. next() on an exhausted iterator)") from exc


async def to_tool_thread(function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run a blocking tool call in the running loop's tool pool, under a copy of the caller's context variables.

    A call made on behalf of a call holding one of that pool's threads runs on a thread of its own instead (see
    the module docstring). Cancelling the awaiting task does not stop a call that started; one still queued
    never starts.

    Raises:
        RuntimeError: When ``function`` raised StopIteration.
        Exception: Whatever else ``function`` raised.
    """
    import asyncio  # imported on first use: keeps `import handrail` fast

    loop = asyncio.get_running_loop()
    pool = _pool_for(loop)
    call = functools.partial(contextvars.copy_context().run, _holding, pool, function, args, kwargs)
    if _held.get() is not pool:
        return await pool.submit(loop, call)  # type: ignore[no-any-return]
    from concurrent.futures import ThreadPoolExecutor

    beside = ThreadPoolExecutor(max_workers=1, thread_name_prefix="handrail-tool-nested")
    try:
        future = loop.run_in_executor(beside, call)
    finally:
        beside.shutdown(wait=False)  # the thread ends after this one call
    return await future


async def _awaited(function: Callable[..., Awaitable[T]], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
    return await function(*args, **kwargs)


def _run_here(function: Callable[..., Awaitable[T]], args: tuple[Any, ...], kwargs: dict[str, Any], ctx: Any) -> T:
    import asyncio

    # A loop factory keeps the Runner from replacing this thread's current event loop.
    with asyncio.Runner(loop_factory=asyncio.new_event_loop) as runner:
        return runner.run(_awaited(function, args, kwargs), context=ctx)


def run_coroutine_sync(function: Callable[..., Awaitable[T]], /, *args: Any, **kwargs: Any) -> T:
    """Run ``function(*args, **kwargs)`` to its end on an event loop of its own and return its result.

    The coroutine runs under a copy of the caller's context variables, on a new loop that is closed after it
    (its left-over tasks cancelled). In a thread that already runs a loop (a sync run called from async code)
    the new loop runs in a helper thread that the caller waits for, also when interrupted.

    Raises:
        Exception: Whatever the coroutine raised.
    """
    import asyncio

    ctx = contextvars.copy_context()
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        in_a_loop = False
    else:
        in_a_loop = True
    if not in_a_loop:  # called outside the except block: the tool's error must not chain to "no running loop"
        return _run_here(function, args, kwargs, ctx)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="handrail-async-tool") as helper:
        return helper.submit(_run_here, function, args, kwargs, ctx).result()
