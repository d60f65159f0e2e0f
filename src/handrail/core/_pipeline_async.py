"""The async driver of a pipeline run: event-driven, each component starting as soon as its inputs are ready.

It shares :class:`~handrail.core._pipeline_run.RunState` (what runs) with the sync driver; only *how* differs.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Mapping
from typing import Any

from handrail.core._pipeline_run import RunState, Task, failure
from handrail.core._threads import to_thread

__all__ = ["call_async", "drive_async", "iterate_async"]


async def call_async(task: Task) -> Any:
    """Run one task with the component's ``run_async``, or its ``run`` in a worker thread when it has none.

    Raises:
        PipelineError: When the component raised; the original exception is chained.
    """
    run_async = getattr(task.component, "run_async", None)
    try:
        if inspect.iscoroutinefunction(run_async):
            return await run_async(**task.inputs)
        return await to_thread(task.component.run, **task.inputs)
    except Exception as exc:
        if getattr(exc, "handrail_signal", False):  # a breakpoint or approval pause: not a failure
            raise
        raise failure(task, exc) from exc


async def drive_async(state: RunState, concurrency_limit: int | None = None) -> dict[str, dict[str, Any]]:
    """Run a pipeline event-driven (:func:`iterate_async` to its end).

    Returns:
        The run's result, :attr:`RunState.result`.

    Raises:
        PipelineError: The first failure (by start order among those finishing together).
        PipelineMaxComponentRuns: When a component would run too often.
    """
    async for _ in iterate_async(state, concurrency_limit):
        pass
    return state.result


async def iterate_async(
    state: RunState, concurrency_limit: int | None = None
) -> AsyncIterator[tuple[Task, Mapping[str, Any]]]:
    """Run a pipeline event-driven, yielding each component run's ``(task, outputs)`` as it completes.

    Every ready component becomes an asyncio task; as soon as one finishes, its outputs are delivered and
    whatever became ready starts, while the others keep running (at most ``concurrency_limit`` at once, when
    given). Tasks that finish together are completed in the order they started. When one fails (or the run
    itself is cancelled, or the caller stops iterating) the others are cancelled (a sync ``run`` already in its
    worker thread finishes there, its outputs discarded) and the failure is raised.

    Raises:
        PipelineError: The first failure (by start order among those finishing together).
        PipelineMaxComponentRuns: When a component would run too often.
    """
    import asyncio  # imported on first use: keeps `import handrail` fast

    running: dict[asyncio.Future[Any], Task] = {}
    try:
        while True:
            for task in state.next_wave(concurrency_limit):
                running[asyncio.ensure_future(call_async(task))] = task
            if not running:
                return
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for future in [f for f in running if f in done]:
                task, outputs = running.pop(future), future.result()
                state.complete(task, outputs)
                yield task, outputs
    except BaseException:
        for future in running:
            future.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        raise
