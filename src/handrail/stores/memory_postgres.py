"""PostgresMemoryStore: long-term memories in PostgreSQL, searched with tsvector / tsquery and ranked by ts_rank."""

from __future__ import annotations

import json
import re
from typing import Any

from handrail.core.secret import Secret, deserialize_secret
from handrail.core.serialization import default_from_dict, default_to_dict, init_parameters
from handrail.dataclasses.chat_message import ChatMessage
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError
from handrail.stores._memory_common import (
    Condition,
    build_memory_message,
    check_memory_id,
    check_scope,
    check_top_k,
    new_memories,
    parse_filters,
    query_terms,
)
from handrail.stores._postgres import PostgresDatabase, redact_dsn

__all__ = ["PostgresMemoryStore"]

# Each row keeps the text search configuration it was indexed with, so stores with different configurations can
# share the table; the generated column and its GIN index serve the search.
_MIGRATIONS = [
    """
    CREATE TABLE handrail_memories (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        memory_id TEXT NOT NULL UNIQUE,
        message_id TEXT NOT NULL,
        user_id TEXT,
        run_id TEXT,
        agent_id TEXT,
        role TEXT NOT NULL,
        name TEXT,
        content TEXT NOT NULL,
        metadata JSONB NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        text_config REGCONFIG NOT NULL,
        tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector(text_config, content)) STORED
    );
    CREATE UNIQUE INDEX handrail_memories_message
        ON handrail_memories (message_id, coalesce(user_id, ''), coalesce(run_id, ''), coalesce(agent_id, ''));
    CREATE INDEX handrail_memories_user ON handrail_memories (user_id);
    CREATE INDEX handrail_memories_run ON handrail_memories (run_id);
    CREATE INDEX handrail_memories_agent ON handrail_memories (agent_id);
    CREATE INDEX handrail_memories_tsv ON handrail_memories USING GIN (tsv);
    """,
]

_INSERT = """
INSERT INTO handrail_memories
    (memory_id, message_id, user_id, run_id, agent_id, role, name, content, metadata, created_at, text_config)
SELECT u.memory_id, u.message_id, %(user_id)s, %(run_id)s, %(agent_id)s, u.role, u.name, u.content,
       u.metadata::jsonb, now(), %(config)s::regconfig
FROM unnest(%(ids)s::text[], %(message_ids)s::text[], %(roles)s::text[], %(names)s::text[], %(contents)s::text[],
            %(metadata)s::text[]) WITH ORDINALITY AS u(memory_id, message_id, role, name, content, metadata, n)
ORDER BY u.n
ON CONFLICT DO NOTHING
RETURNING memory_id
"""

_COLUMNS = "m.memory_id, m.role, m.name, m.content, m.user_id, m.run_id, m.agent_id, m.created_at, m.metadata"
_CONFIG_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")


def _where(
    user_id: str | None, run_id: str | None, agent_id: str | None, conditions: list[Condition]
) -> tuple[list[str], list[Any]]:
    """SQL tests (ANDed) and their parameters for a scope and filter conditions, on the alias ``m``."""
    clauses: list[str] = []
    params: list[Any] = []
    for column, value in (("user_id", user_id), ("run_id", run_id), ("agent_id", agent_id)):
        if value is not None:
            clauses.append(f"m.{column} = %s")
            params.append(value)
    for c in conditions:
        if c.kind == "column":  # c.key is one of COLUMN_KEYS: a fixed column name
            clauses.append(f"m.{c.key} IS NULL" if c.value is None else f"m.{c.key} = %s")
            params += [] if c.value is None else [c.value]
        elif c.value is None:
            clauses.append("coalesce(m.metadata -> %s, 'null'::jsonb) = 'null'::jsonb")
            params.append(c.key)
        else:
            clauses.append("m.metadata -> %s = %s::jsonb")
            params += [c.key, json.dumps(c.value)]
    return clauses, params


def _ranked_search(config: str, terms: list[str], clauses: list[str], params: list[Any]) -> tuple[str, list[Any]]:
    """The ranked search: memories matching any word (an OR of ``plainto_tsquery`` per word), best first.

    The query is a constant subquery, so the planner can use the GIN index on ``tsv``; the last parameter,
    ``LIMIT %s``, is left for the caller.
    """
    tsquery = " || ".join(["plainto_tsquery(%s::regconfig, %s)"] * len(terms))
    sql = (
        f"SELECT {_COLUMNS}, ts_rank(m.tsv, q.query, 1) AS score FROM handrail_memories m, "
        f"(SELECT {tsquery} AS query) q WHERE m.tsv @@ q.query "
        f"{''.join(' AND ' + c for c in clauses)} ORDER BY score DESC, m.seq DESC LIMIT %s"
    )
    return sql, [p for t in terms for p in (config, t)] + params


class PostgresMemoryStore:
    """A :class:`~handrail.stores.types.MemoryStore` in PostgreSQL (table ``handrail_memories``), through a pool.

    Each memory's text is indexed in a generated ``tsvector`` column (GIN index) with the store's text search
    configuration; a query matches the memories holding at least one of its words (a word is a run of letters
    and digits, turned into a tsquery with ``plainto_tsquery``, so no user text raises), ranked by
    ``ts_rank(tsv, query, 1)`` (term frequency, divided by ``1 + log(length)``; there is no rarity weighting as
    in BM25). The table is created on first use; the database may also hold the other handrail stores.

    Args:
        dsn: A libpq connection string or URL, e.g. ``postgresql://app@db:5432/app``. Give a DSN holding a
            password as a Secret (``Secret.from_env_var("HANDRAIL_POSTGRES_DSN")``): a plain string with a
            password works but cannot be serialized.
        text_search_config: The PostgreSQL text search configuration: ``"simple"`` (the default: lowercased
            words, any language, no stemming, like the SQLite store) or a language such as ``"english"``
            (stemming and stop words).
        min_size: Connections the pool keeps open.
        max_size: At most this many connections.
        timeout: Seconds to wait for a connection (also for the server on first use).

    Raises:
        ConfigurationError: psycopg is not installed, the Secret's variable is not set, or
            ``text_search_config`` is not a configuration name.
        ConfigurationTypeError: ``dsn`` is neither a string nor a Secret.
        StoreError (on first use): The server is unreachable (the error holds the DSN with the password
            hidden), holds a newer schema version, or does not know ``text_search_config``.
    """

    def __init__(
        self,
        dsn: str | Secret,
        *,
        text_search_config: str = "simple",
        min_size: int = 1,
        max_size: int = 4,
        timeout: float = 10.0,
    ) -> None:
        if isinstance(dsn, Secret):
            resolved = dsn.resolve_value()
            if not resolved:
                raise ConfigurationError("PostgresMemoryStore: the DSN secret resolved to nothing.")
        elif isinstance(dsn, str) and dsn:
            resolved = dsn
        else:
            raise ConfigurationTypeError(f"dsn must be a non-empty str or a Secret, got {type(dsn).__name__}.")
        if not isinstance(text_search_config, str) or not _CONFIG_NAME.match(text_search_config):
            raise ConfigurationError(
                f"PostgresMemoryStore: text_search_config must name a text search configuration such as 'simple' "
                f"or 'english', got {text_search_config!r}."
            )
        self.dsn = dsn
        self.text_search_config = text_search_config
        self.min_size, self.max_size, self.timeout = min_size, max_size, timeout
        self._name = type(self).__name__
        self._db = PostgresDatabase(
            resolved, store=self._name, migrations=_MIGRATIONS, min_size=min_size, max_size=max_size, timeout=timeout
        )

    def add_memories(
        self,
        *,
        messages: list[ChatMessage],
        user_id: str | None = None,
        run_id: str | None = None,
        agent_id: str | None = None,
    ) -> list[str]:
        """Store each message's text (its text parts joined by newlines) as one memory, in one transaction.

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
        params = {
            "user_id": user_id,
            "run_id": run_id,
            "agent_id": agent_id,
            "config": self.text_search_config,
            "ids": [m.memory_id for m in new],
            "message_ids": [m.message_id for m in new],
            "roles": [m.role for m in new],
            "names": [m.name for m in new],
            "contents": [m.content for m in new],
            "metadata": [m.metadata_json for m in new],
        }
        with self._db.transaction() as conn:
            inserted = {str(row[0]) for row in conn.execute(_INSERT, params).fetchall()}
        return [m.memory_id for m in new if m.memory_id in inserted]

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
                (only punctuation, or only stop words of the configuration) matches nothing.
            filters: Equality filters (see :mod:`handrail.stores._memory_common`).
            top_k: At most this many results (at least 1).
            user_id: Only memories of this user.
            run_id: Only memories of this run.
            agent_id: Only memories of this agent (the three ids are ANDed; none given: every memory).
            include_memory_metadata: Add scope ids, ``created_at``, ``score`` (``ts_rank``: higher is better)
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
            sql = f"SELECT {_COLUMNS}, NULL FROM handrail_memories m {where} ORDER BY m.seq DESC LIMIT %s"
        else:
            terms = query_terms(query)
            if not terms:
                return []
            sql, params = _ranked_search(self.text_search_config, terms, clauses, params)
        with self._db.connection() as conn:
            rows = conn.execute(sql, (*params, top_k)).fetchall()
        return [build_memory_message(self._name, row, include_metadata=include_memory_metadata) for row in rows]

    def delete_memory(self, memory_id: str) -> None:
        """Delete one memory (an unknown id is not an error).

        Raises:
            ConfigurationTypeError: ``memory_id`` is not a string.
            StoreError: The database failed.
        """
        check_memory_id(memory_id)
        with self._db.transaction() as conn:
            conn.execute("DELETE FROM handrail_memories WHERE memory_id = %s", (memory_id,))

    def delete_all_memories(
        self, *, user_id: str | None = None, run_id: str | None = None, agent_id: str | None = None
    ) -> int:
        """Delete the memories of a scope (the ids ANDed; none given: every memory of this database).

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
        """Close the connection pool (a later call opens it again)."""
        self._db.close()

    def to_dict(self) -> dict[str, Any]:
        """``{"type": ..., "init_parameters": {"dsn", "text_search_config", "min_size", "max_size", "timeout"}}``.

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
            text_search_config=self.text_search_config,
            min_size=self.min_size,
            max_size=self.max_size,
            timeout=self.timeout,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PostgresMemoryStore:
        """A store built from :meth:`to_dict` output (a secret DSN is read from its variable now).

        Raises:
            SerializationError: For data without ``init_parameters``, unknown parameters or a bad secret.
        """
        params = init_parameters(data, cls)
        if isinstance(params.get("dsn"), dict):
            params["dsn"] = deserialize_secret(params["dsn"])
        store: PostgresMemoryStore = default_from_dict(cls, {**data, "init_parameters": params})
        return store
