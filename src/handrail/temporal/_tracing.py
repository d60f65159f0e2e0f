"""Tracing on Temporal: temporalio's ``TracingInterceptor`` on the client and the worker, when asked for.

With it, the trace context of whoever starts a run (``start_run`` under a span, or the client's own
``StartWorkflow`` span) travels in the workflow's headers: the workflow's spans (``RunWorkflow``,
``StartActivity``, ``HandleUpdate:decide``, ``CompleteWorkflow``) and the activities' (``RunActivity``, and every
span made inside one: a model's HTTP client, an MCP call) are in that trace, however long the run waits, across
continue-as-new and across workers. A ``decide`` Update sent under a span (the approval service's
``handrail.approval.decide``) carries it too: ``HandleUpdate:decide`` links to it. The worker also keeps the
context of the activity that records a run's held calls in their approval records (``extra["trace"]``), so the
approval service's decision span joins the workflow's trace.

The workflow sandbox (:func:`~handrail.temporal._worker.workflow_runner`) passes every module through, so
``opentelemetry`` is imported once, not per run (temporalio's contrib module asks for that passthrough).

Nothing here is imported unless tracing is on.
"""

from __future__ import annotations

from typing import Any

from handrail.errors import ConfigurationTypeError

__all__ = ["SCOPE", "current_carrier", "has_tracing", "interceptor", "record_extra"]

SCOPE = "temporalio.contrib.opentelemetry"
"""The instrumentation scope of the Temporal spans (handrail's own spans have scope ``handrail``)."""
_TRACE_KEY = "trace"
"""The approval record's ``extra`` key of the recording activity's W3C context (handrail.tracing's CARRY_TRACE)."""


def interceptor(tracing: bool = False, tracer_provider: Any = None) -> Any:
    """A ``TracingInterceptor`` to ``tracer_provider`` (or the global provider), or None when tracing is off.

    Raises:
        ConfigurationTypeError: ``tracing`` is not a bool; ``tracer_provider`` has no ``get_tracer``.
    """
    if not isinstance(tracing, bool):
        raise ConfigurationTypeError(f"tracing must be a bool, got {type(tracing).__name__}.")
    if tracer_provider is None and not tracing:
        return None
    if tracer_provider is not None and not callable(getattr(tracer_provider, "get_tracer", None)):
        raise ConfigurationTypeError(
            f"tracer_provider must be an OpenTelemetry TracerProvider, got {type(tracer_provider).__name__}."
        )
    from temporalio.contrib.opentelemetry import TracingInterceptor

    tracer = None if tracer_provider is None else tracer_provider.get_tracer(SCOPE)
    return TracingInterceptor(tracer)


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
