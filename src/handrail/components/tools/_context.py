"""The context of a tool step: it executes ``RunTools`` and ``Emit`` effects with the step's live objects.

The tool step leaves the live invocations of each ``RunTools`` effect in :attr:`ToolContext.bound`; a driver that
hands the effect back unchanged runs those. An effect that came from elsewhere (its data sent to another process
and back) is bound again by name: the tool from the step's tools, State-injected values from its State.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from handrail.components.effects import (
    AskApproval,
    CallModel,
    Emit,
    Finish,
    LoadStores,
    Pause,
    Persist,
    RunHooks,
    RunTools,
    ToolInvocation,
    ToolOutcome,
)
from handrail.components.tools._effects import Bound, CallObserver, Invocation, Outcome
from handrail.components.tools._execution import run_calls_async, run_calls_sync
from handrail.components.tools._results import describe_exception
from handrail.components.tools._step import ToolStepOptions, make_invocation, outcome_of
from handrail.dataclasses.chat_message import ToolCall
from handrail.dataclasses.state import State
from handrail.errors import RunError

if TYPE_CHECKING:
    from handrail.components.drivers import RunObserver
    from handrail.tools.tool import Tool

__all__ = ["ToolContext"]


def _same_call(inv: Invocation, item: ToolInvocation) -> bool:
    return (
        inv.call.id == item.call_id
        and inv.tool.name == item.tool_name
        and inv.key == item.key
        and inv.arguments == item.arguments
    )


class _ObservedRecorder:
    """The run's ledger, with each durable write told to the run's observers as a ``Persist`` event."""

    def __init__(self, ledger: CallObserver, observers: Sequence[RunObserver]) -> None:
        self._ledger = ledger
        self._observers = observers

    def make_durable(self, ticket: Any) -> None:
        if ticket is None:
            self._ledger.make_durable(ticket)
            return
        from handrail.components.drivers import notify_ended, notify_started

        event = Persist()
        began = notify_started(self._observers, event)
        try:
            self._ledger.make_durable(ticket)
        except BaseException as exc:
            notify_ended(self._observers, event, began, error=exc)
            raise
        notify_ended(self._observers, event, began)

    def started(self, inv: Invocation) -> None:
        self.make_durable(self._ledger.record_started(inv))

    def finished(self, inv: Invocation, outcome: Outcome) -> None:
        self.make_durable(self._ledger.record_finished(inv, outcome))

    def record_started(self, inv: Invocation) -> Any:
        return self._ledger.record_started(inv)

    def record_not_started(self, inv: Invocation) -> Any:
        return self._ledger.record_not_started(inv)

    def record_finished(self, inv: Invocation, outcome: Outcome) -> Any:
        return self._ledger.record_finished(inv, outcome)

    def worker_started(self, inv: Invocation) -> None:
        self._ledger.worker_started(inv)

    def worker_ended(self, inv: Invocation) -> None:
        self._ledger.worker_ended(inv)


def _outcomes(invocations: list[Invocation], outcomes: list[Outcome]) -> list[ToolOutcome]:
    """The outcomes as effect data (an error as its type and message; the exception kept for this process)."""
    if len(outcomes) == 1 and outcomes[0][0]:  # the common case, without the comprehension
        return [ToolOutcome(invocations[0].call.id, True, outcomes[0][1])]
    return [
        ToolOutcome(inv.call.id, True, value)
        if ok
        else ToolOutcome(inv.call.id, False, None, describe_exception(value), value)
        for inv, (ok, value) in zip(invocations, outcomes, strict=True)
    ]


class ToolContext:
    """Executes a tool step's effects (the ToolInvoker's run; the base of the Agent's run context).

    Args:
        tools: The step's tools by name (a callable returning them, when they change between steps).
        state: The run's State (read for ``inputs_from_state``, given to a ``State`` parameter).
        options: The step's options.
        observers: The run's observers, told when each tool call starts and ends.
        recorder: The run's ledger, when calls are recorded: the observer of each call whose record of the call's
            start is durable before the call runs (and of its outcome before the step goes on), and whose failure
            stops the run.
    """

    def __init__(
        self,
        tools: Mapping[str, Tool] | Callable[[], Mapping[str, Tool]],
        state: State,
        options: ToolStepOptions,
        observers: Sequence[RunObserver] = (),
        recorder: CallObserver | None = None,
    ) -> None:
        self._tools = tools
        self.recorder = recorder if recorder is None or not observers else _ObservedRecorder(recorder, observers)
        self.state = state
        self.options = options
        self.observers: Sequence[RunObserver] = observers
        self.bound = Bound()
        """The live invocations of the last ``RunTools`` / ``AskApproval`` effect (the step sets them)."""

    def tool(self, name: str) -> Tool:
        """The tool named ``name`` in this run.

        Raises:
            RunError: The run has no tool of that name.
        """
        tools = self._tools() if callable(self._tools) else self._tools
        found = tools.get(name)
        if found is None:
            raise RunError(f"This run has no tool named {name!r} (its tools: {sorted(tools)}).")
        return found

    def bind(self, calls: list[ToolInvocation]) -> list[Invocation]:
        """The live invocations of ``calls``: the step's own (also when the effect came back as an equal copy).

        A context that never saw the step (another process) binds the calls again by name: the tool from this run's
        tools, State-injected values from its State.

        Raises:
            RunError: ``calls`` differ from the calls the step asked for (another call, tool or arguments: they were
                validated and approved as the step made them).
        """
        bound = self.bound
        if calls is bound.calls:  # the effect as the step made it
            return bound.invocations
        batch = bound.invocations
        if not batch:
            return [self._bind_one(item) for item in calls]
        if len(batch) == len(calls) and all(map(_same_call, batch, calls)):
            return batch
        asked = [(inv.call.id, inv.tool.name, inv.arguments) for inv in batch]
        given = [(item.call_id, item.tool_name, item.arguments) for item in calls]
        raise RunError(
            f"These tool calls are not the ones the run asked to run: it asked for {asked} with the arguments it "
            f"validated (and a person approved), got {given}. Execute the effect's own calls."
        )

    def call_starting(self, item: ToolInvocation) -> None:
        """Record that ``item`` is about to run elsewhere (a driver that runs tool calls itself calls this first).

        For a durable run this makes the call ``running`` in the run's record before it returns, so a resumed run
        never runs it again unknowingly; call :meth:`call_ended` with its outcome after.
        """
        if self.recorder is not None:
            self.recorder.started(self._one(item))

    def call_ended(self, item: ToolInvocation, outcome: ToolOutcome) -> None:
        """Record the outcome of ``item``, run elsewhere (durable before it returns, for a durable run).

        Answer the ``RunTools`` effect with these same outcomes: the run's record and its history must agree.

        Raises:
            RunError: ``outcome`` is not a ToolOutcome of ``item``'s call.
        """
        if not isinstance(outcome, ToolOutcome) or outcome.call_id != item.call_id:
            raise RunError(f"call_ended takes the ToolOutcome of call {item.call_id!r}, got {outcome!r:.200}.")
        if self.recorder is not None:
            self.recorder.finished(self._one(item), outcome_of(outcome))

    def _one(self, item: ToolInvocation) -> Invocation:
        for inv in self.bound.invocations:
            if inv.call.id == item.call_id and _same_call(inv, item):
                return inv
        raise RunError(f"Call {item.call_id!r} to {item.tool_name!r} is not a call of the run's current tool effect.")

    def _bind_one(self, item: ToolInvocation) -> Invocation:
        tool = self.tool(item.tool_name)
        call = ToolCall(tool_name=item.tool_name, arguments=item.arguments, id=item.call_id)
        return make_invocation(call, tool, dict(item.arguments), self.state, self.options, item.key)

    # -- the effects of a tool step ---------------------------------------------------------------

    def run_tools(self, effect: RunTools) -> list[ToolOutcome]:
        """Run the calls (in threads when there are several) and return their outcomes in order."""
        invocations = self.bind(effect.calls)
        outcomes = run_calls_sync(invocations, effect.max_workers, self.recorder, self.observers, effect.calls)
        return _outcomes(invocations, outcomes)

    async def run_tools_async(self, effect: RunTools) -> list[ToolOutcome]:
        """Await the calls concurrently (sync tools in worker threads) and return their outcomes in order."""
        invocations = self.bind(effect.calls)
        outcomes = await run_calls_async(invocations, effect.max_workers, self.recorder, self.observers, effect.calls)
        return _outcomes(invocations, outcomes)

    def emit(self, effect: Emit) -> None:
        """Send the chunk to the streaming callback."""
        callback = self.options.streaming_callback
        if callback is not None:
            callback(effect.chunk)

    async def emit_async(self, effect: Emit) -> None:
        """Send the chunk to a sync or async streaming callback."""
        callback = self.options.streaming_callback
        if callback is not None:
            result = callback(effect.chunk)
            if inspect.isawaitable(result):
                await result

    # -- effects a tool step never yields ----------------------------------------------------------

    def _not_here(self, effect: object) -> NoReturn:
        raise RunError(f"A tool step does not execute {type(effect).__name__} effects.")

    def call_model(self, effect: CallModel) -> Any:
        """Not part of a tool step."""
        self._not_here(effect)

    def ask_approval(self, effect: AskApproval) -> Any:
        """Not part of a tool step."""
        self._not_here(effect)

    def run_hooks(self, effect: RunHooks) -> Any:
        """Not part of a tool step."""
        self._not_here(effect)

    def persist(self, effect: Persist) -> Any:
        """Not part of a tool step."""
        self._not_here(effect)

    def load_stores(self, effect: LoadStores) -> Any:
        """Not part of a tool step."""
        self._not_here(effect)

    def pause(self, effect: Pause) -> Any:
        """Not part of a tool step."""
        self._not_here(effect)

    def finish(self, effect: Finish) -> Any:
        """Not part of a tool step."""
        self._not_here(effect)

    async def call_model_async(self, effect: CallModel) -> Any:
        """Not part of a tool step."""
        self._not_here(effect)

    async def ask_approval_async(self, effect: AskApproval) -> Any:
        """Not part of a tool step."""
        self._not_here(effect)

    async def run_hooks_async(self, effect: RunHooks) -> Any:
        """Not part of a tool step."""
        self._not_here(effect)

    async def persist_async(self, effect: Persist) -> Any:
        """Not part of a tool step."""
        self._not_here(effect)

    async def load_stores_async(self, effect: LoadStores) -> Any:
        """Not part of a tool step."""
        self._not_here(effect)

    async def pause_async(self, effect: Pause) -> Any:
        """Not part of a tool step."""
        self._not_here(effect)

    async def finish_async(self, effect: Finish) -> Any:
        """Not part of a tool step."""
        self._not_here(effect)
