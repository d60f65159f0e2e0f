"""OpenAI wire format, the way back: completions and stream chunks to handrail messages.

The SDK builds its response objects without validating them, so whatever a server answers
with status 200 (a list, an object without ``choices``, tool-call arguments sent as a JSON
object...) reaches this code as is. It is read defensively: a value of the wrong shape raises
:class:`~handrail.components.generators.chat._openai_errors.MalformedReply` saying where, which
the generator reports as a one-line GenerationError. Tool calls are never dropped or merged.
Nothing here does I/O.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, cast, get_args

from pydantic import BaseModel

from handrail.components.generators.chat._openai_errors import MalformedReply, decoding
from handrail.dataclasses.chat_message import ChatMessage, ToolCall
from handrail.dataclasses.streaming import (
    ChunkAssembler,
    FinishReason,
    StreamingChunk,
    ToolCallDelta,
    parse_arguments_text,
)

__all__ = ["StreamReader", "completion_to_replies", "tool_arguments"]

_FINISH_REASONS: frozenset[str] = frozenset(get_args(FinishReason))
_END = object()
"""What ``next`` returns for a stream that has ended."""


# --------------------------------------------------------------------------- reading values


def _is_record(value: Any) -> bool:
    """True for a JSON object as the SDK hands it over (one of its models, or a dict)."""
    return isinstance(value, BaseModel | Mapping)


def _field(record: Any, name: str) -> Any:
    """``record[name]`` for a dict, the attribute for an SDK model; None when absent (or no record)."""
    if isinstance(record, Mapping):
        return record.get(name)
    return getattr(record, name, None)


def _describe(value: Any) -> str:
    """A short description of an unexpected value: ``list [1, 2]``, ``str 'hello'``, ``null``."""
    if value is None:
        return "null"
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:59] + '…'}"


def _record(value: Any, where: str) -> Any:
    if not _is_record(value):
        raise MalformedReply(f"{where} is {_describe(value)}, not a JSON object")
    return value


def _text(value: Any, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise MalformedReply(f"{where} is {_describe(value)}, not text")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise MalformedReply(f"{where} is {_describe(value)}, not a list")
    return value


def _call_id(value: Any, where: str) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return _text(value, where) or None


def _usage(usage: Any) -> dict[str, Any] | None:
    if isinstance(usage, BaseModel):
        return usage.model_dump(exclude_none=True, warnings=False)
    return dict(usage) if isinstance(usage, Mapping) else None


def _finish_reason(raw: Any) -> str | None:
    if not isinstance(raw, str):
        return None
    return "tool_calls" if raw == "function_call" else raw


def _arguments_text(value: Any) -> str | None:
    """Arguments (or a fragment of them) as text: a string as sent, any other JSON value as JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def tool_arguments(value: Any) -> dict[str, Any] | str:
    """Read a tool call's ``arguments`` as the server sent them.

    Args:
        value: JSON text (what OpenAI sends), a JSON object (what some servers send), any other
            JSON value, or None.

    Returns:
        A dict for a JSON object or text holding one (``{}`` for None or blank text); otherwise
        the text as sent, or the JSON text of the value, which the tool step answers with an
        error result (DESIGN.md §3.4): the call is never dropped.
    """
    if isinstance(value, Mapping):
        return {str(key): item for key, item in value.items()}
    return parse_arguments_text(_arguments_text(value) or "")


# --------------------------------------------------------------------------- whole completions


def _call(wire: Any, where: str) -> ToolCall:
    function = _field(_record(wire, where), "function")
    if function is not None:
        _record(function, f"{where}.function")
    return ToolCall(
        tool_name=_text(_field(function, "name"), f"{where}.function.name") or "",
        arguments=tool_arguments(_field(function, "arguments")),
        id=_call_id(_field(wire, "id"), f"{where}.id"),
    )


def _reply(choice: Any, position: int, model: Any, usage: dict[str, Any] | None) -> ChatMessage:
    where = f"choices[{position}]"
    message = _field(_record(choice, where), "message")
    if not _is_record(message):
        raise MalformedReply(f"{where} has no message (got {_describe(message)})")
    content = _text(_field(message, "content"), f"{where}.message.content")
    wire_calls = _list(_field(message, "tool_calls"), f"{where}.message.tool_calls")
    calls = [_call(wire, f"{where}.message.tool_calls[{i}]") for i, wire in enumerate(wire_calls)]
    index = _field(choice, "index")
    meta: dict[str, Any] = {
        "model": model,
        "index": index if isinstance(index, int) else position,
        "finish_reason": _finish_reason(_field(choice, "finish_reason")),
        "usage": usage,
    }
    refusal = _field(message, "refusal")
    if isinstance(refusal, str) and refusal:
        meta["refusal"] = refusal
    return ChatMessage.from_assistant(text=content or (None if calls else ""), meta=meta, tool_calls=calls)


def completion_to_replies(completion: Any) -> list[ChatMessage]:
    """Convert a non-streamed completion: one assistant message per choice.

    Tool-call arguments are read by :func:`tool_arguments`. ``meta`` holds ``model``, ``index``,
    ``finish_reason`` (``function_call`` read as ``tool_calls``), ``usage`` and, when the model
    refused, ``refusal``.

    Args:
        completion: What the SDK made of the response body (a ChatCompletion, or whatever the
            body held when it was not one).

    Raises:
        MalformedReply: When the body is not a chat completion object, has no choices, or a
            choice, message or tool call has the wrong shape (the message says where).
    """
    if not _is_record(completion):
        raise MalformedReply(f"the response body is {_describe(completion)}, not a chat completion object")
    choices = _field(completion, "choices")
    if choices is None:
        raise MalformedReply(
            "the response body has no 'choices' (is this an OpenAI-compatible chat completions endpoint?)"
        )
    choices = _list(choices, "'choices'")
    if not choices:
        raise MalformedReply("it returned no choices")
    usage = _usage(_field(completion, "usage"))
    model = _field(completion, "model")
    return [_reply(choice, position, model, usage) for position, choice in enumerate(choices)]


# --------------------------------------------------------------------------- streams


class StreamReader:
    """Turns SDK chunks into StreamingChunks and assembles the reply (no I/O).

    Tool-call fragments go where their ``index`` says (a new ``id`` starts a new call even at
    a known index). A fragment with neither continues the call last placed at its position in
    the chunk, unless it carries a name and that call has one already: then it starts a new
    call, so calls a server sends without index and id are never merged.
    """

    def __init__(self) -> None:
        self.assembler = ChunkAssembler()
        self._text_started = False
        self._events = 0
        self._saw_choice = False
        self._seen: set[int] = set()
        self._named: set[int] = set()
        self._moved: dict[int, int] = {}

    def next_chunk(self, events: Iterator[Any]) -> StreamingChunk | None:
        """Read and convert the next event of ``events``; None at the end of the stream.

        Raises:
            MalformedReply: When the event is not valid JSON or not a chat completion chunk.
        """
        with decoding("a stream event"):
            event = next(events, _END)
        return None if event is _END else self.convert(event)

    async def anext_chunk(self, events: AsyncIterator[Any]) -> StreamingChunk | None:
        """Async twin of :meth:`next_chunk`."""
        with decoding("a stream event"):
            event = await anext(events, _END)
        return None if event is _END else self.convert(event)

    def message(self) -> ChatMessage:
        """Return the assembled reply.

        Raises:
            MalformedReply: When the stream held no event, or no event with a choice.
        """
        if not self._events:
            raise MalformedReply("the stream ended without a single event (does the server support streaming?)")
        if not self._saw_choice:
            raise MalformedReply("it returned no choices")
        return self.assembler.message()

    def convert(self, chunk: Any) -> StreamingChunk:
        """Convert one SDK chunk and add it to the reply being assembled.

        Raises:
            MalformedReply: When the chunk, its choice or its delta has the wrong shape.
        """
        self._events += 1
        meta: dict[str, Any] = {"model": _field(_record(chunk, "a stream event"), "model")}
        if _field(chunk, "usage") is not None:
            meta["usage"] = _usage(_field(chunk, "usage"))
        choices = _list(_field(chunk, "choices"), "a stream event's 'choices'")
        if not choices:  # the usage chunk (include_usage), or a server's bookkeeping chunk
            converted = StreamingChunk(meta=meta)
            self.assembler.add(converted)
            return converted
        self._saw_choice = True
        choice = _record(choices[0], "a stream event's choices[0]")
        finish = _finish_reason(_field(choice, "finish_reason"))
        meta["index"] = _field(choice, "index")
        if finish is not None:
            meta["finish_reason"] = finish
        delta = _field(choice, "delta")
        if delta is not None:
            _record(delta, "a stream event's delta")
        deltas, start = self._deltas(_list(_field(delta, "tool_calls"), "a stream event's delta.tool_calls"))
        content = _text(_field(delta, "content"), "a stream event's delta.content") or ""
        index: int | None = None
        if deltas:
            index = deltas[0].index
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

    def _deltas(self, wire_calls: list[Any]) -> tuple[list[ToolCallDelta], bool]:
        """Convert a chunk's tool-call fragments; also say whether one of them starts a call."""
        deltas: list[ToolCallDelta] = []
        start = False
        for position, wire in enumerate(wire_calls):
            where = f"a stream event's delta.tool_calls[{position}]"
            function = _field(_record(wire, where), "function")
            if function is not None:
                _record(function, f"{where}.function")
            name = _text(_field(function, "name"), f"{where}.function.name") or None
            call_id = _call_id(_field(wire, "id"), f"{where}.id")
            index, new = self._place(_field(wire, "index"), position, call_id, name)
            arguments = _arguments_text(_field(function, "arguments"))
            deltas.append(ToolCallDelta(index=index, tool_name=name, arguments=arguments, id=call_id))
            start = start or new or call_id is not None
        return deltas, start

    def _place(self, wire_index: Any, position: int, call_id: str | None, name: str | None) -> tuple[int, bool]:
        """Return the index a fragment goes to, and whether that index is new (see the class docstring)."""
        if isinstance(wire_index, int) and not isinstance(wire_index, bool):
            index = wire_index
        elif call_id is not None:
            index = position
        else:
            index = self._moved.get(position, position)
            if name is not None and index in self._named:
                index = max(self._seen) + 1
                self._moved[position] = index
        new = index not in self._seen
        self._seen.add(index)
        if name is not None:
            self._named.add(index)
        return index, new
