"""History helpers shared by the ready-made hooks (and by the Agent loop that calls them).

The layout they read and write (the contract with the loop):

- ``before_tool``: the last message of ``messages`` is the assistant message holding the
  pending calls; the loop runs the calls of the last message after the hooks ran.
- A call refused before it runs (:func:`refuse_calls`) becomes a pair placed before the
  rewritten last message: an assistant message holding that call alone, then a tool message
  with its error result. The history then ends ``[..., assistant(refused), tool(error),
  assistant(remaining calls)]``; when no call remains it ends with the last error result and
  the loop runs nothing.
- ``after_tool``: the step's results are the tool messages that directly follow the last
  assistant message holding tool calls (:func:`step_results`).

Messages are never changed in place: a rewrite builds a new :class:`ChatMessage`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from handrail.dataclasses.chat_message import (
    ChatMessage,
    ChatRole,
    ImageContent,
    ReasoningContent,
    TextContent,
    ToolCall,
    ToolCallResult,
    ToolCallResultContentT,
)
from handrail.errors import ConfigurationError, ConfigurationTypeError

__all__ = ["map_texts", "pending_calls", "refuse_calls", "replace_result", "step_results"]


def pending_calls(messages: Sequence[ChatMessage]) -> list[ToolCall]:
    """Return the tool calls of the last message when it is an assistant message, else ``[]``.

    Args:
        messages: The history (at ``before_tool``: ending with the message whose calls will run).

    Returns:
        The calls in order (the message's own ToolCall objects; do not mutate them).
    """
    if not messages or not messages[-1].is_from(ChatRole.ASSISTANT):
        return []
    return messages[-1].tool_calls


def step_results(messages: Sequence[ChatMessage]) -> tuple[int, list[ChatMessage]]:
    """Find the results of the current tool step.

    Args:
        messages: The history (at ``after_tool``: ending with the step's results).

    Returns:
        ``(start, results)``: ``results`` are the tool messages directly following the last
        assistant message that holds tool calls, and ``messages[start + k] is results[k]``. With
        no such assistant message: ``(len(messages), [])``.
    """
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.is_from(ChatRole.ASSISTANT) and message.tool_calls:
            start = end = i + 1
            while end < len(messages) and messages[end].is_from(ChatRole.TOOL):
                end += 1
            return start, list(messages[start:end])
    return len(messages), []


def replace_result(message: ChatMessage, new_text: ToolCallResultContentT) -> ChatMessage:
    """Return a copy of a tool message whose result text is ``new_text``.

    Args:
        message: A tool message holding one ToolCallResult.
        new_text: The new result text, or content parts (text and images).

    Returns:
        A new tool message with the same origin call, error flag and (copied) meta.

    Raises:
        ConfigurationTypeError: When ``message`` is not a tool message holding a result.
    """
    result = message.tool_call_result
    if not message.is_from(ChatRole.TOOL) or result is None:
        raise ConfigurationTypeError(f"replace_result needs a tool message holding a result, got a {message.role} one.")
    return ChatMessage.from_tool(new_text, result.origin, error=result.error, meta=dict(message.meta))


def map_texts(message: ChatMessage, function: Callable[[str], str]) -> ChatMessage:
    """Apply ``function`` to every text part and every tool result text of a message.

    Tool calls (and the calls a result answers) are kept unchanged; so are images, a tool result's included
    (``function`` is applied to each text part of a result of content parts).

    Args:
        message: Any message.
        function: Maps one text to its new form.

    Returns:
        ``message`` itself when no text changed, else a new message (same role, name, copied meta).
    """
    parts: list[Any] = []
    changed = False
    for part in message._content:
        if type(part) is TextContent:
            new_text = function(part.text)
            changed = changed or new_text != part.text
            parts.append(TextContent(new_text) if new_text != part.text else part)
        elif type(part) is ToolCallResult:
            new_result = _map_result(part.result, function)
            changed = changed or new_result is not part.result
            parts.append(ToolCallResult(new_result, part.origin, part.error) if new_result is not part.result else part)
        else:
            parts.append(part)
    if not changed:
        return message
    return ChatMessage(message.role, parts, message.name, dict(message.meta))


def _map_result(result: ToolCallResultContentT, function: Callable[[str], str]) -> ToolCallResultContentT:
    """``function`` applied to a result's text (each text part of content parts); ``result`` itself if unchanged."""
    if isinstance(result, str):
        new_text = function(result)
        return result if new_text == result else new_text
    parts: list[TextContent | ImageContent] = []
    changed = False
    for part in result:
        if isinstance(part, TextContent):
            new_text = function(part.text)
            if new_text != part.text:
                part, changed = TextContent(new_text), True
        parts.append(part)
    return parts if changed else result


def _assistant(source: ChatMessage, calls: list[ToolCall], keep_text: bool) -> ChatMessage:
    texts: list[Any] = [p for p in source._content if keep_text and type(p) in (TextContent, ReasoningContent)]
    return ChatMessage(ChatRole.ASSISTANT, [*texts, *calls], source.name, dict(source.meta))


def refuse_calls(messages: Sequence[ChatMessage], refusals: Mapping[int, str]) -> list[ChatMessage]:
    """Refuse some pending calls: answer each with an error result instead of running it.

    Args:
        messages: The history, ending with the assistant message holding the pending calls.
        refusals: ``{position of the call in that message: error text}``.

    Returns:
        A new history: everything before the last message, then per refused call (in call
        order) an assistant message holding that call alone and a tool message with its error
        result, then the last message rewritten to hold the remaining calls (same ids, text and
        name kept). When no call remains that message is dropped, and its text (if any is not
        blank) and reasoning go to the first refused call's assistant message, so nothing the model said is lost.

    Raises:
        ConfigurationError: When the last message holds no tool calls or a position is out of range.
    """
    calls = pending_calls(messages)
    if not calls:
        raise ConfigurationError("refuse_calls: the last message holds no pending tool calls.")
    bad = sorted(i for i in refusals if not 0 <= i < len(calls))
    if bad:
        raise ConfigurationError(f"refuse_calls: positions {bad} are out of range for {len(calls)} pending calls.")
    last = messages[-1]
    remaining = [c for i, c in enumerate(calls) if i not in refusals]
    has_text = any(t.strip() for t in last.texts) or bool(last.reasonings)
    pairs: list[ChatMessage] = []
    for i, call in enumerate(calls):
        if i in refusals:
            keep_text = has_text and not remaining and not pairs
            pairs += [_assistant(last, [call], keep_text), ChatMessage.from_tool(refusals[i], call, error=True)]
    tail = [_assistant(last, remaining, keep_text=True)] if remaining else []
    return [*messages[:-1], *pairs, *tail]
