"""Running blocking code from async code, and blocking tool calls on a shared, reused thread pool.

Blocking tool calls (sync tools, under ``run`` or ``run_async``) run on one process-wide pool of up to
:data:`TOOL_THREADS` threads, created on demand and kept for later steps: a step no longer pays for starting
threads, and ``run_async`` is no longer held to asyncio's default executor (``min(32, cpus + 4)`` threads, 6 on a
2-core machine), so 8 blocking calls with a limit of 8 run at once. Each step still runs at most its own limit
at once (``tool_concurrency_limit`` / ``max_workers``). A run started from inside one of the pool's threads (an
Agent used as a tool) uses a private pool for its steps instead, so a saturated shared pool never waits on
itself. A forked child process starts a new pool.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["TOOL_THREADS", "run_in_threads", "to_thread", "to_tool_thread"]

T = TypeVar("T")

TOOL_THREADS = 64
"""The most threads of the shared pool for blocking tool calls (started on demand, then reused)."""

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_worker = threading.local()


def _mark_worker() -> None:
    _worker.in_pool = True


def _shared_pool() -> ThreadPoolExecutor | None:
    """The shared pool, or None in one of its own threads (the caller then uses a private pool)."""
    global _pool
    if getattr(_worker, "in_pool", False):
        return None
    pool = _pool
    if pool is None:
        with _pool_lock:
            if _pool is None:
                from concurrent.futures import ThreadPoolExecutor  # on first use: keeps `import handrail` fast

                _pool = ThreadPoolExecutor(TOOL_THREADS, "handrail-tool", initializer=_mark_worker)
            pool = _pool
    return pool


def _after_fork_in_child() -> None:
    # The parent's threads do not exist in the child; its pool would queue work that never runs.
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _unwrap_stop(function: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Callable[[], T]:
    def call() -> T:
        try:
            return function(*args, **kwargs)
        except StopIteration as exc:
            name = getattr(function, "__qualname__", repr(function))
            raise RuntimeError(f"{name} raised StopIteration (e.g. next() on an exhausted iterator)") from exc

    return call


async def to_thread(function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run ``function`` in a worker thread (like ``asyncio.to_thread``, context variables included).

    A ``StopIteration`` raised by ``function`` cannot cross an asyncio Future (the awaiting
    task would hang), so it is re-raised as ``RuntimeError`` with the original as its cause.

    Raises:
        RuntimeError: When ``function`` raised StopIteration.
        Exception: Whatever else ``function`` raised.
    """
    import asyncio  # imported on first use: keeps `import handrail` fast

    return await asyncio.to_thread(_unwrap_stop(function, args, kwargs))


async def to_tool_thread(function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Like :func:`to_thread`, on the shared tool pool (asyncio's default executor inside one of its threads).

    Cancelling the awaiting task does not stop the thread: the call runs to its end, as with ``to_thread``;
    unlike with asyncio's default executor, ``asyncio.run`` does not wait for it before returning.

    Raises:
        RuntimeError: When ``function`` raised StopIteration.
        Exception: Whatever else ``function`` raised.
    """
    import asyncio

    loop = asyncio.get_running_loop()
    call = _unwrap_stop(function, args, kwargs)
    return await loop.run_in_executor(_shared_pool(), contextvars.copy_context().run, call)


def run_in_threads(calls: Sequence[Callable[[], T]], limit: int) -> list[T]:
    """Run ``calls`` concurrently on the shared tool pool, at most ``limit`` at once.

    Each runs under a copy of the caller's context variables.

    Args:
        calls: Functions of no arguments.
        limit: The most calls running at once (>= 1).

    Returns:
        Their results, in the order of ``calls``.

    Raises:
        BaseException: The first call's exception in call order, after every started call has finished; calls
            not yet started when the caller is interrupted (KeyboardInterrupt) are not started.
    """
    pool = _shared_pool()
    if pool is None:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(limit, len(calls))) as private:
            return _bounded(private, calls, limit)
    return _bounded(pool, calls, limit)


def _bounded(pool: ThreadPoolExecutor, calls: Sequence[Callable[[], T]], limit: int) -> list[T]:
    gate = threading.BoundedSemaphore(limit)
    futures: list[Future[T]] = []

    def release(_: Future[T]) -> None:
        gate.release()

    try:
        for call in calls:
            gate.acquire()
            future = pool.submit(contextvars.copy_context().run, call)
            future.add_done_callback(release)
            futures.append(future)
    finally:
        # Like leaving a `with ThreadPoolExecutor()` block: what started finishes before the caller goes on.
        for future in futures:
            future.exception()
    return [future.result() for future in futures]
