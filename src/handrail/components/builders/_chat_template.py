"""The ``{% message role=... %}`` block of ChatPromptBuilder's string templates, and the ``templatize_part`` filter.

A string template is a sequence of message blocks::

    {% message role="system" %}You answer in {{ language }}.{% endmessage %}
    {% message role="user" name="ada" meta={"source": "web"} %}{{ question }}{% endmessage %}

Each block renders to one line of JSON (a ChatMessage dict); the builder reads those lines back. Inside a block,
``{{ part | templatize_part }}`` places a content part (a ToolCall, a ToolCallResult, any part a ChatMessage can
hold) among the text: it is written between marker tags as JSON and read back as that part.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from jinja2 import TemplateSyntaxError, nodes
from jinja2.ext import Extension

from handrail.dataclasses.chat_message import ChatMessage, ChatRole, TextContent, ToolCall, ToolCallResult
from handrail.errors import ConfigurationError

__all__ = ["END_TAG", "START_TAG", "ChatMessageExtension", "messages_from_rendered", "templatize_part"]

START_TAG = "<haystack_content_part>"
"""Opens a content part inside a rendered message block (Haystack's marker, so templates carry over)."""
END_TAG = "</haystack_content_part>"
"""Closes it."""

_ROLES = [role.value for role in ChatRole]


def templatize_part(value: Any) -> str:
    """Jinja2 filter: a content part as JSON between the marker tags, read back as that part by the block.

    Raises:
        ConfigurationError: When ``value`` is not a content part a ChatMessage can hold.
    """
    if isinstance(value, str):
        value = TextContent(value)
    try:
        data = ChatMessage(ChatRole.USER, [value]).to_dict()["content"][0]
    except (AttributeError, TypeError, ValueError) as exc:  # an object of no known part kind
        raise ConfigurationError(
            f"templatize_part needs a content part (TextContent, ToolCall, ToolCallResult...), "
            f"got {type(value).__name__}."
        ) from exc
    return f"{START_TAG}{json.dumps(data, ensure_ascii=False)}{END_TAG}"


def _role_for(data: Any) -> str:
    """The role whose messages hold a part of this dict form (a tool result: tool; a call or reasoning: assistant)."""
    if isinstance(data, dict) and "tool_call_result" in data:
        return "tool"
    if isinstance(data, dict) and ("tool_call" in data or "reasoning" in data):
        return "assistant"
    return "user"


def _part_from_json(text: str) -> Any:
    try:
        data = json.loads(text)
        message: dict[str, Any] = {"role": _role_for(data), "content": [data], "meta": {}, "name": None}
        return ChatMessage.from_dict(message)._content[0]
    except (ValueError, ConfigurationError) as exc:
        raise ConfigurationError(f"A templatized content part does not read back: {exc}: {text[:80]!r}") from exc


def parse_parts(content: str) -> list[Any]:
    """Split a rendered block into its parts: text (stripped) and the templatized parts between markers.

    Raises:
        ConfigurationError: For empty content or an unclosed marker.
    """
    if not content.strip():
        raise ConfigurationError(
            f"Message content in template is empty or contains only whitespace characters. Content: {content!r}"
        )
    parts: list[Any] = []
    cursor = 0
    while cursor < len(content):
        start = content.find(START_TAG, cursor)
        text = content[cursor : len(content) if start == -1 else start].strip()
        if text:
            parts.append(TextContent(text))
        if start == -1:
            break
        end = content.find(END_TAG, start)
        if end == -1:
            raise ConfigurationError(
                f"Found unclosed {START_TAG} tag at position {start}. Content: {content[start : start + 50]!r}..."
            )
        parts.append(_part_from_json(content[start + len(START_TAG) : end]))
        cursor = end + len(END_TAG)
    return parts


def _kind(part: Any) -> str:
    return type(part).__name__


def build_message(parts: list[Any], role: str, name: str | None, meta: dict[str, Any]) -> ChatMessage:
    """One message of ``role`` from a block's parts, checked as Haystack checks them.

    Raises:
        ConfigurationError: For parts the role cannot hold (a system message of two parts, a tool message
            without exactly one result...).
    """
    texts = [p for p in parts if isinstance(p, TextContent)]
    if role == "user":
        if any(_kind(p) not in ("TextContent", "ImageContent") for p in parts):
            raise ConfigurationError("User message must contain only TextContent, string or ImageContent parts.")
        return ChatMessage(ChatRole.USER, parts, name, meta)
    if role == "system":
        if not isinstance(parts[0], TextContent):
            raise ConfigurationError("System message must contain a text part.")
        if len(parts) > 1:
            raise ConfigurationError("System message must contain only one text part.")
        return ChatMessage(ChatRole.SYSTEM, parts, name, meta)
    if role == "assistant":
        calls = [p for p in parts if isinstance(p, ToolCall)]
        reasoning = [p for p in parts if _kind(p) == "ReasoningContent"]
        if len(texts) > 1:
            raise ConfigurationError("Assistant message must contain one text part at most.")
        if not texts and not calls:
            raise ConfigurationError("Assistant message must contain at least one text or tool call part.")
        if len(parts) > len(texts) + len(calls) + len(reasoning):
            raise ConfigurationError("Assistant message must contain only text, tool call or reasoning parts.")
        return ChatMessage(ChatRole.ASSISTANT, [*reasoning, *texts, *calls], name, meta)
    results = [p for p in parts if isinstance(p, ToolCallResult)]
    if len(results) != 1 or len(parts) != 1:
        raise ConfigurationError("Tool message must contain only one tool call result.")
    return ChatMessage(ChatRole.TOOL, list(parts), None, meta)


class ChatMessageExtension(Extension):
    """Jinja2 extension adding the ``{% message role="..." [name="..."] [meta={...}] %}...{% endmessage %}`` block."""

    tags = {"message"}  # noqa: RUF012 - Jinja2's own class attribute

    def parse(self, parser: Any) -> nodes.Node:
        """Read a block's attributes (``role`` first, then optional ``name`` and ``meta``) and its body.

        Raises:
            TemplateSyntaxError: For an unknown role, a name that is no string, or a meta that is no dict.
        """
        lineno = next(parser.stream).lineno
        parser.stream.expect("name:role")
        parser.stream.expect("assign")
        role = parser.parse_expression()
        if isinstance(role, nodes.Const) and role.value not in _ROLES:
            raise TemplateSyntaxError(f"Role must be one of: {', '.join(_ROLES)}", lineno)
        name: nodes.Expr = nodes.Const(None)
        if parser.stream.current.test("name:name"):
            parser.stream.skip()
            parser.stream.expect("assign")
            name = parser.parse_expression()
            if not (isinstance(name, nodes.Const) and isinstance(name.value, str)):
                raise TemplateSyntaxError("name must be a string", lineno)
        meta: nodes.Expr = nodes.Dict([])
        if parser.stream.current.test("name:meta"):
            parser.stream.skip()
            parser.stream.expect("assign")
            meta = parser.parse_expression()
            if not isinstance(meta, nodes.Dict):
                raise TemplateSyntaxError("meta must be a dictionary", lineno)
        body = parser.parse_statements(("name:endmessage",), drop_needle=True)
        call = self.call_method("_message_json", [role, name, meta])
        return nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _message_json(self, role: Any, name: str | None, meta: dict[str, Any], caller: Callable[[], str]) -> str:
        if role not in _ROLES:
            raise ConfigurationError(f"Unsupported role: {role!r}; a message block's role is one of {_ROLES}.")
        message = build_message(parse_parts(caller()), role, name, dict(meta))
        return json.dumps(message.to_dict(), ensure_ascii=False) + "\n"


def messages_from_rendered(rendered: str) -> list[ChatMessage]:
    """Read the messages a rendered string template holds: one JSON line per ``{% message %}`` block.

    Raises:
        ConfigurationError: When text stands outside the message blocks.
    """
    messages = []
    for line in rendered.strip().split("\n"):
        line = line.strip()
        if not line:
            continue
        try:
            data = json.loads(line)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise ConfigurationError(
                'A ChatPromptBuilder string template must consist of {% message role="..." %}...{% endmessage %} '
                f"blocks; this text stands outside them: {line[:80]!r}. For plain text, pass a list of ChatMessage."
            )
        messages.append(ChatMessage.from_dict(data))
    return messages
