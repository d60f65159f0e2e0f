"""Tracing in the approval service: the decision span, and the trace context a resumed run continues in.

Off unless asked for (``create_app(tracing=True)`` / ``tracer_provider=P``, ``handrail serve --tracing``,
``handrail worker --tracing``): then :func:`service_tracing` gives a :class:`ServiceTracing` and the service

* traces the runs it drives: each agent it builds gets the provider (``Agent.tracer_provider``) when one is given,
  else :func:`handrail.tracing.enable` is called once, for the process (the global provider), unless it was
  already (its settings are kept);
* emits a ``handrail.approval.decide`` span for each decision made through the HTTP API: who decided, what, how long
  the call waited, with a link to the paused run's ``invoke_agent`` span (its W3C context is in the snapshot's
  metadata, ``observers.trace``) and as that span's child: the decision is in the run's trace (a request that
  brought a ``traceparent`` of its own keeps its span as the parent). The decision span's own context is kept in
  the decision's audit entry (``details.trace``);
* resumes a decided run with that decision span as the current span, so the resumed run's ``invoke_agent`` span is
  its child (and links to the paused one, from the snapshot): one story, however long the approval waited, in
  whatever process the run resumes.

This module imports OpenTelemetry only inside its functions, which do nothing with tracing off (None).
Nothing secret goes on a span (no token, no argument, no feedback).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from handrail.errors import HandrailError

if TYPE_CHECKING:
    from handrail.dataclasses.approval import Approval
    from handrail.dataclasses.snapshot import AgentSnapshot

__all__ = ["TRACE_DETAIL", "ServiceTracing", "resuming", "service_tracing", "traced_decision"]

TRACE_DETAIL = "trace"
"""The key of a decision's audit details holding the decision span's W3C context (``traceparent``, ``tracestate``)."""
_DECISIONS = {"approve": "approved", "edit": "edited", "reject": "rejected"}
_global_enabled = threading.Lock()
_T = TypeVar("_T")


def service_tracing(tracing: bool = False, tracer_provider: Any = None) -> ServiceTracing | None:
    """The service's tracing, or None when it is off (neither ``tracing`` nor a ``tracer_provider``).

    Raises:
        ConfigurationTypeError: ``tracing`` is not a bool, or ``tracer_provider`` has no ``get_tracer``.
    """
    from handrail.components.agents._config import tracing_switch

    if not tracing_switch(tracing, tracer_provider):
        return None
    return ServiceTracing(tracer_provider)


@dataclass(eq=False)
class ServiceTracing:
    """Tracing of one service (see the module docstring); ``provider`` None: the global provider."""

    provider: Any = None
    """The TracerProvider the service's runs and decisions are traced to (None: the global one)."""
    _tracer: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.provider is None:
            tracing = importlib.import_module("handrail.tracing")
            with _global_enabled:  # the process's runs are traced (settings given to enable() before are kept)
                if not tracing.is_enabled():
                    tracing.enable()

    def traced(self, agent: Any) -> Any:
        """``agent``, traced to this service's provider (an agent with a provider of its own keeps it)."""
        if self.provider is not None and getattr(agent, "tracer_provider", None) is None:
            agent.tracer_provider = self.provider
        return agent

    def tracer(self) -> Any:
        """The tracer of the decision spans (scope ``handrail``, the package version)."""
        if self._tracer is None:
            from opentelemetry import trace

            from handrail import __version__
            from handrail.tracing._conventions import SCOPE

            provider = self.provider if self.provider is not None else trace.get_tracer_provider()
            self._tracer = provider.get_tracer(SCOPE, __version__)
        return self._tracer


def _paused_context(store: Any, approval: Approval) -> Any:
    """The paused run's span context (a remote SpanContext) from the approval's snapshot, or None."""
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    from handrail.tracing._conventions import CARRY_TRACE

    carrier: Any = None
    if approval.backend == "local":
        try:
            metadata = store.load(approval.snapshot_id).metadata
        except HandrailError:  # gone, or damaged: the decision is traced all the same, unlinked
            return None
        observers = metadata.get("observers")
        carrier = observers.get(CARRY_TRACE) if isinstance(observers, Mapping) else None
    else:  # a Temporal run's record: its worker keeps the workflow's context in the record
        carrier = approval.extra.get(CARRY_TRACE)
    if not isinstance(carrier, Mapping) or not isinstance(carrier.get("traceparent"), str):
        return None
    fields = {k: v for k, v in carrier.items() if k in ("traceparent", "tracestate") and isinstance(v, str)}
    found = trace.get_current_span(TraceContextTextMapPropagator().extract(fields)).get_span_context()
    return found if found.is_valid else None


def _carrier(span: Any) -> dict[str, str]:
    """The W3C fields of ``span``'s context."""
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier, trace.set_span_in_context(span))
    return carrier


def traced_decision(
    tracing: ServiceTracing | None,
    store: Any,
    approval_id: str,
    principal: str,
    decision: str,
    decide: Callable[[Mapping[str, Any]], _T],
    *,
    caller_context: bool = False,
) -> _T:
    """``decide(extra_details)`` inside a ``handrail.approval.decide`` span (just ``decide({})`` with tracing off).

    ``extra_details`` go into the decision's audit entry: the span's W3C context under :data:`TRACE_DETAIL`.

    The span is a child of the paused run's span (found in its snapshot), and links to it and to the active span
    (FastAPI's span of the request), unless ``caller_context``: the request brought a trace context of its own
    (a ``traceparent`` header), and the decision is a child of the active span then, linked to the paused one.
    """
    if tracing is None:
        return decide({})
    from opentelemetry import trace
    from opentelemetry.trace import Link, Status, StatusCode

    from handrail.tracing import _conventions as c

    try:
        approval: Approval | None = store.get_approval(approval_id)
    except HandrailError:  # unknown, damaged: decide() raises it, in the span
        approval = None
    paused = _paused_context(store, approval) if approval is not None else None
    parent, links = None, [Link(paused)] if paused is not None else []
    active = trace.get_current_span()
    if paused is not None and not (caller_context and active.get_span_context().is_valid):
        parent = trace.set_span_in_context(trace.NonRecordingSpan(paused))
        if active.get_span_context().is_valid:  # the request's own span (FastAPI's): linked
            links.append(Link(active.get_span_context()))
    attributes: dict[str, Any] = {c.HANDRAIL_APPROVAL_ID: approval_id, c.HANDRAIL_APPROVAL_DECIDED_BY: principal,
                                  c.HANDRAIL_APPROVAL_DECISION: _DECISIONS.get(decision, decision)}  # fmt: skip
    if approval is not None:
        attributes.update(_approval_attributes(approval))
    tracer = tracing.tracer()
    with tracer.start_as_current_span(c.SPAN_APPROVAL_DECIDE, context=parent, links=links, attributes=attributes,
                                      record_exception=False, set_status_on_exception=False) as span:  # fmt: skip
        try:
            result = decide({TRACE_DETAIL: _carrier(span)})
        except Exception as exc:
            span.set_attribute(c.ERROR_TYPE, type(exc).__name__)
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise
        decided = getattr(result, "approval", None)
        if decided is not None:
            span.set_attribute(c.HANDRAIL_APPROVAL_STATUS, decided.status)
            span.set_attribute(c.HANDRAIL_APPROVAL_REPLAYED, bool(getattr(result, "replayed", False)))
            wait = ((decided.decided_at or datetime.now(UTC)) - decided.created_at).total_seconds()
            span.set_attribute(c.HANDRAIL_APPROVAL_WAIT_MS, max(0, round(wait * 1000)))
        return result


def _approval_attributes(approval: Approval) -> dict[str, Any]:
    from handrail.tracing import _conventions as c

    return {
        c.GEN_AI_TOOL_NAME: approval.tool_name,
        c.GEN_AI_TOOL_CALL_ID: approval.tool_call_id,
        c.HANDRAIL_RUN_ID: approval.run_id,
        c.HANDRAIL_SNAPSHOT_ID: approval.snapshot_id,
        c.GEN_AI_AGENT_NAME: approval.agent_name,
    }


def _decision_context(store: Any, snapshot: AgentSnapshot) -> Any:
    """The span context of the last decision (through the service) on ``snapshot``'s held calls, or None."""
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    from handrail.stores._approval_decide import approval_of_call

    latest: tuple[datetime, dict[str, str]] | None = None
    for call in snapshot.pending_tool_calls:
        try:
            approval = approval_of_call(store, snapshot, call.id or "")
            entries = store.audit_trail(approval.id) if approval is not None else ()
        except HandrailError:
            continue
        for entry in entries:
            carrier = (entry.details or {}).get(TRACE_DETAIL) if entry.kind in ("decided", "voted") else None
            if isinstance(carrier, Mapping) and (latest is None or entry.at >= latest[0]):
                latest = entry.at, {k: v for k, v in carrier.items() if isinstance(v, str)}
    if latest is None:
        return None
    found = trace.get_current_span(TraceContextTextMapPropagator().extract(latest[1])).get_span_context()
    return found if found.is_valid else None


@contextmanager
def resuming(tracing: ServiceTracing | None, store: Any, snapshot: AgentSnapshot) -> Iterator[None]:
    """Around the resume of ``snapshot``: the decision span that released it is made the current span.

    Only when one is found and no span is active; so the resumed run's span is its child. Does nothing with tracing
    off.
    """
    if tracing is None:
        yield
        return
    from opentelemetry import context, trace

    found = None if trace.get_current_span().get_span_context().is_valid else _decision_context(store, snapshot)
    if found is None:
        yield
        return
    token = context.attach(trace.set_span_in_context(trace.NonRecordingSpan(found)))
    try:
        yield
    finally:
        context.detach(token)
