"""ScriptedChatGenerator: a fake chat model that returns scripted replies, for testing agents."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, get_args

from handrail.core.component import component
from handrail.core.serialization import import_object, init_parameters, qualified_name
from handrail.dataclasses.chat_message import ChatMessage
from handrail.dataclasses.streaming import FinishReason, StreamingCallback, StreamingChunk, is_async_callback
from handrail.errors import ConfigurationError, ConfigurationTypeError, ScriptExhaustedError, SerializationError
from handrail.testing._replies import deliver, deliver_async
from handrail.tools.tool import Tool
from handrail.tools.toolset import Toolset

__all__ = ["ScriptedChatGenerator", "ScriptItem"]

ScriptItem = ChatMessage | BaseException | list[StreamingChunk]


def _check_item(item: Any, position: int) -> None:
    if isinstance(item, ChatMessage | BaseException):
        return
    if isinstance(item, list) and all(isinstance(c, StreamingChunk) for c in item):
        return
    raise ConfigurationTypeError(
        f"ScriptedChatGenerator reply #{position} must be a ChatMessage, an Exception or a list of "
        f"StreamingChunk, got {type(item).__name__}."
    )


@component
class ScriptedChatGenerator:
    """A chat generator that returns scripted replies in order and records what it was sent.

    Each item of ``replies`` is used by one call: a ChatMessage is returned; an Exception is
    raised; a list of StreamingChunk is sent to the streaming callback chunk by chunk, then
    assembled into one assistant message and returned.

    Args:
        replies: The scripted items, in call order.
        tools: Tools offered by default (recorded in :attr:`calls` when a run passes none), as
            ``OpenAIChatGenerator(tools=...)`` takes them, so the scripted generator can stand in for it.

    Raises:
        ConfigurationTypeError: When an item is none of the three kinds.

    Examples:
        >>> gen = ScriptedChatGenerator([ChatMessage.from_assistant("hi")])
        >>> gen.run([ChatMessage.from_user("hello")])["replies"][0].text
        'hi'
        >>> gen.assert_complete()
    """

    accepts_tool_result_images: bool = False
    """Whether the fake stands for a generator whose model takes a tool result's images
    (:func:`~handrail.components.generators.types.accepts_tool_result_images`); set it to True on an instance to
    test a tool that returns images only to such models. The fake records messages as they were sent either way."""

    def __init__(self, replies: Sequence[ScriptItem], tools: Sequence[Tool | Toolset] | Toolset | None = None) -> None:
        if not isinstance(replies, list | tuple):
            raise ConfigurationTypeError(
                f"ScriptedChatGenerator needs a list of replies, got {type(replies).__name__}; wrap one reply in [...]."
            )
        items = list(replies)
        for i, item in enumerate(items):
            _check_item(item, i)
        self.replies: list[ScriptItem] = items
        self.tools = tools
        """Tools offered by default (a list of Tool / Toolset, or None)."""
        self.calls: list[dict[str, Any]] = []
        """One dict per call with keys "messages", "tools", "generation_kwargs" (copies)."""

    def _next(
        self,
        messages: list[ChatMessage],
        tools: Sequence[Tool | Toolset] | Toolset | None,
        generation_kwargs: dict[str, Any] | None,
    ) -> ScriptItem:
        tools = tools if tools is not None else self.tools
        try:
            recorded = copy.deepcopy(list(messages))
        except RecursionError:  # arguments nested past the recursion limit: recorded by reference
            recorded = list(messages)
        self.calls.append(
            {
                "messages": recorded,
                "tools": list(tools) if tools is not None else None,
                "generation_kwargs": copy.deepcopy(generation_kwargs) if generation_kwargs is not None else None,
            }
        )
        position = len(self.calls) - 1
        if position >= len(self.replies):
            raise ScriptExhaustedError(
                f"ScriptedChatGenerator was called {position + 1} times but only {len(self.replies)} replies "
                f"are scripted. Last input message: {messages[-1].to_dict() if messages else None}"
            )
        item = self.replies[position]
        if isinstance(item, BaseException):
            raise item
        return item

    @component.output_types(replies=list[ChatMessage])
    def run(
        self,
        messages: list[ChatMessage],
        tools: Sequence[Tool | Toolset] | Toolset | None = None,
        streaming_callback: StreamingCallback | None = None,
        generation_kwargs: dict[str, Any] | None = None,
    ) -> dict[str, list[ChatMessage]]:
        """Return the next scripted reply as ``{"replies": [message]}``.

        Args:
            messages: The model input (recorded).
            tools: The tools offered (recorded).
            streaming_callback: A sync callback that receives scripted chunks.
            generation_kwargs: Generation settings (recorded).

        Raises:
            ScriptExhaustedError: When every scripted reply has been used.
            ConfigurationTypeError: When the callback is a coroutine function.
            Exception: A scripted exception, as scripted.
        """
        if streaming_callback is not None and is_async_callback(streaming_callback):
            raise ConfigurationTypeError("ScriptedChatGenerator.run needs a sync streaming callback.")
        item = self._next(messages, tools, generation_kwargs)
        assert not isinstance(item, BaseException)
        return deliver(item, streaming_callback)

    async def run_async(
        self,
        messages: list[ChatMessage],
        tools: Sequence[Tool | Toolset] | Toolset | None = None,
        streaming_callback: StreamingCallback | None = None,
        generation_kwargs: dict[str, Any] | None = None,
    ) -> dict[str, list[ChatMessage]]:
        """Async twin of :meth:`run`; the callback may be sync or async."""
        item = self._next(messages, tools, generation_kwargs)
        assert not isinstance(item, BaseException)
        return await deliver_async(item, streaming_callback)

    def assert_complete(self) -> None:
        """Raise AssertionError when some scripted replies were never used."""
        left = len(self.replies) - len(self.calls)
        if left > 0:
            raise AssertionError(
                f"ScriptedChatGenerator: {left} of {len(self.replies)} scripted replies were not used."
            )

    def to_dict(self) -> dict[str, Any]:
        """Serialize, replies included (messages via to_dict, exceptions by class path and message)."""
        items: list[dict[str, Any]] = []
        for item in self.replies:
            if isinstance(item, ChatMessage):
                items.append({"message": item.to_dict()})
            elif isinstance(item, BaseException):
                items.append({"exception": qualified_name(item), "text": str(item)})
            else:
                items.append({"chunks": [_chunk_to_dict(c) for c in item]})
        params: dict[str, Any] = {"replies": items}
        if self.tools is not None:
            from handrail.tools.utils import serialize_tools

            params["tools"] = serialize_tools(self.tools)
        return {"type": qualified_name(self), "init_parameters": params}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScriptedChatGenerator:
        """Rebuild from :meth:`to_dict` output (``data`` is not modified).

        Raises:
            SerializationError: A reply of the wrong shape or type, naming it (``replies[2].chunks[0].content``).
        """
        params = init_parameters(data, cls)
        tools = params.get("tools")
        if tools is not None:
            from handrail.tools.utils import deserialize_tools

            tools = deserialize_tools(tools)
        items = params["replies"]
        if not isinstance(items, list):
            raise SerializationError(
                f"ScriptedChatGenerator: 'replies' must be a list, got {type(items).__name__} {items!r:.80}.",
                path=("init_parameters", "replies"),
            )
        replies: list[ScriptItem] = [_reply_from_dict(item, i) for i, item in enumerate(items)]
        return cls(replies, tools=tools)


_REPLY_KEYS = {"message": ("message",), "exception": ("exception", "text"), "chunks": ("chunks",)}


def _reply_kind(item: Any, i: int, where: str) -> str:
    """Which of the three a reply item is (``message``, ``exception``, ``chunks``); any other key is refused."""
    at: tuple[str | int, ...] = ("init_parameters", "replies", i)
    kinds = [k for k in _REPLY_KEYS if isinstance(item, dict) and k in item]
    if len(kinds) != 1:
        raise SerializationError(f"{where} must hold 'message', 'exception' or 'chunks', got {item!r:.200}.",
                                 path=at)  # fmt: skip
    unknown = [k for k in item if k not in _REPLY_KEYS[kinds[0]]]
    if unknown:
        raise SerializationError(
            f"{where} has unknown keys {sorted(map(str, unknown))}; a reply of {kinds[0]!r} takes "
            f"{list(_REPLY_KEYS[kinds[0]])}.",
            path=(*at, unknown[0]) if isinstance(unknown[0], str) else at,
        )
    return kinds[0]


def _reply_from_dict(item: Any, i: int) -> ScriptItem:
    """One reply of an agent file's (or ``to_dict``'s) list; every error has the path of its field in ``path``."""
    where = f"ScriptedChatGenerator: replies[{i}]"
    at: tuple[str | int, ...] = ("init_parameters", "replies", i)
    kind = _reply_kind(item, i, where)
    if kind == "message":
        try:
            return ChatMessage.from_dict(item["message"])
        except ConfigurationError as exc:  # the message's own check: say which reply it is
            inner = exc.path if isinstance(exc, SerializationError) else ()
            raise SerializationError(f"{where}.message: {exc}", path=(*at, "message", *inner)) from exc
    if kind == "exception":
        return _exception_from_dict(item, where, at)
    if not isinstance(item["chunks"], list):
        raise SerializationError(f"{where}.chunks must be a list, got {type(item['chunks']).__name__}.",
                                 path=(*at, "chunks"))  # fmt: skip
    return [_chunk_from_dict(c, f"{where}.chunks[{j}]", (*at, "chunks", j)) for j, c in enumerate(item["chunks"])]


def _exception_from_dict(item: dict[str, Any], where: str, at: tuple[str | int, ...]) -> BaseException:
    try:
        kind = import_object(item["exception"])
    except SerializationError as exc:
        raise SerializationError(f"{where}['exception']: {exc}", path=(*at, "exception")) from exc
    if not (isinstance(kind, type) and issubclass(kind, BaseException)):  # check before calling it
        raise SerializationError(f"{where}['exception'] is {item['exception']!r}, which is not an exception class.",
                                 path=(*at, "exception"))  # fmt: skip
    if not isinstance(item.get("text"), str):
        raise SerializationError(f"{where}['text'] must be a str, got {type(item.get('text')).__name__}.",
                                 path=(*at, "text") if "text" in item else at)  # fmt: skip
    try:
        exception: BaseException = kind(item["text"])
    except Exception as exc:
        raise SerializationError(
            f"{where}: {kind.__name__} cannot be made from a message alone: {type(exc).__name__}: {exc}",
            path=(*at, "exception"),
        ) from exc
    return exception


def _chunk_to_dict(chunk: StreamingChunk) -> dict[str, Any]:
    return {
        "content": chunk.content,
        "meta": chunk.meta,
        "index": chunk.index,
        "tool_calls": [
            {"index": d.index, "tool_name": d.tool_name, "arguments": d.arguments, "id": d.id} for d in chunk.tool_calls
        ]
        if chunk.tool_calls
        else None,
        "start": chunk.start,
        "finish_reason": chunk.finish_reason,
    }


_CHUNK_FIELDS: dict[str, tuple[type, ...]] = {"content": (str,), "meta": (dict, type(None)),
                                          "index": (int, type(None)), "tool_calls": (list, type(None)),
                                          "start": (bool,), "finish_reason": (str, type(None))}  # fmt: skip
_DELTA_FIELDS: dict[str, tuple[type, ...]] = {"index": (int,), "tool_name": (str, type(None)),
                                          "arguments": (str, type(None)), "id": (str, type(None))}  # fmt: skip


def _check_fields(data: Any, fields: dict[str, tuple[type, ...]], where: str, at: tuple[str | int, ...],
                  required: tuple[str, ...] = ()) -> None:  # fmt: skip
    if not isinstance(data, dict):
        raise SerializationError(f"{where} must be a mapping, got {type(data).__name__} {data!r:.80}.", path=at)
    unknown = sorted(str(k) for k in data if k not in fields)
    if unknown:
        raise SerializationError(
            f"{where} has unknown keys {unknown}; known: {sorted(fields)}.", path=(*at, unknown[0])
        )
    for key, kinds in fields.items():
        if key not in data:
            if key in required:
                raise SerializationError(f"{where} needs the key {key!r}.", path=at)
            continue
        value = data[key]
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise SerializationError(f"{where}.{key} holds {type(value).__name__} {value!r:.80}, of the wrong type.",
                                     path=(*at, key))  # fmt: skip
    reason = data.get("finish_reason")
    if reason is not None and reason not in get_args(FinishReason):
        raise SerializationError(
            f"{where}.finish_reason is {reason!r}; expected one of {list(get_args(FinishReason))}.",
            path=(*at, "finish_reason"),
        )


def _chunk_from_dict(data: Any, where: str, at: tuple[str | int, ...]) -> StreamingChunk:
    from handrail.dataclasses.streaming import ToolCallDelta

    _check_fields(data, _CHUNK_FIELDS, where, at)
    for j, delta in enumerate(data.get("tool_calls") or ()):
        _check_fields(delta, _DELTA_FIELDS, f"{where}.tool_calls[{j}]", (*at, "tool_calls", j), required=("index",))
    try:
        deltas = [ToolCallDelta(**d) for d in data["tool_calls"]] if data.get("tool_calls") else None
        return StreamingChunk(
            content=data.get("content", ""),
            meta=dict(data.get("meta") or {}),
            index=data.get("index"),
            tool_calls=deltas,
            start=data.get("start", False),
            finish_reason=data.get("finish_reason"),
        )
    except (ConfigurationError, ConfigurationTypeError) as exc:  # StreamingChunk's own checks
        raise SerializationError(f"{where}: {exc}", path=at) from exc
