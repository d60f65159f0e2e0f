"""A snapshot store in a SQLite file (the embedded default for approvals shared by processes of one machine).

Table ``handrail_snapshots``: one row per snapshot, ``snapshot_id`` (primary key), ``status``, ``created_at``
(the snapshot's timestamp, Unix seconds), ``updated_at``, ``continued_in`` and ``data``: the snapshot's bytes
exactly as :func:`~handrail.dataclasses.snapshot.encode_snapshot` writes them (a self-contained snapshot
file). Table ``handrail_snapshot_entries`` (schema version 2) holds the ledger entries a run's tool step changed
since the record was last written whole, one row per ``(snapshot_id, call_id)`` (``seq``: the order of their
first change, ``data``: UTF-8 JSON ``{call_id: entry}``); every read folds them into the record's ledger and
every write of the record deletes them in its transaction. Every change is one ``BEGIN IMMEDIATE``
transaction, so a decision is an atomic compare-and-set across processes. A claim is an exclusive ``flock``
on ``<db>.locks/<id>.lock`` beside the database (released when the process dies); for a ``":memory:"``
database, claims live in this store object.

Examples:
    >>> from handrail.dataclasses import AgentBreakpoint, AgentSnapshot, Breakpoint, ChatMessage
    >>> store = SQLiteSnapshotStore(":memory:")
    >>> snap = AgentSnapshot(messages=[ChatMessage.from_user("Hi")], state={}, component_visits={},
    ...                      break_point=AgentBreakpoint("helper", Breakpoint()), position="chat_generator")
    >>> snapshot_id = store.save(snap)
    >>> store.load(snapshot_id) == snap, store.locator(snapshot_id) == f"sqlite:///:memory:#{snapshot_id}"
    (True, True)
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from handrail.core._files import FileLock
from handrail.dataclasses.snapshot import AgentSnapshot
from handrail.errors import ApprovalNotFoundError, ConfigurationError, SnapshotError, StoreError
from handrail.stores._approval_sql import SQLApprovalRecords, approval_migration
from handrail.stores._service_sql import SQLServiceRecords, service_migration
from handrail.stores._snapshot_base import OnSnapshotError, Release, SnapshotStoreBase
from handrail.stores._snapshot_records import Changes
from handrail.stores._sqlite import SQLiteDatabase

__all__ = ["SQLiteSnapshotStore"]

_MIGRATIONS = [
    """
    CREATE TABLE handrail_snapshots (
        snapshot_id TEXT PRIMARY KEY,
        status TEXT NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        continued_in TEXT,
        data BLOB NOT NULL
    );
    CREATE INDEX handrail_snapshots_by_status ON handrail_snapshots (status, created_at, snapshot_id);
    """,
    """
    CREATE TABLE handrail_snapshot_entries (
        snapshot_id TEXT NOT NULL,
        call_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (snapshot_id, call_id)
    );
    """,
    approval_migration("BLOB"),
    service_migration("sqlite"),
]
_STORE = "SQLiteSnapshotStore"
_ENTRIES = "handrail_snapshot_entries"


class SQLiteSnapshotStore(SnapshotStoreBase, SQLApprovalRecords, SQLServiceRecords):
    """Snapshots as rows of a SQLite database file (see the module docstring), and approval records.

    Approvals (schema version 3) are kept as :mod:`handrail.stores._approval_sql` describes; every change is one
    ``BEGIN IMMEDIATE`` transaction, so a decision is a compare-and-set across processes. The service's tokens,
    event log and runs (schema version 4, :class:`~handrail.stores.service.ServiceStore`) as
    :mod:`handrail.stores._service_sql` describes; :meth:`wait_for_events` polls the newest event id every
    :data:`~handrail.stores.service.POLL_INTERVAL` seconds (one thread for all the waiters of this object), and
    a run's claim is a ``flock`` on ``<db>.locks/.run-<run id>.lock``.

    Args:
        path: The database file (it may hold other stores' tables too), or ``":memory:"`` for a private
            in-process database. Only storing a new snapshot (``save``, ``create``: a run pausing into the store)
            creates a missing file, with its folder. Through a file that does not exist, loading, claiming,
            deciding or resuming a snapshot is refused (SnapshotError "no such database file"), ``exists`` is
            False and the listings are empty (as for a directory store's missing directory); none of them creates
            anything, so a mistyped path is never turned into an empty database.
        allowed_modules: Module prefixes whose classes state values in the records may name, besides handrail's.
        lock_timeout: Seconds a decision waits for a claim held elsewhere before raising
            SnapshotUnavailableError.
        on_error: Called by ``list_pending`` / ``list_paused`` with the id of each unreadable row and the error
            (the row is skipped); default: a ``UserWarning`` naming the store and the id.

    Raises:
        ConfigurationError: For an empty ``path``, or a negative or non-numeric ``lock_timeout``.
        SnapshotError (on loading, claiming or deciding): The file does not exist ("no such database file").
        StoreError (on first use): The file cannot be opened, is not a database, or holds a newer schema.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        allowed_modules: Iterable[str] = (),
        lock_timeout: float = 5.0,
        on_error: OnSnapshotError | None = None,
    ) -> None:
        super().__init__(allowed_modules=allowed_modules, lock_timeout=lock_timeout, on_error=on_error)
        raw = os.fspath(path)
        if not isinstance(raw, str) or not raw.strip():
            raise ConfigurationError(
                f"A SQLite snapshot store needs a database file path (or ':memory:'), got {raw!r}."
            )
        self.path = raw if raw == ":memory:" else os.path.abspath(raw)
        """The database file (absolute), or ``":memory:"``."""
        self._db = SQLiteDatabase(self.path, store=_STORE, migrations=_MIGRATIONS)
        self._memory_claims: set[str] = set()
        self._memory_lock = threading.Lock()
        self._file_seen = self.path == ":memory:"

    def __str__(self) -> str:
        return f"{_STORE}('{self.path}')"

    def __repr__(self) -> str:
        return str(self)

    def _init_parameters(self) -> dict[str, Any]:
        return {"path": self.path}

    def locator(self, snapshot_id: str) -> str:
        """``sqlite:///<absolute path>#<id>`` (so ``sqlite:////abs/dir/db.sqlite#<id>``); see :attr:`opened_from`."""
        if self.opened_from is not None:
            return f"{self.opened_from}#{self._id(snapshot_id)}"
        return f"sqlite:///{self.path}#{self._id(snapshot_id)}"

    def close(self) -> None:
        """Close this thread's connection (it reopens on next use) and stop the event watcher thread, if any."""
        self._close_watcher()
        self._db.close()

    def _missing(self) -> bool:
        """Whether the database file does not exist: reads then find nothing, and connect to (create) nothing."""
        if not self._file_seen:
            self._file_seen = os.path.lexists(self.path)
        return not self._file_seen

    def _unknown(self, snapshot_id: str) -> SnapshotError:
        if self._missing():
            return SnapshotError(
                f"No snapshot {snapshot_id!r} in {self}: no such database file ({self.path}); nothing was created "
                f"(a run pausing into the store creates it)."
            )
        return super()._unknown(snapshot_id)

    # -- claims ------------------------------------------------------------------------------------

    def _lock_path(self, snapshot_id: str) -> Path:
        folder = Path(f"{self.path}.locks")
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return folder / f"{snapshot_id}.lock"

    def _try_claim(self, snapshot_id: str) -> Release | None:
        if self.path == ":memory:":
            with self._memory_lock:
                if snapshot_id in self._memory_claims:
                    return None
                self._memory_claims.add(snapshot_id)
            return lambda: self._memory_claims.discard(snapshot_id)
        lock = FileLock(self._lock_path(snapshot_id), timeout=0)
        return lock.release if lock.acquire() else None

    def _wait_for_claim(self, snapshot_id: str) -> Release | None:
        if self.path != ":memory:":
            lock = FileLock(self._lock_path(snapshot_id), timeout=self.lock_timeout)
            return lock.release if lock.acquire() else None
        deadline = time.monotonic() + self.lock_timeout
        while True:
            release = self._try_claim(snapshot_id)
            if release is not None or time.monotonic() >= deadline:
                return release
            time.sleep(0.01)

    # -- records -----------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _scope(self, snapshot_id: str | None) -> Iterator[sqlite3.Connection]:
        release = None
        if snapshot_id is not None:  # an existing record (None: a new one, whose write creates a missing file)
            if self._missing():
                raise self._unknown(snapshot_id)
            release = self._wait_for_claim(snapshot_id)
            if release is None:
                raise self._being_resumed(snapshot_id)
        try:
            with self._db.transaction() as conn:
                yield conn
        finally:
            if release is not None:
                release()

    def _run(self, conn: sqlite3.Connection | None, sql: str, params: tuple[Any, ...]) -> sqlite3.Cursor:
        try:
            return (conn or self._db.connection()).execute(sql, params)
        except sqlite3.Error as exc:
            raise StoreError(f"{self}: {exc} (snapshot {params[0] if params else '-'})") from exc

    def _read(self, handle: Any, snapshot_id: str) -> bytes | None:
        if handle is None and self._missing():
            return None
        row = self._run(handle, "SELECT data FROM handrail_snapshots WHERE snapshot_id = ?", (snapshot_id,)).fetchone()
        return None if row is None else _as_bytes(row[0])

    def _exists(self, snapshot_id: str) -> bool:
        if self._missing():
            return False
        sql = "SELECT 1 FROM handrail_snapshots WHERE snapshot_id = ?"
        return self._run(None, sql, (snapshot_id,)).fetchone() is not None

    def _insert(self, handle: Any, snapshot_id: str, snapshot: AgentSnapshot, data: bytes) -> bool:
        cursor = self._run(
            handle,
            "INSERT INTO handrail_snapshots (snapshot_id, status, created_at, updated_at, continued_in, data) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (snapshot_id) DO NOTHING",
            (snapshot_id, snapshot.status, snapshot.timestamp.timestamp(), time.time(), snapshot.continued_in, data),
        )
        return cursor.rowcount == 1

    def _update(self, handle: Any, snapshot_id: str, snapshot: AgentSnapshot, data: bytes) -> bool:
        cursor = self._run(
            handle,
            "UPDATE handrail_snapshots SET status = ?, created_at = ?, updated_at = ?, continued_in = ?, data = ? "
            "WHERE snapshot_id = ?",
            (snapshot.status, snapshot.timestamp.timestamp(), time.time(), snapshot.continued_in, data, snapshot_id),
        )
        if cursor.rowcount != 1:
            return False
        self._drop_kept(handle, snapshot_id)
        return True

    def _drop_kept(self, handle: Any, snapshot_id: str) -> None:
        """The record was rewritten whole (it absorbed its kept entries): they go, in the same transaction."""
        self._run(handle, f"DELETE FROM {_ENTRIES} WHERE snapshot_id = ?", (snapshot_id,))

    def _records(self, paused_only: bool) -> Iterator[tuple[str, bytes, Changes]]:
        if self._missing():
            return
        where = " WHERE status = 'paused'" if paused_only else ""
        rows = self._run(
            None, f"SELECT snapshot_id, data FROM handrail_snapshots{where} ORDER BY created_at, snapshot_id", ()
        ).fetchall()
        kept: dict[str, Changes] = {}
        entries = self._run(  # after the records: a rewrite in between absorbed (and deleted) what is not read
            None,
            f"SELECT snapshot_id, call_id, data FROM {_ENTRIES} WHERE snapshot_id IN "
            f"(SELECT snapshot_id FROM handrail_snapshots{where}) ORDER BY snapshot_id, seq",
            (),
        ).fetchall()
        for snapshot_id, call_id, data in entries:
            kept.setdefault(str(snapshot_id), []).append((_label(snapshot_id, call_id), _as_bytes(data)))
        for snapshot_id, data in rows:
            yield str(snapshot_id), _as_bytes(data), kept.get(str(snapshot_id), [])

    def _changes(self, handle: Any, snapshot_id: str, data: bytes) -> Changes:
        rows = self._run(
            handle, f"SELECT call_id, data FROM {_ENTRIES} WHERE snapshot_id = ? ORDER BY seq", (snapshot_id,)
        ).fetchall()
        return [(_label(snapshot_id, call_id), _as_bytes(data)) for call_id, data in rows]

    def _append(self, handle: Any, snapshot_id: str, changes: Changes) -> bool:
        if not self._exists_in(handle, snapshot_id):
            return False
        row = self._run(
            handle, f"SELECT COALESCE(MAX(seq), 0) FROM {_ENTRIES} WHERE snapshot_id = ?", (snapshot_id,)
        ).fetchone()
        first = int(row[0]) + 1
        try:
            handle.executemany(
                f"INSERT INTO {_ENTRIES} (snapshot_id, call_id, seq, data) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (snapshot_id, call_id) DO UPDATE SET data = excluded.data",
                [(snapshot_id, call_id, first + i, line) for i, (call_id, line) in enumerate(changes)],
            )
        except sqlite3.Error as exc:
            raise StoreError(f"{self}: {exc} (snapshot {snapshot_id})") from exc
        return True

    def _exists_in(self, handle: Any, snapshot_id: str) -> bool:
        sql = "SELECT 1 FROM handrail_snapshots WHERE snapshot_id = ?"
        return self._run(handle, sql, (snapshot_id,)).fetchone() is not None

    def _some_ids(self) -> list[str]:
        if self._missing():
            return []
        rows = self._run(
            None, "SELECT snapshot_id FROM handrail_snapshots ORDER BY updated_at DESC, snapshot_id LIMIT 5", ()
        ).fetchall()
        return [str(row[0]) for row in rows]

    # -- approvals ---------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _approval_scope(self, approval_id: str, *, new: bool = False) -> Iterator[sqlite3.Connection]:
        if not new and self._missing():
            raise ApprovalNotFoundError(f"No approval {approval_id} in {self}: no such database file ({self.path}).")
        with self._db.transaction() as conn:
            yield conn

    @contextlib.contextmanager
    def _joint_scope(self, approval_id: str, snapshot_id: str) -> Iterator[tuple[sqlite3.Connection, bool]]:
        # The snapshot's claim is tried, not waited for, and before the transaction (the order every scope
        # takes): held by a resume, the approval changes alone and the caller writes the snapshot afterwards.
        if self._missing():
            raise ApprovalNotFoundError(f"No approval {approval_id} in {self}: no such database file ({self.path}).")
        release = None if self._holds(snapshot_id) else self._try_claim(snapshot_id)
        try:
            with self._db.transaction() as conn:
                yield conn, release is not None
        finally:
            if release is not None:
                release()

    def _approval_execute(self, handle: Any, sql: str, params: tuple[Any, ...]) -> Any:
        return self._run(handle, sql, params)

    def _approval_query(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        if self._missing():
            return []
        rows: list[tuple[Any, ...]] = self._run(None, sql, params).fetchall()
        return rows

    # -- the service store -------------------------------------------------------------------------

    def _sql_transaction(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self._db.transaction()

    def _sql_execute(self, handle: Any, sql: str, params: tuple[Any, ...]) -> Any:
        return self._run(handle, sql, params)

    def _sql_executemany(self, handle: Any, sql: str, rows: list[tuple[Any, ...]]) -> None:
        try:
            handle.executemany(sql, rows)
        except sqlite3.Error as exc:
            raise StoreError(f"{self}: {exc} (the event log)") from exc

    def _sql_query(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return self._approval_query(sql, params)

    def _run_claim(self, run_id: str) -> Release | None:
        return self._try_claim(f".run-{run_id}")  # no snapshot id starts with '.': never a snapshot's claim

    def _watcher_exit(self) -> None:
        if self.path != ":memory:":
            self._db.close_thread()


def _label(snapshot_id: object, call_id: object) -> str:
    return f"the {_ENTRIES} row of call {str(call_id)!r}"


def _as_bytes(value: object) -> bytes:
    """A record's ``data`` as bytes.

    SQLite keeps any type in any column, so a hand-edited row may hold text, a number or NULL; those become bytes
    that the decoder then refuses with an error naming the snapshot.
    """
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return b"" if value is None else str(value).encode("utf-8", "surrogatepass")
