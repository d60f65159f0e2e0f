"""SQLiteMemoryStore: long-term memories in a SQLite file, searched with FTS5 and ranked by BM25."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from handrail.core.serialization import default_from_dict, default_to_dict
from handrail.dataclasses.chat_message import ChatMessage
from handrail.errors import StoreError
from handrail.stores._memory_common import (
    Condition,
    build_memory_message,
    check_memory_id,
    check_scope,
    check_top_k,
    new_memories,
    parse_filters,
    query_terms,
    utc_now,
)
from handrail.stores._sqlite import SQLiteDatabase

__all__ = ["SQLiteMemoryStore"]

_STORE = "SQLiteMemoryStore"

_MIGRATIONS = [
    """
    CREATE TABLE handrail_memories (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        memory_id TEXT NOT NULL UNIQUE,
        message_id TEXT NOT NULL,
        user_id TEXT,
        run_id TEXT,
        agent_id TEXT,
        role TEXT NOT NULL,
        name TEXT,
        content TEXT NOT NULL,
        metadata TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE UNIQUE INDEX handrail_memories_message
        ON handrail_memories (message_id, coalesce(user_id, ''), coalesce(run_id, ''), coalesce(agent_id, ''));
    CREATE INDEX handrail_memories_user ON handrail_memories (user_id);
    CREATE INDEX handrail_memories_run ON handrail_memories (run_id);
    CREATE INDEX handrail_memories_agent ON handrail_memories (agent_id);
    CREATE VIRTUAL TABLE handrail_memories_fts USING fts5(
        content, content='handrail_memories', content_rowid='seq', tokenize='unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER handrail_memories_fts_insert AFTER INSERT ON handrail_memories BEGIN
        INSERT INTO handrail_memories_fts (rowid, content) VALUES (new.seq, new.content);
    END;
    CREATE TRIGGER handrail_memories_fts_delete AFTER DELETE ON handrail_memories BEGIN
        INSERT INTO handrail_memories_fts (handrail_memories_fts, rowid, content)
            VALUES ('delete', old.seq, old.content);
    END;
    CREATE TRIGGER handrail_memories_fts_update AFTER UPDATE OF content ON handrail_memories BEGIN
        INSERT INTO handrail_memories_fts (handrail_memories_fts, rowid, content)
            VALUES ('delete', old.seq, old.content);
        INSERT INTO handrail_memories_fts (rowid, content) VALUES (new.seq, new.content);
    END;
    """
]

_COLUMNS = "m.memory_id, m.role, m.name, m.content, m.user_id, m.run_id, m.agent_id, m.created_at, m.metadata"


def _where(
    user_id: str | None, run_id: str | None, agent_id: str | None, conditions: list[Condition]
) -> tuple[list[str], list[Any]]:
    """SQL tests (ANDed) and their parameters for a scope and filter conditions, on the alias ``m``."""
    clauses: list[str] = []
    params: list[Any] = []
    for column, value in (("user_id", user_id), ("run_id", run_id), ("agent_id", agent_id)):
        if value is not None:
            clauses.append(f"m.{column} = ?")
            params.append(value)
    for c in conditions:
        if c.kind == "column":
            clauses.append(f"m.{c.key} IS ?")  # c.key is one of COLUMN_KEYS: a fixed column name
            params.append(c.value)
        elif c.value is None:
            clauses.append("NOT EXISTS (SELECT 1 FROM json_each(m.metadata) j WHERE j.key = ? AND j.type <> 'null')")
            params.append(c.key)
        elif isinstance(c.value, bool):
            clauses.append("EXISTS (SELECT 1 FROM json_each(m.metadata) j WHERE j.key = ? AND j.type = ?)")
            params += [c.key, "true" if c.value else "false"]
        else:
            kinds = "'text'" if isinstance(c.value, str) else "'integer', 'real'"
            clauses.append(
                f"EXISTS (SELECT 1 FROM json_each(m.metadata) j WHERE j.key = ? AND j.type IN ({kinds}) "
                "AND j.value = ?)"
            )
            params += [c.key, c.value]
    return clauses, params


class SQLiteMemoryStore:
    """A :class:`~handrail.stores.types.MemoryStore` in a SQLite file (the embedded default).

    Memories live in the table ``handrail_memories``; an FTS5 index (``handrail_memories_fts``, tokenizer
    ``unicode61`` with accents removed) serves the search, ranked by ``bm25()``. A query matches the memories
    holding at least one of its words (a word is a run of letters and digits, so quotes, operators and other
    full-text syntax in the query are never interpreted). The file may be shared by several processes and
    threads (WAL mode); other stores may use the same file.

    Args:
        path: The database file (created on first use with its folder), or ``":memory:"``.

    Raises (on first use):
        StoreError: The file cannot be opened, is not a database, or holds a newer schema of this store.

    Example:
        >>> store = SQLiteMemoryStore(":memory:")
        >>> _ = store.add_memories(messages=[ChatMessage.from_user("Ada's cat is called Turing")], user_id="ada")
        >>> [m.text for m in store.search_memories(query='"cat" OR', user_id="ada")]
        ["Ada's cat is called Turing"]
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._db = SQLiteDatabase(self.path, store=_STORE, migrations=_MIGRATIONS)

    def add_memories(
        self,
        *,
        messages: list[ChatMessage],
        user_id: str | None = None,
        run_id: str | None = None,
        agent_id: str | None = None,
    ) -> list[str]:
        """Store each message's text (its text parts joined by newlines) as one memory, all or nothing.

        Messages without text (tool calls, tool results, empty text) are skipped. Each stored message gets an id
        in ``meta["message_id"]`` (assigned IN PLACE when missing); a message whose id is already stored in
        exactly this scope is skipped, so adding the same messages again adds nothing.

        Args:
            messages: The messages, in order.
            user_id: The user the memories belong to.
            run_id: The run they come from.
            agent_id: The agent they belong to.

        Returns:
            The new memory ids, in message order (skipped messages have none).

        Raises:
            ConfigurationError: No id given, or an empty id.
            ConfigurationTypeError: An id is not a string, or ``messages`` is not a list of ChatMessage.
            SerializationError: A message's ``meta`` is not JSON-serializable (nothing is added).
            StoreError: The database failed (nothing is added).
        """
        check_scope(user_id, run_id, agent_id, required=True, operation="add_memories")
        new = new_memories(messages)
        if not new:
            return []
        created_at = utc_now()
        added: list[str] = []
        with self._db.transaction() as conn:
            for item in new:
                cursor = conn.execute(
                    "INSERT INTO handrail_memories (memory_id, message_id, user_id, run_id, agent_id, role, name, "
                    "content, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    (item.memory_id, item.message_id, user_id, run_id, agent_id, item.role, item.name,
                     item.content, item.metadata_json, created_at),
                )  # fmt: skip
                if cursor.rowcount == 1:
                    added.append(item.memory_id)
        return added

    def search_memories(
        self,
        *,
        query: str | None = None,
        filters: dict[str, Any] | None = None,
        top_k: int = 5,
        user_id: str | None = None,
        run_id: str | None = None,
        agent_id: str | None = None,
        include_memory_metadata: bool = False,
    ) -> list[ChatMessage]:
        """The best ``top_k`` memories for ``query`` among those of the scope that pass ``filters``.

        Args:
            query: Free text (any characters); None for the most recent memories. A query with no word
                (only punctuation) matches nothing.
            filters: Equality filters (see :mod:`handrail.stores._memory_common`).
            top_k: At most this many results (at least 1).
            user_id: Only memories of this user.
            run_id: Only memories of this run.
            agent_id: Only memories of this agent (the three ids are ANDed; none given: every memory).
            include_memory_metadata: Add scope ids, ``created_at``, ``score`` (``-bm25()``: higher is better)
                and ``metadata`` to each ``meta``.

        Returns:
            Messages best first (most recent first without a query, and among equal scores).

        Raises:
            ConfigurationError: ``top_k <= 0``, an empty id, or an unsupported filter.
            ConfigurationTypeError: ``top_k``, ``query`` or an id of the wrong type.
            StoreError: The database failed, or a stored row is corrupt (names the memory id).
        """
        check_scope(user_id, run_id, agent_id, required=False, operation="search_memories")
        top_k = check_top_k(top_k)
        clauses, params = _where(user_id, run_id, agent_id, parse_filters(filters))
        if query is None:
            where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
            sql = f"SELECT {_COLUMNS}, NULL FROM handrail_memories m {where} ORDER BY m.seq DESC LIMIT ?"
        else:
            terms = query_terms(query)
            if not terms:
                return []
            clauses.insert(0, "handrail_memories_fts MATCH ?")
            params.insert(0, " OR ".join(f'"{t}"' for t in terms))  # words hold no quote: each is one phrase
            sql = (
                f"SELECT {_COLUMNS}, -bm25(handrail_memories_fts) AS score FROM handrail_memories_fts "
                f"JOIN handrail_memories m ON m.seq = handrail_memories_fts.rowid WHERE {' AND '.join(clauses)} "
                "ORDER BY score DESC, m.seq DESC LIMIT ?"
            )
        try:
            rows = self._db.connection().execute(sql, (*params, top_k)).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"{_STORE}: searching {self.path} failed: {exc}") from exc
        return [build_memory_message(_STORE, row, include_metadata=include_memory_metadata) for row in rows]

    def delete_memory(self, memory_id: str) -> None:
        """Delete one memory (an unknown id is not an error).

        Raises:
            ConfigurationTypeError: ``memory_id`` is not a string.
            StoreError: The database failed.
        """
        check_memory_id(memory_id)
        with self._db.transaction() as conn:
            conn.execute("DELETE FROM handrail_memories WHERE memory_id = ?", (memory_id,))

    def delete_all_memories(
        self, *, user_id: str | None = None, run_id: str | None = None, agent_id: str | None = None
    ) -> int:
        """Delete the memories of a scope (the ids ANDed; none given: every memory of this file).

        Returns:
            How many memories were deleted.

        Raises:
            ConfigurationError: An empty id.
            ConfigurationTypeError: An id is not a string.
            StoreError: The database failed.
        """
        check_scope(user_id, run_id, agent_id, required=False, operation="delete_all_memories")
        clauses, params = _where(user_id, run_id, agent_id, [])
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        with self._db.transaction() as conn:
            return int(conn.execute(f"DELETE FROM handrail_memories AS m {where}", params).rowcount)

    def close(self) -> None:
        """Close this thread's connection (a later call opens it again)."""
        self._db.close()

    def to_dict(self) -> dict[str, Any]:
        """``{"type": "handrail.stores.memory_sqlite.SQLiteMemoryStore", "init_parameters": {"path": ...}}``."""
        return default_to_dict(self, path=self.path)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SQLiteMemoryStore:
        """A store on the same file, from :meth:`to_dict` output.

        Raises:
            SerializationError: ``data`` is not this class's envelope.
        """
        store: SQLiteMemoryStore = default_from_dict(cls, data)
        return store
