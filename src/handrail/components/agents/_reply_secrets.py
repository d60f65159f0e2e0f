"""Known secret values masked out of a model's reply when the Agent takes it (model output is untrusted text)."""

from __future__ import annotations

from typing import Any

from handrail.core._secret_values import mask_data, mask_secrets, may_hold_secret, secrets_known
from handrail.dataclasses.chat_message import ChatMessage, ReasoningContent, TextContent, ToolCall

__all__ = ["masked"]


def masked(reply: ChatMessage) -> ChatMessage:
    """``reply`` with every known secret value masked in its text, calls and meta; else itself.

    A model's reply is untrusted text: it may echo a key it saw (in an error, a tool result, a prompt). Masked here,
    the key reaches neither the history nor the tools, the snapshots or the chat and memory stores.
    """
    if not secrets_known():
        return reply
    strings: list[str] = []
    _strings(reply.meta, strings)
    for part in reply._content:
        _strings(part.to_dict() if type(part) in (ToolCall, ReasoningContent) else getattr(part, "text", ""), strings)
    if not may_hold_secret("\n".join(strings)):  # one quick check of the whole reply
        return reply
    content = [_masked_part(part) for part in reply._content]
    meta = mask_data(reply.meta)
    if meta is reply.meta and all(a is b for a, b in zip(content, reply._content, strict=True)):
        return reply
    return ChatMessage(reply.role, content, reply.name, meta)


def _masked_part(part: Any) -> Any:
    """``part`` (text, reasoning, or a tool call: name, arguments at any depth, id, extra) masked; else itself."""
    if type(part) is TextContent:
        text = mask_secrets(part.text)
        return part if text is part.text else TextContent(text)
    if type(part) is ToolCall:
        fields = (part.tool_name, part.arguments, part.id, part.extra)
        new = tuple(mask_data(value) for value in fields)
        return part if all(a is b for a, b in zip(new, fields, strict=True)) else ToolCall(*new)
    if type(part) is ReasoningContent:  # the model's reasoning may echo a key as its text may
        text, extra = mask_secrets(part.reasoning_text), mask_data(part.extra)
        return part if text is part.reasoning_text and extra is part.extra else ReasoningContent(text, extra)
    return part


def _strings(value: Any, into: list[str]) -> None:
    """Collect every string in ``value`` (JSON-like data, keys too) into ``into``."""
    if isinstance(value, str):
        into.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            _strings(key, into)
            _strings(item, into)
    elif isinstance(value, list | tuple):
        for item in value:
            _strings(item, into)
