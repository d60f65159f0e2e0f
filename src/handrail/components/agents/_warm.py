"""Warming an Agent's parts once, and starting an async run whose set-up blocks, off the event loop.

Warm-up can load a model (seconds). Runs warm automatically, so concurrent first runs from several threads
must warm each object once (a lock per Agent), and ``run_async`` must not do it on the event loop.
"""

from __future__ import annotations

from typing import Any

from handrail.components.agents._plan import RunRequest, start_run
from handrail.core._threads import to_thread
from handrail.tools.utils import flatten_tools

__all__ = ["needs_warm_up", "start_run_off_loop", "warm_up"]


def _targets(agent: Any) -> list[object]:
    table = agent._hook_table
    hooks = [h for point in table.__slots__ for h in getattr(table, point)]
    return [agent.chat_generator, *flatten_tools(agent.tools), *hooks]


def needs_warm_up(agent: Any) -> bool:
    """Whether the Agent's generator, tools or hooks hold an object not warmed yet."""
    warmed = agent._warmed
    return any(id(obj) not in warmed for obj in _targets(agent))


def warm_up(agent: Any) -> None:
    """Call ``warm_up()`` once on every object of the Agent that has one, under the Agent's lock.

    Threads that start runs together wait for the one warming; an object that raised is tried again by
    the next run.
    """
    if not needs_warm_up(agent):
        return
    with agent._warm_lock:
        for obj in _targets(agent):
            if id(obj) in agent._warmed:
                continue
            warm = getattr(obj, "warm_up", None)
            if callable(warm):
                warm()
            agent._warmed[id(obj)] = obj  # the reference keeps the id from being reused by another object


async def start_run_off_loop(agent: Any, req: RunRequest) -> Any:
    """``start_run`` in a worker thread (a claim, store reads, a warm-up: blocking I/O).

    A run cancelled while the thread works lets the thread finish, then releases whatever it claimed (a
    resumed snapshot's claim), so the snapshot can be resumed again at once.

    Returns:
        ``start_run``'s ``(plan, state, model)``.
    """
    import asyncio

    task = asyncio.ensure_future(to_thread(start_run, agent, req))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        task.add_done_callback(_release)
        raise


def _release(task: Any) -> None:
    if task.cancelled() or task.exception() is not None:
        return  # start_run released its claim itself when it failed
    plan = task.result()[0]
    if plan.checkpoints is not None:
        plan.checkpoints.close()
