"""The Agent's run context: it executes each effect of a run with the run's live objects.

A driver (:mod:`handrail.components.drivers`) calls one method per effect; the tool effects are the tool step's
(:class:`~handrail.components.tools._context.ToolContext`). This module adds the model call, approvals, hooks (in
order, the reserved State keys checked after each one), and the record's writes: persist, pause and finish. Under
``run_async`` every store write runs in a worker thread, never on the event loop, and a cancellation waits for a
write under way to end.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from handrail.components.agents._approval_records import open_approvals
from handrail.components.agents._confirm import ConfirmRequest, confirm_async, confirm_sync
from handrail.components.agents._hook_checks import check_after_hook
from handrail.components.agents._machine import RunParts, RunPlan
from handrail.components.agents._run_state import RunState
from handrail.components.effects import AskApproval, CallModel, Finish, LoadStores, Pause, Persist, RunHooks
from handrail.components.tools._context import ToolContext
from handrail.components.tools._execution import in_thread_unsplit
from handrail.core._threads import to_thread
from handrail.dataclasses.streaming import StreamingCallback, StreamingChunk, is_async_callback
from handrail.errors import RunError

if TYPE_CHECKING:
    import asyncio

    from handrail.components.agents._checkpoints import Checkpoints
    from handrail.components.drivers import RunObserver
    from handrail.components.generators.types import ChatGenerator
    from handrail.dataclasses.decisions import ToolExecutionDecision
    from handrail.tools.tool import Tool

__all__ = ["AgentContext", "ModelCall", "release_checkpoints"]


def release_checkpoints(checkpoints: Checkpoints | None) -> None:
    """Release a run's claim and close a store it opened, once (also what collecting an unclosed run does)."""
    if checkpoints is not None:
        checkpoints.close()


@dataclass(frozen=True, slots=True)
class ModelCall:
    """How to call the chat generator in this run."""

    generator: ChatGenerator
    """The chat generator."""
    extra: dict[str, Any]
    """Keyword arguments besides messages and tools (streaming_callback, generation_kwargs)."""
    pass_tools: bool
    """True when the generator's run accepts ``tools``."""
    callback: StreamingCallback | None
    """The run's streaming callback (also receives the tool-result chunks)."""


def _replies(output: object, generator: object) -> Any:
    """The ``replies`` of the generator's output (the step machine checks what they hold)."""
    if type(output) is dict and "replies" in output:  # the common case, without the ABC check below
        return output["replies"]
    if isinstance(output, Mapping) and "replies" in output:
        return output["replies"]
    raise RunError(f"{type(generator).__name__}.run must return {{'replies': [ChatMessage, ...]}}, got {output!r:.200}")


def _threadsafe_callback(callback: StreamingCallback, loop: asyncio.AbstractEventLoop) -> StreamingCallback:
    """Wrap an async callback so a sync-only generator running in a worker thread can call it."""
    import asyncio

    def call(chunk: StreamingChunk) -> None:
        result = callback(chunk)
        if inspect.isawaitable(result):
            asyncio.run_coroutine_threadsafe(_await(result), loop).result()

    return call


async def _await(awaitable: Awaitable[object]) -> None:
    await awaitable


class AgentContext(ToolContext):
    """Executes the effects of one Agent run.

    Args:
        plan: The run's plan (tools, hooks, options).
        parts: The run's approvals, checkpoints and stores.
        run: The run's state (the tools offered at this step, the live invocations, the held calls).
        model: How to call the chat generator.
        observers: Told when each effect and each tool call starts and ends.
    """

    def __init__(
        self, plan: RunPlan, parts: RunParts, run: RunState, model: ModelCall, observers: Sequence[RunObserver] = ()
    ) -> None:
        super().__init__(plan.static_by_name if plan.static_tools is not None else self._step_tools, run.state,
                         plan.step_options, observers, run.ledger)  # fmt: skip
        self.bound = run.bound
        self.plan = plan
        self.parts = parts
        self.run = run
        self.model = model
        self._generator_run = model.generator.run
        self._generator_run_async = getattr(model.generator, "run_async", None)

    def _step_tools(self) -> dict[str, Tool]:
        return {t.name: t for t in self.run.offered}

    def _offered(self, names: tuple[str, ...]) -> list[Tool] | None:
        """The Tool objects of ``names`` (the step's own list when the names are the step's)."""
        if names is self.plan.static_names:
            return self.plan.static_tools or None
        if not names:
            return None
        offered = self.run.offered
        if len(offered) == len(names) and all(t.name == n for t, n in zip(offered, names, strict=True)):
            return offered
        return [self.tool(name) for name in names]

    # -- the model ---------------------------------------------------------------------------------

    def call_model(self, effect: CallModel) -> Any:
        """Call the chat generator's ``run``; returns its replies (the step machine checks them)."""
        model = self.model
        if model.pass_tools:
            names, plan = effect.tools, self.plan
            tools = plan.static_tools if names is plan.static_names and names else self._offered(names)
            output = self._generator_run(messages=effect.messages, tools=tools, **model.extra)
        else:
            output = self._generator_run(messages=effect.messages, **model.extra)
        return _replies(output, model.generator)

    async def call_model_async(self, effect: CallModel) -> Any:
        """Await the generator's ``run_async`` (or its ``run`` in a worker thread); returns its replies (checked)."""
        model = self.model
        kwargs = dict(model.extra)
        if model.pass_tools:
            names, plan = effect.tools, self.plan
            kwargs["tools"] = plan.static_tools if names is plan.static_names and names else self._offered(names)
        if self._generator_run_async is not None:
            output = await self._generator_run_async(messages=effect.messages, **kwargs)
            return _replies(output, model.generator)
        callback = kwargs.get("streaming_callback")
        if callback is not None and is_async_callback(callback):
            import asyncio

            kwargs["streaming_callback"] = _threadsafe_callback(callback, asyncio.get_running_loop())
        return _replies(await to_thread(self._generator_run, messages=effect.messages, **kwargs), model.generator)

    # -- approvals ---------------------------------------------------------------------------------

    def _requests(self, effect: AskApproval) -> list[ConfirmRequest]:
        approvals = self.parts.approvals
        assert approvals is not None
        return [ConfirmRequest(approvals.strategy_of(inv.tool.name), inv) for inv in self.bind(effect.calls)]

    def ask_approval(self, effect: AskApproval) -> list[ToolExecutionDecision]:
        """Ask each call's confirmation strategy, one after another."""
        approvals = self.parts.approvals
        assert approvals is not None
        return confirm_sync(self._requests(effect), approvals.context)

    async def ask_approval_async(self, effect: AskApproval) -> list[ToolExecutionDecision]:
        """Await each call's confirmation strategy, one after another."""
        approvals = self.parts.approvals
        assert approvals is not None
        return await confirm_async(self._requests(effect), approvals.context)

    # -- hooks -------------------------------------------------------------------------------------

    def run_hooks(self, effect: RunHooks) -> None:
        """Run the hooks of the point on the run's State, checking the reserved keys after each one."""
        state = self.state
        for hook in getattr(self.plan.hooks, effect.point):
            hook.run(state)
            check_after_hook(hook, effect.point, state.data)

    async def run_hooks_async(self, effect: RunHooks) -> None:
        """Await the hooks of the point (``run_async`` where a hook has one)."""
        state = self.state
        for hook in getattr(self.plan.hooks, effect.point):
            run_hook_async = getattr(hook, "run_async", None)
            if run_hook_async is not None:
                await run_hook_async(state)
            else:
                hook.run(state)
            check_after_hook(hook, effect.point, state.data)

    # -- chat and memory stores -------------------------------------------------------------------------

    def load_stores(self, effect: LoadStores) -> None:
        """Insert the stored chat history and the memories found into the run's input."""
        stores, cp = self.parts.stores, self.parts.checkpoints
        if stores is None:
            return
        stores.load_into(self.state.data["messages"])
        if cp is not None:
            cp.metadata["run"] = stores.to_metadata()  # where the run's own messages start

    async def load_stores_async(self, effect: LoadStores) -> None:
        """:meth:`load_stores` in a worker thread."""
        if self.parts.stores is not None:
            await in_thread_unsplit(self.load_stores, effect)

    # -- the durable record --------------------------------------------------------------------------

    def persist(self, effect: Persist) -> None:
        """Write what the ledger recorded outside a tool call."""
        ledger = self.run.ledger
        if ledger is not None:
            ledger.persist()

    async def persist_async(self, effect: Persist) -> None:
        """:meth:`persist` in a worker thread."""
        ledger = self.run.ledger
        if ledger is not None and ledger.unsaved is not None:
            await in_thread_unsplit(ledger.persist)

    def _pause_error(self, effect: Pause) -> BaseException:
        cp = self.parts.checkpoints
        if cp is None or (cp.break_point is None and not effect.held):
            from handrail.errors import RunError

            return RunError(f"This run has no breakpoint or pausing strategy to pause at {effect.position}.")
        if not effect.held:
            assert cp.break_point is not None
            return cp.pause(cp.snapshot(effect.position, self.state, cp.break_point), [])
        by_id = {c.id: c for c in self.run.held}
        held = [by_id[i] for i in effect.held if i in by_id] or list(self.run.held)
        error = cp.pause(cp.snapshot("tool_invoker", self.state, cp.tool_break_point(held[0].tool_name)), held)
        approvals = self.parts.approvals
        if approvals is None:
            open_approvals(cp, held, None)  # the snapshot is written
        else:
            open_approvals(cp, held, approvals.strategy_of, approvals.description_of)
        return error

    def _paused(self, effect: Pause) -> BaseException:
        try:
            return self._pause_error(effect)
        finally:
            self.release()  # a pause ends the run: its claim goes now, not when someone closes the run

    def pause(self, effect: Pause) -> NoReturn:
        """Write the pause snapshot (where a store is known), release the claim, raise the breakpoint exception."""
        raise self._paused(effect)

    async def pause_async(self, effect: Pause) -> NoReturn:
        """:meth:`pause` with the writes in a worker thread."""
        raise await in_thread_unsplit(self._paused, effect)

    def release(self) -> None:
        """Release the run's claim on its record and close a store it opened (once; later calls do nothing)."""
        release_checkpoints(self.parts.checkpoints)

    def finish(self, effect: Finish) -> None:
        """Mark the durable record done, then write the chat / memory stores."""
        cp, stores = self.parts.checkpoints, self.parts.stores
        if cp is not None and cp.durable:
            cp.finish(self.state)
        if stores is not None:
            stores.write_after(self.state.data["messages"])

    async def finish_async(self, effect: Finish) -> None:
        """:meth:`finish` in a worker thread."""
        await in_thread_unsplit(self.finish, effect)
