"""Fast compact JSON text of chat messages, identical to ``json.dumps(message.to_dict(), ...)``, and its cache.

Snapshots of long runs write thousands of messages, so the common message shapes are assembled
from JSON-escaped strings instead of building ``to_dict()`` dicts first; anything unusual takes the
plain ``json.dumps(message.to_dict())`` path. Both give exactly the text of :func:`dump_json` applied
to ``message.to_dict()``.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable, Sequence
from itertools import compress
from operator import ne
from typing import Any, TypeVar

from handrail.core._typed_json import check_json
from handrail.dataclasses.chat_message import ChatMessage, ChatRole, TextContent, ToolCall, ToolCallResult
from handrail.errors import SerializationError

__all__ = ["ASSEMBLY_ERRORS", "JSON_ERRORS", "CallMemo", "MessageCache", "assembled_json", "dump_json", "message_json"]

JSON_ERRORS = (TypeError, ValueError, RecursionError)
"""What :func:`dump_json` and :func:`message_json` raise for values JSON cannot hold."""

ASSEMBLY_ERRORS = (*JSON_ERRORS, KeyError, AttributeError)
"""What :func:`assembled_json` raises for shapes it does not assemble (or values JSON cannot hold)."""

T = TypeVar("T")

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_escape: Callable[[str], str] = json.encoder.encode_basestring


def _refuse(value: object) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_chunks: Callable[[Any, int], list[str]] | None = None
_make = getattr(json.encoder, "c_make_encoder", None)
if _make is not None:  # the C accelerator; without it (e.g. PyPy) the pure-Python encoder gives the same text
    _chunks = _make(None, _refuse, _escape, None, ":", ",", False, False, False)


def dump_json(value: Any) -> str:
    """Compact JSON text: ``json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)``.

    Raises:
        TypeError, ValueError, RecursionError: (:data:`JSON_ERRORS`) for values JSON cannot hold (a reference
            cycle gives RecursionError).
    """
    return "".join(_chunks(value, 0)) if _chunks is not None else _ENCODER.encode(value)


_HEAD = {role: f'{{"role":"{role.value}","meta":' for role in ChatRole}
_PLAIN_TEXT = {role: f'{_HEAD[role]}{{}},"name":null,"content":[{{"text":' for role in ChatRole}
_PLAIN_RESULT = f'{_HEAD[ChatRole.TOOL]}{{}},"name":null,"content":[{{"tool_call_result":{{"result":'

CallMemo = dict[int, tuple[ToolCall, str]]
"""JSON text of tool calls already written, keyed by id (the call is kept so the id is not reused): a tool
message's origin is usually the very ToolCall of the assistant message before it."""


def _call_json(call: ToolCall, memo: CallMemo) -> str:
    known = memo.get(id(call))
    if known is not None and known[0] is call:
        return known[1]
    call_id, extra, arguments = call.id, call.extra, call.arguments
    text = (
        f'{{"tool_name":{_escape(call.tool_name)},'
        f'"arguments":{"".join(_chunks(arguments, 0)) if _chunks is not None else dump_json(arguments)},'
        f'"id":{"null" if call_id is None else _escape(call_id)},'
        f'"extra":{"null" if extra is None else dump_json(extra)}}}'
    )
    memo[id(call)] = (call, text)
    return text


def _result_json(part: ToolCallResult, memo: CallMemo) -> str:
    if type(part.result) is not str:  # content parts (text and images): the plain to_dict() path writes them
        raise TypeError("a tool result of content parts is not assembled")
    error = part.error
    flag = "true" if error is True else "false" if error is False else dump_json(error)
    return f'{_escape(part.result)},"origin":{_call_json(part.origin, memo)},"error":{flag}}}}}'


def _part_json(part: object, memo: CallMemo) -> str:
    kind = type(part)
    if kind is TextContent:
        return f'{{"text":{_escape(part.text)}}}'  # type: ignore[attr-defined]
    if kind is ToolCall:
        return f'{{"tool_call":{_call_json(part, memo)}}}'  # type: ignore[arg-type]
    if kind is ToolCallResult:
        return f'{{"tool_call_result":{{"result":{_result_json(part, memo)}'  # type: ignore[arg-type]
    raise TypeError(f"unknown content part {kind.__name__}")


def assembled_json(message: ChatMessage, memo: CallMemo) -> str:
    """Assemble the JSON text of the usual message shapes; raise for anything else (see :func:`message_json`).

    Raises:
        TypeError, ValueError, RecursionError, KeyError, AttributeError: For a shape this does not assemble or a
            value JSON cannot hold; :func:`message_json` then gives the exact answer (text or error).
    """
    meta, name, parts = message.meta, message.name, message._content
    empty_meta = type(meta) is dict and not meta
    if name is None and empty_meta and len(parts) == 1:
        kind = type(parts[0])
        if kind is TextContent:
            return f"{_PLAIN_TEXT[message.role]}{_escape(parts[0].text)}}}]}}"  # type: ignore[union-attr]
        if kind is ToolCallResult and message.role is ChatRole.TOOL:
            return f"{_PLAIN_RESULT}{_result_json(parts[0], memo)}]}}"  # type: ignore[arg-type]
    meta_json = "{}"
    if not empty_meta:
        meta_json = "".join(_chunks(meta, 0)) if _chunks is not None else dump_json(meta)
    if len(parts) == 1 and type(parts[0]) is ToolCall:  # an assistant reply with one call and no text
        content = f'{{"tool_call":{_call_json(parts[0], memo)}}}'
    else:
        content = ",".join([_part_json(p, memo) for p in parts])
    name_json = "null" if name is None else _escape(name)
    return f'{_HEAD[message.role]}{meta_json},"name":{name_json},"content":[{content}]}}'


def message_json(message: ChatMessage, memo: CallMemo | None = None) -> str:
    """Return the compact JSON text of ``message.to_dict()`` (non-ASCII kept as is).

    Args:
        message: The message.
        memo: Tool calls already written (see :data:`CallMemo`); new ones are added.

    Returns:
        Exactly ``dump_json(message.to_dict())``.

    Raises:
        TypeError: When the message holds a value JSON cannot hold (e.g. a datetime in ``meta``).
        ValueError: For NaN or infinity.
        RecursionError: For a reference cycle in ``meta`` or the arguments.
    """
    try:
        return assembled_json(message, {} if memo is None else memo)
    except ASSEMBLY_ERRORS:
        pass  # an unusual shape (a role that is not a ChatRole, a non-str text...): let json decide
    return dump_json(message.to_dict())


class MessageCache:
    """Encoded messages of one run, so each pause only encodes the messages added since the last one.

    Entries are keyed by ``id(message)``; the cache keeps a reference to every message it encoded, so no other
    object can take that id while the entry exists. Messages must not be changed after they were encoded (the
    agent loop never does). One cache serves one run; it is not meant to be shared between threads.

    Examples:
        >>> cache = MessageCache()
        >>> cache.encode(ChatMessage.from_user("hi"))
        b'{"role":"user","meta":{},"name":null,"content":[{"text":"hi"}]}'
    """

    __slots__ = ("_calls", "_entries", "_kept", "_memo", "_parts")

    def __init__(self) -> None:
        self._entries: dict[int, bytes] = {}
        self._kept: list[ChatMessage] = []
        self._calls: CallMemo = {}
        self._parts: dict[str, tuple[list[int], list[Any], list[bytes]]] = {}
        self._memo: dict[int, tuple[Any, bytes]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Forget every cached message."""
        self._entries.clear()
        self._kept.clear()
        self._calls.clear()
        self._parts.clear()
        self._memo.clear()

    def memo(self, item: T, encode: Callable[[T], bytes]) -> bytes:
        """``encode(item)``, once per item (object) for the cache's life.

        So a ledger entry appended to a store's journal is not encoded again by the next full write. Items must not
        be changed after they were encoded.
        """
        known = self._memo.get(id(item))
        if known is not None and known[0] is item:
            return known[1]
        data = encode(item)
        self._memo[id(item)] = (item, data)
        return data

    def encode_parts(self, kind: str, items: Sequence[T], encode: Callable[[T], bytes]) -> list[bytes]:
        """Return ``encode(item)`` for each item, reusing the bytes of items (the same objects) encoded last time.

        Items must not be changed after they were encoded (the ledger replaces its entries, never changes them).
        Items are matched by position (a ledger's order only grows at its end), so a call costs C-speed passes
        over the items plus ``encode`` of the new ones; only this call's items stay cached under ``kind``.

        Args:
            kind: The kind of items (``"ledger"``, ``"decisions"``): each kind has its own cache.
            items: The items, in order.
            encode: Encodes one item; its errors propagate (the cache of ``kind`` is then left as it was).
        """
        ids = list(map(id, items))
        known = self._parts.get(kind)
        if known is None:
            parts = [encode(item) for item in items]
        else:
            old_ids, _, old_parts = known
            common = min(len(ids), len(old_ids))
            parts = old_parts[:common]
            for i in compress(range(common), map(ne, ids, old_ids)):
                parts[i] = encode(items[i])
            parts.extend([encode(item) for item in items[common:]])
        self._parts[kind] = (ids, list(items), parts)  # the items are kept: their ids stay theirs
        return parts

    def encode(self, message: ChatMessage, where: str = "message") -> bytes:
        """Return the compact UTF-8 JSON of ``message.to_dict()`` (non-ASCII written as is), cached.

        Args:
            message: The message.
            where: How to name the message in errors, e.g. ``"messages[3]"``.

        Returns:
            ``json.dumps(message.to_dict(), ensure_ascii=False, separators=(",", ":")).encode()``.

        Raises:
            SerializationError: Naming the place, when the message holds something that is not JSON data (NaN
                and infinity included) or text that is not valid Unicode (a lone surrogate).
        """
        data = self._entries.get(id(message))
        if data is not None:
            return data
        try:
            data = message_json(message, self._calls).encode("utf-8")
        except JSON_ERRORS as exc:
            check_json(message.to_dict(), where)
            reason = "holds a lone surrogate" if isinstance(exc, UnicodeEncodeError) else f"cannot be written: {exc}"
            raise SerializationError(f"{where}: the message {reason}.") from exc
        self._entries[id(message)] = data
        self._kept.append(message)
        return data

    def encode_all(self, messages: Sequence[ChatMessage], where: str = "messages") -> list[bytes]:
        """Return :meth:`encode` of every message, in order (errors name ``<where>[i]``).

        Raises:
            SerializationError: As :meth:`encode` does.
        """
        if not self._entries:  # the first pause of a run: every message is new
            return self._add(list(messages), range(len(messages)), where)
        encoded: list[bytes | None] = list(map(self._entries.get, map(id, messages)))
        if None not in encoded:
            return encoded  # type: ignore[return-value]
        missing = [i for i, data in enumerate(encoded) if data is None]
        for i, data in zip(missing, self._add([messages[i] for i in missing], missing, where), strict=True):
            encoded[i] = data
        return encoded  # type: ignore[return-value]

    def _add(self, fresh: list[ChatMessage], indexes: Sequence[int], where: str) -> list[bytes]:
        """Encode and cache messages not in the cache (``indexes``: their places, for error messages)."""
        calls = self._calls
        try:
            texts = [assembled_json(message, calls).encode("utf-8") for message in fresh]
        except ASSEMBLY_ERRORS:  # an unusual shape, or a value that cannot be written: one at a time
            return [self.encode(message, f"{where}[{i}]") for message, i in zip(fresh, indexes, strict=True)]
        self._entries.update(zip(map(id, fresh), texts, strict=True))
        self._kept.extend(fresh)
        return texts
