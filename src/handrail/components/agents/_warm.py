"""Warming an Agent's parts once, and starting an async run whose set-up blocks, off the event loop.

Warm-up can load a model (seconds). Runs warm automatically, so concurrent first runs from several threads
must warm each object once (a lock per Agent), and ``run_async`` must not do it on the event loop.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from handrail.components.agents._plan import RunRequest, Started, start_run
from handrail.core._threads import to_thread
from handrail.tools._lifecycle import mark_warmed, tools_need_warm_up, warm_up_tools

if TYPE_CHECKING:
    from handrail.components.agents.agent import Agent

__all__ = ["needs_warm_up", "start_run_off_loop", "warm_up"]


def needs_warm_up(agent: Agent) -> bool:
    """Whether the Agent's generator, toolsets, tools or hooks hold an object not warmed yet."""
    warmed = agent._warmed
    others = [agent.chat_generator, *agent._hooks()]
    return any(id(obj) not in warmed for obj in others) or tools_need_warm_up(agent.tools, warmed)


def warm_up(agent: Agent) -> None:
    """Call ``warm_up()`` once on every object of the Agent that has one, under the Agent's lock.

    The order is the generator, each toolset (its own ``warm_up``, before its tools are listed) and tool, then the
    hooks. Threads that start runs together wait for the one warming; an object that raised is tried again by
    the next run. After :meth:`Agent.close` every object is warmed again, as after a fresh start.
    """
    if not needs_warm_up(agent):
        return
    with agent._warm_lock:
        _warm_once(agent.chat_generator, agent._warmed, agent._closed)
        warm_up_tools(agent.tools, agent._warmed, agent._closed)
        for hook in agent._hooks():
            _warm_once(hook, agent._warmed, agent._closed)


def _warm_once(obj: object, warmed: dict[int, object], closed: dict[int, object]) -> None:
    if id(obj) in warmed:
        return
    warm = getattr(obj, "warm_up", None)
    if callable(warm):
        warm()
    mark_warmed(obj, warmed, closed)


async def start_run_off_loop(agent: Agent, req: RunRequest) -> Started:
    """``start_run`` in a worker thread (a claim, a warm-up: blocking I/O).

    A run cancelled while the thread works does not wait for it: the thread itself releases what it claimed (a
    resumed snapshot's claim) once it sees nobody will take its result, so the snapshot can be resumed again at
    once, also when the event loop has closed meanwhile (``asyncio.run`` returns right after the cancellation).

    Returns:
        What ``start_run`` returns.
    """
    import asyncio

    handoff = _Handoff()
    task = asyncio.ensure_future(to_thread(handoff.start, agent, req))
    try:
        started: Started = await asyncio.shield(task)
        return started
    except asyncio.CancelledError:
        handoff.abandon()
        raise


class _Handoff:
    """A start made in a worker thread for a caller that may give up waiting: whoever comes last releases it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._abandoned = False
        self._started: Started | None = None

    def start(self, agent: Agent, req: RunRequest) -> Started:
        started = start_run(agent, req)  # a failed start released its claim itself
        with self._lock:
            if not self._abandoned:
                self._started = started
                return started
        _release(started)
        return started

    def abandon(self) -> None:
        """The caller was cancelled: release the start if it is already made (else the thread does, when done)."""
        with self._lock:
            self._abandoned = True
            started, self._started = self._started, None
        if started is not None:
            _release(started)


def _release(started: Started) -> None:
    checkpoints = started.parts.checkpoints
    if checkpoints is not None:
        checkpoints.close()
