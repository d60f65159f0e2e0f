"""The tracing observer: one run's effects, tool calls and approvals as OpenTelemetry spans.

Every span is started with an explicit parent (the run's ``invoke_agent`` span), never made current across an
effect, and ended when its effect ends (TR-10); what a run leaves open (it was abandoned, cancelled or failed
half-way) is ended when the run ends, so no span outlives its run. The one span made current is a tool call's
``execute_tool`` span, attached when the call starts and detached when it ends, in the thread or task that runs
the call, so what the tool traces itself (HTTP, an MCP request) nests under it (TR-11).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind

from handrail.components.effects import (
    AskApproval,
    CallModel,
    Finish,
    LoadStores,
    Pause,
    Persist,
    RunHooks,
    ToolInvocation,
)
from handrail.tracing import _conventions as c
from handrail.tracing._content import DEFAULT_MAX_CONTENT_CHARS, Content
from handrail.tracing._decisions import decision_for, decision_kind
from handrail.tracing._describe import (
    Model,
    args_digest,
    describe_model,
    request_attributes,
    response_attributes,
    usage_attributes,
)
from handrail.tracing._otel import detach_quietly, failed, is_pause, resumed_parent, trace_context

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer

    from handrail.components.drivers import Ended, RunInfo
    from handrail.dataclasses.decisions import ToolExecutionDecision

__all__ = ["TracingObserver", "agent_attributes"]

_PLAIN: dict[type, str] = {Persist: c.SPAN_PERSIST, LoadStores: c.SPAN_LOAD_STORES, Finish: c.SPAN_FINISH,
                           Pause: c.SPAN_PAUSE}  # fmt: skip


def agent_attributes(model: Model, agent_name: str | None, conversation_id: str, run_id: str) -> dict[str, Any]:
    """An ``invoke_agent`` span's attributes at its start (a Temporal run's span has them too)."""
    attributes: dict[str, Any] = {
        c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT,
        c.GEN_AI_PROVIDER_NAME: model.provider,
        c.GEN_AI_CONVERSATION_ID: conversation_id,
        c.HANDRAIL_RUN_ID: run_id,
    }
    if agent_name:
        attributes[c.GEN_AI_AGENT_NAME] = agent_name
    if model.model:
        attributes[c.GEN_AI_REQUEST_MODEL] = model.model
    return attributes


class TracingObserver:
    """Turns one Agent run into spans (made by :func:`handrail.tracing.observer_for` or ``enable()``; one per run).

    Args:
        tracer: The tracer the spans are made with.
        capture_content: Record messages, tool definitions, arguments and results (JSON text, masked).
        max_content_chars: The longest string kept in a content attribute.
        redact: Applied to every content string after the run's redaction hooks (None: none).
    """

    def __init__(
        self,
        tracer: Tracer,
        *,
        capture_content: bool = False,
        max_content_chars: int = DEFAULT_MAX_CONTENT_CHARS,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self._tracer = tracer
        self._capture = capture_content
        self._max_chars = max_content_chars
        self._redact = redact
        self._lock = threading.Lock()
        self._content: Content | None = None
        self._info: RunInfo | None = None
        self._model = Model("unknown", None, False)
        self._streaming = False
        self._agent: Span | None = None
        self._parent: Context | None = None
        self._open: dict[int, Span] = {}
        self._tokens: dict[int, Any] = {}
        self._decided: dict[str, dict[str, Any]] = {}
        self._proposed: dict[str, dict[str, Any]] = {}
        self._usage: dict[str, int] = {}
        self._calls = 0
        self._held: list[str] = []
        self._describe: Callable[[str], str | None] | None = None

    def effects_under(self, parent: Context, generator: Any, *, step: int = 1,
                      describe_tool: Callable[[str], str | None] | None = None,
                      redact: Callable[[str], str] | None = None) -> TracingObserver:  # fmt: skip
        """Trace effects and tool calls as children of ``parent``, with no run of its own (no ``invoke_agent``).

        For what runs one effect away from its run (a Temporal activity: its span is ``parent``): ``generator``
        is the run's chat generator, ``step`` the number of the next model call, ``describe_tool`` gives a tool's
        description, ``redact`` masks content before this observer's own ``redact``. Returns this observer.
        """
        self._model = describe_model(generator)
        self._streaming = getattr(generator, "streaming_callback", None) is not None
        if self._capture:
            self._content = Content(self._max_chars, tuple(r for r in (redact, self._redact) if r is not None))
        self._parent = parent
        self._calls = max(step, 1) - 1
        self._describe = describe_tool
        return self

    def _description(self, name: str) -> str | None:
        if self._info is not None:
            return self._info.describe_tool(name)
        return self._describe(name) if self._describe is not None else None

    # -- the run -----------------------------------------------------------------------------------

    def run_started(self, info: RunInfo) -> None:
        """Start the run's ``invoke_agent`` span (a resumed run's links to the paused one's)."""
        self._info = info
        self._model = model = describe_model(info.generator)
        self._streaming = info.streaming or getattr(info.generator, "streaming_callback", None) is not None
        if self._capture:
            self._content = Content(self._max_chars, tuple(r for r in (info.redact, self._redact) if r is not None))
        parent, links = resumed_parent(info.carried_in.get(c.CARRY_TRACE))
        attributes = agent_attributes(model, info.agent_name, info.conversation_id or info.run_id, info.run_id)
        if info.resumed_from:
            attributes[c.HANDRAIL_RUN_RESUMED_FROM] = info.resumed_from
        name = f"{c.OP_INVOKE_AGENT} {info.agent_name}" if info.agent_name else c.OP_INVOKE_AGENT
        span = self._tracer.start_span(name, parent, SpanKind.INTERNAL, attributes, links)
        self._agent = span
        self._parent = trace.set_span_in_context(span, parent)
        if info.can_carry and span.get_span_context().is_valid:
            info.carry(c.CARRY_TRACE, trace_context(self._parent))
        if info.resumed_from is not None:
            self._resumed_decisions(info)

    def run_ended(self, info: RunInfo, ended: Ended) -> None:
        """End what is still open, then the ``invoke_agent`` span with the run's outcome."""
        with self._lock:
            left = list(self._open.items())
            tokens = list(self._tokens.values())
            self._open.clear()
            self._tokens.clear()
        for token in reversed(tokens):
            detach_quietly(token)
        for _, open_span in left:
            open_span.end()
        span = self._agent
        if span is None:
            return
        self._agent = None
        span.set_attribute(c.HANDRAIL_RUN_ID, info.run_id)
        span.set_attribute(c.HANDRAIL_RUN_STATUS, info.outcome)
        span.set_attribute(c.HANDRAIL_RUN_STEPS, self._calls)
        span.set_attribute(c.HANDRAIL_USAGE_INPUT_TOKENS, self._usage.get(c.GEN_AI_USAGE_INPUT_TOKENS, 0))
        span.set_attribute(c.HANDRAIL_USAGE_OUTPUT_TOKENS, self._usage.get(c.GEN_AI_USAGE_OUTPUT_TOKENS, 0))
        result = ended.result
        if isinstance(result, dict) and isinstance(result.get("exit_reason"), str):
            span.set_attribute(c.HANDRAIL_RUN_EXIT_REASON, result["exit_reason"])
        error = ended.error
        if info.outcome == "paused":
            self._paused(span, error)
        elif info.outcome == "failed" and error is not None:
            failed(span, error, self._info.redact if self._info is not None else None)
        span.end()

    def _paused(self, span: Span, error: BaseException | None) -> None:
        snapshot = getattr(error, "snapshot", None)
        snapshot_id = getattr(snapshot, "snapshot_id", None)
        if isinstance(snapshot_id, str):
            span.set_attribute(c.HANDRAIL_SNAPSHOT_ID, snapshot_id)
        pending = getattr(error, "tool_call_ids", None) or self._held
        if pending:
            span.set_attribute(c.HANDRAIL_PENDING_CALL_IDS, [str(i) for i in pending])

    # -- effects and tool calls ----------------------------------------------------------------------

    def _start(self, event: object, name: str, kind: SpanKind, attributes: Mapping[str, Any]) -> Span | None:
        if self._parent is None:
            return None
        span = self._tracer.start_span(name, self._parent, kind, attributes)
        with self._lock:
            self._open[id(event)] = span
        return span

    def started(self, event: object) -> None:
        """An effect or a tool call starts: its span starts (a child of the run's span)."""
        kind = type(event)
        if kind is ToolInvocation:
            self._tool_started(event)  # type: ignore[arg-type]
        elif kind is CallModel:
            self._chat_started(event)  # type: ignore[arg-type]
        elif kind is AskApproval:
            names = sorted({call.tool_name for call in event.calls})  # type: ignore[attr-defined]
            name = f"{c.SPAN_AWAIT_APPROVAL} {names[0]}" if len(names) == 1 else c.SPAN_AWAIT_APPROVAL
            ids = [call.call_id or "" for call in event.calls]  # type: ignore[attr-defined]
            self._start(event, name, SpanKind.INTERNAL, {c.HANDRAIL_PENDING_CALL_IDS: ids})
        elif kind is RunHooks:
            point = event.point  # type: ignore[attr-defined]
            self._start(event, f"{c.SPAN_HOOK} {point}", SpanKind.INTERNAL, {c.HANDRAIL_HOOK_POINT: point})
        elif kind in _PLAIN:
            if kind is Pause:
                self._held = list(event.held)  # type: ignore[attr-defined]
            self._start(event, _PLAIN[kind], SpanKind.INTERNAL, {})

    def ended(self, event: object, ended: Ended) -> None:
        """An effect or a tool call ended: its span ends (with its result's attributes, or its error)."""
        kind = type(event)
        with self._lock:
            span = self._open.pop(id(event), None)
            token = self._tokens.pop(id(event), None)
        if token is not None:
            otel_context.detach(token)
        if kind is AskApproval:
            self._decisions(event, ended)  # type: ignore[arg-type]
        if span is None:
            return
        error = ended.error
        if kind is CallModel and error is None:
            self._chat_ended(span, ended.result)
        elif kind is ToolInvocation and error is None and self._content is not None:
            span.set_attribute(c.GEN_AI_TOOL_CALL_RESULT, self._content.value(ended.result))
        if kind is Pause and is_pause(error):
            self._paused(span, error)
        elif error is not None:
            failed(span, error, self._info.redact if self._info is not None else None)
        span.end()

    # -- model calls

    def _chat_started(self, effect: CallModel) -> None:
        model = self._model
        attributes = request_attributes(model, self._streaming, self._calls + 1)
        content = self._content
        if content is not None:
            system, messages = content.input_messages(effect.messages)
            if system is not None:
                attributes[c.GEN_AI_SYSTEM_INSTRUCTIONS] = system
            attributes[c.GEN_AI_INPUT_MESSAGES] = messages
            if effect.tools:
                attributes[c.GEN_AI_TOOL_DEFINITIONS] = content.tool_definitions(
                    (n, self._description(n)) for n in effect.tools
                )
        name = f"{c.OP_CHAT} {model.model}" if model.model else c.OP_CHAT
        self._start(effect, name, SpanKind.INTERNAL if model.in_process else SpanKind.CLIENT, attributes)
        with self._lock:
            self._calls += 1

    def _chat_ended(self, span: Span, result: Any) -> None:
        replies = [r for r in (result or ()) if hasattr(r, "meta")]
        usage = usage_attributes(replies)
        span.set_attributes({**usage, **response_attributes(replies)})
        with self._lock:
            for key, value in usage.items():
                self._usage[key] = self._usage.get(key, 0) + value
        if self._content is not None:
            span.set_attribute(c.GEN_AI_OUTPUT_MESSAGES, self._content.output_messages(replies))

    # -- tool calls and their approvals

    def _tool_attributes(self, call: ToolInvocation) -> dict[str, Any]:
        attributes: dict[str, Any] = {
            c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL,
            c.GEN_AI_TOOL_NAME: call.tool_name,
            c.GEN_AI_TOOL_TYPE: "function",
        }
        if call.call_id:
            attributes[c.GEN_AI_TOOL_CALL_ID] = call.call_id
        description = self._description(call.tool_name)
        if description:
            attributes[c.GEN_AI_TOOL_DESCRIPTION] = description
        if self._content is not None:
            attributes[c.GEN_AI_TOOL_CALL_ARGUMENTS] = self._content.value(call.arguments)
        return attributes

    def _tool_started(self, call: ToolInvocation) -> None:
        attributes = self._tool_attributes(call)
        attributes[c.HANDRAIL_TOOL_EXECUTED] = True
        with self._lock:
            decided = self._decided.pop(call.call_id or "", None)
            proposed = self._proposed.pop(call.call_id or "", None)
        if decided is not None:
            if proposed is not None and decided[c.HANDRAIL_APPROVAL_DECISION] == "approved" \
                    and call.arguments != proposed:  # fmt: skip
                decided[c.HANDRAIL_APPROVAL_DECISION] = "edited"
            attributes.update(decided)
        elif self._info is not None and self._info.resumed_from is None:  # never asked: no strategy for it
            attributes[c.HANDRAIL_APPROVAL_REQUIRED] = False
            attributes[c.HANDRAIL_APPROVAL_DECISION] = "auto"
        attributes[c.HANDRAIL_APPROVAL_ARGS_DIGEST] = args_digest(call.arguments)
        span = self._start(call, f"{c.OP_EXECUTE_TOOL} {call.tool_name}", SpanKind.INTERNAL, attributes)
        if span is not None:
            token = otel_context.attach(trace.set_span_in_context(span))
            with self._lock:
                self._tokens[id(call)] = token

    def _decisions(self, effect: AskApproval, ended: Ended) -> None:
        """Note each call's decision for its ``execute_tool`` span; a refused call's span is made now."""
        decisions = ended.result if ended.error is None else None
        if not isinstance(decisions, tuple | list) or len(decisions) != len(effect.calls):
            return
        wait_ms = round(ended.duration * 1000.0, 3)
        for call, decision in zip(effect.calls, decisions, strict=True):
            attributes: dict[str, Any] = {c.HANDRAIL_APPROVAL_WAIT_MS: wait_ms}
            self._decided_call(call, decision, attributes)

    def _decided_call(self, call: ToolInvocation, decision: ToolExecutionDecision, attributes: dict[str, Any]) -> None:
        """Keep a decision's attributes for the call's span, or make the span of a call it refused (never run)."""
        attributes[c.HANDRAIL_APPROVAL_REQUIRED] = True
        attributes[c.HANDRAIL_APPROVAL_DECISION] = decision_kind(decision, call.arguments)
        if decision.decided_by:
            attributes[c.HANDRAIL_APPROVAL_DECIDED_BY] = decision.decided_by
        if decision.execute:
            with self._lock:
                self._decided[call.call_id or ""] = attributes
                self._proposed[call.call_id or ""] = dict(call.arguments)
            return
        attributes.update(self._tool_attributes(call))
        attributes[c.HANDRAIL_TOOL_EXECUTED] = False
        attributes[c.HANDRAIL_APPROVAL_ARGS_DIGEST] = args_digest(call.arguments)
        if self._parent is not None:
            name = f"{c.OP_EXECUTE_TOOL} {call.tool_name}"
            self._tracer.start_span(name, self._parent, SpanKind.INTERNAL, attributes).end()

    def _resumed_decisions(self, info: RunInfo) -> None:
        """The decisions a resumed run applies to its held calls (no AskApproval effect shows them)."""
        waiting = [e for e in info.resumed_ledger.values() if e.status in ("pending", "approved", "rejected")]
        for entry in waiting:
            same_tool = sum(1 for e in waiting if e.tool_name == entry.tool_name)
            decision = entry.decision or decision_for(entry.tool_call_id, entry.tool_name, info.decisions, same_tool)
            if decision is not None:
                call = ToolInvocation(entry.tool_call_id, entry.tool_name, dict(entry.arguments), entry.tool_call_id)
                self._decided_call(call, decision, {})
