"""The rules for a model's replies within a step.

Usage is added up, known secret values masked, text a snapshot cannot hold escaped, call ids repaired, and a
reply without calls gives the step's exit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from handrail.components.agents._reply_secrets import masked
from handrail.components.tools._arguments import repair_calls
from handrail.core.json_data import text_problem, writable_text
from handrail.dataclasses.chat_message import ChatMessage, ChatRole, TextContent, ToolCall
from handrail.dataclasses.state import State
from handrail.errors import RunError

__all__ = ["checked_replies", "reply_exit", "take_replies", "with_calls"]

_STOP_FINISH_REASONS = ("length", "content_filter")


def _add_usage(total: dict[str, Any], usage: Mapping[str, Any]) -> None:
    """Add every numeric field of ``usage`` into ``total`` (nested dicts recursively).

    A field whose shape differs from the total's (a number where earlier replies had a dict, or the
    reverse) is left out, and so is a number that is negative or not finite: a provider's metadata
    must neither end the run nor blind a token budget.
    """
    for key, value in usage.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            if not math.isfinite(value) or value < 0:  # NaN would blind a token budget for good
                continue
            before = total.get(key, 0)
            if isinstance(before, int | float) and not isinstance(before, bool):
                total[key] = before + value
        elif isinstance(value, Mapping):
            nested = total.setdefault(key, {})
            if isinstance(nested, dict):
                _add_usage(nested, value)


def with_calls(message: ChatMessage, calls: list[ToolCall]) -> ChatMessage:
    replaced = iter(calls)
    content = [next(replaced) if type(p) is ToolCall else p for p in message._content]
    return ChatMessage(message.role, content, message.name, message.meta)


def _writable(reply: ChatMessage) -> ChatMessage:
    """``reply`` with text a snapshot cannot hold (a lone surrogate) escaped, as tool results are; else itself."""
    content = reply._content
    if not any(type(p) is TextContent and text_problem(p.text) for p in content):
        return reply
    fixed = [TextContent(writable_text(p.text)) if type(p) is TextContent else p for p in content]
    return ChatMessage(reply.role, fixed, reply.name, reply.meta)


_ASSISTANT = ChatRole.ASSISTANT


def checked_replies(replies: object, model_name: str) -> list[ChatMessage]:
    """The result of a ``CallModel`` effect, refused unless it is a non-empty list of assistant ChatMessages.

    Raises:
        RunError: Not a list of ChatMessage; empty (the run would end on the user's own message or loop); a reply
            that is not an assistant message (a user or tool "reply" would be taken as the answer, or loop).
    """
    if (
        type(replies) is list
        and len(replies) == 1
        and type(replies[0]) is ChatMessage
        and replies[0].role is _ASSISTANT
    ):
        return replies  # the common case, checked cheaply
    if not isinstance(replies, list) or not all(isinstance(r, ChatMessage) for r in replies):
        raise RunError(f"{model_name}.run must return {{'replies': [ChatMessage, ...]}}, got replies {replies!r:.200}")
    if not replies:
        raise RunError(f"{model_name}.run returned no replies ({{'replies': []}}); it must return one.")
    for i, reply in enumerate(replies):
        if reply.role is not _ASSISTANT:
            raise RunError(
                f"{model_name}.run returned a {reply.role.value} message as replies[{i}]; "
                f"replies must be assistant messages (ChatMessage.from_assistant)."
            )
    return replies


def take_replies(replies: list[ChatMessage], state: State, seen: set[str]) -> tuple[list[ChatMessage], list[ToolCall]]:
    """Record usage, mask known secret values, escape unwritable text and repair calls (ids, unwritable arguments).

    Returns:
        The (possibly rewritten) replies and their calls: every reply is one a snapshot can hold.
    """
    usage_total = state.data["token_usage"]
    out: list[ChatMessage] = []
    calls: list[ToolCall] = []
    for reply in replies:
        usage = reply.meta.get("usage") if reply.meta else None
        if usage is not None and (type(usage) is dict or isinstance(usage, Mapping)):  # no ABC check for a dict
            _add_usage(usage_total, usage)
        reply = _writable(masked(reply))
        own = reply.tool_calls if reply.role is ChatRole.ASSISTANT else []
        if own:
            fixed = repair_calls(own, seen)
            if fixed is not own and any(a is not b for a, b in zip(own, fixed, strict=True)):
                reply = with_calls(reply, fixed)
            calls.extend(fixed)
        out.append(reply)
    return out, calls


def reply_exit(replies: list[ChatMessage]) -> str | None:
    """Exit reason for a reply without tool calls: non-empty text, or a length/content_filter stop."""
    if not replies:
        return None
    last = replies[-1]
    reason = last.meta.get("finish_reason")
    if reason in _STOP_FINISH_REASONS:
        return str(reason)
    return "text" if any(t.strip() for t in last.texts) else None
