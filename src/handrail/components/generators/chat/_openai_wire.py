"""OpenAI wire format, the way out: handrail messages and tools to request dicts.

With ``_openai_replies`` (the way back) and ``_openai_errors`` (failures), this is the only
place that knows OpenAI's shapes; the generator in
:mod:`handrail.components.generators.chat.openai` drives the SDK with them. Nothing here does I/O.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from handrail.dataclasses._openai_format import image_part, tool_result_content
from handrail.dataclasses.chat_message import ChatMessage, ChatRole, ImageContent, TextContent, ToolCall
from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.tools.tool import Tool

__all__ = ["check_generation_kwargs", "load_sdk", "messages_to_wire", "tool_to_wire"]

_RESERVED_KWARGS = {
    "messages": "pass them as run(messages=...)",
    "model": "set the generator's model",
    "stream": "streaming happens exactly when a streaming_callback is given",
    "tools": "pass Tools as tools=[...]",
}


def load_sdk() -> ModuleType:
    """Import the ``openai`` SDK, or explain how to install it."""
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - the test environment has the SDK
        raise ImportError("OpenAIChatGenerator needs the openai package: pip install 'handrail[openai]'") from exc
    return openai


@functools.cache
def _create_parameters() -> frozenset[str]:
    """Names ``chat.completions.create`` accepts in the installed SDK."""
    return frozenset(inspect.signature(load_sdk().resources.chat.Completions.create).parameters) - {"self"}


# ----------------------------------------------------------------------------- to the wire


def _text_content(texts: list[str]) -> str | list[dict[str, str]] | None:
    if not texts:
        return None
    if len(texts) == 1:
        return texts[0]
    return [{"type": "text", "text": t} for t in texts]


def _content(message: ChatMessage, where: str) -> str | list[dict[str, Any]] | None:
    """The text of a message; a user message with images is a list of text and ``image_url`` parts, in order."""
    if not message.images:
        return _text_content(message.texts)  # reasoning parts are never sent back
    if message.role is not ChatRole.USER:
        raise ConfigurationError(
            f"{where}: the message holds an image; OpenAI's Chat API takes images in user messages only."
        )
    return [
        {"type": "text", "text": p.text} if isinstance(p, TextContent) else image_part(p)
        for p in message._content
        if isinstance(p, TextContent | ImageContent)
    ]


def _call_to_wire(call: ToolCall, where: str) -> dict[str, Any]:
    if not call.id:
        raise ConfigurationError(f"{where}: the tool call '{call.tool_name}' has no id; OpenAI requires call ids.")
    arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments, ensure_ascii=False)
    return {"id": call.id, "type": "function", "function": {"name": call.tool_name, "arguments": arguments}}


def _message_to_wire(message: ChatMessage, position: int) -> list[dict[str, Any]]:
    """Convert one message; a tool message becomes one wire message per result."""
    where = f"messages[{position}] ({message.role.value})"
    if message.role is ChatRole.TOOL:
        results = message.tool_call_results
        if not results:
            raise ConfigurationError(f"{where}: a tool message needs a tool call result.")
        for result in results:
            if not result.origin.id:
                raise ConfigurationError(
                    f"{where}: the result of '{result.origin.tool_name}' has no tool_call_id; OpenAI requires call ids."
                )
        return [
            {"role": "tool", "tool_call_id": r.origin.id, "content": tool_result_content(r.result)} for r in results
        ]
    wire: dict[str, Any] = {"role": message.role.value}
    content = _content(message, where)
    if message.role is ChatRole.ASSISTANT:
        calls = [_call_to_wire(c, where) for c in message.tool_calls]
        if content is not None or not calls:  # content may be left out only beside tool calls
            wire["content"] = "" if content is None else content
        if calls:
            wire["tool_calls"] = calls
    elif content is None:
        raise ConfigurationError(f"{where}: the message has no text.")
    else:
        wire["content"] = content
    if message.name:
        wire["name"] = message.name
    return [wire]


def messages_to_wire(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """Convert a conversation to OpenAI's ``messages`` list.

    System and user messages carry their text (several text parts become a list of text
    parts; a user message's images are ``image_url`` parts with a ``data:`` URL, in order); reasoning parts are
    not sent; assistant messages carry their text and ``tool_calls`` (dict arguments as JSON
    text, raw-string arguments exactly as the model sent them); each tool result becomes a
    ``{"role": "tool", "tool_call_id", "content"}`` message, a result of content parts a list of ``text``
    parts with each image as its placeholder text (the Chat API takes no image in a tool message).

    Raises:
        ConfigurationTypeError: When ``messages`` is not a list of ChatMessage.
        ConfigurationError: When a call or result has no id, a user/system message has no text, or a message
            other than a user message holds an image (the message names its position).
    """
    if not isinstance(messages, list | tuple):
        raise ConfigurationTypeError(f"messages must be a list of ChatMessage, got {type(messages).__name__}.")
    wire: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, ChatMessage):
            raise ConfigurationTypeError(f"messages[{i}] is a {type(message).__name__}, not a ChatMessage.")
        wire.extend(_message_to_wire(message, i))
    return wire


def tool_to_wire(tool: Tool, strict: bool) -> dict[str, Any]:
    """Return ``{"type": "function", "function": {name, description, parameters[, strict]}}``."""
    function = copy.deepcopy(tool.tool_spec)
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def check_generation_kwargs(kwargs: Mapping[str, Any]) -> None:
    """Refuse keys handrail sets itself and keys the SDK does not know, before anything is sent.

    Raises:
        ConfigurationTypeError: When ``kwargs`` is not a dict.
        ConfigurationError: For a reserved or unknown key (the message says what to do instead).
    """
    if not isinstance(kwargs, Mapping):
        raise ConfigurationTypeError(f"generation_kwargs must be a dict, got {type(kwargs).__name__}.")
    for key, advice in _RESERVED_KWARGS.items():
        if key in kwargs:
            raise ConfigurationError(f"generation_kwargs may not set '{key}': {advice}.")
    unknown = sorted(set(kwargs) - _create_parameters())
    if unknown:
        raise ConfigurationError(
            f"generation_kwargs has keys the OpenAI SDK does not accept: {unknown}. Put server-specific "
            f"parameters in extra_body, e.g. generation_kwargs={{'extra_body': {{'{unknown[0]}': ...}}}}."
        )
