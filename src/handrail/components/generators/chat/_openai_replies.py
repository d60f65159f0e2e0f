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
from dataclasses import dataclass, field
from typing import Any, cast, get_args

from pydantic import BaseModel

from handrail.components.generators.chat._openai_errors import MalformedReply, decoding
from handrail.dataclasses.chat_message import ChatMessage, ToolCall, call_id_from
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


def _usage(usage: Any) -> dict[str, Any] | None:
    if isinstance(usage, BaseModel):
        return usage.model_dump(exclude_none=True, warnings=False)
    return dict(usage) if isinstance(usage, Mapping) else None


def _finish_reason(raw: Any) -> str | None:
    if not isinstance(raw, str):
        return None
    return "tool_calls" if raw == "function_call" else raw


def _printable(text: str, limit: int = 300) -> str:
    """``text`` with control characters escaped (a server's text never drives the terminal), cut to ``limit``."""
    escaped = "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)
    return escaped if len(escaped) <= limit else escaped[: limit - 1] + "…"


def _server_error(error: Any) -> str:
    """What an ``{"error": ...}`` body says: its ``message``, else the whole value as JSON."""
    message = _field(error, "message") if _is_record(error) else error
    if not isinstance(message, str) or not message.strip():
        message = json.dumps(error, ensure_ascii=False, default=str)
    return _printable(" ".join(message.split()))


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
        error result: the call is never dropped.
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
        id=call_id_from(_field(wire, "id")),
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
        MalformedReply: When the body is not a chat completion object (an ``{"error": ...}``
            body is reported with the server's message, escaped and cut to 300 characters), has
            no choices, or a choice, message or tool call has the wrong shape (the message says
            where).
    """
    if not _is_record(completion):
        raise MalformedReply(f"the response body is {_describe(completion)}, not a chat completion object")
    choices = _field(completion, "choices")
    error = _field(completion, "error")
    if choices is None and error is not None:
        raise MalformedReply(f"the response body is an error, not a chat completion: {_server_error(error)}")
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


@dataclass(slots=True)
class _Call:
    """What the reader knows of one streamed tool call (mirrors the assembler's calls, in order)."""

    id: str | None
    name: str | None = None
    fragments: list[Any] = field(default_factory=list)
    """The ``arguments`` fragments as sent (text, or a JSON value such as a dict)."""

    def text(self) -> str:
        """The arguments so far as the assembler joins them."""
        return "".join(_arguments_text(f) or "" for f in self.fragments)

    def is_complete(self) -> bool:
        """True when the arguments so far are one whole JSON value."""
        try:
            json.loads(self.text())
        except (ValueError, RecursionError):
            return False
        return True

    def merged(self) -> dict[str, Any] | None:
        """The union of the call's object fragments when it came as several, without a clashing key; else None."""
        parts = [f for f in self.fragments if f not in (None, "")]
        if len(parts) < 2 or not all(isinstance(p, Mapping) for p in parts):
            return None
        merged: dict[str, Any] = {}
        for part in parts:
            for key, value in part.items():
                if str(key) in merged and merged[str(key)] != value:
                    return None  # two values for one key: keep the joined text, so nothing is dropped
                merged[str(key)] = value
        return merged


class StreamReader:
    """Turns SDK chunks into StreamingChunks and assembles the reply (no I/O).

    Tool-call fragments go where their ``index`` says (a new ``id`` starts a new call even at
    a known index). A fragment with neither continues the call last placed at its position in
    the chunk, unless it carries a name and that call has one already and either the names
    differ or the call's arguments so far are a whole JSON value (``json.loads`` succeeds):
    then it starts a new call. So calls a server sends without index and id are never merged,
    and a server that repeats the name on every fragment of one call does not split it.

    Arguments sent as JSON objects rather than text: a call whose fragments are all objects
    gets their union (``{"x": 1}`` then ``{"y": 2}`` make ``{"x": 1, "y": 2}``). When two of
    them give one key different values, or objects and text are mixed, the fragments are kept
    joined as text, exactly as sent, and the tool step answers the model with an error: no
    value is ever dropped. One object fragment is already whole JSON, so the same name
    arriving again with no index and id starts a new call.

    A stream that ends before any choice has received a ``finish_reason`` was cut short (a
    server always sends one on its last choice chunk): :meth:`message` refuses it.
    """

    def __init__(self) -> None:
        self.assembler = ChunkAssembler()
        self._text_started = False
        self._events = 0
        self._saw_choice = False
        self._finished = False
        self._seen: set[int] = set()
        self._named: set[int] = set()
        self._moved: dict[int, int] = {}
        self._calls: list[_Call] = []
        self._by_index: dict[int, _Call] = {}

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
            MalformedReply: When the stream held no event, no event with a choice, or ended
                before any choice received a ``finish_reason`` (cut short, even if cleanly).
        """
        if not self._events:
            raise MalformedReply("the stream ended without a single event (does the server support streaming?)")
        if not self._saw_choice:
            raise MalformedReply("it returned no choices")
        if not self._finished:
            raise MalformedReply("the stream ended before the reply was complete: no finish_reason")
        message = self.assembler.message()
        merged = [call.merged() for call in self._calls]
        if len(merged) != len(message.tool_calls) or all(m is None for m in merged):
            return message
        calls = [
            call if arguments is None else ToolCall(tool_name=call.tool_name, arguments=arguments, id=call.id)
            for call, arguments in zip(message.tool_calls, merged, strict=True)
        ]
        return ChatMessage.from_assistant(text=message.text, meta=message.meta, tool_calls=calls)

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
        if any(_is_record(c) and _field(c, "finish_reason") is not None for c in choices):
            self._finished = True
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
            call_id = call_id_from(_field(wire, "id"))
            index, new = self._place(_field(wire, "index"), position, call_id, name)
            raw_arguments = _field(function, "arguments")
            self._track(index, call_id, name, raw_arguments)
            arguments = _arguments_text(raw_arguments)
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
            current = self._by_index.get(index)
            if name is not None and index in self._named and self._ends(current, name):
                index = max(self._seen) + 1
                self._moved[position] = index
        new = index not in self._seen
        self._seen.add(index)
        if name is not None:
            self._named.add(index)
        return index, new

    @staticmethod
    def _ends(current: _Call | None, name: str) -> bool:
        """Whether a fragment named ``name`` without index and id starts a new call after ``current``."""
        return current is None or current.name != name or current.is_complete()

    def _track(self, index: int, call_id: str | None, name: str | None, arguments: Any) -> None:
        """Record a placed fragment in the call it joins, starting calls where the assembler does."""
        current = self._by_index.get(index)
        if current is None or (call_id is not None and current.id is not None and call_id != current.id):
            current = _Call(id=call_id)
            self._calls.append(current)
            self._by_index[index] = current
        elif call_id is not None and current.id is None:
            current.id = call_id
        if name and current.name is None:
            current.name = name
        current.fragments.append(arguments)
