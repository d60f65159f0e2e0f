"""Shorthands of CASES.md: ``asst(text, calls=[(id, name, args)])``, result lookups; ``user`` is handrail.testing's."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from handrail.dataclasses import ChatMessage, ChatRole, StreamingChunk, ToolCall, ToolCallDelta, ToolCallResult
from handrail.testing import call, reply, user

__all__ = ["asst", "requested_calls", "result_for", "streamed_call", "system_positions", "tool_results", "user"]

Call = tuple[str | None, str, dict[str, Any] | str]


def asst(text: str | None = None, calls: Sequence[Call] = (), meta: dict[str, Any] | None = None) -> ChatMessage:
    """A scripted assistant reply; ``calls`` are ``(id, tool_name, arguments)`` triples."""
    texts = [] if text is None else [text]
    return reply(*texts, *(call(name, args, cid) for cid, name, args in calls), **(meta or {}))


def streamed_call(call_id: str, name: str, fragments: Iterable[str]) -> list[StreamingChunk]:
    """A streamed reply holding one tool call whose arguments arrive in ``fragments`` (maybe none)."""
    chunks = [StreamingChunk(index=0, start=True, tool_calls=[ToolCallDelta(index=0, tool_name=name, id=call_id)])]
    chunks += [StreamingChunk(index=0, tool_calls=[ToolCallDelta(index=0, arguments=f)]) for f in fragments]
    chunks.append(StreamingChunk(finish_reason="tool_calls"))
    return chunks


def tool_results(messages: Iterable[ChatMessage]) -> list[ToolCallResult]:
    """Every tool call result in ``messages``, in order."""
    return [r for m in messages if m.role is ChatRole.TOOL for r in m.tool_call_results]


def result_for(messages: Iterable[ChatMessage], call_id: str) -> ToolCallResult:
    """The one tool result answering ``call_id`` (fails when there is none or more than one)."""
    found = [r for r in tool_results(messages) if r.origin.id == call_id]
    assert len(found) == 1, f"expected one result for {call_id!r}, found {len(found)}"
    return found[0]


def requested_calls(messages: Iterable[ChatMessage]) -> list[ToolCall]:
    """Every tool call the assistant messages hold, in order."""
    return [c for m in messages if m.role is ChatRole.ASSISTANT for c in m.tool_calls]


def system_positions(messages: Sequence[ChatMessage]) -> list[int]:
    return [i for i, m in enumerate(messages) if m.role is ChatRole.SYSTEM]
