"""The content attributes of spans, opt-in (TR-9): messages, tool definitions, arguments and results as JSON text.

The shapes follow the GenAI input / output message JSON schemas of semantic-conventions-genai v0.1.0: a message is
``{"role", "parts": [...]}`` with parts ``{"type": "text", "content"}``, ``{"type": "tool_call", "id", "name",
"arguments"}``, ``{"type": "tool_call_response", "id", "response"}`` and ``{"type": "reasoning", "content"}``; an
output message adds ``finish_reason``; system prompts go to ``gen_ai.system_instructions`` as text parts.

Every string of what is recorded goes, in order, through the run's redaction hooks (``RunInfo.redact``), the
``redact`` function given to :func:`handrail.tracing.enable`, and
:func:`~handrail.core._secret_values.mask_secrets` (always); then a string longer than ``max_chars`` is cut to
that many characters and marked, so every attribute stays valid JSON (never ``NaN``; a set is a list, any other
object its ``str()`` once: :func:`handrail.components._json_text.json_safe`).

A run's history is recorded again at each model call: each message's masked JSON is kept (per run, while the
message is in the history, keyed by the message object itself), so a call masks and encodes only the new ones.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from handrail.components._json_text import json_safe
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
    _messages: dict[int, tuple[ChatMessage, tuple[Any, ...], str]] = field(default_factory=dict, compare=False)
    """id(message) -> (the message, what it held, its masked JSON): the history's messages already encoded."""

    def text(self, value: str) -> str:
        """``value`` redacted, its secrets masked, cut to the limit."""
        for redact in self.redactors:
            value = redact(value)
        return _cut(mask_secrets(value), self.max_chars)

    def data(self, value: Any) -> Any:
        """JSON-like ``value`` (:func:`json_safe`) with every string (keys too) passed through :meth:`text`."""
        return self._masked(json_safe(value))

    def _masked(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(k): self._masked(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._masked(v) for v in value]
        return value

    def dumps(self, value: Any) -> str:
        """The attribute's text: ``value`` masked (:meth:`data`) as compact JSON."""
        return _dumps(self.data(value))

    # -- the GenAI shapes

    def input_messages(self, messages: Sequence[ChatMessage]) -> tuple[str | None, str]:
        """``(gen_ai.system_instructions or None, gen_ai.input.messages)`` of a model call's input."""
        system = [{"type": "text", "content": t} for m in messages if m.role is ChatRole.SYSTEM for t in m.texts]
        known = self._messages
        kept: dict[int, tuple[ChatMessage, tuple[Any, ...], str]] = {}
        chat = []
        for message in messages:
            if message.role is ChatRole.SYSTEM:
                continue
            held = (message.role, message.name, *map(id, message._content))
            entry = known.get(id(message))
            if entry is None or entry[0] is not message or entry[1] != held:
                entry = (message, held, self.dumps(_message(message)))
            kept[id(message)] = entry
            chat.append(entry[2])
        known.clear()  # only the messages of this history: what left it can neither be asked for nor kept alive
        known.update(kept)
        return (self.dumps(system) if system else None), "[" + ",".join(chat) + "]"

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


def _dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


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
