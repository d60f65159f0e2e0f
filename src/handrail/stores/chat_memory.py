"""A chat message store held in this process's memory (lost when the process ends)."""

from __future__ import annotations

import threading
from typing import Any

from handrail.stores._chat_base import ChatMessageStoreBase, Row
from handrail.stores._chat_common import EncodedMessage, round_start

__all__ = ["InMemoryChatMessageStore"]


class InMemoryChatMessageStore(ChatMessageStoreBase):
    """Chat histories kept in memory, safe to share between threads (see :class:`~handrail.stores.ChatMessageStore`).

    Messages are stored as their JSON text, exactly as the database stores keep them, so what comes back is
    a fresh copy and a message that cannot be serialized is refused here too. ``to_dict`` writes no messages:
    a store rebuilt by ``from_dict`` is empty.

    Args:
        store_system_messages: Keep system messages (by default they are skipped: the agent's system prompt
            is configuration, not history).

    Examples:
        >>> from handrail.dataclasses.chat_message import ChatMessage
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

    def _append(self, chat_history_id: str, encoded: list[EncodedMessage]) -> int:
        with self._lock:
            history = self._histories.setdefault(chat_history_id, [])
            ids = self._ids.setdefault(chat_history_id, set())
            new = [e for e in encoded if e.message_id not in ids]
            history.extend(new)
            ids.update(e.message_id for e in new)
        return len(new)

    def _rows(self, chat_history_id: str, last_k: int | None) -> list[Row]:
        with self._lock:
            rows = list(self._histories.get(chat_history_id, ()))
        if last_k is not None:
            rows = rows[round_start([r.role for r in rows], last_k) :]
        return [(r.message_id, r.data) for r in rows]

    def _count(self, chat_history_id: str) -> int:
        with self._lock:
            return len(self._histories.get(chat_history_id, ()))

    def _delete(self, chat_history_id: str) -> None:
        with self._lock:
            self._histories.pop(chat_history_id, None)
            self._ids.pop(chat_history_id, None)

    def _delete_all(self) -> None:
        with self._lock:
            self._histories.clear()
            self._ids.clear()

    def _init_parameters(self) -> dict[str, Any]:
        return {"store_system_messages": self.store_system_messages}
