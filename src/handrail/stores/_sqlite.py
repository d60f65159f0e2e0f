"""SQLite plumbing shared by the embedded stores: connections in WAL mode, transactions, versioned migrations.

One database file may hold several stores (chat messages, memories, snapshots); each store keeps its own
schema version in the table ``handrail_schema``. Several processes on one machine may share the file:
WAL mode lets readers run beside one writer, and writers wait up to ``busy_timeout`` for each other.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from handrail.errors import StoreError
from handrail.stores._schema_version import check_version, damaged_without_version, tables_created_by

_SCHEMA_TABLE = "CREATE TABLE IF NOT EXISTS handrail_schema (store TEXT PRIMARY KEY, version INTEGER NOT NULL)"

__all__ = ["SQLiteDatabase"]

_BUSY_TIMEOUT_MS = 10_000


class SQLiteDatabase:
    """A SQLite file used by one store.

    Args:
        path: The database file (created with its parent folder on first use); ``":memory:"`` for a private
            in-process database (one connection shared by all threads).
        store: The store's name, used in error messages and as its key in ``handrail_schema``.
        migrations: SQL scripts; script ``i`` brings the store's schema from version ``i`` to ``i + 1``. They run
            once, in order, on first use, inside one transaction each.

    Raises (on first use):
        StoreError: The file cannot be opened, is not a database, holds a newer schema version of this store, or
            is damaged: its version row holds no version number, or is missing while the store's tables exist.
    """

    def __init__(self, path: str | Path, *, store: str, migrations: Sequence[str]) -> None:
        self.path = str(path)
        self.store = store
        self.migrations = tuple(migrations)
        self._local = threading.local()
        self._shared: sqlite3.Connection | None = None
        self._lock = threading.RLock()
        self._migrated = False

    def _open(self) -> sqlite3.Connection:
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
                # A new file is private (0600) like snapshot files: it holds tool arguments and results. SQLite
                # gives its -wal and -shm files the database file's mode.
                if not os.path.lexists(self.path):
                    with contextlib.suppress(FileExistsError):  # another process created it meanwhile
                        os.close(os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            conn = sqlite3.connect(
                self.path, timeout=_BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            if self.path != ":memory:":
                _enable_wal(conn)
            conn.execute("PRAGMA foreign_keys = ON")
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"{self.store}: cannot open the SQLite database {self.path}: {exc}") from exc
        return conn

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (autocommit mode; use :meth:`transaction` to group statements)."""
        if self.path == ":memory:":
            with self._lock:
                if self._shared is None:
                    self._shared = self._open()
                conn = self._shared
        else:
            local: sqlite3.Connection | None = getattr(self._local, "conn", None)
            if local is None:
                local = self._local.conn = self._open()
            conn = local
        if not self._migrated:
            self._migrate(conn)
        return conn

    @contextlib.contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[sqlite3.Connection]:
        """A transaction: ``BEGIN IMMEDIATE`` (takes the write lock at once) or a deferred read transaction.

        Everything inside commits together or not at all. A SQLite error at BEGIN or COMMIT becomes a StoreError
        naming the store; one raised inside the block propagates as is (after the rollback), so the store can name
        the key it was working on.
        """
        conn = self.connection()
        # Writers of one process take turns here instead of in SQLite's busy handler, which sleeps up to 100 ms
        # between tries: under concurrent writers that sleep, not the work, made the slow tail.
        with self._writer() if write or self.path == ":memory:" else contextlib.nullcontext():
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            except sqlite3.Error as exc:
                raise StoreError(f"{self.store}: cannot start a transaction on {self.path}: {exc}") from exc
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                conn.execute("ROLLBACK")
                raise StoreError(f"{self.store}: cannot commit to {self.path}: {exc}") from exc

    @contextlib.contextmanager
    def _writer(self) -> Iterator[None]:
        """This process's turn to write (as long as SQLite's own busy timeout, then a StoreError)."""
        if not self._lock.acquire(timeout=_BUSY_TIMEOUT_MS / 1000):
            raise StoreError(f"{self.store}: cannot start a transaction on {self.path}: busy for too long")
        try:
            yield
        finally:
            self._lock.release()

    def _migrate(self, conn: sqlite3.Connection) -> None:
        with self._lock:
            if self._migrated:
                return
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    self._bring_up_to_date(conn)
                except StoreError:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise StoreError(f"{self.store}: cannot prepare the schema in {self.path}: {exc}") from exc
            self._migrated = True

    def _bring_up_to_date(self, conn: sqlite3.Connection) -> None:
        """Run the migrations this file lacks (inside the caller's transaction).

        Raises:
            StoreError: The version row holds no version number, is missing while the store's tables exist, or
                was written by a newer handrail.
            sqlite3.Error: A statement failed.
        """
        conn.execute(_SCHEMA_TABLE)
        row = conn.execute("SELECT version FROM handrail_schema WHERE store = ?", (self.store,)).fetchone()
        version = check_version(row, store=self.store, where=self.path, known=len(self.migrations))
        if version == 0:
            tables = tables_created_by(self.migrations)
            marks = ",".join("?" * len(tables))
            found = [
                name
                for (name,) in conn.execute(
                    f"SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ({marks}) ORDER BY name",
                    tables,
                )
            ]
            if found:
                raise damaged_without_version(store=self.store, where=self.path, row_missing=row is None, tables=found)
        for script in self.migrations[version:]:
            for statement in _statements(script):
                conn.execute(statement)
        conn.execute(
            "INSERT INTO handrail_schema (store, version) VALUES (?, ?) "
            "ON CONFLICT(store) DO UPDATE SET version = excluded.version",
            (self.store, len(self.migrations)),
        )

    def close_thread(self) -> None:
        """Close the calling thread's connection of a file database (a thread that ends calls it)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def close(self) -> None:
        """Close this thread's connection (and the shared one of a ``:memory:`` database)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
        if self._shared is not None:
            self._shared.close()
            self._shared = None


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to WAL mode (it stays so); retried while another connection is opening it.

    SQLite may answer BUSY to a journal-mode change at once, without calling the busy handler, while another
    connection opens or switches the same new file, so the wait is done here, up to the busy timeout.

    Raises:
        sqlite3.OperationalError: The file stayed locked for the whole busy timeout.
    """
    deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


def _statements(script: str) -> list[str]:
    """Split a migration script into statements (``sqlite3.complete_statement`` keeps triggers whole)."""
    out: list[str] = []
    current = ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            if current.strip():
                out.append(current.strip())
            current = ""
    if current.strip():
        out.append(current.strip())
    return out
