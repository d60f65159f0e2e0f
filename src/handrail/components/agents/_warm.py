"""Warming an Agent's parts once, and starting an async run whose set-up blocks, off the event loop.

Warm-up can load a model (seconds). Runs warm automatically, so concurrent first runs from several threads
must warm each object once (a lock per Agent), and ``run_async`` must not do it on the event loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from handrail.components.agents._plan import RunRequest, Started, start_run
from handrail.core._threads import to_thread
from handrail.tools._lifecycle import mark_warmed, tools_need_warm_up, warm_up_tools

if TYPE_CHECKING:
    import asyncio

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
    """``start_run`` in a worker thread (a claim, store reads, a warm-up: blocking I/O).

    A run cancelled while the thread works lets the thread finish, then releases whatever it claimed (a
    resumed snapshot's claim), so the snapshot can be resumed again at once.

    Returns:
        What ``start_run`` returns.
    """
    import asyncio

    task = asyncio.ensure_future(to_thread(start_run, agent, req))
    try:
        started: Started = await asyncio.shield(task)
        return started
    except asyncio.CancelledError:
        task.add_done_callback(_release)
        raise


def _release(task: asyncio.Future[Any]) -> None:
    if task.cancelled() or task.exception() is not None:
        return  # start_run released its claim itself when it failed
    checkpoints = task.result().parts.checkpoints
    if checkpoints is not None:
        checkpoints.close()
