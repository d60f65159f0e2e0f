"""PostgreSQL plumbing shared by the stores: a psycopg 3 connection pool, transactions, versioned migrations.

Each store keeps its own schema version in the table ``handrail_schema``; migrations run once, under an
advisory lock, so several processes starting together do not race.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from handrail.errors import ConfigurationError, StoreError

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

_SCHEMA_TABLE = "CREATE TABLE IF NOT EXISTS handrail_schema (store TEXT PRIMARY KEY, version INTEGER NOT NULL)"

__all__ = ["PostgresDatabase", "redact_dsn"]

_MIGRATION_LOCK = 0x68616E64  # "hand": the advisory lock key held while a store's schema is brought up to date


def redact_dsn(dsn: str) -> str:
    """The DSN with any password replaced by ``***`` (for error messages)."""
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", re.sub(r"(password\s*=\s*)\S+", r"\1***", dsn))


class PostgresDatabase:
    """A PostgreSQL database used by one store, through a connection pool opened on first use.

    Args:
        dsn: A libpq connection string or URL (``postgresql://user@host:5432/db``).
        store: The store's name, used in errors and as its key in ``handrail_schema``.
        migrations: SQL scripts; script ``i`` brings the schema from version ``i`` to ``i + 1``.
        min_size: Connections kept open.
        max_size: At most this many connections.
        timeout: Seconds to wait for a connection before failing.

    Raises:
        ConfigurationError: psycopg (the ``postgres`` extra) is not installed.
        StoreError (on first use): The server is unreachable, or holds a newer schema version of this store.
    """

    def __init__(
        self,
        dsn: str,
        *,
        store: str,
        migrations: Sequence[str],
        min_size: int = 1,
        max_size: int = 4,
        timeout: float = 10.0,
    ) -> None:
        try:
            import psycopg  # noqa: F401
            import psycopg_pool  # noqa: F401
        except ImportError as exc:
            raise ConfigurationError(
                f"{store} needs psycopg 3 and psycopg-pool: pip install 'handrail[postgres]' ({exc})."
            ) from exc
        self.dsn = dsn
        self.store = store
        self.migrations = tuple(migrations)
        self.min_size, self.max_size, self.timeout = min_size, max_size, timeout
        self._pool: ConnectionPool[Any] | None = None
        self._lock = threading.Lock()

    def _where(self) -> str:
        return f"PostgreSQL at {redact_dsn(self.dsn)}"

    def pool(self) -> ConnectionPool[Any]:
        """The connection pool (opened and migrated on first use)."""
        if self._pool is not None:
            return self._pool
        with self._lock:
            if self._pool is None:
                import psycopg
                from psycopg_pool import ConnectionPool

                pool: ConnectionPool[Any] = ConnectionPool(
                    self.dsn, min_size=self.min_size, max_size=self.max_size, timeout=self.timeout, open=False,
                    kwargs={"autocommit": True},
                )  # fmt: skip
                try:
                    pool.open(wait=True, timeout=self.timeout)
                    with pool.connection() as conn:
                        self._migrate(conn)
                except (psycopg.Error, Exception) as exc:
                    pool.close()
                    if isinstance(exc, StoreError):
                        raise
                    raise StoreError(f"{self.store}: cannot reach {self._where()}: {exc}") from exc
                self._pool = pool
        return self._pool

    @contextlib.contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection inside one transaction: it commits when the block ends, or rolls back on an error.

        psycopg errors become StoreError naming the store (the original is chained).
        """
        import psycopg

        try:
            with self.pool().connection() as conn, conn.transaction():
                yield conn
        except psycopg.Error as exc:
            raise StoreError(f"{self.store}: {self._where()} failed: {exc}") from exc

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection in autocommit mode (held until the block ends)."""
        import psycopg

        try:
            with self.pool().connection() as conn:
                yield conn
        except psycopg.Error as exc:
            raise StoreError(f"{self.store}: {self._where()} failed: {exc}") from exc

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            conn.execute(_SCHEMA_TABLE)
            row = conn.execute("SELECT version FROM handrail_schema WHERE store = %s", (self.store,)).fetchone()
            version = int(row[0]) if row else 0
            if version > len(self.migrations):
                raise StoreError(
                    f"{self.store}: {self._where()} holds schema version {version}, written by a newer handrail "
                    f"(this one knows up to {len(self.migrations)})."
                )
            for script in self.migrations[version:]:
                conn.execute(script)  # trusted, constant SQL of this package
            conn.execute(
                "INSERT INTO handrail_schema (store, version) VALUES (%s, %s) "
                "ON CONFLICT (store) DO UPDATE SET version = excluded.version",
                (self.store, len(self.migrations)),
            )

    def close(self) -> None:
        """Close the pool (a later use opens it again)."""
        with self._lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None
