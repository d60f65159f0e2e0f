"""The instruments of handrail's metrics and what their attributes and values are read from (no run state)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from opentelemetry import metrics

from handrail.tracing import _conventions as c
from handrail.tracing._describe import describe_model

__all__ = ["Instruments", "chat_attributes", "error_type", "is_number", "usage"]


class Instruments:
    """The instruments of one meter (created once per :class:`MetricsObserver`)."""

    def __init__(self, meter: metrics.Meter) -> None:
        seconds, tokens = list(c.DURATION_BUCKETS), list(c.TOKEN_BUCKETS)
        self.operation_duration = meter.create_histogram(
            c.METRIC_OPERATION_DURATION, "s", "GenAI operation duration.", explicit_bucket_boundaries_advisory=seconds
        )
        self.token_usage = meter.create_histogram(
            c.METRIC_TOKEN_USAGE, "{token}", "Number of input and output tokens used per model call.",
            explicit_bucket_boundaries_advisory=tokens,
        )  # fmt: skip
        self.tool_duration = meter.create_histogram(
            c.METRIC_EXECUTE_TOOL_DURATION, "s", "Duration of a tool call.", explicit_bucket_boundaries_advisory=seconds
        )
        self.agent_duration = meter.create_histogram(
            c.METRIC_INVOKE_AGENT_DURATION, "s", "Duration of an agent run (up to its end or its pause).",
            explicit_bucket_boundaries_advisory=seconds,
        )  # fmt: skip
        self.pending = meter.create_up_down_counter(
            c.METRIC_APPROVALS_PENDING, "{approval}", "Tool calls waiting for a person's decision."
        )
        self.wait = meter.create_histogram(
            c.METRIC_APPROVAL_WAIT, "s", "Time a tool call waited for its decision.",
            explicit_bucket_boundaries_advisory=seconds,
        )  # fmt: skip
        self.decisions = meter.create_counter(
            c.METRIC_APPROVAL_DECISIONS, "{decision}", "Decisions on tool calls, by what they did."
        )
        self.executions = meter.create_counter(
            c.METRIC_TOOL_EXECUTIONS, "{execution}", "Tool calls, by outcome (ok, error, refused, unknown)."
        )


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def usage(replies: tuple[Any, ...]) -> dict[str, int]:
    """Input and output tokens of a model call's replies, read from ``meta["usage"]`` as the run sums them."""
    totals: dict[str, int] = {}
    for reply in replies:
        meta = getattr(reply, "meta", None)
        usage = meta.get("usage") if isinstance(meta, Mapping) else None
        if not isinstance(usage, Mapping):
            continue
        for key, token_type in (("prompt_tokens", "input"), ("completion_tokens", "output")):
            value = usage.get(key)
            if isinstance(value, int | float) and is_number(value) and value >= 0:
                totals[token_type] = totals.get(token_type, 0) + int(value)
    return totals


def error_type(error: BaseException) -> str:
    """``error.type``: the exception's class name (the conventions' low-cardinality id)."""
    return type(error).__name__ or c.ERROR_TYPE_OTHER


def chat_attributes(generator: Any) -> dict[str, str]:
    """The attributes every model call of a run shares: operation, provider and requested model (as the spans)."""
    model = describe_model(generator)
    attributes = {c.GEN_AI_OPERATION_NAME: c.OP_CHAT, c.GEN_AI_PROVIDER_NAME: model.provider}
    if model.model:
        attributes[c.GEN_AI_REQUEST_MODEL] = model.model
    return attributes
