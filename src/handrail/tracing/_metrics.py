"""OpenTelemetry metrics of handrail runs, as one observer of the drivers (GenAI v0.1.0 metrics and handrail's own).

:class:`MetricsObserver` records, for every run it observes:

* ``gen_ai.client.operation.duration`` and ``gen_ai.client.token.usage`` per model call (``CallModel``);
* ``gen_ai.execute_tool.duration`` and ``handrail.tool.executions`` per tool call that ran, a call refused by a
  decision counting as ``refused`` and a call a resumed run found started but never finished as ``unknown``;
* ``handrail.approvals.pending``, ``handrail.approval.wait`` and ``handrail.approval.decisions`` for the calls a
  person decides: asked in-process (``AskApproval``) or held across a pause (``Pause.held``, decided when the run
  resumes: the paused run carries when each call was held, under :data:`CARRY_METRICS`);
* ``gen_ai.invoke_agent.duration`` per run (a paused run ends at its pause: each resume is a run of its own).

One observer serves any number of runs, concurrent ones too: ``Agent(observers=[metrics_observer_for(provider)])``.
"""

from __future__ import annotations

import contextvars
import sys
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from opentelemetry import metrics

from handrail.components.drivers import Ended, RunInfo
from handrail.components.effects import AskApproval, CallModel, Effect, Finish, Pause, Persist, RunTools, ToolInvocation
from handrail.tracing import _conventions as c
from handrail.tracing._decisions import decision_for, decision_kind
from handrail.tracing._instruments import Instruments, chat_attributes, error_type, is_number, usage

if TYPE_CHECKING:
    from handrail.dataclasses.chat_message import ChatMessage
    from handrail.dataclasses.decisions import ToolExecutionDecision

__all__ = ["CARRY_METRICS", "MetricsObserver", "metrics_observer_for"]

CARRY_METRICS = "metrics"
"""The key a paused run carries under: ``{"held": {call_id: unix time the call was first held}}``."""

_SETTLING = (RunTools, CallModel, AskApproval, Persist, Pause, Finish)
"""Effects a resumed run yields only once it applied the decisions for its held calls."""


@dataclass(eq=False, slots=True)
class _Run:
    """What the observer keeps of one run while it lasts."""

    info: RunInfo
    began: float
    """``time.monotonic()`` at its start."""
    chat: dict[str, str]
    """The attributes of its model calls' metrics (operation, provider, model)."""
    held: dict[str, float] = field(default_factory=dict)
    """The calls a resumed run found held at its pause, with the unix time each was first held (to settle)."""
    settled: bool = False
    """True once the resumed run's held calls and unknown outcomes are counted (or there were none)."""


class MetricsObserver:
    """A :class:`~handrail.components.drivers.RunObserver` recording handrail's metrics to one meter provider.

    Thread-safe; one instance observes any number of runs. Made by :func:`metrics_observer_for`, or
    ``handrail.tracing.enable(metrics=True)`` for every run.

    Args:
        meter_provider: An OpenTelemetry ``MeterProvider``; None: the global one. The meter's scope is ``handrail``
            with the package version.
    """

    def __init__(self, meter_provider: metrics.MeterProvider | None = None) -> None:
        # The package's version (handrail is imported before any of its modules; the layers forbid importing it).
        version = str(getattr(sys.modules.get("handrail"), "__version__", ""))
        self._instruments = Instruments(metrics.get_meter(c.SCOPE, version, meter_provider=meter_provider))
        self._runs: dict[RunInfo, _Run] = {}
        self._lock = threading.Lock()
        self._current: contextvars.ContextVar[_Run | None] = contextvars.ContextVar("handrail_metrics", default=None)

    # -- the run as a whole ---------------------------------------------------------------------------------------

    def run_started(self, info: RunInfo) -> None:
        """Start timing the run; a resumed run takes the held calls its paused run carried."""
        run = _Run(info, time.monotonic(), chat_attributes(info.generator))
        carried = info.carried_in.get(CARRY_METRICS)
        held = carried.get("held") if isinstance(carried, Mapping) else None
        if isinstance(held, Mapping):
            run.held = {str(k): float(v) for k, v in held.items() if is_number(v)}
        run.settled = not run.held and not _unknown_calls(info)
        with self._lock:
            self._runs[info] = run
        self._current.set(run)

    def run_ended(self, info: RunInfo, ended: Ended) -> None:
        """Record the run's duration (with its status, and ``error.type`` when it failed)."""
        with self._lock:
            run = self._runs.pop(info, None)
        if run is None:
            return
        if self._current.get() is run:
            self._current.set(None)
        if not run.settled and info.outcome in ("done", "paused"):
            self._settle(run)
        attributes = {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.HANDRAIL_RUN_STATUS: info.outcome}
        attributes.update({k: v for k, v in run.chat.items() if k != c.GEN_AI_OPERATION_NAME})
        if info.agent_name:
            attributes[c.GEN_AI_AGENT_NAME] = info.agent_name
        if info.outcome == "failed" and ended.error is not None:
            attributes[c.ERROR_TYPE] = error_type(ended.error)
        self._instruments.agent_duration.record(time.monotonic() - run.began, attributes)

    def _run(self) -> _Run | None:
        """The run whose effect is told now: this context's, else the only run under way."""
        run = self._current.get()
        with self._lock:
            if run is not None and self._runs.get(run.info) is run:
                return run
            return next(iter(self._runs.values())) if len(self._runs) == 1 else None

    # -- effects and tool calls -----------------------------------------------------------------------------------

    def started(self, event: Effect | ToolInvocation) -> None:
        """Count calls that start waiting for a decision; settle a resumed run's held calls."""
        if isinstance(event, _SETTLING):
            run = self._run()
            if run is not None and not run.settled:
                self._settle(run)
            if type(event) is AskApproval:
                self._instruments.pending.add(len(event.calls))
            elif type(event) is Pause:
                self._paused(event, run)

    def ended(self, event: Effect | ToolInvocation, ended: Ended) -> None:
        """Record the model call's, tool call's or in-process approval's metrics."""
        kind = type(event)
        if kind is ToolInvocation:
            assert isinstance(event, ToolInvocation)
            self._tool_ended(event, ended)
        elif kind is CallModel:
            self._model_ended(ended)
        elif kind is AskApproval:
            assert isinstance(event, AskApproval)
            self._asked(event, ended)

    def _model_ended(self, ended: Ended) -> None:
        run = self._run()
        attributes = dict(run.chat) if run is not None else {c.GEN_AI_OPERATION_NAME: c.OP_CHAT}
        if ended.error is not None:
            attributes[c.ERROR_TYPE] = error_type(ended.error)
        self._instruments.operation_duration.record(ended.duration, attributes)
        if ended.error is None and isinstance(ended.result, tuple):
            for token_type, count in usage(ended.result).items():
                self._instruments.token_usage.record(count, {**attributes, c.GEN_AI_TOKEN_TYPE: token_type})

    def _tool_ended(self, event: ToolInvocation, ended: Ended) -> None:
        attributes = {c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL, c.GEN_AI_TOOL_NAME: event.tool_name}
        if ended.error is not None:
            attributes[c.ERROR_TYPE] = error_type(ended.error)
        self._instruments.tool_duration.record(ended.duration, attributes)
        self._executed(event.tool_name, "ok" if ended.error is None else "error")

    def _asked(self, event: AskApproval, ended: Ended) -> None:
        """An in-process approval ended: its calls stop waiting; each decision is counted with the time it took."""
        self._instruments.pending.add(-len(event.calls))
        decisions = ended.result if isinstance(ended.result, tuple) else ()
        for call, decision in zip(event.calls, decisions, strict=False):
            self._decided(call.tool_name, decision, call.arguments, ended.duration)

    def _decided(
        self, tool: str, decision: ToolExecutionDecision, proposed: Mapping[str, Any] | None, waited: float | None
    ) -> None:
        kind = decision_kind(decision, proposed)
        attributes = {c.HANDRAIL_APPROVAL_DECISION: kind, c.GEN_AI_TOOL_NAME: tool}
        self._instruments.decisions.add(1, attributes)
        if waited is not None and kind != "auto":
            self._instruments.wait.record(max(waited, 0.0), attributes)
        if not decision.execute:
            self._executed(tool, "refused")

    def _executed(self, tool: str, outcome: str) -> None:
        self._instruments.executions.add(1, {c.GEN_AI_TOOL_NAME: tool, c.HANDRAIL_TOOL_OUTCOME: outcome})

    # -- across a pause -------------------------------------------------------------------------------------------

    def _paused(self, event: Pause, run: _Run | None) -> None:
        """Calls held for a decision: count them pending, and carry since when for the run that resumes them."""
        if not event.held:
            return
        self._instruments.pending.add(len(event.held))
        if run is not None:
            now = time.time()
            since = {call_id: run.held.get(call_id, now) for call_id in event.held}
            run.info.carry(CARRY_METRICS, {"held": since})

    def _settle(self, run: _Run) -> None:
        """A resumed run applied its decisions: its held calls stop waiting, each decided one is counted."""
        run.settled = True
        info = run.info
        for entry in _unknown_calls(info):
            self._executed(entry.tool_name, "unknown")
        if not run.held:
            return
        self._instruments.pending.add(-len(run.held))
        calls = _calls_by_id(info.messages, run.held)
        now = time.time()
        for call_id, since in run.held.items():
            entry = info.resumed_ledger.get(call_id)
            tool = entry.tool_name if entry is not None else calls.get(call_id, ("", {}))[0]
            same_tool = sum(1 for t, _ in calls.values() if t == tool)
            recorded = entry.decision if entry is not None else None
            decision = recorded or decision_for(call_id, tool, info.decisions, same_tool)
            if decision is None:
                continue  # held again: the run pauses with it, which counts it pending anew
            decided_at = entry.decided_at.timestamp() if entry is not None and entry.decided_at else now
            self._decided(tool, decision, calls.get(call_id, (tool, None))[1], decided_at - since)


def _unknown_calls(info: RunInfo) -> list[Any]:
    """The resumed ledger's entries still ``running``: calls whose outcome is unknown."""
    return [e for e in info.resumed_ledger.values() if e.status == "running"]


def _calls_by_id(messages: list[ChatMessage], ids: Mapping[str, float]) -> dict[str, tuple[str, dict[str, Any] | None]]:
    """The tool name and proposed arguments of each call named in ``ids``, from the run's history."""
    found: dict[str, tuple[str, dict[str, Any] | None]] = {}
    for message in reversed(messages):
        for call in message.tool_calls:
            if call.id is not None and call.id in ids and call.id not in found:
                found[call.id] = (call.tool_name, call.arguments if isinstance(call.arguments, dict) else None)
    return found


_observers: weakref.WeakKeyDictionary[Any, MetricsObserver] = weakref.WeakKeyDictionary()
_global: list[MetricsObserver] = []
_made = threading.Lock()


def metrics_observer_for(meter_provider: metrics.MeterProvider | None = None) -> MetricsObserver:
    """The :class:`MetricsObserver` recording to ``meter_provider`` (None: the global meter provider).

    Use it on one Agent (``Agent(observers=[metrics_observer_for(provider)])``) or one run
    (``agent.run(..., observers=[...])``); ``handrail.tracing.enable(meter_provider=...)`` observes every run with
    it. One observer per provider: asking again gives the same one (its instruments are made once). With None, the
    meter is the global provider's; one set later (``metrics.set_meter_provider``) receives what is recorded from
    then on.

    Raises:
        ConfigurationTypeError: ``meter_provider`` is not a MeterProvider (it has no ``get_meter``).
    """
    from handrail.components.agents._config import check_provider

    check_provider(meter_provider, "metrics_observer_for(meter_provider=)", "get_meter", "MeterProvider")
    with _made:
        if meter_provider is None:
            if not _global:
                _global.append(MetricsObserver())
            return _global[0]
        try:
            observer = _observers.get(meter_provider)
        except TypeError:  # not weakly referable: a fresh observer each time
            return MetricsObserver(meter_provider)
        if observer is None:
            observer = _observers[meter_provider] = MetricsObserver(meter_provider)
        return observer
