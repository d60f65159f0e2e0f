"""A snapshot store in PostgreSQL (approvals shared by processes on many machines).

Table ``handrail_snapshots``: one row per snapshot, ``snapshot_id`` (primary key), ``status``, ``created_at``
(the snapshot's timestamp), ``updated_at``, ``continued_in`` and ``data`` (BYTEA): the snapshot's bytes exactly
as :func:`~handrail.dataclasses.snapshot.encode_snapshot` writes them. Table ``handrail_snapshot_entries``
(schema version 2) holds the ledger entries a run's tool step changed since the record was last written whole,
one row per ``(snapshot_id, call_id)``; every read folds them into the record's ledger and every write of the
record deletes them in its transaction. Every change is one transaction.

A claim is a session advisory lock (``pg_try_advisory_lock``) held on the one connection a process keeps for
all of its claims: the server releases it when the lease is released or that connection ends (the process
died, even by ``kill -9``). A decision takes the same lock for its transaction (``pg_advisory_xact_lock``,
waiting at most ``lock_timeout``), so it never lands while a run holds the claim, and two decisions on one
snapshot run one after the other: the second sees the first and is a no-op or a DecisionConflictError.

Connections: every store object of a process with the same DSN and pool settings (a resumed run opens its own
from the snapshot's location) shares one pool of at most ``max_size`` connections (default 4) and that one
claims connection, so a process uses at most ``max_size + 1`` connections per DSN and pool settings however
many runs it resumes at once; a claim holds no pooled connection. Size the server's ``max_connections`` for
processes times ``max_size + 1``, plus other clients. A query waits at most ``timeout`` seconds for a pooled
connection, then raises StoreError. Should the claims connection be lost (the server restarted), the claims
on it are lost with it; the next claim opens a new one.

Needs the ``postgres`` extra (psycopg 3 and psycopg-pool).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from handrail.core.secret import Secret
from handrail.dataclasses.snapshot import AgentSnapshot
from handrail.stores._approval_sql import SQLApprovalRecords, approval_migration
from handrail.stores._postgres import PostgresDatabase, dsn_without_password, read_dsn_parameter, redact_dsn
from handrail.stores._postgres_listen import CHANNEL, event_listener
from handrail.stores._service_sql import SQLServiceRecords, service_migration
from handrail.stores._snapshot_base import OnSnapshotError, Release, SnapshotStoreBase
from handrail.stores._snapshot_records import Changes

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresSnapshotStore", "dsn_without_password"]

_MIGRATIONS = [
    """
    CREATE TABLE IF NOT EXISTS handrail_snapshots (
        snapshot_id TEXT PRIMARY KEY,
        status TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        continued_in TEXT,
        data BYTEA NOT NULL
    );
    CREATE INDEX IF NOT EXISTS handrail_snapshots_by_status ON handrail_snapshots (status, created_at, snapshot_id);
    """,
    """
    CREATE TABLE IF NOT EXISTS handrail_snapshot_entries (
        snapshot_id TEXT NOT NULL,
        call_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        data BYTEA NOT NULL,
        PRIMARY KEY (snapshot_id, call_id)
    );
    """,
    approval_migration("BYTEA"),
    service_migration("postgres"),
]
_STORE = "PostgresSnapshotStore"
_ENTRIES = "handrail_snapshot_entries"
_LOCK_SPACE = b"handrail_snapshots\x00"
_EVENTS_LOCK = 0x68726576  # "hrev": held (per transaction) while events are appended, so ids follow commit order


def _lock_key(snapshot_id: str) -> int:
    """The advisory lock key of a snapshot id: a signed 64-bit hash (blake2b)."""
    digest = hashlib.blake2b(_LOCK_SPACE + snapshot_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class PostgresSnapshotStore(SnapshotStoreBase, SQLApprovalRecords, SQLServiceRecords):
    """Snapshots as rows of a PostgreSQL table (see the module docstring), and approval records.

    Approvals (schema version 3) are kept as :mod:`handrail.stores._approval_sql` describes; a decision reads the
    row ``FOR UPDATE`` and compares-and-sets it in one transaction, so concurrent deciders queue on the row.
    The service's tokens, event log and runs (schema version 4, :class:`~handrail.stores.service.ServiceStore`)
    as :mod:`handrail.stores._service_sql` describes. Events are appended under a transaction-scoped advisory
    lock (ids in commit order) with a ``NOTIFY`` in the same transaction; :meth:`wait_for_events` wakes on it
    through one ``LISTEN`` connection per store object that waits (:mod:`handrail.stores._postgres_listen`),
    shared by all its waiters. A run's claim is a session advisory lock, like a snapshot's, on another key.

    Args:
        dsn: The database: a libpq URL or key/value string, or a :class:`~handrail.core.secret.Secret` that
            resolves to one (use ``Secret.from_env_var("HANDRAIL_POSTGRES_DSN")`` so a password is never
            serialized).
        allowed_modules: Module prefixes whose classes state values in the records may name, besides handrail's.
        lock_timeout: Seconds a decision waits for a claim held elsewhere before raising
            SnapshotUnavailableError.
        on_error: Called by ``list_pending`` / ``list_paused`` with the id of each unreadable row and the error
            (the row is skipped); default: a ``UserWarning`` naming the store and the id.
        min_size: Pooled connections kept open.
        max_size: At most this many pooled connections, shared by every store object of the process with the same
            DSN and pool settings; their leases all hold one more connection (see the module docstring). A store
            opened from a URL or a snapshot's location (the CLI, a resumed run) takes the defaults.
        timeout: Seconds to wait for a pooled connection before failing.

    Raises:
        ConfigurationError: psycopg is not installed, the DSN is empty or its Secret's variable is not set, or a
            bad ``lock_timeout``.
        ConfigurationTypeError: ``dsn`` is neither a str nor a Secret.
        StoreError (on first use): The server is unreachable (the message names the store and the DSN without
            its password), or holds a newer schema of this store.
    """

    def __init__(
        self,
        dsn: str | Secret,
        *,
        allowed_modules: Iterable[str] = (),
        lock_timeout: float = 5.0,
        on_error: OnSnapshotError | None = None,
        min_size: int = 1,
        max_size: int = 4,
        timeout: float = 10.0,
    ) -> None:
        super().__init__(allowed_modules=allowed_modules, lock_timeout=lock_timeout, on_error=on_error)
        self.dsn = dsn
        """The DSN as given (a str or a Secret)."""
        self._db = PostgresDatabase(
            dsn, store=_STORE, migrations=_MIGRATIONS, min_size=min_size, max_size=max_size, timeout=timeout
        )
        self._dsn = self._db.dsn
        self._url = dsn_without_password(self._dsn)

    def __str__(self) -> str:
        return f"{_STORE}('{redact_dsn(self._dsn)}')"

    def __repr__(self) -> str:
        return str(self)

    def _init_parameters(self) -> dict[str, Any]:
        """The DSN (a Secret as its variable names), the pool options.

        Raises:
            SerializationError: The DSN is a str holding a password: it would be written in plain text. Pass
                ``dsn=Secret.from_env_var(...)`` instead.
        """
        return self._db.init_parameters()

    @classmethod
    def _read_parameters(cls, params: dict[str, Any]) -> dict[str, Any]:
        return read_dsn_parameter(params)

    def locator(self, snapshot_id: str) -> str:
        """``postgresql://user@host:port/db#<id>``: the DSN without a password, then the id (or :attr:`opened_from`)."""
        if self.opened_from is not None:
            return f"{self.opened_from}#{self._id(snapshot_id)}"
        return f"{self._url}#{self._id(snapshot_id)}"

    def close(self) -> None:
        """Stop using the shared connections (they reopen on next use); held leases keep them open until released.

        The event watcher's listening connection, if :meth:`wait_for_events` opened one, is closed too.
        """
        self._close_watcher()
        self._db.close()

    # -- claims ------------------------------------------------------------------------------------

    def _try_claim(self, snapshot_id: str) -> Release | None:
        return self._db.claim(_lock_key(snapshot_id))

    # -- records -----------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _scope(self, snapshot_id: str | None) -> Iterator[psycopg.Connection[Any]]:
        import psycopg

        with self._db.transaction() as conn:
            if snapshot_id is not None:
                key = _lock_key(snapshot_id)
                if self.lock_timeout <= 0:
                    row = conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (key,)).fetchone()
                    if not (row and row[0]):
                        raise self._being_resumed(snapshot_id)
                else:
                    wait = f"{max(1, int(self.lock_timeout * 1000))}ms"
                    conn.execute("SELECT set_config('lock_timeout', %s, true)", (wait,))
                    try:
                        conn.execute("SELECT pg_advisory_xact_lock(%s)", (key,))
                    except psycopg.errors.LockNotAvailable:
                        raise self._being_resumed(snapshot_id) from None
                    conn.execute("SELECT set_config('lock_timeout', '0', true)")
            yield conn

    def _execute(self, conn: psycopg.Connection[Any] | None, sql: str, params: tuple[Any, ...]) -> Any:
        if conn is not None:
            return conn.execute(sql, params)
        with self._db.connection() as own:
            return own.execute(sql, params).fetchall()

    def _read(self, handle: Any, snapshot_id: str) -> bytes | None:
        sql = "SELECT data FROM handrail_snapshots WHERE snapshot_id = %s"
        if handle is not None:
            row = handle.execute(sql + " FOR UPDATE", (snapshot_id,)).fetchone()
        else:
            rows = self._execute(None, sql, (snapshot_id,))
            row = rows[0] if rows else None
        return None if row is None else bytes(row[0])

    def _exists(self, snapshot_id: str) -> bool:
        return bool(self._execute(None, "SELECT 1 FROM handrail_snapshots WHERE snapshot_id = %s", (snapshot_id,)))

    def _insert(self, handle: Any, snapshot_id: str, snapshot: AgentSnapshot, data: bytes) -> bool:
        cursor = handle.execute(
            "INSERT INTO handrail_snapshots (snapshot_id, status, created_at, updated_at, continued_in, data) "
            "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (snapshot_id) DO NOTHING",
            (snapshot_id, snapshot.status, snapshot.timestamp, datetime.now(UTC), snapshot.continued_in, data),
        )
        return bool(cursor.rowcount == 1)

    def _update(self, handle: Any, snapshot_id: str, snapshot: AgentSnapshot, data: bytes) -> bool:
        cursor = handle.execute(
            "UPDATE handrail_snapshots SET status = %s, created_at = %s, updated_at = %s, continued_in = %s, "
            "data = %s WHERE snapshot_id = %s",
            (snapshot.status, snapshot.timestamp, datetime.now(UTC), snapshot.continued_in, data, snapshot_id),
        )
        if cursor.rowcount != 1:
            return False
        self._drop_kept(handle, snapshot_id)
        return True

    def _drop_kept(self, handle: Any, snapshot_id: str) -> None:
        """The record was rewritten whole (it absorbed its kept entries): they go, in the same transaction."""
        handle.execute(f"DELETE FROM {_ENTRIES} WHERE snapshot_id = %s", (snapshot_id,))

    def _records(self, paused_only: bool) -> Iterator[tuple[str, bytes, Changes]]:
        where = " WHERE status = 'paused'" if paused_only else ""
        rows = self._execute(
            None, f"SELECT snapshot_id, data FROM handrail_snapshots{where} ORDER BY created_at, snapshot_id", ()
        )
        kept: dict[str, Changes] = {}
        entries = self._execute(  # after the records: a rewrite in between absorbed (and deleted) what is not read
            None,
            f"SELECT snapshot_id, call_id, data FROM {_ENTRIES} WHERE snapshot_id IN "
            f"(SELECT snapshot_id FROM handrail_snapshots{where}) ORDER BY snapshot_id, seq",
            (),
        )
        for snapshot_id, call_id, data in entries:
            kept.setdefault(str(snapshot_id), []).append((_label(call_id), bytes(data)))
        for snapshot_id, data in rows:
            yield str(snapshot_id), bytes(data), kept.get(str(snapshot_id), [])

    def _changes(self, handle: Any, snapshot_id: str, data: bytes) -> Changes:
        sql = f"SELECT call_id, data FROM {_ENTRIES} WHERE snapshot_id = %s ORDER BY seq"
        rows = (
            handle.execute(sql, (snapshot_id,)).fetchall()
            if handle is not None
            else self._execute(None, sql, (snapshot_id,))
        )
        return [(_label(call_id), bytes(data)) for call_id, data in rows]

    def _append(self, handle: Any, snapshot_id: str, changes: Changes) -> bool:
        found = handle.execute(
            "SELECT 1 FROM handrail_snapshots WHERE snapshot_id = %s FOR UPDATE", (snapshot_id,)
        ).fetchone()
        if found is None:
            return False
        row = handle.execute(
            f"SELECT COALESCE(MAX(seq), 0) FROM {_ENTRIES} WHERE snapshot_id = %s", (snapshot_id,)
        ).fetchone()
        first = int(row[0]) + 1
        with handle.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {_ENTRIES} (snapshot_id, call_id, seq, data) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (snapshot_id, call_id) DO UPDATE SET data = excluded.data",
                [(snapshot_id, call_id, first + i, line) for i, (call_id, line) in enumerate(changes)],
            )
        return True

    # -- approvals ---------------------------------------------------------------------------------

    _placeholder = "%s"
    _lock_row = " FOR UPDATE"

    @contextlib.contextmanager
    def _approval_scope(self, approval_id: str, *, new: bool = False) -> Iterator[psycopg.Connection[Any]]:
        with self._db.transaction() as conn:
            yield conn

    @contextlib.contextmanager
    def _joint_scope(self, approval_id: str, snapshot_id: str) -> Iterator[tuple[psycopg.Connection[Any], bool]]:
        # The snapshot's lock is tried, not waited for: held by a resume (or another decider of the same
        # step), the approval changes alone and the caller writes the snapshot afterwards.
        with self._db.transaction() as conn:
            free = False
            if not self._holds(snapshot_id):
                row = conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (_lock_key(snapshot_id),)).fetchone()
                free = bool(row and row[0])
            yield conn, free

    def _approval_execute(self, handle: Any, sql: str, params: tuple[Any, ...]) -> Any:
        return handle.execute(sql, params)

    def _approval_query(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self._execute(None, sql, params)
        return rows

    def _some_ids(self) -> list[str]:
        rows = self._execute(
            None, "SELECT snapshot_id FROM handrail_snapshots ORDER BY updated_at DESC, snapshot_id LIMIT 5", ()
        )
        return [str(row[0]) for row in rows]

    # -- the service store -------------------------------------------------------------------------

    def _sql_transaction(self) -> contextlib.AbstractContextManager[psycopg.Connection[Any]]:
        return self._db.transaction()

    def _sql_execute(self, handle: Any, sql: str, params: tuple[Any, ...]) -> Any:
        return handle.execute(sql, params)

    def _sql_executemany(self, handle: Any, sql: str, rows: list[tuple[Any, ...]]) -> None:
        with handle.cursor() as cursor:
            cursor.executemany(sql, rows)

    def _sql_query(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self._execute(None, sql, params)
        return rows

    def _events_locked(self, handle: Any) -> None:
        handle.execute("SELECT pg_advisory_xact_lock(%s)", (_EVENTS_LOCK,))

    def _events_inserted(self, handle: Any, last_id: int) -> None:
        handle.execute("SELECT pg_notify(%s, %s)", (CHANNEL, str(last_id)))

    def _event_listener(self) -> Any:
        return event_listener(self._dsn, str(self), connect_timeout=self._db.timeout)

    def _run_claim(self, run_id: str) -> Release | None:
        return self._db.claim(_lock_key(f".run-{run_id}"))  # no snapshot id starts with '.'


def _label(call_id: object) -> str:
    return f"the {_ENTRIES} row of call {str(call_id)!r}"
