"""Drivers: they execute a run's effects (:mod:`handrail.components.effects`) and hold no loop logic.

A run is a state machine: ``run.send(result)`` gives the next effect (``None`` when the run is over) and
``run.context`` executes effects with the run's live objects (its chat generator, tools, strategies, hooks and
stores). A driver loops: take the effect, execute it (through the context, or its own way — a model call sent to
another process, a tool call run as a job elsewhere), send the result back. :class:`SyncDriver` and
:class:`AsyncDriver` are the drivers of ``Agent.run`` / ``run_async``; another driver implements :class:`RunDriver`.

Observers (:class:`RunObserver`) see the start and end of every effect :func:`execute_sync` /
:func:`execute_async` executes (both drivers use them, and so can yours), of each tool call of a ``RunTools``
effect, and of each durable write of the ledger around those calls (a ``Persist`` event). An observer may also
have ``run_started(info)`` and ``run_ended(info, ended)``: told when the run as a whole starts and ends (it ends
when it returns, pauses, fails or is closed), with a :class:`RunInfo` describing it. Observers made for every run
(tracing, logging) are registered with :func:`add_observer_factory`; the one that logs runs (the ``handrail.run``
loggers, see docs/logging.md) is built in and makes an observer only while ``handrail.run`` is enabled for INFO.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, assert_never, get_args, runtime_checkable

from handrail.components.effects import (
    AskApproval,
    CallModel,
    Effect,
    Emit,
    Finish,
    LoadStores,
    Pause,
    Persist,
    RunHooks,
    RunTools,
    ToolInvocation,
)

if TYPE_CHECKING:
    from handrail.dataclasses.decisions import ToolExecutionDecision
    from handrail.dataclasses.snapshot import LedgerEntry

__all__ = [
    "AsyncDriver",
    "Ended",
    "MachineRun",
    "Run",
    "RunContext",
    "RunDriver",
    "RunInfo",
    "RunObserver",
    "SyncDriver",
    "add_observer_factory",
    "execute_async",
    "execute_sync",
    "remove_observer_factory",
]


@dataclass(slots=True)
class Ended:
    """How an effect (or one tool call) ended."""

    duration: float
    """Seconds from its start to its end (monotonic clock)."""
    result: Any = None
    """Its result, when it ended without raising."""
    error: BaseException | None = None
    """What it raised (a breakpoint or approval pause raises too: the run stops there)."""


RunOutcome = Literal["running", "done", "paused", "failed", "closed"]


@dataclass(eq=False, slots=True)
class RunInfo:
    """One run as its observers see it in ``run_started`` / ``run_ended`` (read it; only :meth:`carry` writes).

    Made by the run for its observers only (a run without observers makes none).
    """

    agent_name: str
    """The run's label: the breakpoint's or resumed snapshot's ``agent_name``, else ``""``."""
    generator: Any
    """The run's chat generator (to read its model and provider names; never call it)."""
    resumed_from: str | None = None
    """The id of the snapshot this run resumes, or None for a fresh run."""
    carried_in: Mapping[str, Any] = field(default_factory=dict)
    """What observers :meth:`carry`-ed in the run that wrote the resumed snapshot (empty for a fresh run)."""
    conversation_id: str | None = None
    """The chat history id when the run uses a chat message store, else None."""
    local_id: str = ""
    """An id made for this run in this process (a uuid4 hex): the run id when the run has no durable one."""
    outcome: RunOutcome = "running"
    """How the run ended (set before ``run_ended``): done, paused (a breakpoint or held calls), failed or closed."""
    snapshot: Any = None
    """The snapshot this run resumes, as the run read it (the decisions of its store merged in), or None: read it."""
    streaming: bool = False
    """True when the run gives its model calls a streaming callback (the run's or the Agent's)."""
    decisions: tuple[ToolExecutionDecision, ...] = ()
    """The decisions given for the resumed step (its snapshot's and the caller's); empty for a fresh run."""
    resumed_ledger: Mapping[str, LedgerEntry] = field(default_factory=dict)
    """The resumed record's execution ledger by call id, as the run found it (a copy; empty for a fresh run).

    An entry still ``running`` is a call whose process stopped before it recorded a result: its outcome is unknown.
    """
    _durable_id: Callable[[], str | None] = field(default=lambda: None, repr=False)
    _carry: Callable[[str, Any], None] | None = field(default=None, repr=False)
    _messages: Callable[[], list[Any]] = field(default=list, repr=False)
    _describe: Callable[[str], str | None] = field(default=lambda name: None, repr=False)
    _redact: Callable[[str], str] | None = field(default=None, repr=False)

    @property
    def run_id(self) -> str:
        """The durable run id (the first snapshot's id of its chain) once it has one, else :attr:`local_id`."""
        return self._durable_id() or self.local_id

    @property
    def durable_id(self) -> str | None:
        """The durable run id, or None (a run without a snapshot store, or before its first record)."""
        return self._durable_id()

    @property
    def messages(self) -> list[Any]:
        """The run's history as it is now (the run's own list: read it, never change it)."""
        return self._messages()

    def describe_tool(self, name: str) -> str | None:
        """The description of the run's tool ``name`` (None when it has none or the run has no such tool)."""
        try:
            return self._describe(name)
        except Exception:
            return None

    def redact(self, text: str) -> str:
        """``text`` masked as the run's redaction hooks (:class:`~handrail.hooks.RedactionHook`) mask the history.

        ``text`` itself when the run has none. For what an observer records of the run's content (a span's
        messages, a recording): the hooks mask the history only at their points, an observer sees it before.
        """
        return self._redact(text) if self._redact is not None else text

    @property
    def can_carry(self) -> bool:
        """True when this run can write a snapshot, so :meth:`carry` keeps what it is given."""
        return self._carry is not None

    def carry(self, key: str, value: Any) -> None:
        """Keep JSON ``value`` in every snapshot this run writes (``metadata["observers"][key]``).

        The run that resumes such a snapshot finds it in :attr:`carried_in`. Never give a secret. Does nothing for a
        run that writes no snapshot.
        """
        if self._carry is not None:
            self._carry(key, value)


@runtime_checkable
class RunObserver(Protocol):
    """Told when each effect, and each tool call of a ``RunTools`` effect, starts and ends.

    ``event`` is the effect itself, or the :class:`~handrail.components.effects.ToolInvocation` of one tool call
    (every call that runs, approved or not). Calls to the same observer may come from worker threads (tools run
    concurrently), so an observer must be thread-safe. An exception raised by an observer does not stop the run:
    it becomes a warning naming the observer. Observers cannot change what the run does: an effect's call
    arguments are copies, a result list comes as a tuple and tool outcomes and decisions are frozen; the messages
    are the run's own objects, to be read, not changed.
    """

    def started(self, event: Effect | ToolInvocation) -> None:
        """``event`` starts."""

    def ended(self, event: Effect | ToolInvocation, ended: Ended) -> None:
        """``event`` ended (result or error, and duration)."""

    # Optional: ``run_started(self, info: RunInfo) -> None`` and ``run_ended(self, info: RunInfo, ended: Ended)
    # -> None`` (``ended.result``: the run's result when it is done; ``ended.error``: what stopped it, a breakpoint
    # exception for a pause). Both are called in the thread (or task) that created and closes the run.


_RUN_LOG = logging.getLogger("handrail.run")
_RUN_LOG.addHandler(logging.NullHandler())  # the run records print nothing until the application configures logging


def _run_logging() -> RunObserver | None:
    """The factory of the run's log records: a logger observer while ``handrail.run`` is enabled for INFO."""
    if not _RUN_LOG.isEnabledFor(logging.INFO):
        return None  # a run costs one cached level check
    from handrail.components._run_logging import RunLogger

    return RunLogger()


_factories: list[Callable[[], RunObserver | None]] = []
"""The factories added with :func:`add_observer_factory` (the built-in one of the run logs is not among them)."""


def factories_apply() -> bool:
    """True when a run starting now may get observers from the factories (one is added, or run logging is on)."""
    return bool(_factories) or _RUN_LOG.isEnabledFor(logging.INFO)


def add_observer_factory(factory: Callable[[], RunObserver | None]) -> None:
    """Call ``factory()`` as each Agent run starts; the observer it returns (None: none) observes that run.

    How :func:`handrail.tracing.enable` observes every run. Adding the same factory twice adds it once.
    """
    if factory not in _factories:
        _factories.append(factory)


def remove_observer_factory(factory: Callable[[], RunObserver | None]) -> None:
    """Stop calling ``factory`` for new runs (nothing happens if it was not added)."""
    if factory in _factories:
        _factories.remove(factory)


def observers_from_factories() -> list[RunObserver]:
    """The observers the registered factories make for a run starting now (a failing factory is warned about)."""
    made: list[RunObserver] = []
    for factory in (_run_logging, *_factories):
        try:
            observer = factory()
        except Exception as exc:
            _observer_failed(factory, "factory", exc)
            continue
        if observer is not None:
            made.append(observer)
    return made


def notify_run_started(observers: Sequence[RunObserver], info: RunInfo) -> None:
    """Tell the observers that have ``run_started`` that the run starts."""
    for observer in observers:
        method = getattr(observer, "run_started", None)
        if method is not None:
            try:
                method(info)
            except Exception as exc:
                _observer_failed(observer, "run_started", exc)


def notify_run_ended(observers: Sequence[RunObserver], info: RunInfo, ended: Ended) -> None:
    """Tell the observers that have ``run_ended`` that the run ended (``info.outcome`` says how)."""
    for observer in observers:
        method = getattr(observer, "run_ended", None)
        if method is not None:
            try:
                method(info, ended)
            except Exception as exc:
                _observer_failed(observer, "run_ended", exc)


class RunContext(Protocol):
    """Executes each kind of effect with the run's live objects; a driver calls the method of an effect's kind."""

    observers: Sequence[RunObserver]
    """Told when each effect and each tool call starts and ends."""

    def call_model(self, effect: CallModel) -> Any:
        """Call the chat generator; returns its replies."""

    def run_tools(self, effect: RunTools) -> Any:
        """Run the tool calls; returns one ToolOutcome per call."""

    def ask_approval(self, effect: AskApproval) -> Any:
        """Ask the calls' strategies; returns one ToolExecutionDecision per call."""

    def run_hooks(self, effect: RunHooks) -> Any:
        """Run the hooks of the point."""

    def load_stores(self, effect: LoadStores) -> Any:
        """Load the chat history and memories into the run's input."""

    def persist(self, effect: Persist) -> Any:
        """Make the run's record durable as it is now."""

    def pause(self, effect: Pause) -> Any:
        """Write the pause snapshot and raise the breakpoint exception."""

    def finish(self, effect: Finish) -> Any:
        """Mark the record done and write the chat / memory stores."""

    def emit(self, effect: Emit) -> Any:
        """Send the chunk to the streaming callback."""

    async def call_model_async(self, effect: CallModel) -> Any:
        """Async twin of :meth:`call_model`."""

    async def run_tools_async(self, effect: RunTools) -> Any:
        """Async twin of :meth:`run_tools`."""

    async def ask_approval_async(self, effect: AskApproval) -> Any:
        """Async twin of :meth:`ask_approval`."""

    async def run_hooks_async(self, effect: RunHooks) -> Any:
        """Async twin of :meth:`run_hooks`."""

    async def load_stores_async(self, effect: LoadStores) -> Any:
        """Async twin of :meth:`load_stores`."""

    async def persist_async(self, effect: Persist) -> Any:
        """Async twin of :meth:`persist`."""

    async def pause_async(self, effect: Pause) -> Any:
        """Async twin of :meth:`pause`."""

    async def finish_async(self, effect: Finish) -> Any:
        """Async twin of :meth:`finish`."""

    async def emit_async(self, effect: Emit) -> Any:
        """Async twin of :meth:`emit`."""


class Run(Protocol):
    """A run as a state machine: what a driver drives."""

    @property
    def context(self) -> RunContext:
        """Executes effects with the run's live objects."""

    def send(self, result: Any) -> Effect | None:
        """Give the result of the last effect (None to start); returns the next effect, or None when the run ended."""

    @property
    def result(self) -> Any:
        """The run's result, once :meth:`send` returned None."""


class MachineRun:
    """A :class:`Run` made of a generator that yields effects and returns the run's result, and its context."""

    __slots__ = ("_context", "_machine", "_result", "ended")

    def __init__(self, machine: Generator[Effect, Any, Any], context: RunContext) -> None:
        self._machine = machine
        self._context = context
        self._result: Any = None
        self.ended = False
        """True once the machine returned."""

    @property
    def context(self) -> RunContext:
        """Executes effects with the run's live objects."""
        return self._context

    def send(self, result: Any) -> Effect | None:
        """Give the last effect's result (None to start); returns the next effect, or None when the run ended."""
        try:
            return self._machine.send(result)
        except StopIteration as stop:
            self._result = stop.value
            self.ended = True
            return None

    @property
    def result(self) -> Any:
        """What the machine returned."""
        return self._result


@runtime_checkable
class RunDriver(Protocol):
    """Drives a run to its end and returns its result."""

    def drive(self, run: Run) -> Any:
        """Execute every effect of ``run`` until it ends."""


def execute_sync(context: RunContext, effect: Effect) -> Any:
    """Execute ``effect`` through ``context``, telling the context's observers when it starts and ends."""
    observers = context.observers
    if not observers:
        return _dispatch_sync(context, effect)
    began = notify_started(observers, effect)
    try:
        result = _dispatch_sync(context, effect)
    except BaseException as exc:
        notify_ended(observers, effect, began, error=exc)
        raise
    notify_ended(observers, effect, began, result)
    return result


async def execute_async(context: RunContext, effect: Effect) -> Any:
    """Async twin of :func:`execute_sync`."""
    observers = context.observers
    if not observers:
        return await _dispatch_async(context, effect)
    began = notify_started(observers, effect)
    try:
        result = await _dispatch_async(context, effect)
    except BaseException as exc:
        notify_ended(observers, effect, began, error=exc)
        raise
    notify_ended(observers, effect, began, result)
    return result


def _dispatch_sync(context: RunContext, effect: Effect) -> Any:
    """Call the context's method for ``effect``."""
    return getattr(context, _name_of(effect))(effect)


def _dispatch_async(context: RunContext, effect: Effect) -> Awaitable[Any]:
    """The awaitable of the context's async method for ``effect`` (a call, not a coroutine layer)."""
    return getattr(context, _name_of(effect) + "_async")(effect)  # type: ignore[no-any-return]


def _name_of(effect: Effect) -> str:
    return _METHODS.get(type(effect)) or _method_of(effect)


def _method_of(effect: Effect) -> str:
    """The name of the context's method for ``effect``: the one table of effects to methods, checked exhaustively.

    The async method is this name with ``_async``.
    """
    match effect:
        case CallModel():
            return "call_model"
        case RunTools():
            return "run_tools"
        case RunHooks():
            return "run_hooks"
        case Emit():
            return "emit"
        case AskApproval():
            return "ask_approval"
        case LoadStores():
            return "load_stores"
        case Persist():
            return "persist"
        case Pause():
            return "pause"
        case Finish():
            return "finish"
        case _:
            assert_never(effect)


_METHODS: dict[type, str] = {kind: _method_of(kind.__new__(kind)) for kind in get_args(Effect)}
""":func:`_method_of` for each kind of effect, looked up by type (a subclass of an effect goes through the match)."""


def _handlers(context: RunContext, suffix: str) -> dict[type, Any]:
    return {kind: getattr(context, name + suffix) for kind, name in _METHODS.items()}


def notify_started(observers: Sequence[RunObserver], event: Effect | ToolInvocation) -> float:
    """Tell every observer ``event`` starts; returns the start time (for :func:`notify_ended`)."""
    for observer in observers:
        try:
            observer.started(event)
        except Exception as exc:
            _observer_failed(observer, "started", exc)
    return time.monotonic()


def notify_ended(
    observers: Sequence[RunObserver], event: Effect | ToolInvocation, began: float, result: Any = None,
    error: BaseException | None = None,
) -> None:  # fmt: skip
    """Tell every observer ``event`` ended (a list result as a tuple: observers cannot change what the run uses)."""
    ended = Ended(time.monotonic() - began, tuple(result) if type(result) is list else result, error)
    for observer in observers:
        try:
            observer.ended(event, ended)
        except Exception as exc:
            _observer_failed(observer, "ended", exc)


def _observer_failed(observer: object, method: str, exc: Exception) -> None:
    from handrail.core._secret_values import mask_secrets

    name = getattr(observer, "__qualname__", None) or type(observer).__name__
    warnings.warn(
        f"Observer {name}.{method} raised {type(exc).__name__}: {mask_secrets(str(exc))}; the run goes on.",
        RuntimeWarning,
        stacklevel=3,
    )


class SyncDriver:
    """Executes every effect in the calling thread (tools of one step in worker threads): ``Agent.run``."""

    def drive(self, run: Run) -> Any:
        """Drive ``run`` to its end and return its result."""
        context = run.context
        if context.observers:
            return self._drive_observed(run, context)
        handlers = _handlers(context, "")
        result: Any = None
        while (effect := run.send(result)) is not None:
            handler = handlers.get(type(effect))
            result = handler(effect) if handler is not None else _dispatch_sync(context, effect)
        return run.result

    def _drive_observed(self, run: Run, context: RunContext) -> Any:
        result: Any = None
        while (effect := run.send(result)) is not None:
            result = execute_sync(context, effect)
        return run.result


class AsyncDriver:
    """Executes every effect on the running event loop (blocking work in worker threads): ``Agent.run_async``."""

    async def drive(self, run: Run) -> Any:
        """Drive ``run`` to its end and return its result."""
        context = run.context
        if context.observers:
            return await self._drive_observed(run, context)
        handlers = _handlers(context, "_async")
        result: Any = None
        while (effect := run.send(result)) is not None:
            handler = handlers.get(type(effect))
            result = await (handler(effect) if handler is not None else _dispatch_async(context, effect))
        return run.result

    async def _drive_observed(self, run: Run, context: RunContext) -> Any:
        result: Any = None
        while (effect := run.send(result)) is not None:
            result = await execute_async(context, effect)
        return run.result
