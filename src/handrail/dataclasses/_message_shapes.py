"""The shapes ``ChatMessage.from_dict`` and its parts' ``from_dict`` accept, checked before anything is built.

Message dicts come from files (agent files' scripted replies, snapshots, store rows): a value of the wrong type
must be refused here, naming the field, not turned into a message that fails later (a text part whose text is a
list) or into a bare ``TypeError``.
"""

from __future__ import annotations

from typing import Any

from handrail.errors import SerializationError

__all__ = ["check_message_data", "check_part_data", "check_result_data", "check_tool_call_data"]


def _kind(value: Any) -> str:
    return type(value).__name__


def _mapping(data: Any, what: str) -> None:
    if not isinstance(data, dict):
        raise SerializationError(f"{what} must be a mapping, got {_kind(data)} {data!r:.80}.")


def check_message_data(data: Any) -> None:
    """Refuse a message dict whose fields have the wrong types (``role`` str, ``content`` str or list, ...).

    Raises:
        SerializationError: Naming the field and what it holds.
    """
    _mapping(data, "ChatMessage data")
    if "role" not in data or "content" not in data:
        raise SerializationError(f"ChatMessage data needs 'role' and 'content' keys: {data!r:.200}")
    if not isinstance(data["role"], str):
        raise SerializationError(f"ChatMessage 'role' must be a str, got {_kind(data['role'])} {data['role']!r:.80}.")
    if not isinstance(data["content"], str | list):
        raise SerializationError(
            f"ChatMessage 'content' must be a str or a list of parts, got {_kind(data['content'])} "
            f"{data['content']!r:.80}."
        )
    for key, kind in (("name", str), ("meta", dict)):
        value = data.get(key)
        if value is not None and not isinstance(value, kind):
            raise SerializationError(
                f"ChatMessage '{key}' must be a {kind.__name__} or null, got {_kind(value)} {value!r:.80}."
            )


def check_part_data(data: Any, index: int) -> None:
    """Refuse a content part that is not a mapping, or a text part whose ``text`` is not a str.

    Raises:
        SerializationError: Naming ``content[index]``.
    """
    _mapping(data, f"ChatMessage content[{index}]")
    if "text" in data and not isinstance(data["text"], str):
        raise SerializationError(
            f"ChatMessage content[{index}]: 'text' must be a str, got {_kind(data['text'])} {data['text']!r:.80}."
        )


def check_tool_call_data(data: Any) -> None:
    """Refuse a tool call dict whose ``arguments`` are neither a mapping nor a str, or whose ``extra`` is no mapping.

    ``tool_name`` and ``id`` are checked by ToolCall itself.

    Raises:
        SerializationError: Naming the field.
    """
    _mapping(data, "ToolCall data")
    arguments = data.get("arguments")
    if "arguments" in data and not isinstance(arguments, dict | str):
        raise SerializationError(
            f"ToolCall 'arguments' must be a mapping (or the model's raw text), got {_kind(arguments)} "
            f"{arguments!r:.80}."
        )
    extra = data.get("extra")
    if extra is not None and not isinstance(extra, dict):
        raise SerializationError(f"ToolCall 'extra' must be a mapping or null, got {_kind(extra)} {extra!r:.80}.")


def check_result_data(data: Any) -> None:
    """Refuse a tool call result dict whose ``result`` is not a str or whose ``error`` is not a bool (or 0 / 1).

    Raises:
        SerializationError: Naming the field.
    """
    _mapping(data, "ToolCallResult data")
    if "result" in data and not isinstance(data["result"], str):
        raise SerializationError(
            f"ToolCallResult 'result' must be a str, got {_kind(data['result'])} {data['result']!r:.80}."
        )
    if "error" in data and data["error"] not in (True, False):  # 0 and 1 too: from_dict coerces them
        raise SerializationError(
            f"ToolCallResult 'error' must be true or false, got {_kind(data['error'])} {data['error']!r:.80}."
        )
