"""What every chat message store shares: argument checks, message encoding, row decoding, rounds.

A *round* runs from a user message to the assistant's final answer, tool calls and tool results included;
messages written before the first user message (a stored system prompt, say) belong to the first round. So
``last_k=k`` keeps everything from the k-th last user message on, or the whole history when it holds at most
``k`` user messages.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from handrail.dataclasses.chat_message import ChatMessage, ChatRole
from handrail.dataclasses.snapshot import MessageCache
from handrail.errors import ConfigurationError, ConfigurationTypeError, CorruptRecordError, HandrailError
from handrail.stores.types import MESSAGE_ID_KEY, ensure_message_id

__all__ = ["EncodedMessage", "check_history_id", "check_last_k", "decode_message", "encode_messages", "round_start"]


@dataclass(frozen=True, slots=True)
class EncodedMessage:
    """One message ready to be stored."""

    message_id: str
    """The id, also in the JSON's ``meta["message_id"]``."""
    role: str
    """The role's value: ``"user"``, ``"assistant"``, ``"tool"`` or ``"system"``."""
    data: str
    """The compact JSON text of ``ChatMessage.to_dict()``."""


def check_history_id(chat_history_id: object) -> str:
    """Return ``chat_history_id`` when it is a non-empty string.

    Raises:
        ConfigurationTypeError: When it is not a string.
        ConfigurationError: When it is empty.
    """
    if not isinstance(chat_history_id, str):
        raise ConfigurationTypeError(f"chat_history_id must be a str, got {type(chat_history_id).__name__}.")
    if not chat_history_id:
        raise ConfigurationError("chat_history_id must not be empty.")
    return chat_history_id


def check_last_k(last_k: object) -> int | None:
    """Return ``last_k`` when it is None or an int >= 0 (a bool is not accepted).

    Raises:
        ConfigurationError: When it is negative or not an int.
    """
    if last_k is None:
        return None
    if isinstance(last_k, bool) or not isinstance(last_k, int):
        raise ConfigurationError(f"last_k must be None or an int >= 0 (a number of rounds), got {last_k!r}.")
    if last_k < 0:
        raise ConfigurationError(f"last_k must be None or an int >= 0 (a number of rounds), got {last_k}.")
    return last_k


def encode_messages(messages: object, *, store_system_messages: bool) -> list[EncodedMessage]:
    """Assign ids and encode the messages to store, in order.

    System messages are left out (untouched) unless ``store_system_messages``; every other message gets an
    id in ``meta["message_id"]`` in place when it has none. A message whose id appears earlier in the batch
    is left out. Every message is encoded before this returns, so a failure leaves nothing half-written.

    Args:
        messages: A list (or tuple) of ChatMessage.
        store_system_messages: Keep system messages.

    Returns:
        The messages to store.

    Raises:
        ConfigurationTypeError: ``messages`` is not a list of ChatMessage, or a ``meta["message_id"]`` is not a
            non-empty string.
        SerializationError: A message holds something JSON cannot hold (the error names ``messages[i]``).
    """
    if not isinstance(messages, list | tuple):
        raise ConfigurationTypeError(f"messages must be a list of ChatMessage, got {type(messages).__name__}.")
    for i, message in enumerate(messages):
        if not isinstance(message, ChatMessage):
            raise ConfigurationTypeError(f"messages[{i}] is a {type(message).__name__}, not a ChatMessage.")
    kept = [(i, m) for i, m in enumerate(messages) if store_system_messages or m.role is not ChatRole.SYSTEM]
    cache = MessageCache()
    seen: set[str] = set()
    out: list[EncodedMessage] = []
    for i, message in kept:
        message_id = ensure_message_id(message)
        if message_id in seen:
            continue
        seen.add(message_id)
        data = cache.encode(message, where=f"messages[{i}]").decode("utf-8")
        out.append(EncodedMessage(message_id, message.role.value, data))
    return out


def decode_message(store: str, chat_history_id: str, message_id: str, data: str | bytes) -> ChatMessage:
    """Rebuild a stored message; its ``meta["message_id"]`` is set to ``message_id``.

    Raises:
        CorruptRecordError: The row is corrupt (not JSON, or not a message); the error names the store, the chat
            history and the message id.
    """
    try:
        decoded: Any = json.loads(data)
        if not isinstance(decoded, dict):
            raise ConfigurationError(f"expected a JSON object, got {type(decoded).__name__}")
        message = ChatMessage.from_dict(decoded)
    except (ValueError, TypeError, KeyError, AttributeError, HandrailError) as exc:
        raise CorruptRecordError(
            f"{store}: the stored message {message_id!r} of chat history {chat_history_id!r} is corrupt: {exc}"
        ) from exc
    message.meta[MESSAGE_ID_KEY] = message_id
    return message


def round_start(roles: Sequence[str], last_k: int) -> int:
    """The index where the last ``last_k`` rounds start in a history with these roles (``last_k >= 1``).

    Returns:
        The index of the ``last_k``-th last user message, or 0 when the history holds at most ``last_k`` of
        them.
    """
    users = [i for i, role in enumerate(roles) if role == ChatRole.USER.value]
    return users[-last_k] if len(users) > last_k else 0
