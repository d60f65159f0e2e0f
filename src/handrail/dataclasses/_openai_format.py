"""``ChatMessage`` to and from OpenAI Chat API message dicts (``to_openai_dict_format`` and its reverse).

The rules are Haystack 2.19's: a user message of one text part is a plain string, other user messages a list of
``text`` / ``image_url`` parts (an image as a ``data:`` URL); a tool message carries its result text and the
call's id; reasoning is not sent (the Chat API has no place for it); the error of a tool result is not sent.
A tool result of content parts (Haystack 2.23) is a list of ``text`` parts, each image standing as its
:func:`~handrail.dataclasses.chat_message.image_placeholder` text: the Chat API takes no image in a tool message
(Haystack 2.23 raises a ``ValueError`` there instead).
"""

from __future__ import annotations

import json
from typing import Any

from handrail.dataclasses.chat_message import (
    ChatMessage,
    ChatRole,
    ImageContent,
    TextContent,
    ToolCall,
    ToolCallResultContentT,
    image_placeholder,
)
from handrail.errors import ConfigurationError

__all__ = ["from_openai_dict", "image_part", "to_openai_dict", "tool_result_content"]

_NO_ID = "`ToolCall` must have a non-null `id` attribute to be used with OpenAI."
_OPENAI_ROLES = ("assistant", "user", "system", "developer", "tool")


def image_part(image: ImageContent) -> dict[str, Any]:
    """An image as an OpenAI ``image_url`` content part: a ``data:`` URL (JPEG when the MIME type is unknown)."""
    url: dict[str, Any] = {"url": f"data:{image.mime_type or 'image/jpeg'};base64,{image.base64_image}"}
    if image.detail:
        url["detail"] = image.detail
    return {"type": "image_url", "image_url": url}


def tool_result_content(result: ToolCallResultContentT) -> str | list[dict[str, str]]:
    """A tool result as the ``content`` of an OpenAI Chat API tool message.

    A ``str`` as it is; content parts as a list of ``text`` parts in order, an image as its placeholder text
    (``[image: image/png, 12,345 bytes, not shown to this model]``), since the Chat API takes text only in a
    tool message; an empty list as ``""``.
    """
    if isinstance(result, str):
        return result
    if not result:
        return ""
    return [
        {"type": "text", "text": part.text if isinstance(part, TextContent) else image_placeholder(part)}
        for part in result
    ]


def to_openai_dict(message: ChatMessage, require_tool_call_ids: bool) -> dict[str, Any]:
    """See :meth:`ChatMessage.to_openai_dict_format`."""
    texts, calls, results, images = message.texts, message.tool_calls, message.tool_call_results, message.images
    if not (texts or calls or results or images):
        raise ConfigurationError(
            "A `ChatMessage` must contain at least one `TextContent`, `ToolCall`, `ToolCallResult`, or "
            f"`ImageContent` to be converted to OpenAI's format (this {message.role.value} message has none)."
        )
    if results and len(message._content) > 1:
        raise ConfigurationError(
            "For OpenAI compatibility, a `ChatMessage` with a `ToolCallResult` cannot contain any other content."
        )
    out: dict[str, Any] = {"role": message.role.value}
    if message.name is not None:
        out["name"] = message.name
    if message.role is ChatRole.USER:
        out["content"] = _user_content(message)
        return out
    if results:
        result = results[0]
        out["content"] = tool_result_content(result.result)
        if result.origin.id is not None:
            out["tool_call_id"] = result.origin.id
        elif require_tool_call_ids:
            raise ConfigurationError(_NO_ID)
        return out
    if texts:
        out["content"] = texts[0]
    if calls:
        out["tool_calls"] = [_wire_call(call, require_tool_call_ids) for call in calls]
    return out


def _wire_call(call: ToolCall, require_id: bool) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "function",
        "function": {"name": call.tool_name, "arguments": _arguments_text(call)},
    }
    if call.id is not None:
        item["id"] = call.id
    elif require_id:
        raise ConfigurationError(f"{_NO_ID} (tool call {call.tool_name!r:.80} has none)")
    return item


def _user_content(message: ChatMessage) -> str | list[dict[str, Any]]:
    parts = message._content
    if len(parts) == 1 and type(parts[0]) is TextContent:
        return parts[0].text
    return [
        {"type": "text", "text": p.text} if isinstance(p, TextContent) else image_part(p)
        for p in parts
        if isinstance(p, TextContent | ImageContent)
    ]


def _arguments_text(call: ToolCall) -> str:
    # Raw text arguments (the model's text that was not a JSON object) go back exactly as the model sent them.
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments, ensure_ascii=False)


def _check(message: Any) -> None:
    if not isinstance(message, dict):
        raise ConfigurationError(f"An OpenAI message must be a dict, got {type(message).__name__} {message!r:.80}.")
    if "role" not in message:
        raise ConfigurationError(
            f"The `role` field is required in the message dictionary (got the keys {sorted(map(str, message))})."
        )
    role, content, calls = message["role"], message.get("content"), message.get("tool_calls")
    if role not in _OPENAI_ROLES:
        raise ConfigurationError(f"Unsupported role: {role!r:.80}; expected one of {list(_OPENAI_ROLES)}.")
    if role == "assistant":
        if not content and not calls:
            raise ConfigurationError("For assistant messages, either `content` or `tool_calls` must be present.")
        for i, call in enumerate(calls or []):
            if not isinstance(call, dict) or "function" not in call:
                raise ConfigurationError(f"Tool calls must contain the `function` field (tool_calls[{i}] has none).")
    elif not content:
        raise ConfigurationError(f"The `content` field is required for {role} messages.")


def _call(i: int, call: dict[str, Any]) -> ToolCall:
    function = call["function"]
    arguments = function.get("arguments")
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"tool_calls[{i}].function.arguments is not JSON ({exc}): {arguments!r:.80}") from exc
    if not isinstance(parsed, dict):
        raise ConfigurationError(f"tool_calls[{i}].function.arguments must be a JSON object, got {arguments!r:.80}.")
    return ToolCall(tool_name=function.get("name"), arguments=parsed, id=call.get("id"))


def _user_parts(content: list[Any]) -> list[TextContent | ImageContent]:
    parts: list[TextContent | ImageContent] = []
    for i, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            parts.append(TextContent(part["text"]))
            continue
        url = part.get("image_url", {}).get("url") if kind == "image_url" else None
        if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
            mime, data = url[5:].split(";base64,", 1)
            parts.append(ImageContent(data, mime or None, part["image_url"].get("detail")))
            continue
        raise ConfigurationError(
            f"content[{i}] of an OpenAI user message is not a text part or an image_url part with a base64 data: "
            f"URL: {part!r:.120}"
        )
    return parts


def from_openai_dict(message: dict[str, Any]) -> ChatMessage:
    """See :meth:`ChatMessage.from_openai_dict_format`."""
    _check(message)
    role, content, name = message["role"], message.get("content"), message.get("name")
    if role == "assistant":
        calls = [_call(i, c) for i, c in enumerate(message.get("tool_calls") or [])]
        return ChatMessage.from_assistant(text=content, name=name, tool_calls=calls or None)
    if role == "user":
        if isinstance(content, list):
            return ChatMessage.from_user(content_parts=_user_parts(content), name=name)
        return ChatMessage.from_user(text=content, name=name)
    origin = ToolCall(tool_name="", arguments={}, id=message.get("tool_call_id"))
    if role == "tool" and isinstance(content, list):  # text parts, as Haystack 2.23 reads them
        return ChatMessage.from_tool(tool_result=_tool_parts(content), origin=origin, error=False)
    if not isinstance(content, str):
        raise ConfigurationError(
            f"The `content` of an OpenAI {role} message must be a str, got {type(content).__name__}."
        )
    if role in ("system", "developer"):
        return ChatMessage.from_system(text=content, name=name)
    return ChatMessage.from_tool(tool_result=content, origin=origin, error=False)


def _tool_parts(content: list[Any]) -> ToolCallResultContentT:
    parts: list[TextContent | ImageContent] = []
    for i, part in enumerate(content):
        if not (isinstance(part, dict) and isinstance(part.get("text"), str)):
            raise ConfigurationError(
                "To be used with OpenAI, tool results must be a string or a list of TextContent: "
                f"content[{i}] of the tool message is not a text part: {part!r:.120}"
            )
        parts.append(TextContent(part["text"]))
    return parts
