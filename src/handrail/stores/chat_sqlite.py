"""A chat message store in a SQLite file: the embedded default, safe for several processes on one machine."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from handrail.errors import StoreError
from handrail.stores._chat_base import ChatQueries, SQLChatMessageStore
from handrail.stores._chat_common import EncodedMessage
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

_INSERT = (
    "INSERT INTO handrail_chat_messages (chat_history_id, seq, message_id, role, data) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (chat_history_id, message_id) DO NOTHING"
)


class SQLiteChatMessageStore(SQLChatMessageStore):
    """Chat histories in a SQLite database file (table ``handrail_chat_messages``).

    A :class:`~handrail.stores.types.ChatMessageStore`. The file is created, with its folder, on first use; it
    may also hold the other handrail stores. WAL mode lets several processes share it: readers run beside one
    writer, and writers wait for each other. Each write is one transaction, so a batch is stored whole,
    contiguous and in order, or not at all. When the database fails (locked for longer than 10 s, unwritable,
    corrupt, or holding a newer schema) a method raises StoreError naming the store, the file and the chat
    history, and writes nothing.

    Args:
        path: The database file, or ``":memory:"`` for a private in-process database.
        store_system_messages: Keep system messages (skipped by default).

    Examples:
        >>> from handrail.dataclasses.chat_message import ChatMessage
        >>> store = SQLiteChatMessageStore(":memory:")
        >>> store.write_messages("chat-1", [ChatMessage.from_user("Hi"), ChatMessage.from_assistant("Hello!")])
        2
        >>> [m.text for m in store.retrieve_messages("chat-1", last_k=1)]
        ['Hi', 'Hello!']
    """

    _sql = ChatQueries.written_with(":{}")

    def __init__(self, path: str | Path, *, store_system_messages: bool = False) -> None:
        self.path = str(path)
        self.store_system_messages = store_system_messages
        self._db = SQLiteDatabase(self.path, store=type(self).__name__, migrations=_MIGRATIONS)
        if self.path == ":memory:":
            self._db.connection()  # open the one shared connection now, before threads race to open it

    @contextlib.contextmanager
    def _session(self, *, write: bool, key: str = "") -> Iterator[sqlite3.Connection]:
        try:
            with self._db.transaction(write=write) as conn:
                yield conn
        except sqlite3.Error as exc:
            raise StoreError(f"{type(self).__name__}: {self.path} failed for chat history {key!r}: {exc}") from exc

    def _append(self, chat_history_id: str, encoded: list[EncodedMessage]) -> int:
        with self._session(write=True, key=chat_history_id) as conn:
            base = self._last_seq(conn, chat_history_id)
            before = conn.total_changes
            conn.executemany(
                _INSERT, [(chat_history_id, base + i, e.message_id, e.role, e.data) for i, e in enumerate(encoded, 1)]
            )
            return conn.total_changes - before

    def close(self) -> None:
        """Close this thread's connection (a later call opens a new one)."""
        self._db.close()

    def _init_parameters(self) -> dict[str, Any]:
        return {"path": self.path, "store_system_messages": self.store_system_messages}
