"""A chat message store held in this process's memory (lost when the process ends)."""

from __future__ import annotations

import threading
from typing import Any

from handrail.core.serialization import default_from_dict, default_to_dict
from handrail.dataclasses.chat_message import ChatMessage
from handrail.stores._chat_common import (
    EncodedMessage,
    check_history_id,
    check_last_k,
    decode_message,
    encode_messages,
    round_start,
)

__all__ = ["InMemoryChatMessageStore"]


class InMemoryChatMessageStore:
    """Chat histories kept in memory, safe to share between threads.

    Messages are stored as their JSON text, exactly as the database stores keep them, so what comes back is
    a fresh copy and a message that cannot be serialized is refused here too.

    Args:
        store_system_messages: Keep system messages (by default they are skipped: the agent's system prompt
            is configuration, not history).

    Example:
        >>> store = InMemoryChatMessageStore()
        >>> store.write_messages("chat-1", [ChatMessage.from_user("Hi"), ChatMessage.from_assistant("Hello!")])
        2
        >>> [m.text for m in store.retrieve_messages("chat-1")]
        ['Hi', 'Hello!']
    """

    def __init__(self, *, store_system_messages: bool = False) -> None:
        self.store_system_messages = store_system_messages
        self._histories: dict[str, list[EncodedMessage]] = {}
        self._ids: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def write_messages(self, chat_history_id: str, messages: list[ChatMessage]) -> int:
        """Append messages to a chat history, all or nothing.

        Each message gets an id in ``meta["message_id"]`` (assigned IN PLACE when missing), so writing the
        same message objects again is a no-op. Messages whose id the history already holds are skipped, and
        system messages unless ``store_system_messages``.

        Args:
            chat_history_id: The history (created on first write); a non-empty string.
            messages: The messages, in order.

        Returns:
            The number of messages written.

        Raises:
            ConfigurationTypeError: For arguments of the wrong type or a non-string ``meta["message_id"]``.
            ConfigurationError: For an empty ``chat_history_id``.
            SerializationError: A message holds something JSON cannot hold; nothing was written.
        """
        check_history_id(chat_history_id)
        encoded = encode_messages(messages, store_system_messages=self.store_system_messages)
        with self._lock:
            history = self._histories.setdefault(chat_history_id, [])
            ids = self._ids.setdefault(chat_history_id, set())
            new = [e for e in encoded if e.message_id not in ids]
            history.extend(new)
            ids.update(e.message_id for e in new)
        return len(new)

    def retrieve_messages(self, chat_history_id: str, last_k: int | None = None) -> list[ChatMessage]:
        """The history's messages in write order, or its last ``last_k`` rounds.

        Args:
            chat_history_id: The history; an unknown id gives ``[]``.
            last_k: A number of rounds (each from a user message to the assistant's final answer, tool traffic
                included); ``None`` for all, ``0`` for none.

        Returns:
            Fresh ChatMessage objects; ``meta["message_id"]`` holds each id.

        Raises:
            ConfigurationError: ``last_k`` is negative or not an int.
            StoreError: A stored message cannot be rebuilt (names the history and the message id).
        """
        check_history_id(chat_history_id)
        k = check_last_k(last_k)
        if k == 0:
            return []
        with self._lock:
            rows = list(self._histories.get(chat_history_id, ()))
        if k is not None:
            rows = rows[round_start([r.role for r in rows], k) :]
        return [decode_message(type(self).__name__, chat_history_id, r.message_id, r.data) for r in rows]

    def count_messages(self, chat_history_id: str) -> int:
        """How many messages the history holds (0 for an unknown id)."""
        check_history_id(chat_history_id)
        with self._lock:
            return len(self._histories.get(chat_history_id, ()))

    def delete_messages(self, chat_history_id: str) -> None:
        """Delete one history (an unknown id is not an error)."""
        check_history_id(chat_history_id)
        with self._lock:
            self._histories.pop(chat_history_id, None)
            self._ids.pop(chat_history_id, None)

    def delete_all_messages(self) -> None:
        """Delete every history."""
        with self._lock:
            self._histories.clear()
            self._ids.clear()

    def to_dict(self) -> dict[str, Any]:
        """``{"type": ..., "init_parameters": {"store_system_messages": bool}}`` (the messages are not included)."""
        return default_to_dict(self, store_system_messages=self.store_system_messages)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InMemoryChatMessageStore:
        """A new, empty store built from :meth:`to_dict` output.

        Raises:
            SerializationError: For data of another class or without ``init_parameters``.
        """
        store: InMemoryChatMessageStore = default_from_dict(cls, data)
        return store
