"""PostgresMemoryStore: long-term memories in PostgreSQL, searched with tsvector / tsquery and ranked by ts_rank."""

from __future__ import annotations

import json
import re
from typing import Any

from handrail.core.secret import Secret
from handrail.errors import ConfigurationError
from handrail.stores._memory_base import COLUMNS, SQLMemoryStore
from handrail.stores._memory_common import Condition, NewMemory, Scope
from handrail.stores._postgres import PostgresStore

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

_CONFIG_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")


def _ranked_search(config: str, terms: list[str], clauses: list[str], params: list[Any]) -> tuple[str, list[Any]]:
    """The ranked search: memories matching any word (an OR of ``plainto_tsquery`` per word), best first.

    The query is a constant subquery, so the planner can use the GIN index on ``tsv``; the last parameter,
    ``LIMIT %s``, is left for the caller.
    """
    tsquery = " || ".join(["plainto_tsquery(%s::regconfig, %s)"] * len(terms))
    sql = (
        f"SELECT {COLUMNS}, ts_rank(m.tsv, q.query, 1) AS score FROM handrail_memories m, "
        f"(SELECT {tsquery} AS query) q WHERE m.tsv @@ q.query "
        f"{''.join(' AND ' + c for c in clauses)} ORDER BY score DESC, m.seq DESC LIMIT %s"
    )
    return sql, [p for t in terms for p in (config, t)] + params


class PostgresMemoryStore(PostgresStore, SQLMemoryStore):
    """A :class:`~handrail.stores.types.MemoryStore` in PostgreSQL (table ``handrail_memories``), through a pool.

    Each memory's text is indexed in a generated ``tsvector`` column (GIN index) with the store's text search
    configuration; a query matches the memories holding at least one of its words (a word is a run of letters
    and digits, turned into a tsquery with ``plainto_tsquery``, so no user text raises), ranked by
    ``ts_rank(tsv, query, 1)`` (term frequency, divided by ``1 + log(length)``; there is no rarity weighting as
    in BM25); ``score`` is that rank (higher is better). A query of only stop words of the configuration matches
    nothing. The table is created on first use; the database may also hold the other handrail stores. When the
    database fails a method raises StoreError naming the store, and writes nothing.

    Args:
        dsn: A libpq connection string or URL, e.g. ``postgresql://app@db:5432/app``. Give a DSN holding a
            password as a Secret (``Secret.from_env_var("HANDRAIL_POSTGRES_DSN")``): a plain string with a
            password works but cannot be serialized.
        text_search_config: The PostgreSQL text search configuration: ``"simple"`` (the default: lowercased
            words, any language, no stemming, like the SQLite store) or a language such as ``"english"``
            (stemming and stop words).
        min_size: Connections the pool keeps open.
        max_size: At most this many connections, in a pool shared by the process's PostgreSQL stores of the same
            DSN and pool settings.
        timeout: Seconds to wait for a connection (also for the server on first use).

    Raises:
        ConfigurationError: psycopg is not installed, the DSN is empty, the Secret's variable is not set, or
            ``text_search_config`` is not a configuration name.
        ConfigurationTypeError: ``dsn`` is neither a string nor a Secret.
        StoreError (on first use): The server is unreachable (the error holds the DSN with the password
            hidden), holds a newer schema version, or does not know ``text_search_config``.
    """

    _param = "%s"

    def __init__(
        self,
        dsn: str | Secret,
        *,
        text_search_config: str = "simple",
        min_size: int = 1,
        max_size: int = 4,
        timeout: float = 10.0,
    ) -> None:
        self._open(dsn, _MIGRATIONS, min_size=min_size, max_size=max_size, timeout=timeout)
        if not isinstance(text_search_config, str) or not _CONFIG_NAME.match(text_search_config):
            raise ConfigurationError(
                f"PostgresMemoryStore: text_search_config must name a text search configuration such as 'simple' "
                f"or 'english', got {text_search_config!r}."
            )
        self.text_search_config = text_search_config

    def _add(self, new: list[NewMemory], scope: Scope) -> list[str]:
        params = {
            "user_id": scope.user_id,
            "run_id": scope.run_id,
            "agent_id": scope.agent_id,
            "config": self.text_search_config,
            "ids": [m.memory_id for m in new],
            "message_ids": [m.message_id for m in new],
            "roles": [m.role for m in new],
            "names": [m.name for m in new],
            "contents": [m.content for m in new],
            "metadata": [m.metadata_json for m in new],
        }
        with self._session(write=True) as conn:
            inserted = {str(row[0]) for row in conn.execute(_INSERT, params).fetchall()}
        return [m.memory_id for m in new if m.memory_id in inserted]

    def _metadata_test(self, condition: Condition) -> tuple[str, list[Any]]:
        if condition.value is None:
            return "coalesce(m.metadata -> %s, 'null'::jsonb) = 'null'::jsonb", [condition.key]
        return "m.metadata -> %s = %s::jsonb", [condition.key, json.dumps(condition.value)]

    def _ranked(self, terms: list[str], clauses: list[str], params: list[Any]) -> tuple[str, list[Any]]:
        return _ranked_search(self.text_search_config, terms, clauses, params)

    def _init_parameters(self) -> dict[str, Any]:
        return self._db.init_parameters(text_search_config=self.text_search_config)
