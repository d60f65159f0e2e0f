"""OpenAI wire format: handrail messages and tools to request dicts, replies and stream chunks back.

This is the only place that knows OpenAI's message shapes; the generator in
:mod:`handrail.components.generators.chat.openai` drives the SDK with it. Nothing here does I/O.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast, get_args

from handrail.dataclasses.chat_message import ChatMessage, ChatRole, ToolCall
from handrail.dataclasses.streaming import (
    ChunkAssembler,
    FinishReason,
    StreamingChunk,
    ToolCallDelta,
    parse_arguments_text,
)
from handrail.errors import ConfigurationError, ConfigurationTypeError, GenerationError
from handrail.tools.tool import Tool

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from openai.types.completion_usage import CompletionUsage

__all__ = [
    "StreamReader",
    "check_generation_kwargs",
    "completion_to_replies",
    "load_sdk",
    "messages_to_wire",
    "server_errors",
    "tool_to_wire",
]

_RESERVED_KWARGS = {
    "messages": "pass them as run(messages=...)",
    "model": "set the generator's model",
    "stream": "streaming happens exactly when a streaming_callback is given",
    "tools": "pass Tools as tools=[...]",
}
_FINISH_REASONS: frozenset[str] = frozenset(get_args(FinishReason))


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
        return [{"role": "tool", "tool_call_id": r.origin.id, "content": r.result} for r in results]
    wire: dict[str, Any] = {"role": message.role.value}
    content = _text_content(message.texts)
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
    parts); assistant messages carry their text and ``tool_calls`` (dict arguments as JSON
    text, raw-string arguments exactly as the model sent them); each tool result becomes a
    ``{"role": "tool", "tool_call_id", "content"}`` message.

    Raises:
        ConfigurationTypeError: When ``messages`` is not a list of ChatMessage.
        ConfigurationError: When a call or result has no id, or a user/system message has no text
            (the message names its position).
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


# --------------------------------------------------------------------------- from the wire


def _usage(usage: CompletionUsage | None) -> dict[str, Any] | None:
    return None if usage is None else usage.model_dump(exclude_none=True)


def _finish_reason(raw: str | None) -> str | None:
    return "tool_calls" if raw == "function_call" else raw


def completion_to_replies(completion: ChatCompletion) -> list[ChatMessage]:
    """Convert a non-streamed completion: one assistant message per choice.

    Tool-call arguments are parsed with :func:`parse_arguments_text` (text that is not a JSON
    object stays raw). ``meta`` holds ``model``, ``index``, ``finish_reason`` (``function_call``
    read as ``tool_calls``), ``usage`` and, when the model refused, ``refusal``.
    """
    usage = _usage(completion.usage)
    replies = []
    for choice in completion.choices:
        message = choice.message
        calls = []
        for wire_call in message.tool_calls or ():
            function = getattr(wire_call, "function", None)
            name, arguments = getattr(function, "name", None) or "", getattr(function, "arguments", None) or ""
            calls.append(ToolCall(tool_name=name, arguments=parse_arguments_text(arguments), id=wire_call.id or None))
        meta: dict[str, Any] = {
            "model": completion.model,
            "index": choice.index,
            "finish_reason": _finish_reason(choice.finish_reason),
            "usage": usage,
        }
        if getattr(message, "refusal", None):
            meta["refusal"] = message.refusal
        text = message.content or (None if calls else "")
        replies.append(ChatMessage.from_assistant(text=text, meta=meta, tool_calls=calls))
    return replies


def _delta(wire: Any, position: int) -> ToolCallDelta:
    """Convert one streamed tool-call fragment; a server that omits ``index`` gets its position."""
    index = getattr(wire, "index", None)
    function = getattr(wire, "function", None)
    return ToolCallDelta(
        index=index if isinstance(index, int) else position,
        tool_name=getattr(function, "name", None),
        arguments=getattr(function, "arguments", None),
        id=getattr(wire, "id", None) or None,
    )


class StreamReader:
    """Turns SDK chunks into StreamingChunks and assembles the reply (no I/O)."""

    def __init__(self) -> None:
        self.assembler = ChunkAssembler()
        self._text_started = False

    def convert(self, chunk: ChatCompletionChunk) -> StreamingChunk:
        """Convert one SDK chunk and add it to the reply being assembled."""
        meta: dict[str, Any] = {"model": chunk.model}
        if chunk.usage is not None:
            meta["usage"] = _usage(chunk.usage)
        if not chunk.choices:  # the usage chunk (include_usage), or a server's bookkeeping chunk
            converted = StreamingChunk(meta=meta)
            self.assembler.add(converted)
            return converted
        choice = chunk.choices[0]
        finish = _finish_reason(choice.finish_reason)
        meta["index"] = choice.index
        if finish is not None:
            meta["finish_reason"] = finish
        deltas = [_delta(d, i) for i, d in enumerate(choice.delta.tool_calls or ())]
        content = choice.delta.content or ""
        index: int | None = None
        start = False
        if deltas:
            index, start = deltas[0].index, any(d.id for d in deltas)
        elif content:
            index, start, self._text_started = 0, not self._text_started, True
        converted = StreamingChunk(
            content=content,
            meta=meta,
            index=index,
            tool_calls=deltas or None,
            start=start,
            finish_reason=cast("FinishReason", finish) if finish in _FINISH_REASONS else None,
        )
        self.assembler.add(converted)
        return converted


# --------------------------------------------------------------------------------- errors


def _one_line(text: object, limit: int = 300) -> str:
    """``text`` on one line, cut to ``limit`` characters (an HTML error page stays readable)."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _transport_errors() -> tuple[type[BaseException], ...]:
    """The transport error classes of the HTTP libraries the SDK may use (those already loaded)."""
    found: list[type[BaseException]] = []
    for name in ("httpx", "httpx2"):
        error = getattr(sys.modules.get(name), "TransportError", None)
        if isinstance(error, type) and issubclass(error, BaseException):
            found.append(error)
    return tuple(found)


@contextmanager
def server_errors(base_url: str) -> Iterator[None]:
    """Turn the SDK's connection and status errors into one-line GenerationErrors naming the server."""
    from openai import APIConnectionError, APIError, APIStatusError, APITimeoutError

    try:
        yield
    except APITimeoutError as exc:
        raise GenerationError(
            f"The OpenAI-compatible server at {base_url} did not answer in time (request timed out).", url=base_url
        ) from exc
    except APIConnectionError as exc:
        cause = _one_line(exc.__cause__ or exc.message)
        raise GenerationError(
            f"Cannot reach the OpenAI-compatible server at {base_url}: {cause}", url=base_url
        ) from exc
    except APIStatusError as exc:
        body = exc.body if isinstance(exc.body, dict) else {}
        detail = _one_line(body.get("message") or exc.message)
        raise GenerationError(
            f"The OpenAI-compatible server at {base_url} answered HTTP {exc.status_code}: {detail}",
            url=base_url,
            status_code=exc.status_code,
        ) from exc
    except APIError as exc:  # e.g. an error event inside a stream
        raise GenerationError(
            f"The OpenAI-compatible server at {base_url} reported an error: {_one_line(exc.message)}", url=base_url
        ) from exc
    except _transport_errors() as exc:  # SDKs that let a connection lost mid-stream through unwrapped
        raise GenerationError(
            f"Lost the connection to the OpenAI-compatible server at {base_url}: {_one_line(exc)}", url=base_url
        ) from exc


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
