"""The one private event loop every MCP connection of the process runs on, in a daemon thread ``handrail-mcp``.

Sync callers block on :func:`run_sync`; async callers, on any other event loop, await :func:`run_async`. Either
way the coroutine runs on this loop, so each connection's SDK objects (its ``mcp.Client``, its anyio cancel scopes
and task groups) are only ever touched from one thread, and entered and exited by the task that owns them.

The thread starts on first use (and again in a forked child, where it does not exist). At interpreter exit the
callbacks given to :func:`at_exit` run on the loop (each connection still open closes there, ending its process).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["at_exit", "in_loop_thread", "mcp_loop", "run_async", "run_sync", "submit"]

_T = TypeVar("_T")

_logger = logging.getLogger("handrail.tools.mcp")
_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_pid: int | None = None
_exit_callbacks: list[Callable[[], Coroutine[Any, Any, None]]] = []
_EXIT_TIMEOUT = 15.0
"""How long interpreter exit waits for the :func:`at_exit` callbacks (each stdio process takes up to ~6 s)."""


def mcp_loop() -> asyncio.AbstractEventLoop:
    """The MCP event loop, started in its daemon thread on first use.

    Returns:
        The running loop of the thread ``handrail-mcp``.
    """
    global _loop, _thread, _pid
    with _lock:
        if _loop is not None and _pid == os.getpid() and _thread is not None and _thread.is_alive():
            return _loop
        loop = asyncio.new_event_loop()
        started = threading.Event()

        def serve() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(started.set)
            loop.run_forever()

        thread = threading.Thread(target=serve, name="handrail-mcp", daemon=True)
        thread.start()
        started.wait()
        if _pid is None:
            atexit.register(_run_exit_callbacks)
        _loop, _thread, _pid = loop, thread, os.getpid()
        return loop


def in_loop_thread() -> bool:
    """Whether the calling thread is the MCP loop's thread."""
    return _thread is not None and threading.current_thread() is _thread and _pid == os.getpid()


def submit(coro: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
    """Schedule ``coro`` as a task on the MCP loop; it runs with a copy of the caller's context variables.

    (``run_coroutine_threadsafe`` schedules through ``call_soon_threadsafe``, which copies the calling thread's
    context: the caller's current trace span, for one, is the parent of what the SDK traces on the loop.)

    Args:
        coro: The coroutine to run.

    Returns:
        Its future; cancelling it cancels the task on the MCP loop.
    """
    return asyncio.run_coroutine_threadsafe(coro, mcp_loop())


def run_sync(coro: Coroutine[Any, Any, _T], timeout: float | None) -> _T:
    """Run ``coro`` on the MCP loop and block until it ends.

    Args:
        coro: The coroutine to run.
        timeout: A safety bound in seconds on the wait (the coroutine keeps its own timeouts); None for none.

    Returns:
        What the coroutine returned (what it raised is raised here).

    Raises:
        RuntimeError: When called on the MCP loop's own thread (it would wait for itself forever).
        TimeoutError: When ``timeout`` passed first; the coroutine is cancelled.
    """
    if in_loop_thread():
        coro.close()
        raise RuntimeError(
            "A blocking MCP call was made on the MCP event-loop thread (from an on_tools_changed callback?); "
            "it would wait for itself. Use the async methods there, or only set a flag."
        )
    future = submit(coro)
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise
    except BaseException:  # KeyboardInterrupt, SystemExit: the coroutine must not run on unobserved
        future.cancel()
        raise


async def run_async(coro: Coroutine[Any, Any, _T]) -> _T:
    """Await ``coro`` on the MCP loop from any other event loop.

    Cancelling the awaiting task cancels the coroutine on the MCP loop too. Called on the MCP loop itself, the
    coroutine is simply awaited.

    Args:
        coro: The coroutine to run.

    Returns:
        What the coroutine returned (what it raised is raised here).
    """
    if in_loop_thread():
        return await coro
    return await asyncio.wrap_future(submit(coro))


def at_exit(callback: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run ``callback()`` on the MCP loop at interpreter exit (each callback once, all concurrently).

    Args:
        callback: Makes the coroutine to run; it should bound its own waits.
    """
    with _lock:
        _exit_callbacks.append(callback)


def _run_exit_callbacks() -> None:
    with _lock:
        callbacks = list(_exit_callbacks)
        _exit_callbacks.clear()
        loop, pid = _loop, _pid
    if not callbacks or loop is None or pid != os.getpid() or not loop.is_running():
        return

    async def run_all() -> None:
        results = await asyncio.gather(*(callback() for callback in callbacks), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                _logger.warning("Closing MCP connections at exit failed: %r", result)

    future = asyncio.run_coroutine_threadsafe(run_all(), loop)
    try:
        future.result(_EXIT_TIMEOUT)
    except (concurrent.futures.TimeoutError, Exception) as exc:  # exiting: report, never raise
        future.cancel()
        _logger.warning("Closing MCP connections at exit did not finish: %r", exc)
