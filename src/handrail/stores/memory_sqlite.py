"""SQLiteMemoryStore: long-term memories in a SQLite file, searched with FTS5 and ranked by BM25."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from handrail.errors import StoreError
from handrail.stores._memory_base import COLUMNS, SQLMemoryStore
from handrail.stores._memory_common import Condition, NewMemory, Scope, utc_now
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

_INSERT = (
    "INSERT INTO handrail_memories (memory_id, message_id, user_id, run_id, agent_id, role, name, content, metadata, "
    "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)


class SQLiteMemoryStore(SQLMemoryStore):
    """A :class:`~handrail.stores.types.MemoryStore` in a SQLite file (the embedded default).

    Memories live in the table ``handrail_memories``; an FTS5 index (``handrail_memories_fts``, tokenizer
    ``unicode61`` with accents removed) serves the search, ranked by ``bm25()`` (``score`` is ``-bm25()``: higher
    is better). A query matches the memories holding at least one of its words (a word is a run of letters and
    digits, so quotes, operators and other full-text syntax in the query are never interpreted). The file may be
    shared by several processes and threads (WAL mode); other stores may use the same file. When the database
    fails a method raises StoreError naming the store and the file, and writes nothing.

    Args:
        path: The database file (created on first use with its folder), or ``":memory:"``.

    Raises (on first use):
        StoreError: The file cannot be opened, is not a database, or holds a newer schema of this store.

    Examples:
        >>> from handrail.dataclasses.chat_message import ChatMessage
        >>> store = SQLiteMemoryStore(":memory:")
        >>> _ = store.add_memories(messages=[ChatMessage.from_user("Ada's cat is called Turing")], user_id="ada")
        >>> [m.text for m in store.search_memories(query='"cat" OR', user_id="ada")]
        ["Ada's cat is called Turing"]
    """

    _param = "?"

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._db = SQLiteDatabase(self.path, store=_STORE, migrations=_MIGRATIONS)

    @contextlib.contextmanager
    def _session(self, *, write: bool, key: str = "") -> Iterator[sqlite3.Connection]:
        try:
            with self._db.transaction() if write else contextlib.nullcontext(self._db.connection()) as conn:
                yield conn
        except sqlite3.Error as exc:
            raise StoreError(f"{_STORE}: {'writing to' if write else 'searching'} {self.path} failed: {exc}") from exc

    def _add(self, new: list[NewMemory], scope: Scope) -> list[str]:
        created_at = utc_now()
        added: list[str] = []
        with self._session(write=True) as conn:
            for item in new:
                cursor = conn.execute(
                    _INSERT,
                    (item.memory_id, item.message_id, scope.user_id, scope.run_id, scope.agent_id, item.role,
                     item.name, item.content, item.metadata_json, created_at),
                )  # fmt: skip
                if cursor.rowcount == 1:
                    added.append(item.memory_id)
        return added

    def _metadata_test(self, condition: Condition) -> tuple[str, list[Any]]:
        key, value = condition.key, condition.value
        if value is None:
            return "NOT EXISTS (SELECT 1 FROM json_each(m.metadata) j WHERE j.key = ? AND j.type <> 'null')", [key]
        if isinstance(value, bool):
            test = "EXISTS (SELECT 1 FROM json_each(m.metadata) j WHERE j.key = ? AND j.type = ?)"
            return test, [key, "true" if value else "false"]
        kinds = "'text'" if isinstance(value, str) else "'integer', 'real'"
        test = f"EXISTS (SELECT 1 FROM json_each(m.metadata) j WHERE j.key = ? AND j.type IN ({kinds}) AND j.value = ?)"
        return test, [key, value]

    def _ranked(self, terms: list[str], clauses: list[str], params: list[Any]) -> tuple[str, list[Any]]:
        sql = (
            f"SELECT {COLUMNS}, -bm25(handrail_memories_fts) AS score FROM handrail_memories_fts "
            "JOIN handrail_memories m ON m.seq = handrail_memories_fts.rowid "
            f"WHERE {' AND '.join(['handrail_memories_fts MATCH ?', *clauses])} ORDER BY score DESC, m.seq DESC LIMIT ?"
        )
        return sql, [" OR ".join(f'"{t}"' for t in terms), *params]  # words hold no quote: each is one phrase

    def close(self) -> None:
        """Close this thread's connection (a later call opens it again)."""
        self._db.close()

    def _init_parameters(self) -> dict[str, Any]:
        return {"path": self.path}
