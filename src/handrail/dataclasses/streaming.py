"""Streaming chunks and the assembler that turns a stream of them into one assistant message."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from handrail.core.json_data import JSONDataError, parse_json
from handrail.core.serialization import qualified_name
from handrail.dataclasses.chat_message import ChatMessage, ReasoningContent, ToolCall, ToolCallResult, call_id_from
from handrail.errors import ConfigurationError, SerializationError

__all__ = [
    "AsyncStreamingCallback",
    "ChunkAssembler",
    "ComponentInfo",
    "FinishReason",
    "StreamingCallback",
    "StreamingChunk",
    "SyncStreamingCallback",
    "ToolCallDelta",
    "assemble_chunks",
    "is_async_callback",
    "parse_arguments_text",
]

FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "tool_call_results"]


@dataclass(slots=True)
class ToolCallDelta:
    """A fragment of a streamed tool call."""

    index: int
    """Position of the call in the reply; a repeated index continues that call unless a new id arrives."""
    tool_name: str | None = None
    """The tool name, usually on the first fragment only."""
    arguments: str | None = None
    """A fragment of the arguments' JSON text; fragments are joined exactly as sent."""
    id: str | None = None
    """The call id, usually on the first fragment only."""


@dataclass(slots=True)
class ComponentInfo:
    """Which component sent a streaming chunk: its type and, inside a Pipeline, its name there.

    Examples:
        >>> ComponentInfo.from_component(ChunkAssembler()).type
        'handrail.dataclasses.streaming.ChunkAssembler'
    """

    type: str
    """The component's dotted class path."""
    name: str | None = None
    """The name it was added to a Pipeline under, or None."""

    @classmethod
    def from_component(cls, component: object) -> ComponentInfo:
        """Describe ``component``: its class path, and its name in the Pipeline it was added to (if any)."""
        from handrail.core.pipeline import pipeline_of

        pipeline = pipeline_of(component)
        names = [n for n, c in pipeline.walk() if c is component] if pipeline is not None else []
        return cls(type=qualified_name(type(component)), name=names[0] if names else None)

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"type", "name"}``."""
        return {"type": self.type, "name": self.name}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ComponentInfo:
        """Rebuild from :meth:`to_dict` output.

        Raises:
            SerializationError: Unknown keys, or a ``type`` that is not a str.
        """
        unknown = sorted(set(data) - {"type", "name"})
        if unknown or not isinstance(data.get("type"), str):
            raise SerializationError(
                f"A ComponentInfo dict has a str 'type' and an optional 'name'; got {data!r:.200}."
            )
        return cls(type=data["type"], name=data.get("name"))


@dataclass(slots=True)
class StreamingChunk:
    """One piece of a streamed reply, or of the tool results a ToolInvoker emits.

    The fields are in Haystack 2.19's order, so a positional Haystack call binds the same way.
    """

    content: str = ""
    """Text fragment."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Provider metadata (model, usage, finish_reason, ...)."""
    component_info: ComponentInfo | None = None
    """The component that sent the chunk, when it says."""
    index: int | None = None
    """Content-block index; required with ``tool_calls`` or ``tool_call_result``."""
    tool_calls: list[ToolCallDelta] | None = None
    """Tool call fragments."""
    tool_call_result: ToolCallResult | None = None
    """A finished tool result (emitted by the tool step)."""
    start: bool = False
    """True on the first chunk of a new content block."""
    finish_reason: FinishReason | None = None
    """Why the stream ended, on the last chunk."""
    reasoning: ReasoningContent | None = None
    """A fragment of the model's reasoning, for models that stream it."""

    def __post_init__(self) -> None:
        if (self.tool_calls or self.tool_call_result is not None or self.reasoning is not None) and self.index is None:
            raise ConfigurationError(
                "StreamingChunk: 'index' is required with tool_calls, tool_call_result or reasoning."
            )

    def to_dict(self) -> dict[str, Any]:
        """Return the chunk as a dict in Haystack 2.19's layout (nested parts as their own dicts)."""
        return {
            "content": self.content,
            "meta": self.meta,
            "component_info": self.component_info.to_dict() if self.component_info else None,
            "index": self.index,
            "tool_calls": [_delta_to_dict(d) for d in self.tool_calls] if self.tool_calls else None,
            "tool_call_result": self.tool_call_result.to_dict() if self.tool_call_result else None,
            "start": self.start,
            "finish_reason": self.finish_reason,
            "reasoning": self.reasoning.to_dict() if self.reasoning else None,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StreamingChunk:
        """Rebuild a chunk from :meth:`to_dict` output (or Haystack's).

        Raises:
            SerializationError: A dict that is not a chunk's (unknown keys, parts of the wrong shape).
            ConfigurationError: A chunk that breaks the rules of :class:`StreamingChunk`.
        """
        known = {"content", "meta", "component_info", "index", "tool_calls", "tool_call_result", "start"}
        unknown = sorted(set(data) - known - {"finish_reason", "reasoning"})
        if unknown:
            raise SerializationError(f"Unknown StreamingChunk keys {unknown}.")
        try:
            info, calls, result, reasoning = (
                data.get(k) for k in ("component_info", "tool_calls", "tool_call_result", "reasoning")
            )
            return cls(
                content=data.get("content", ""),
                meta=dict(data.get("meta") or {}),
                component_info=ComponentInfo.from_dict(info) if info else None,
                index=data.get("index"),
                tool_calls=[ToolCallDelta(**d) for d in calls] if calls else None,
                tool_call_result=ToolCallResult.from_dict(result) if result else None,
                start=bool(data.get("start", False)),
                finish_reason=data.get("finish_reason"),
                reasoning=ReasoningContent.from_dict(reasoning) if reasoning else None,
            )
        except (TypeError, KeyError, AttributeError) as exc:
            raise SerializationError(f"Cannot read a StreamingChunk dict: {exc}.") from None


def _delta_to_dict(delta: ToolCallDelta) -> dict[str, Any]:
    return {"index": delta.index, "tool_name": delta.tool_name, "arguments": delta.arguments, "id": delta.id}


SyncStreamingCallback = Callable[[StreamingChunk], None]
AsyncStreamingCallback = Callable[[StreamingChunk], Awaitable[None]]
StreamingCallback = SyncStreamingCallback | AsyncStreamingCallback


def is_async_callback(callback: object) -> bool:
    """Return True when ``callback`` is a coroutine function or an object whose ``__call__`` is one."""
    if inspect.iscoroutinefunction(callback):
        return True
    call = getattr(type(callback), "__call__", None)  # noqa: B004 - the class's __call__, not callable()
    return call is not None and inspect.iscoroutinefunction(call)


def parse_arguments_text(text: str) -> dict[str, Any] | str:
    """Turn a tool call's argument text into a dict where it is a JSON object.

    Args:
        text: The arguments as the model sent them.

    Returns:
        ``{}`` for empty or whitespace text, the dict for a JSON object that is JSON data as
        :func:`~handrail.core.json_data.parse_json` reads it, otherwise ``text`` unchanged (NaN,
        a lone surrogate, nesting too deep, invalid JSON or a non-object: the tool step reports it
        to the model).
    """
    if not text.strip():
        return {}
    try:
        value = parse_json(text)
    except JSONDataError:
        return text
    return value if isinstance(value, dict) else text


@dataclass(slots=True)
class _PartialCall:
    index: int
    id: str | None = None
    name: str = ""
    fragments: list[str] = field(default_factory=list)


class ChunkAssembler:
    """Collects streaming chunks and builds the assistant message they make up.

    Rules: text fragments are concatenated; a tool-call fragment with a new non-empty id
    starts a new call even when its index repeats; argument fragments are joined exactly;
    empty arguments mean ``{}``; text that is not a JSON object is kept raw (never dropped).

    Examples:
        >>> a = ChunkAssembler()
        >>> a.add(StreamingChunk(content="Par"))
        >>> a.add(StreamingChunk(content="is", finish_reason="stop"))
        >>> a.message().text
        'Paris'
    """

    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: list[_PartialCall] = []
        self._by_index: dict[int, _PartialCall] = {}
        self._meta: dict[str, Any] = {}

    def add(self, chunk: StreamingChunk) -> None:
        """Take one chunk into the message being built."""
        if chunk.content:
            self._text.append(chunk.content)
        for delta in chunk.tool_calls or ():
            self._add_delta(delta)
        for key, value in chunk.meta.items():
            if value is not None:
                self._meta[key] = value
        if chunk.finish_reason is not None:
            self._meta["finish_reason"] = chunk.finish_reason

    def _add_delta(self, delta: ToolCallDelta) -> None:
        current = self._by_index.get(delta.index)
        new_id = call_id_from(delta.id)  # an odd id counts as none: the Agent gives the call one
        if current is None or (new_id is not None and current.id is not None and new_id != current.id):
            current = _PartialCall(index=delta.index, id=new_id)
            self._calls.append(current)
            self._by_index[delta.index] = current
        elif new_id is not None and current.id is None:
            current.id = new_id
        if delta.tool_name:
            current.name = current.name + delta.tool_name if current.name != delta.tool_name else current.name
        if delta.arguments:
            current.fragments.append(delta.arguments)

    def message(self) -> ChatMessage:
        """Return the assistant message assembled so far."""
        calls = [
            ToolCall(tool_name=c.name, arguments=parse_arguments_text("".join(c.fragments)), id=c.id)
            for c in self._calls
        ]
        text = "".join(self._text)
        meta = {k: v for k, v in self._meta.items() if k != "tool_calls"}
        return ChatMessage.from_assistant(text=text if text or not calls else None, meta=meta, tool_calls=calls)


def assemble_chunks(chunks: Iterable[StreamingChunk]) -> ChatMessage:
    """Assemble a whole stream of chunks into one assistant message (see :class:`ChunkAssembler`)."""
    assembler = ChunkAssembler()
    for chunk in chunks:
        assembler.add(chunk)
    return assembler.message()
