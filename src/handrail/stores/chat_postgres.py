"""A chat message store in PostgreSQL (psycopg 3 with a connection pool), for many processes and machines."""

from __future__ import annotations

import json
from typing import Any

from handrail.core.secret import Secret
from handrail.stores._chat_base import ChatQueries, SQLChatMessageStore
from handrail.stores._chat_common import EncodedMessage
from handrail.stores._postgres import PostgresStore

__all__ = ["PostgresChatMessageStore"]

_MIGRATIONS = [
    """
    CREATE TABLE handrail_chat_messages (
        chat_history_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        message_id TEXT NOT NULL,
        role TEXT NOT NULL,
        data TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        PRIMARY KEY (chat_history_id, seq),
        UNIQUE (chat_history_id, message_id)
    );
    CREATE INDEX handrail_chat_messages_by_role ON handrail_chat_messages (chat_history_id, role, seq);
    """,
]

_LOCK_CLASS = 0x63686174  # "chat": first key of the transaction advisory lock taken per history while writing

# The batch travels as one JSON array of [message_id, role, data] triples: psycopg adapts one string far faster
# than three Python lists, and WITH ORDINALITY keeps the batch's order.
_INSERT = """
INSERT INTO handrail_chat_messages (chat_history_id, seq, message_id, role, data)
SELECT %(hid)s, %(base)s + n, e ->> 0, e ->> 1, e ->> 2
FROM json_array_elements(%(rows)s::json) WITH ORDINALITY AS m(e, n)
ON CONFLICT (chat_history_id, message_id) DO NOTHING
"""


class PostgresChatMessageStore(PostgresStore, SQLChatMessageStore):
    """Chat histories in a PostgreSQL database (table ``handrail_chat_messages``), through a connection pool.

    A :class:`~handrail.stores.types.ChatMessageStore`. The table is created on first use; the database may also
    hold the other handrail stores. Each write is one transaction holding a per-history lock, so a batch is
    stored whole, contiguous and in order, or not at all, even with many writers. When the database fails a
    method raises StoreError naming the store, and writes nothing.

    Args:
        dsn: A libpq connection string or URL, e.g. ``postgresql://app@db:5432/app``. Give a DSN holding a
            password as a Secret (``Secret.from_env_var("HANDRAIL_POSTGRES_DSN")``): a plain string with a
            password works but cannot be serialized.
        store_system_messages: Keep system messages (skipped by default).
        min_size: Connections the pool keeps open.
        max_size: At most this many connections, in a pool shared by the process's PostgreSQL stores of the same
            DSN and pool settings.
        timeout: Seconds to wait for a connection (also for the server on first use).

    Raises:
        ConfigurationError: psycopg is not installed, the DSN is empty, or the Secret's variable is not set.
        ConfigurationTypeError: ``dsn`` is neither a string nor a Secret.
        StoreError (on first use): The server is unreachable (the error holds the DSN with the password
            hidden), or holds a newer schema version.
    """

    _sql = ChatQueries.written_with("%({})s")

    def __init__(
        self,
        dsn: str | Secret,
        *,
        store_system_messages: bool = False,
        min_size: int = 1,
        max_size: int = 4,
        timeout: float = 10.0,
    ) -> None:
        self._open(dsn, _MIGRATIONS, min_size=min_size, max_size=max_size, timeout=timeout)
        self.store_system_messages = store_system_messages

    def _append(self, chat_history_id: str, encoded: list[EncodedMessage]) -> int:
        with self._session(write=True) as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_LOCK_CLASS, chat_history_id))
            rows = json.dumps([(e.message_id, e.role, e.data) for e in encoded], ensure_ascii=False)
            params = {"hid": chat_history_id, "base": self._last_seq(conn, chat_history_id), "rows": rows}
            return conn.execute(_INSERT, params).rowcount

    def _init_parameters(self) -> dict[str, Any]:
        return self._db.init_parameters(store_system_messages=self.store_system_messages)
