"""The content attributes of spans, opt-in (TR-9): messages, tool definitions, arguments and results as JSON text.

The shapes follow the GenAI input / output message JSON schemas of semantic-conventions-genai v0.1.0: a message is
``{"role", "parts": [...]}`` with parts ``{"type": "text", "content"}``, ``{"type": "tool_call", "id", "name",
"arguments"}``, ``{"type": "tool_call_response", "id", "response"}`` and ``{"type": "reasoning", "content"}``; an
output message adds ``finish_reason``; system prompts go to ``gen_ai.system_instructions`` as text parts.

Every string of what is recorded goes, in order, through the run's redaction hooks (``RunInfo.redact``), the
``redact`` function given to :func:`handrail.tracing.enable`, and
:func:`~handrail.core._secret_values.mask_secrets` (always); then a string longer than ``max_chars`` is cut to
that many characters and marked, so every attribute stays valid JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from handrail.core._secret_values import mask_secrets
from handrail.dataclasses.chat_message import (
    ChatMessage,
    ChatRole,
    ReasoningContent,
    TextContent,
    ToolCall,
    ToolCallResult,
)

__all__ = ["Content", "DEFAULT_MAX_CONTENT_CHARS", "capture_from_environment"]

DEFAULT_MAX_CONTENT_CHARS = 4096
"""The longest string kept in a content attribute (longer ones are cut and marked)."""
ENV_CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The environment variable the OpenTelemetry contrib GenAI instrumentations read: ``true`` records content."""


def capture_from_environment() -> bool:
    """Whether :data:`ENV_CAPTURE` asks for content (``true``, any case)."""
    import os

    return os.environ.get(ENV_CAPTURE, "").strip().lower() == "true"


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[{len(text) - limit} more characters]"


@dataclass(frozen=True, slots=True)
class Content:
    """How one run's content is recorded: the masking and the length limit."""

    max_chars: int
    redactors: tuple[Callable[[str], str], ...] = ()
    """Applied to every string, in order, before the secret values are masked."""

    def text(self, value: str) -> str:
        """``value`` redacted, its secrets masked, cut to the limit."""
        for redact in self.redactors:
            value = redact(value)
        return _cut(mask_secrets(value), self.max_chars)

    def data(self, value: Any) -> Any:
        """JSON-like ``value`` with every string (keys too) passed through :meth:`text`."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(str(k)): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        if value is None or isinstance(value, bool | int | float):
            return value
        return self.text(_json_text(value))

    def dumps(self, value: Any) -> str:
        """The attribute's text: ``value`` masked (:meth:`data`) as compact JSON."""
        return json.dumps(self.data(value), ensure_ascii=False, separators=(",", ":"), default=str)

    # -- the GenAI shapes

    def input_messages(self, messages: Sequence[ChatMessage]) -> tuple[str | None, str]:
        """``(gen_ai.system_instructions or None, gen_ai.input.messages)`` of a model call's input."""
        system = [{"type": "text", "content": t} for m in messages if m.role is ChatRole.SYSTEM for t in m.texts]
        chat = [_message(m) for m in messages if m.role is not ChatRole.SYSTEM]
        return (self.dumps(system) if system else None), self.dumps(chat)

    def output_messages(self, replies: Iterable[ChatMessage]) -> str:
        """``gen_ai.output.messages`` of a model call's replies."""
        out = []
        for reply in replies:
            message = _message(reply)
            message["finish_reason"] = str((reply.meta or {}).get("finish_reason") or "stop")
            out.append(message)
        return self.dumps(out)

    def tool_definitions(self, tools: Iterable[tuple[str, str | None]]) -> str:
        """``gen_ai.tool.definitions``: the tools offered, by name and description."""
        return self.dumps([{"type": "function", "name": n, **({"description": d} if d else {})} for n, d in tools])

    def value(self, value: Any) -> str:
        """A tool's arguments or result: a string as is (masked), anything else as JSON."""
        return self.text(value) if isinstance(value, str) else self.dumps(value)


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _message(message: ChatMessage) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for part in message._content:
        if type(part) is TextContent:
            parts.append({"type": "text", "content": part.text})
        elif type(part) is ToolCall:
            parts.append({"type": "tool_call", "id": part.id, "name": part.tool_name, "arguments": part.arguments})
        elif type(part) is ToolCallResult:
            parts.append({"type": "tool_call_response", "id": part.origin.id, "response": part.text})
        elif type(part) is ReasoningContent:
            parts.append({"type": "reasoning", "content": part.reasoning_text})
        else:  # an image: its kind only, never its bytes
            parts.append({"type": "blob", "modality": "image", "mime_type": getattr(part, "mime_type", None)})
    out: dict[str, Any] = {"role": str(message.role), "parts": parts}
    if message.name:
        out["name"] = message.name
    return out
