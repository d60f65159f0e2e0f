"""A chat message store in PostgreSQL (psycopg 3 with a connection pool), for many processes and machines."""

from __future__ import annotations

import json
from typing import Any

from handrail.core.secret import Secret, deserialize_secret
from handrail.core.serialization import default_from_dict, default_to_dict, init_parameters
from handrail.dataclasses.chat_message import ChatMessage
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError
from handrail.stores._chat_common import check_history_id, check_last_k, decode_message, encode_messages
from handrail.stores._postgres import PostgresDatabase, redact_dsn

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

# See chat_sqlite._SELECT_ROUNDS: from the k-th last user message on, or everything when there are at most k.
_SELECT_ROUNDS = """
WITH starts AS (
    SELECT seq FROM handrail_chat_messages WHERE chat_history_id = %(hid)s AND role = 'user'
    ORDER BY seq DESC LIMIT 2 OFFSET %(skip)s
)
SELECT message_id, data FROM handrail_chat_messages
WHERE chat_history_id = %(hid)s
  AND seq >= CASE WHEN (SELECT count(*) FROM starts) = 2 THEN (SELECT max(seq) FROM starts) ELSE 0 END
ORDER BY seq
"""
_SELECT_ALL = "SELECT message_id, data FROM handrail_chat_messages WHERE chat_history_id = %s ORDER BY seq"
# The batch travels as one JSON array of [message_id, role, data] triples: psycopg adapts one string far faster
# than three Python lists, and WITH ORDINALITY keeps the batch's order.
_INSERT = """
INSERT INTO handrail_chat_messages (chat_history_id, seq, message_id, role, data)
SELECT %(hid)s, %(base)s + n, e ->> 0, e ->> 1, e ->> 2
FROM json_array_elements(%(rows)s::json) WITH ORDINALITY AS m(e, n)
ON CONFLICT (chat_history_id, message_id) DO NOTHING
"""


class PostgresChatMessageStore:
    """Chat histories in a PostgreSQL database (table ``handrail_chat_messages``), through a connection pool.

    The table is created on first use; the database may also hold the other handrail stores. Each write is
    one transaction holding a per-history lock, so a batch is stored whole, contiguous and in order, or not at
    all, even with many writers.

    Args:
        dsn: A libpq connection string or URL, e.g. ``postgresql://app@db:5432/app``. Give a DSN holding a
            password as a Secret (``Secret.from_env_var("HANDRAIL_POSTGRES_DSN")``): a plain string with a
            password works but cannot be serialized.
        store_system_messages: Keep system messages (skipped by default).
        min_size: Connections the pool keeps open.
        max_size: At most this many connections.
        timeout: Seconds to wait for a connection (also for the server on first use).

    Raises:
        ConfigurationError: psycopg is not installed, the DSN is empty, or the Secret's variable is not set.
        ConfigurationTypeError: ``dsn`` is neither a string nor a Secret.
        StoreError (on first use): The server is unreachable (the error holds the DSN with the password
            hidden), or holds a newer schema version.
    """

    def __init__(
        self,
        dsn: str | Secret,
        *,
        store_system_messages: bool = False,
        min_size: int = 1,
        max_size: int = 4,
        timeout: float = 10.0,
    ) -> None:
        if not isinstance(dsn, str | Secret):
            raise ConfigurationTypeError(f"dsn must be a str or a Secret, got {type(dsn).__name__}.")
        resolved = dsn.resolve_value() if isinstance(dsn, Secret) else dsn
        if not resolved:
            raise ConfigurationError(f"{type(self).__name__}: the DSN is empty.")
        self.dsn = dsn
        self.store_system_messages = store_system_messages
        self.min_size, self.max_size, self.timeout = min_size, max_size, timeout
        self._name = type(self).__name__
        self._db = PostgresDatabase(
            resolved, store=self._name, migrations=_MIGRATIONS, min_size=min_size, max_size=max_size, timeout=timeout
        )

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
            StoreError: The database failed; nothing was written.
        """
        check_history_id(chat_history_id)
        encoded = encode_messages(messages, store_system_messages=self.store_system_messages)
        if not encoded:
            return 0
        with self._db.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_LOCK_CLASS, chat_history_id))
            row = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM handrail_chat_messages WHERE chat_history_id = %s",
                (chat_history_id,),
            ).fetchone()
            rows = json.dumps([(e.message_id, e.role, e.data) for e in encoded], ensure_ascii=False)
            params = {"hid": chat_history_id, "base": int(row[0]) if row else 0, "rows": rows}
            return conn.execute(_INSERT, params).rowcount

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
        with self._db.connection() as conn:
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
        with self._db.connection() as conn:
            row = conn.execute(
                "SELECT count(*) FROM handrail_chat_messages WHERE chat_history_id = %s", (chat_history_id,)
            ).fetchone()
        return int(row[0]) if row else 0

    def delete_messages(self, chat_history_id: str) -> None:
        """Delete one history (an unknown id is not an error).

        Raises:
            StoreError: The database failed; nothing was deleted.
        """
        check_history_id(chat_history_id)
        with self._db.transaction() as conn:
            conn.execute("DELETE FROM handrail_chat_messages WHERE chat_history_id = %s", (chat_history_id,))

    def delete_all_messages(self) -> None:
        """Delete every history of this store (the other stores in the database are not touched).

        Raises:
            StoreError: The database failed; nothing was deleted.
        """
        with self._db.transaction() as conn:
            conn.execute("DELETE FROM handrail_chat_messages")

    def close(self) -> None:
        """Close the connection pool (a later call opens it again)."""
        self._db.close()

    def to_dict(self) -> dict[str, Any]:
        """``{"type": ..., "init_parameters": {"dsn", "store_system_messages", "min_size", "max_size", "timeout"}}``.

        A Secret DSN is written as its variable names; a string DSN as is.

        Raises:
            SerializationError: The DSN is a string holding a password, or a token Secret: it would be written
                in plain text. Pass ``dsn=Secret.from_env_var(...)`` instead.
        """
        if isinstance(self.dsn, Secret):
            dsn: Any = self.dsn.to_dict()
        elif redact_dsn(self.dsn) != self.dsn:
            raise SerializationError(
                f"{self._name}: the DSN {redact_dsn(self.dsn)} holds a password, which would be written in plain "
                "text. Pass dsn=Secret.from_env_var('NAME') so only the variable name is written."
            )
        else:
            dsn = self.dsn
        return default_to_dict(
            self,
            dsn=dsn,
            store_system_messages=self.store_system_messages,
            min_size=self.min_size,
            max_size=self.max_size,
            timeout=self.timeout,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PostgresChatMessageStore:
        """A store built from :meth:`to_dict` output (a secret DSN is read from its variable now).

        Raises:
            SerializationError: For data without ``init_parameters``, unknown parameters or a bad secret.
        """
        params = init_parameters(data, cls)
        if isinstance(params.get("dsn"), dict):
            params["dsn"] = deserialize_secret(params["dsn"])
        store: PostgresChatMessageStore = default_from_dict(cls, {**data, "init_parameters": params})
        return store
