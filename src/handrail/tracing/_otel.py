"""The OpenTelemetry side of the spans: errors, the trace context a paused run carries, a tool span's context."""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from handrail.tracing import _conventions as c

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span

__all__ = ["detach_quietly", "error_type", "failed", "is_pause", "resumed_parent", "trace_context"]

_PROPAGATOR = TraceContextTextMapPropagator()


def error_type(error: BaseException) -> str:
    """``error.type`` of an exception: ``tool_error`` for an MCP result marked ``isError``, else its class name."""
    from handrail.errors import MCPToolError

    return c.ERROR_TYPE_TOOL_ERROR if isinstance(error, MCPToolError) else type(error).__name__ or c.ERROR_TYPE_OTHER


def failed(span: Span, error: BaseException, redact: Callable[[str], str] | None = None) -> None:
    """Mark ``span`` failed by ``error``: ``error.type``, an ``exception`` event, status ERROR.

    The event is made here, not by ``span.record_exception``: its message and stacktrace are masked (the known
    secret values, ``redact`` (the run's redaction hooks), the :class:`~handrail.hooks.RedactionHook` default
    patterns), as the log records are, whether content is captured or not: an error text often quotes its input.
    """
    from handrail.components._observed_words import mask_text

    kind = type(error)
    name = kind.__qualname__ if kind.__module__ in ("builtins", "") else f"{kind.__module__}.{kind.__qualname__}"
    stack = "".join(traceback.format_exception(kind, error, error.__traceback__))
    span.set_attribute(c.ERROR_TYPE, error_type(error))
    span.add_event(c.EVENT_EXCEPTION, {c.EXCEPTION_TYPE: name, c.EXCEPTION_MESSAGE: mask_text(str(error), redact),
                                       c.EXCEPTION_STACKTRACE: mask_text(stack, redact)})  # fmt: skip
    span.set_status(Status(StatusCode.ERROR, mask_text(kind.__name__)))


def is_pause(error: BaseException | None) -> bool:
    """Whether ``error`` is a pause (a breakpoint exception), which is not a failure."""
    from handrail.dataclasses.breakpoints import BreakpointException

    return isinstance(error, BreakpointException)


def detach_quietly(token: Any) -> None:
    """Detach a tool span's context from outside its own call (a run that ended without the call's end).

    A token made in another context (a cancelled task's) cannot be reset here and needs not be: that context is
    gone with its task. Nothing is logged (OpenTelemetry's own ``detach`` logs "Failed to detach context").
    """
    with contextlib.suppress(AttributeError, ValueError, RuntimeError, TypeError):
        token.var.reset(token)  # the contextvars runtime's token: refused (ValueError) in another context


def trace_context(context: Context) -> dict[str, str]:
    """The W3C ``traceparent`` / ``tracestate`` of the span of ``context``: what a paused run carries."""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, context)
    return {"traceparent": carrier.get("traceparent", ""), "tracestate": carrier.get("tracestate", "")}


def resumed_parent(carried: Any) -> tuple[Context | None, list[Link]]:
    """The parent and the links of a resumed run's span, from the :func:`trace_context` its snapshot carried.

    Linked to the paused span always; its child too (the same trace) when the caller has no active span of its
    own (None: the caller's context is the parent). Nothing carried, or nothing valid: no parent, no link.
    """
    if not isinstance(carried, dict) or not isinstance(carried.get("traceparent"), str):
        return None, []
    carrier = {k: v for k, v in carried.items() if k in ("traceparent", "tracestate") and isinstance(v, str)}
    paused = _PROPAGATOR.extract(carrier, otel_context.Context())
    paused_span = trace.get_current_span(paused).get_span_context()
    if not paused_span.is_valid:
        return None, []
    active = trace.get_current_span().get_span_context().is_valid
    return (None if active else paused), [Link(paused_span)]
