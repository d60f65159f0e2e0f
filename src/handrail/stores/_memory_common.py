"""What the memory stores share: argument checks, the filter language, query words and the result messages.

Filters are equality tests, ANDed. Two shapes are accepted:

- a flat dict ``{"role": "user", "topic": "food", "meta.lang": "de"}``;
- Haystack's shape: ``{"field": "meta.topic", "operator": "==", "value": "food"}`` or
  ``{"operator": "AND", "conditions": [<comparison>, ...]}``.

A key names a column (``role``, ``name``, ``user_id``, ``run_id``, ``agent_id``) or, otherwise, a key of the
memory's metadata (the ``meta`` of the message it was made from); ``meta.<key>`` / ``metadata.<key>`` always
names a metadata key. Values are JSON scalars; ``None`` matches a missing or null key. ``True`` never equals ``1``.
"""

from __future__ import annotations

import json
import re
import unicodedata
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from handrail.dataclasses.chat_message import ChatMessage
from handrail.errors import (
    ConfigurationError,
    ConfigurationTypeError,
    CorruptRecordError,
    SerializationError,
)
from handrail.stores.types import ensure_message_id

__all__ = [
    "COLUMN_KEYS",
    "MAX_QUERY_TERMS",
    "Condition",
    "NewMemory",
    "Scope",
    "build_memory_message",
    "check_memory_id",
    "check_scope",
    "check_top_k",
    "json_equal",
    "new_memories",
    "parse_filters",
    "query_terms",
    "text_words",
    "utc_now",
]

COLUMN_KEYS = ("role", "name", "user_id", "run_id", "agent_id")
"""Filter keys that name a column of the memory rather than a metadata key."""

MAX_QUERY_TERMS = 64
"""A query's first 64 distinct words are searched; the rest are ignored."""

_WORD = re.compile(r"[^\W_]+")
_META_PREFIXES = ("meta.", "metadata.")

Scalar = str | int | float | bool | None


@dataclass(frozen=True, slots=True)
class Condition:
    """One equality test of a filter."""

    kind: Literal["column", "metadata"]
    """Whether ``key`` is a column (one of :data:`COLUMN_KEYS`) or a metadata key."""
    key: str
    """The column or metadata key."""
    value: Scalar
    """The value it must equal (``None``: missing or null)."""


@dataclass(frozen=True, slots=True)
class NewMemory:
    """A memory about to be added, made from one message."""

    memory_id: str
    """A fresh ``uuid4().hex``."""
    message_id: str
    """The message's id (``meta["message_id"]``, assigned in place when missing)."""
    role: str
    """The message's role."""
    name: str | None
    """The message's author name."""
    content: str
    """The memory: the message's text parts joined by newlines."""
    metadata: dict[str, Any]
    """A copy of the message's ``meta`` (JSON-compatible)."""
    metadata_json: str
    """``metadata`` as JSON text."""


@dataclass(frozen=True, slots=True)
class Scope:
    """The ids a memory belongs to, or that a search or delete is limited to (``None``: any)."""

    user_id: str | None
    run_id: str | None
    agent_id: str | None

    def items(self) -> tuple[tuple[str, str | None], ...]:
        """``(column, id)`` pairs: ``user_id``, ``run_id``, ``agent_id``."""
        return (("user_id", self.user_id), ("run_id", self.run_id), ("agent_id", self.agent_id))


def check_scope(user_id: Any, run_id: Any, agent_id: Any, *, required: bool, operation: str) -> Scope:
    """Check the scope ids: each is None or a non-empty string; with ``required``, at least one is given.

    Returns:
        The scope.

    Raises:
        ConfigurationTypeError: An id is not a string.
        ConfigurationError: An id is empty, or none is given when one is required.
    """
    scope = Scope(user_id, run_id, agent_id)
    for key, value in scope.items():
        if value is None:
            continue
        if not isinstance(value, str):
            raise ConfigurationTypeError(f"{operation}: {key} must be a string or None, got {type(value).__name__}.")
        if not value:
            raise ConfigurationError(f"{operation}: {key} must not be empty (leave it None instead).")
    if required and user_id is None and run_id is None and agent_id is None:
        raise ConfigurationError(f"{operation} needs at least one of user_id, run_id or agent_id.")
    return scope


def check_top_k(top_k: Any) -> int:
    """Check ``top_k``: a positive int.

    Raises:
        ConfigurationTypeError: Not an int (a bool is not accepted).
        ConfigurationError: Zero or negative.
    """
    if isinstance(top_k, bool) or not isinstance(top_k, int):
        raise ConfigurationTypeError(f"search_memories: top_k must be an int, got {type(top_k).__name__}.")
    if top_k <= 0:
        raise ConfigurationError(f"search_memories: top_k must be at least 1, got {top_k}.")
    return top_k


def check_memory_id(memory_id: Any) -> str:
    """Check a memory id given to ``delete_memory``.

    Raises:
        ConfigurationTypeError: Not a string.
    """
    if not isinstance(memory_id, str):
        raise ConfigurationTypeError(f"delete_memory: memory_id must be a string, got {type(memory_id).__name__}.")
    return memory_id


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _condition(key: Any, value: Any) -> Condition:
    if not isinstance(key, str) or not key:
        raise ConfigurationError(f"Memory filter keys must be non-empty strings, got {key!r}.")
    if not _is_scalar(value):
        raise ConfigurationError(
            f"Memory filter {key!r}: only equality with a JSON scalar (str, number, bool, None) is supported, "
            f"got {type(value).__name__}."
        )
    for prefix in _META_PREFIXES:
        if key.startswith(prefix) and len(key) > len(prefix):
            return Condition("metadata", key[len(prefix) :], value)
    if key in COLUMN_KEYS:
        if value is not None and not isinstance(value, str):
            raise ConfigurationError(f"Memory filter {key!r} compares a text column: give a string or None.")
        return Condition("column", key, value)
    return Condition("metadata", key, value)


def _haystack_conditions(node: Any, depth: int = 0) -> list[Condition]:
    if not isinstance(node, dict) or depth > 16:
        raise ConfigurationError(f"Unknown memory filter shape: {node!r:.200}")
    operator = node.get("operator")
    if operator == "AND" and set(node) == {"operator", "conditions"} and isinstance(node["conditions"], list):
        return [c for child in node["conditions"] for c in _haystack_conditions(child, depth + 1)]
    if operator == "==" and set(node) == {"field", "operator", "value"}:
        return [_condition(node["field"], node["value"])]
    raise ConfigurationError(
        f"Unknown memory filter shape {node!r:.200}: memory stores support equality only, as "
        "{'key': value}, {'field': ..., 'operator': '==', 'value': ...} or {'operator': 'AND', 'conditions': [...]}."
    )


def parse_filters(filters: Any) -> list[Condition]:
    """Turn ``filters`` into equality conditions, all of which must hold (see the module docstring).

    Args:
        filters: None, a flat ``{key: scalar}`` dict, or a Haystack ``==`` / ``AND`` filter.

    Returns:
        The conditions (empty for None or ``{}``).

    Raises:
        ConfigurationError: Any other shape, a non-scalar value, or a non-string value for a column key.
    """
    if filters is None:
        return []
    if not isinstance(filters, dict):
        raise ConfigurationError(f"Memory filters must be a dict, got {type(filters).__name__}.")
    if "operator" in filters:
        return _haystack_conditions(filters)
    return [_condition(key, value) for key, value in filters.items()]


def json_equal(stored: Any, wanted: Scalar) -> bool:
    """JSON equality of a stored metadata value and a filter value (``True`` is not ``1``; ``1 == 1.0``)."""
    if isinstance(stored, bool) or isinstance(wanted, bool):
        return isinstance(stored, bool) and isinstance(wanted, bool) and stored == wanted
    if isinstance(stored, int | float) and isinstance(wanted, int | float):
        return stored == wanted
    return type(stored) is type(wanted) and bool(stored == wanted)


def query_terms(query: str) -> list[str]:
    """The words of a query, casefolded, in order, without repeats (at most :data:`MAX_QUERY_TERMS`).

    A word is a run of letters and digits; everything else (quotes, operators, punctuation) separates words,
    so any text is a safe query.

    Raises:
        ConfigurationTypeError: ``query`` is not a string.
    """
    if not isinstance(query, str):
        raise ConfigurationTypeError(f"search_memories: query must be a string or None, got {type(query).__name__}.")
    seen: dict[str, None] = {}
    for match in _WORD.finditer(query):
        seen.setdefault(match.group().casefold(), None)
        if len(seen) >= MAX_QUERY_TERMS:
            break
    return list(seen)


def text_words(text: str) -> list[str]:
    """The words of a text for the in-memory index: casefolded, accents removed (like FTS5's unicode61)."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    stripped = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return [m.group() for m in _WORD.finditer(stripped)]


def _memory_text(message: ChatMessage) -> str | None:
    texts = [t for t in message.texts if t.strip()]
    return "\n".join(texts) if texts else None


def new_memories(messages: Any) -> list[NewMemory]:
    """The memories to add for ``messages``: one per message with text, in order, repeats of one id dropped.

    Messages without an id get one IN PLACE (``meta["message_id"]``).

    Raises:
        ConfigurationTypeError: ``messages`` is not a list of ChatMessage, or a message id is not a string.
        SerializationError: A message's ``meta`` is not JSON-serializable.
    """
    if not isinstance(messages, list | tuple) or not all(isinstance(m, ChatMessage) for m in messages):
        raise ConfigurationTypeError("add_memories: messages must be a list of ChatMessage.")
    out: list[NewMemory] = []
    seen: set[str] = set()
    for message in messages:
        text = _memory_text(message)
        if text is None:
            continue
        message_id = ensure_message_id(message)
        if message_id in seen:
            continue
        seen.add(message_id)
        try:
            metadata_json = json.dumps(message.meta, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise SerializationError(
                f"add_memories: the meta of message {message_id} is not JSON-serializable ({exc}); nothing was added."
            ) from exc
        metadata = json.loads(metadata_json)
        out.append(
            NewMemory(uuid.uuid4().hex, message_id, message.role.value, message.name, text, metadata, metadata_json)
        )
    return out


def build_memory_message(store: str, row: Sequence[Any], *, include_metadata: bool) -> ChatMessage:
    """The ChatMessage returned for one stored memory.

    Args:
        store: The store's name, for errors.
        row: ``(memory_id, role, name, content, user_id, run_id, agent_id, created_at, metadata, score)``;
            ``created_at`` an ISO 8601 string or an aware datetime, ``metadata`` a dict or its JSON text,
            ``score`` a number or None.
        include_metadata: Whether ``meta`` gets more than the memory id.

    Returns:
        A message with the stored role, name and text, whose ``meta`` holds ``memory_id`` and, with
        ``include_metadata``, ``user_id``, ``run_id``, ``agent_id``, ``created_at`` (ISO 8601, UTC), ``score``
        (a float, higher is better; None without a query) and ``metadata`` (a dict).

    Raises:
        CorruptRecordError: The stored row is corrupt (unknown role, metadata not a JSON object); names the
            store and id.
    """
    memory_id, role, name, content, user_id, run_id, agent_id, created_at, metadata, score = row
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except ValueError as exc:
            raise CorruptRecordError(f"{store}: memory {memory_id} holds metadata that is not JSON: {exc}") from exc
    if not isinstance(metadata, dict):
        raise CorruptRecordError(f"{store}: memory {memory_id} holds metadata that is not a JSON object.")
    meta: dict[str, Any] = {"memory_id": memory_id}
    if include_metadata:
        if isinstance(created_at, datetime):
            created_at = created_at.astimezone(UTC).isoformat()
        meta.update(
            user_id=user_id,
            run_id=run_id,
            agent_id=agent_id,
            created_at=created_at,
            score=None if score is None else float(score),
            metadata=metadata,
        )
    try:
        return ChatMessage.from_dict({"role": role, "content": [{"text": content}], "name": name, "meta": meta})
    except (ConfigurationError, TypeError) as exc:
        raise CorruptRecordError(f"{store}: memory {memory_id} is corrupt: {exc}") from exc


def utc_now() -> str:
    """The current time, ISO 8601 in UTC (microseconds)."""
    return datetime.now(UTC).isoformat()
