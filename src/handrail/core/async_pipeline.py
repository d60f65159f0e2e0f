"""``AsyncPipeline``: a :class:`~handrail.core.pipeline.Pipeline` run on an event loop, as Haystack's.

Everything but running is the Pipeline's (building, connecting, serialization, the scheduling rules).
``run_async`` starts each component as soon as its inputs are ready, at most ``concurrency_limit`` at once:
a component with a ``run_async`` coroutine is awaited, one with only ``run`` goes to a worker thread, so
independent branches overlap. ``run`` drives ``run_async`` with ``asyncio.run``.

Examples:
    >>> import asyncio
    >>> from typing import Any
    >>> from handrail.core.component import component
    >>> @component
    ... class Double:
    ...     @component.output_types(value=int)
    ...     async def run_async(self, value: int) -> dict[str, Any]:
    ...         return {"value": value * 2}
    ...     @component.output_types(value=int)
    ...     def run(self, value: int) -> dict[str, Any]:
    ...         return {"value": value * 2}
    >>> pipeline = AsyncPipeline()
    >>> pipeline.add_component("double", Double())
    >>> asyncio.run(pipeline.run_async({"double": {"value": 4}}))
    {'double': {'value': 8}}
    >>> pipeline.run({"double": {"value": 5}})
    {'double': {'value': 10}}
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

from handrail.core._pipeline_async import drive_async, iterate_async
from handrail.core._threads import to_thread
from handrail.core.pipeline import Pipeline, report_stuck
from handrail.errors import ConfigurationError, ConfigurationTypeError

__all__ = ["AsyncPipeline"]


def _check_limit(concurrency_limit: Any) -> int:
    if isinstance(concurrency_limit, bool) or not isinstance(concurrency_limit, int):
        raise ConfigurationTypeError(f"concurrency_limit must be an int, got {type(concurrency_limit).__name__}.")
    if concurrency_limit < 1:
        raise ConfigurationError(f"concurrency_limit must be at least 1, got {concurrency_limit}.")
    return concurrency_limit


class AsyncPipeline(Pipeline):
    """A Pipeline whose ``run_async`` runs ready components concurrently (at most ``concurrency_limit``).

    Built, connected and serialized like :class:`~handrail.core.pipeline.Pipeline` (same arguments).
    """

    async def run_async(
        self,
        data: Mapping[str, Any],
        include_outputs_from: Iterable[str] | None = None,
        concurrency_limit: int = 4,
    ) -> dict[str, dict[str, Any]]:
        """Run the pipeline on the running event loop.

        Args:
            data: As for :meth:`Pipeline.run`.
            include_outputs_from: As for :meth:`Pipeline.run`.
            concurrency_limit: How many components may run at the same time (at least 1).

        Returns:
            As for :meth:`Pipeline.run`.

        Raises:
            ConfigurationTypeError: As for :meth:`Pipeline.run`, or a ``concurrency_limit`` that is no int.
            ConfigurationError: As for :meth:`Pipeline.run`, or a ``concurrency_limit`` below 1.
            PipelineError: As for :meth:`Pipeline.run_async`.
            PipelineMaxComponentRuns: As for :meth:`Pipeline.run`.
        """
        limit = _check_limit(concurrency_limit)
        state = self._start(data, include_outputs_from)
        if not self._warmed:
            await to_thread(self._ensure_warm)
        result = await drive_async(state, limit)
        report_stuck(state)
        return result

    async def run_async_generator(
        self,
        data: Mapping[str, Any],
        include_outputs_from: Iterable[str] | None = None,
        concurrency_limit: int = 4,
    ) -> AsyncIterator[dict[str, Any]]:
        """Run like :meth:`run_async`, yielding each component's outputs as soon as it finishes.

        Args:
            data: As for :meth:`run_async`.
            include_outputs_from: As for :meth:`run_async`.
            concurrency_limit: As for :meth:`run_async`.

        Yields:
            ``{component: outputs}`` (a deep copy) after each component run, then the run's result (as
            :meth:`run_async` returns it) last. Stopping the iteration early cancels the components still running.

        Raises:
            As :meth:`run_async`.
        """
        limit = _check_limit(concurrency_limit)
        state = self._start(data, include_outputs_from)
        if not self._warmed:
            await to_thread(self._ensure_warm)
        async for task, outputs in iterate_async(state, limit):
            yield {task.name: copy.deepcopy(dict(outputs))}
        report_stuck(state)
        yield copy.deepcopy(state.result)

    def run(  # type: ignore[override]  # no breakpoints in an AsyncPipeline, as in Haystack
        self,
        data: Mapping[str, Any],
        include_outputs_from: Iterable[str] | None = None,
        concurrency_limit: int = 4,
    ) -> dict[str, dict[str, Any]]:
        """Run :meth:`run_async` to its end with ``asyncio.run`` (from code that is not on an event loop).

        Args:
            data: As for :meth:`run_async`.
            include_outputs_from: As for :meth:`run_async`.
            concurrency_limit: As for :meth:`run_async`.

        Returns:
            As for :meth:`run_async`.

        Raises:
            RuntimeError: When called on a running event loop ("Cannot call run() from within an async
                context"); await :meth:`run_async` there.
            ConfigurationTypeError, ConfigurationError, PipelineError, PipelineMaxComponentRuns: As for
                :meth:`run_async`.
        """
        import asyncio

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run_async(data, include_outputs_from, concurrency_limit))
        raise RuntimeError(
            "Cannot call run() from within an async context. Use 'await pipeline.run_async(...)' instead."
        )
