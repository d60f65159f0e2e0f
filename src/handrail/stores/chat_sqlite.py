"""A chat message store in a SQLite file: the embedded default, safe for several processes on one machine."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from handrail.core.serialization import default_from_dict, default_to_dict
from handrail.dataclasses.chat_message import ChatMessage
from handrail.errors import StoreError
from handrail.stores._chat_common import check_history_id, check_last_k, decode_message, encode_messages
from handrail.stores._sqlite import SQLiteDatabase

__all__ = ["SQLiteChatMessageStore"]

_MIGRATIONS = [
    """
    CREATE TABLE handrail_chat_messages (
        chat_history_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        message_id TEXT NOT NULL,
        role TEXT NOT NULL,
        data TEXT NOT NULL,
        created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        PRIMARY KEY (chat_history_id, seq),
        UNIQUE (chat_history_id, message_id)
    );
    CREATE INDEX handrail_chat_messages_by_role ON handrail_chat_messages (chat_history_id, role, seq);
    """,
]

# The rows of the last k rounds: from the k-th last user message on, or everything when the history holds at
# most k user messages (messages before the first user message belong to the first round). One statement, so
# it reads one consistent state of the history.
_SELECT_ROUNDS = """
WITH starts AS (
    SELECT seq FROM handrail_chat_messages WHERE chat_history_id = :hid AND role = 'user'
    ORDER BY seq DESC LIMIT 2 OFFSET :skip
)
SELECT message_id, data FROM handrail_chat_messages
WHERE chat_history_id = :hid
  AND seq >= CASE WHEN (SELECT count(*) FROM starts) = 2 THEN (SELECT max(seq) FROM starts) ELSE 0 END
ORDER BY seq
"""
_SELECT_ALL = "SELECT message_id, data FROM handrail_chat_messages WHERE chat_history_id = ? ORDER BY seq"
_INSERT = (
    "INSERT INTO handrail_chat_messages (chat_history_id, seq, message_id, role, data) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (chat_history_id, message_id) DO NOTHING"
)


class SQLiteChatMessageStore:
    """Chat histories in a SQLite database file (table ``handrail_chat_messages``).

    The file is created, with its folder, on first use; it may also hold the other handrail stores. WAL mode
    lets several processes share it: readers run beside one writer, and writers wait for each other.
    Each write is one transaction, so a batch is stored whole, contiguous and in order, or not at all.

    Args:
        path: The database file, or ``":memory:"`` for a private in-process database.
        store_system_messages: Keep system messages (skipped by default).

    Example:
        >>> store = SQLiteChatMessageStore(":memory:")
        >>> store.write_messages("chat-1", [ChatMessage.from_user("Hi"), ChatMessage.from_assistant("Hello!")])
        2
        >>> [m.text for m in store.retrieve_messages("chat-1", last_k=1)]
        ['Hi', 'Hello!']
    """

    def __init__(self, path: str | Path, *, store_system_messages: bool = False) -> None:
        self.path = str(path)
        self.store_system_messages = store_system_messages
        self._name = type(self).__name__
        self._db = SQLiteDatabase(self.path, store=self._name, migrations=_MIGRATIONS)
        if self.path == ":memory:":
            self._db.connection()  # open the one shared connection now, before threads race to open it

    @contextlib.contextmanager
    def _transaction(self, *, write: bool, key: str) -> Iterator[sqlite3.Connection]:
        try:
            with self._db.transaction(write=write) as conn:
                yield conn
        except sqlite3.Error as exc:
            raise StoreError(f"{self._name}: {self.path} failed for chat history {key!r}: {exc}") from exc

    def write_messages(self, chat_history_id: str, messages: list[ChatMessage]) -> int:
        """Append messages to a chat history in one transaction: all or nothing.

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
            StoreError: The database failed (locked for longer than 10 s, unwritable, corrupt, newer schema);
                nothing was written.
        """
        check_history_id(chat_history_id)
        encoded = encode_messages(messages, store_system_messages=self.store_system_messages)
        if not encoded:
            return 0
        with self._transaction(write=True, key=chat_history_id) as conn:
            row = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM handrail_chat_messages WHERE chat_history_id = ?",
                (chat_history_id,),
            ).fetchone()
            base = int(row[0])
            before = conn.total_changes
            conn.executemany(
                _INSERT, [(chat_history_id, base + i, e.message_id, e.role, e.data) for i, e in enumerate(encoded, 1)]
            )
            return conn.total_changes - before

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
            StoreError: The database failed, or a row is corrupt (names the history and the message id).
        """
        check_history_id(chat_history_id)
        k = check_last_k(last_k)
        if k == 0:
            return []
        with self._transaction(write=False, key=chat_history_id) as conn:
            if k is None:
                rows = conn.execute(_SELECT_ALL, (chat_history_id,)).fetchall()
            else:
                rows = conn.execute(_SELECT_ROUNDS, {"hid": chat_history_id, "skip": k - 1}).fetchall()
        return [decode_message(self._name, chat_history_id, str(mid), data) for mid, data in rows]

    def count_messages(self, chat_history_id: str) -> int:
        """How many messages the history holds (0 for an unknown id).

        Raises:
            StoreError: The database failed.
        """
        check_history_id(chat_history_id)
        with self._transaction(write=False, key=chat_history_id) as conn:
            row = conn.execute(
                "SELECT count(*) FROM handrail_chat_messages WHERE chat_history_id = ?", (chat_history_id,)
            ).fetchone()
        return int(row[0])

    def delete_messages(self, chat_history_id: str) -> None:
        """Delete one history (an unknown id is not an error).

        Raises:
            StoreError: The database failed; nothing was deleted.
        """
        check_history_id(chat_history_id)
        with self._transaction(write=True, key=chat_history_id) as conn:
            conn.execute("DELETE FROM handrail_chat_messages WHERE chat_history_id = ?", (chat_history_id,))

    def delete_all_messages(self) -> None:
        """Delete every history of this store (the other stores in the file are not touched).

        Raises:
            StoreError: The database failed; nothing was deleted.
        """
        with self._transaction(write=True, key="*") as conn:
            conn.execute("DELETE FROM handrail_chat_messages")

    def close(self) -> None:
        """Close this thread's connection (a later call opens a new one)."""
        self._db.close()

    def to_dict(self) -> dict[str, Any]:
        """``{"type": ..., "init_parameters": {"path": str, "store_system_messages": bool}}``."""
        return default_to_dict(self, path=self.path, store_system_messages=self.store_system_messages)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SQLiteChatMessageStore:
        """A store on the same file, built from :meth:`to_dict` output.

        Raises:
            SerializationError: For data of another class or without ``init_parameters``.
        """
        store: SQLiteChatMessageStore = default_from_dict(cls, data)
        return store
