"""Tracing on Temporal: temporalio's ``TracingInterceptor`` on the client and the worker, when asked for.

With it, the trace context of whoever starts a run (``start_run`` under a span, or the client's own
``StartWorkflow`` span) travels in the workflow's headers: the workflow's spans (``RunWorkflow``,
``StartActivity``, ``HandleUpdate:decide``, ``CompleteWorkflow``) and the activities' (``RunActivity``, and every
span made inside one: a model's HTTP client, an MCP call) are in that trace, however long the run waits, across
continue-as-new and across workers. A ``decide`` Update sent under a span (the approval service's
``handrail.approval.decide``) carries it too: ``HandleUpdate:decide`` links to it. The worker also keeps the
context of the activity that records a run's held calls in their approval records (``extra["trace"]``), so the
approval service's decision span joins the workflow's trace.

In the activities, handrail's own ``chat {model}``, ``execute_tool {tool}`` and ``hook {point}`` spans are made by
:class:`handrail.tracing.TracingObserver` in its effect-only mode (:func:`effect_observers`): children of the
activity's ``RunActivity`` span, with the attributes an in-process run gives them.

The workflow sandbox (:func:`~handrail.temporal._worker.workflow_runner`) passes every module through, so
``opentelemetry`` is imported once, not per run (temporalio's contrib module asks for that passthrough).

Nothing here is imported unless tracing is on.
"""

from __future__ import annotations

import importlib
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from handrail.components.agents.agent import Agent
    from handrail.components.drivers import RunObserver

__all__ = [
    "SCOPE",
    "current_carrier",
    "effect_observers",
    "has_tracing",
    "interceptor",
    "provider_of",
    "record_extra",
    "run_span",
]

SCOPE = "temporalio.contrib.opentelemetry"
"""The instrumentation scope of the Temporal spans (handrail's own spans have scope ``handrail``)."""
_TRACE_KEY = "trace"
"""The approval record's ``extra`` key of the recording activity's W3C context (handrail.tracing's CARRY_TRACE)."""


def interceptor(tracing: bool = False, tracer_provider: Any = None) -> Any:
    """A ``TracingInterceptor`` to ``tracer_provider`` (or the global provider), or None when tracing is off.

    Raises:
        ConfigurationTypeError: ``tracing`` is not a bool; ``tracer_provider`` has no ``get_tracer``.
    """
    from handrail.components.agents._config import tracing_switch

    if not tracing_switch(tracing, tracer_provider):
        return None
    from temporalio.contrib.opentelemetry import TracingInterceptor

    tracer = None if tracer_provider is None else tracer_provider.get_tracer(SCOPE)
    made = TracingInterceptor(tracer)
    _providers[:] = [(r, p) for r, p in _providers if r() is not None] + [(weakref.ref(made), tracer_provider)]
    return made


_providers: list[tuple[weakref.ref[Any], Any]] = []
"""The tracer provider each interceptor made here was given (None: the global one), for the activities' spans (by
identity: the interceptor is not hashable)."""


def provider_of(interceptors: Any) -> Any:
    """The tracer provider of the first ``TracingInterceptor`` made by :func:`interceptor` in ``interceptors``."""
    for given in interceptors or ():
        for ref, provider in _providers:
            if ref() is given:
                return provider
    return None


def effect_observers(tracer_provider: Any, agent: Agent, step: int = 1,
                     describe_tool: Callable[[str], str | None] | None = None) -> list[RunObserver]:  # fmt: skip
    """The observer that traces an activity's effect under the current (the activity's) span, in a list.

    ``handrail.tracing`` sits beside this package: it is loaded by name, as ``Agent(tracer_provider=)`` loads it.
    The content settings are :func:`handrail.tracing.enable`'s when it is on (else the environment's), masked by
    the agent's redaction hooks.
    """
    from opentelemetry import context

    tracing = importlib.import_module("handrail.tracing")
    observer = tracing.observer_for(tracer_provider)
    return [observer.effects_under(context.get_current(), agent.chat_generator, step=step,
                                   describe_tool=describe_tool, redact=_redaction(agent))]  # fmt: skip


def _redaction(agent: Agent) -> Callable[[str], str] | None:
    """The masking of the agent's redaction hooks, in their order (None: it has none)."""
    from handrail.hooks.redaction import redaction_of

    return redaction_of(h for hooks in (agent.hooks or {}).values() for h in hooks)


def has_tracing(interceptors: Any) -> bool:
    """Whether ``interceptors`` (a client's) hold a ``TracingInterceptor`` already (its workers inherit it)."""
    try:
        from temporalio.contrib.opentelemetry import TracingInterceptor
    except ImportError:  # pragma: no cover - opentelemetry is not installed: nobody gave one
        return False
    return any(isinstance(i, TracingInterceptor) for i in interceptors or ())


def current_carrier() -> dict[str, str] | None:
    """The current span's W3C context (``traceparent``, ``tracestate``), or None without a valid span."""
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    if not trace.get_current_span().get_span_context().is_valid:
        return None
    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return carrier or None


def record_extra(extra: dict[str, Any]) -> None:
    """Add the current span's context to an approval record's ``extra`` (under ``trace``), if there is one."""
    carrier = current_carrier()
    if carrier is not None:
        extra[_TRACE_KEY] = carrier


def run_span(agent: Agent | None, agent_name: str, run_id: str, status: str, steps: int, exit_reason: str | None,
             error: BaseException | None) -> None:  # fmt: skip
    """The ``invoke_agent {agent}`` span of a workflow run that ended, with the attributes of an in-process run's.

    A workflow span (temporalio's ``completed_span``: no duration, made only when the workflow is not replaying,
    a child of the workflow's context; its scope is temporalio's). Called in the workflow, only when tracing is on.
    """
    from temporalio.contrib.opentelemetry import workflow as traced_workflow

    c = importlib.import_module("handrail.tracing._conventions")
    describe = importlib.import_module("handrail.tracing._describe")
    spans = importlib.import_module("handrail.tracing._spans")
    otel = importlib.import_module("handrail.tracing._otel")
    model = describe.describe_model(agent.chat_generator if agent is not None else None)
    attributes = spans.agent_attributes(model, agent_name, run_id, run_id)
    attributes[c.HANDRAIL_RUN_STATUS] = status
    attributes[c.HANDRAIL_RUN_STEPS] = steps
    if exit_reason:
        attributes[c.HANDRAIL_RUN_EXIT_REASON] = exit_reason
    if error is not None:
        attributes[c.ERROR_TYPE] = otel.error_type(error)
    exception = error if isinstance(error, Exception) else None
    traced_workflow.completed_span(f"{c.OP_INVOKE_AGENT} {agent_name}", attributes=attributes, exception=exception)
