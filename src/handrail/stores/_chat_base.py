"""The chat message store template: the ChatMessageStore protocol written once, over a backend's primitives.

:class:`ChatMessageStoreBase` checks the arguments, encodes and decodes the messages and serializes the store; a
backend only appends encoded messages, reads rows back and deletes them. :class:`SQLChatMessageStore` does the
reads and deletes for the SQL backends, whose statements (:class:`ChatQueries`) are written once for either
placeholder style; a SQL backend adds its append and its sessions.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from handrail.dataclasses.chat_message import ChatMessage
from handrail.stores._chat_common import EncodedMessage, check_history_id, check_last_k, decode_message, encode_messages
from handrail.stores._store_base import StoreBase

__all__ = ["ChatMessageStoreBase", "ChatQueries", "Row", "SQLChatMessageStore"]

Row = tuple[Any, Any]
"""A stored message: ``(message_id, JSON text)``."""


class ChatMessageStoreBase(StoreBase, ABC):
    """A :class:`~handrail.stores.types.ChatMessageStore` over a backend's primitives (see the module docstring)."""

    store_system_messages: bool
    """Keep system messages (by default they are skipped: the agent's system prompt is configuration)."""

    def write_messages(self, chat_history_id: str, messages: list[ChatMessage]) -> int:
        """See :meth:`ChatMessageStore.write_messages <handrail.stores.types.ChatMessageStore.write_messages>`."""
        check_history_id(chat_history_id)
        encoded = encode_messages(messages, store_system_messages=self.store_system_messages)
        return self._append(chat_history_id, encoded) if encoded else 0

    def retrieve_messages(self, chat_history_id: str, last_k: int | None = None) -> list[ChatMessage]:
        """See :meth:`ChatMessageStore.retrieve_messages <handrail.stores.types.ChatMessageStore.retrieve_messages>`."""
        check_history_id(chat_history_id)
        k = check_last_k(last_k)
        if k == 0:
            return []
        name = type(self).__name__
        return [decode_message(name, chat_history_id, str(mid), data) for mid, data in self._rows(chat_history_id, k)]

    def count_messages(self, chat_history_id: str) -> int:
        """See :meth:`ChatMessageStore.count_messages <handrail.stores.types.ChatMessageStore.count_messages>`."""
        check_history_id(chat_history_id)
        return self._count(chat_history_id)

    def delete_messages(self, chat_history_id: str) -> None:
        """See :meth:`ChatMessageStore.delete_messages <handrail.stores.types.ChatMessageStore.delete_messages>`."""
        check_history_id(chat_history_id)
        self._delete(chat_history_id)

    def delete_all_messages(self) -> None:
        """Delete every history of this store (other stores sharing the file or database are not touched)."""
        self._delete_all()

    # -- backend primitives ------------------------------------------------------------------------

    @abstractmethod
    def _append(self, chat_history_id: str, encoded: list[EncodedMessage]) -> int:
        """Append the messages (at least one) whose id the history lacks, all or nothing; how many were."""

    @abstractmethod
    def _rows(self, chat_history_id: str, last_k: int | None) -> Sequence[Row]:
        """The history's rows in write order: all (``last_k`` None) or those of its last ``last_k >= 1`` rounds."""

    @abstractmethod
    def _count(self, chat_history_id: str) -> int:
        """How many messages the history holds."""

    @abstractmethod
    def _delete(self, chat_history_id: str) -> None:
        """Delete one history."""

    @abstractmethod
    def _delete_all(self) -> None:
        """Delete every history."""


@dataclass(frozen=True, slots=True)
class ChatQueries:
    """The statements of the SQL chat stores on ``handrail_chat_messages``; they take the named parameter ``hid``."""

    select_all: str
    """``(message_id, data)`` of the history, in write order."""
    select_rounds: str
    """The same from the ``skip + 1``-th last user message on, or all when the history holds at most that many.

    One statement, so it reads one consistent state of the history; messages before the first user message
    belong to the first round.
    """
    last_seq: str
    """The history's highest ``seq`` (0 when empty)."""
    count: str
    """How many messages the history holds."""
    delete: str
    """Delete the history."""
    delete_all: str
    """Delete every history."""

    @classmethod
    def written_with(cls, param: str) -> ChatQueries:
        """The statements with each named parameter written as ``param.format(name)``.

        Args:
            param: ``":{}"`` for sqlite3, ``"%({})s"`` for psycopg.
        """
        hid, skip = param.format("hid"), param.format("skip")
        history = f"FROM handrail_chat_messages WHERE chat_history_id = {hid}"
        rounds = f"""
WITH starts AS (
    SELECT seq {history} AND role = 'user'
    ORDER BY seq DESC LIMIT 2 OFFSET {skip}
)
SELECT message_id, data {history}
  AND seq >= CASE WHEN (SELECT count(*) FROM starts) = 2 THEN (SELECT max(seq) FROM starts) ELSE 0 END
ORDER BY seq
"""
        return cls(
            select_all=f"SELECT message_id, data {history} ORDER BY seq",
            select_rounds=rounds,
            last_seq=f"SELECT COALESCE(MAX(seq), 0) {history}",
            count=f"SELECT count(*) {history}",
            delete=f"DELETE {history}",
            delete_all="DELETE FROM handrail_chat_messages",
        )


class SQLChatMessageStore(ChatMessageStoreBase):
    """A chat message store in the SQL table ``handrail_chat_messages``: the reads and deletes, written once."""

    _sql: ClassVar[ChatQueries]

    @abstractmethod
    def _session(self, *, write: bool, key: str = "") -> contextlib.AbstractContextManager[Any]:
        """A connection, in one transaction when ``write``; its errors become StoreError naming the store."""

    def _last_seq(self, conn: Any, chat_history_id: str) -> int:
        row = conn.execute(self._sql.last_seq, {"hid": chat_history_id}).fetchone()
        return int(row[0]) if row else 0

    def _rows(self, chat_history_id: str, last_k: int | None) -> Sequence[Row]:
        with self._session(write=False, key=chat_history_id) as conn:
            if last_k is None:
                rows = conn.execute(self._sql.select_all, {"hid": chat_history_id}).fetchall()
            else:
                rows = conn.execute(self._sql.select_rounds, {"hid": chat_history_id, "skip": last_k - 1}).fetchall()
        return list(rows)

    def _count(self, chat_history_id: str) -> int:
        with self._session(write=False, key=chat_history_id) as conn:
            row = conn.execute(self._sql.count, {"hid": chat_history_id}).fetchone()
        return int(row[0]) if row else 0

    def _delete(self, chat_history_id: str) -> None:
        with self._session(write=True, key=chat_history_id) as conn:
            conn.execute(self._sql.delete, {"hid": chat_history_id})

    def _delete_all(self) -> None:
        with self._session(write=True, key="*") as conn:
            conn.execute(self._sql.delete_all)
