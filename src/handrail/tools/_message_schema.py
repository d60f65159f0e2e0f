"""The JSON Schema a model sees for a ``ChatMessage`` input of a ComponentTool (a chat generator's ``messages``).

It describes the dict :meth:`~handrail.dataclasses.chat_message.ChatMessage.from_dict` reads, so the model's
arguments validate against the schema and convert back to messages: a role, and the content as one string or as
a list of parts (``{"text": ...}``, ``{"tool_call": {...}}``, ``{"tool_call_result": {...}}``).
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["message_schema"]

_TOOL_CALL: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tool_name": {"type": "string", "description": "The name of the tool called."},
        "arguments": {"type": "object", "description": "The arguments of the call."},
        "id": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "The call's id."},
    },
    "required": ["tool_name", "arguments"],
}

_PARTS: list[dict[str, Any]] = [
    {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The text."}},
        "required": ["text"],
        "additionalProperties": False,
    },
    {
        "type": "object",
        "properties": {"tool_call": _TOOL_CALL},
        "required": ["tool_call"],
        "additionalProperties": False,
    },
    {
        "type": "object",
        "properties": {
            "tool_call_result": {
                "type": "object",
                "properties": {
                    "result": {"type": "string", "description": "The tool's result as text."},
                    "origin": _TOOL_CALL,
                    "error": {"type": "boolean", "description": "Whether the call failed."},
                },
                "required": ["result", "origin", "error"],
            }
        },
        "required": ["tool_call_result"],
        "additionalProperties": False,
    },
]

_MESSAGE: dict[str, Any] = {
    "type": "object",
    "description": "A chat message.",
    "properties": {
        "role": {"type": "string", "enum": ["user", "system", "assistant", "tool"], "description": "Who speaks."},
        "content": {
            "anyOf": [{"type": "string"}, {"type": "array", "items": {"anyOf": _PARTS}}],
            "description": 'The text, or a list of parts such as {"text": "..."}.',
        },
        "name": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "An optional author name."},
        "meta": {"type": "object", "description": "Optional metadata."},
    },
    "required": ["role", "content"],
}


def message_schema() -> dict[str, Any]:
    """Return a fresh copy of the JSON Schema of one message (callers may change it)."""
    return copy.deepcopy(_MESSAGE)
