"""Short builders of the messages and tool calls a test scripts: ``user``, ``reply``, ``call``, ``tool_reply``.

Each is one ChatMessage or ToolCall constructor under a shorter name, so a scripted conversation reads as one::

    ScriptedChatGenerator([reply(call("add", id="c1", a=1, b=2)), reply("3")])
"""

from __future__ import annotations

from typing import Any

from handrail.dataclasses.chat_message import ChatMessage, ToolCall
from handrail.errors import ConfigurationError, ConfigurationTypeError

__all__ = ["call", "reply", "tool_reply", "user"]


def user(text: str) -> ChatMessage:
    """A user message: ``ChatMessage.from_user(text)``."""
    return ChatMessage.from_user(text)


def call(tool_name: str, arguments: dict[str, Any] | str | None = None, /, id: str | None = None,
         **keywords: Any) -> ToolCall:  # fmt: skip
    """A tool call of ``tool_name``: ``call("add", id="c1", a=1, b=2)`` or ``call("add", {"a": 1, "b": 2}, "c1")``.

    The arguments are the keywords, or one dict given after the name (for argument names such as ``id``), or a
    str: the raw text a model sent, valid JSON or not, as ``ToolCall`` takes it.

    Args:
        tool_name: The tool the model calls.
        arguments: The arguments as one dict or str, instead of keywords.
        id: The call id (None: the call has none, as some models send it).
        keywords: The arguments, by name.

    Raises:
        ConfigurationError: Both ``arguments`` and keywords are given.
        ConfigurationTypeError: ``arguments`` is neither a dict, a str nor None (a list, a number).
    """
    if arguments is not None and not isinstance(arguments, dict | str):
        raise ConfigurationTypeError(
            f"call({tool_name!r}) takes its arguments as a dict, a str (the raw text a model sent) or keywords, "
            f"got {type(arguments).__name__} ({arguments!r:.80})."
        )
    if arguments is not None and keywords:
        raise ConfigurationError(
            f"call({tool_name!r}) takes its arguments either as one dict or as keywords, not both "
            f"(got {sorted(keywords)} besides the dict)."
        )
    return ToolCall(tool_name=tool_name, arguments=keywords if arguments is None else arguments, id=id)


def reply(*parts: str | ToolCall, **meta: Any) -> ChatMessage:
    """An assistant message: an optional text, then tool calls; keywords are its meta.

    ``reply("hi")``, ``reply(call("add", id="c1", a=1))``, ``reply("Let me add.", call(...), call(...))``,
    ``reply("cut", finish_reason="length")``; the text comes first in the message wherever it is given.

    Args:
        parts: At most one str (the text) and any number of :class:`ToolCall` (see :func:`call`).
        meta: The message's meta (``finish_reason="length"``, ``usage={...}``); none: an empty meta.

    Raises:
        ConfigurationTypeError: A part is neither a str nor a ToolCall, or there are two texts.
    """
    texts = [part for part in parts if isinstance(part, str)]
    calls = [part for part in parts if isinstance(part, ToolCall)]
    odd = [part for part in parts if not isinstance(part, str | ToolCall)]
    if odd:
        raise ConfigurationTypeError(f"reply() takes a str and ToolCall objects, got {type(odd[0]).__name__}.")
    if len(texts) > 1:
        raise ConfigurationTypeError(f"reply() takes at most one text, got {len(texts)}: {texts!r:.200}.")
    return ChatMessage.from_assistant(texts[0] if texts else None, meta=meta or None, tool_calls=calls or None)


def tool_reply(result: str, origin: ToolCall, *, error: bool = False) -> ChatMessage:
    """The tool message answering ``origin``: ``ChatMessage.from_tool(result, origin, error)``.

    Raises:
        ConfigurationTypeError: ``error`` is not a bool.
    """
    if not isinstance(error, bool):
        raise ConfigurationTypeError(f"tool_reply's error must be a bool, got {type(error).__name__} ({error!r:.80}).")
    return ChatMessage.from_tool(result, origin, error)
