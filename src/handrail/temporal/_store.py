"""The Temporal driver's own durable records: the tool-call ledger and the claim-check blobs.

Temporal runs activities at least once: a worker killed after a tool's effect happened but before the activity
completed makes Temporal run the activity again. The ledger turns that into exactly once for the tool's effect:
a call is written ``running`` (key: run id + call id) in the same transaction that checks for it, before the tool
is called, and ``done`` with its outcome after. An activity that finds

* no row runs the tool (an earlier attempt died before the tool started: nothing happened);
* ``done`` returns the recorded outcome (the effect happened, only the activity's completion was lost);
* ``running`` knows an earlier attempt died while the tool ran: the outcome is unknown and the run's
  ``unknown_outcome`` policy decides (ask a person, fail, or run again where the tool is idempotent).

Blobs hold large payloads by reference (:mod:`handrail.temporal._codec`), so no message list grows a workflow's
history past Temporal's limits. Both tables live in one SQLite file or one PostgreSQL database (the store URL the
rest of handrail uses: ``sqlite:///path.db`` or ``postgresql://...``), created when first opened.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from handrail.errors import ConfigurationError

__all__ = ["LedgerRow", "TemporalStore", "open_temporal_store"]

Status = Literal["running", "done"]
_LEDGER_TABLE = (
    "CREATE TABLE IF NOT EXISTS handrail_temporal_ledger (key TEXT PRIMARY KEY, status TEXT NOT NULL, outcome TEXT, "
    "attempts INTEGER NOT NULL, updated {real} NOT NULL)"
)


@dataclass(frozen=True, slots=True)
class LedgerRow:
    """What the ledger holds for one call."""

    status: Status
    outcome: dict[str, Any] | None
    """The call's outcome (JSON, ``handrail.components.effects.to_json`` of a ToolOutcome) once ``done``."""
    attempts: int
    """How many times the tool was started for this call."""


class TemporalStore(Protocol):
    """The ledger and the blobs (thread-safe; activities call it from worker threads)."""

    url: str

    def begin(self, key: str, *, again: bool = False) -> LedgerRow | None:
        """Record ``key`` as running when it has no row (returns None: run the tool); else return its row unchanged.

        With ``again`` a ``running`` row is started again (attempts + 1; returns None): a person or the
        idempotent-tool policy chose to run the call again.
        """

    def done(self, key: str, outcome: dict[str, Any]) -> None:
        """Record the call's outcome."""

    def row(self, key: str) -> LedgerRow | None:
        """The row of ``key``, or None."""

    def put_blob(self, digest: str, data: bytes) -> None:
        """Keep ``data`` under its digest (idempotent)."""

    def get_blob(self, digest: str) -> bytes | None:
        """The data kept under ``digest``, or None."""

    def close(self) -> None:
        """Close the connections."""


def _row(status: str, outcome: str | None, attempts: int) -> LedgerRow:
    return LedgerRow("done" if status == "done" else "running", json.loads(outcome) if outcome else None, attempts)


class SQLiteTemporalStore:
    """The ledger and blobs in a SQLite file (WAL; one connection per thread)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        with self._tx() as db:
            db.execute(_LEDGER_TABLE.format(real="REAL"))
            db.execute(
                "CREATE TABLE IF NOT EXISTS handrail_temporal_blobs (digest TEXT PRIMARY KEY, data BLOB NOT NULL)"
            )

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            try:
                db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            except sqlite3.Error as exc:
                raise ConfigurationError(f"The Temporal ledger cannot open {self.path}: {exc}.") from exc
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA busy_timeout=30000")
            self._local.db = db
            with self._lock:
                self._all.append(db)
        return db

    class _Tx:
        def __init__(self, db: sqlite3.Connection) -> None:
            self.db = db

        def __enter__(self) -> sqlite3.Connection:
            self.db.execute("BEGIN IMMEDIATE")
            return self.db

        def __exit__(self, kind: object, *_: object) -> None:
            self.db.execute("COMMIT" if kind is None else "ROLLBACK")

    def _tx(self) -> SQLiteTemporalStore._Tx:
        return self._Tx(self._db())

    def begin(self, key: str, *, again: bool = False) -> LedgerRow | None:
        with self._tx() as db:
            found = db.execute("SELECT status, outcome, attempts FROM handrail_temporal_ledger WHERE key = ?",
                               (key,)).fetchone()  # fmt: skip
            if found is None:
                db.execute("INSERT INTO handrail_temporal_ledger VALUES (?, 'running', NULL, 1, ?)", (key, time.time()))
                return None
            if again and found[0] == "running":
                db.execute("UPDATE handrail_temporal_ledger SET attempts = attempts + 1, updated = ? WHERE key = ?",
                           (time.time(), key))  # fmt: skip
                return None
            return _row(*found)

    def done(self, key: str, outcome: dict[str, Any]) -> None:
        with self._tx() as db:
            db.execute("UPDATE handrail_temporal_ledger SET status = 'done', outcome = ?, updated = ? WHERE key = ?",
                       (json.dumps(outcome), time.time(), key))  # fmt: skip

    def row(self, key: str) -> LedgerRow | None:
        found = self._db().execute("SELECT status, outcome, attempts FROM handrail_temporal_ledger WHERE key = ?",
                                   (key,)).fetchone()  # fmt: skip
        return None if found is None else _row(*found)

    def put_blob(self, digest: str, data: bytes) -> None:
        with self._tx() as db:
            db.execute("INSERT OR IGNORE INTO handrail_temporal_blobs VALUES (?, ?)", (digest, data))

    def get_blob(self, digest: str) -> bytes | None:
        found = self._db().execute("SELECT data FROM handrail_temporal_blobs WHERE digest = ?", (digest,)).fetchone()
        return None if found is None else bytes(found[0])

    def close(self) -> None:
        with self._lock:
            for db in self._all:
                db.close()
            self._all.clear()
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"SQLiteTemporalStore({str(self.path)!r})"


class PostgresTemporalStore:
    """The ledger and blobs in PostgreSQL (a small connection pool)."""

    def __init__(self, dsn: str) -> None:
        try:
            from psycopg_pool import ConnectionPool
        except ImportError as exc:  # pragma: no cover - the postgres extra is missing
            raise ConfigurationError(
                "A PostgreSQL ledger needs the postgres extra: pip install 'handrail[postgres]'."
            ) from exc
        import psycopg

        try:  # fail fast and clearly, not after the pool's 30 s wait for a first connection
            psycopg.connect(dsn, connect_timeout=5).close()
        except psycopg.Error as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigurationError(f"The Temporal store cannot reach PostgreSQL: {reason[:300]}") from exc
        self.url = dsn
        self._pool = ConnectionPool(dsn, min_size=1, max_size=8, open=True, kwargs={"autocommit": True})
        with self._pool.connection() as db:
            db.execute(_LEDGER_TABLE.format(real="DOUBLE PRECISION"))
            db.execute(
                "CREATE TABLE IF NOT EXISTS handrail_temporal_blobs (digest TEXT PRIMARY KEY, data BYTEA NOT NULL)"
            )

    def begin(self, key: str, *, again: bool = False) -> LedgerRow | None:
        with self._pool.connection() as db, db.transaction():
            inserted = db.execute("INSERT INTO handrail_temporal_ledger VALUES (%s, 'running', NULL, 1, %s) "
                                  "ON CONFLICT (key) DO NOTHING", (key, time.time())).rowcount  # fmt: skip
            if inserted:
                return None
            found = db.execute("SELECT status, outcome, attempts FROM handrail_temporal_ledger WHERE key = %s "
                               "FOR UPDATE", (key,)).fetchone()  # fmt: skip
            assert found is not None
            if again and found[0] == "running":
                db.execute("UPDATE handrail_temporal_ledger SET attempts = attempts + 1, updated = %s WHERE key = %s",
                           (time.time(), key))  # fmt: skip
                return None
            return _row(*found)

    def done(self, key: str, outcome: dict[str, Any]) -> None:
        with self._pool.connection() as db:
            db.execute("UPDATE handrail_temporal_ledger SET status = 'done', outcome = %s, updated = %s WHERE key = %s",
                       (json.dumps(outcome), time.time(), key))  # fmt: skip

    def row(self, key: str) -> LedgerRow | None:
        with self._pool.connection() as db:
            found = db.execute("SELECT status, outcome, attempts FROM handrail_temporal_ledger WHERE key = %s",
                               (key,)).fetchone()  # fmt: skip
        return None if found is None else _row(*found)

    def put_blob(self, digest: str, data: bytes) -> None:
        with self._pool.connection() as db:
            db.execute("INSERT INTO handrail_temporal_blobs VALUES (%s, %s) ON CONFLICT DO NOTHING", (digest, data))

    def get_blob(self, digest: str) -> bytes | None:
        with self._pool.connection() as db:
            found = db.execute("SELECT data FROM handrail_temporal_blobs WHERE digest = %s", (digest,)).fetchone()
        return None if found is None else bytes(found[0])

    def close(self) -> None:
        self._pool.close()

    def __repr__(self) -> str:
        return "PostgresTemporalStore(<dsn>)"  # the DSN may hold a password: never shown


def open_temporal_store(url: str | Path) -> TemporalStore:
    """The ledger and blob store at ``url``: ``sqlite:///path.db``, a ``.db`` path, or ``postgresql://...``.

    Raises:
        ConfigurationError: A URL of another kind, or one that cannot be opened.
    """
    text = str(url)
    if text.startswith(("postgresql://", "postgres://")):
        return PostgresTemporalStore(text)
    if text.startswith("sqlite:///"):
        return SQLiteTemporalStore(text[len("sqlite:///") :])
    if text.startswith("sqlite://") or "://" in text:
        raise ConfigurationError(
            f"The Temporal store must be sqlite:///PATH or postgresql://..., got {text.split('://')[0]}://... ."
        )
    if not text.strip():
        raise ConfigurationError("The Temporal store URL is empty; give sqlite:///PATH or postgresql://... .")
    if not text.endswith((".db", ".sqlite", ".sqlite3")):
        raise ConfigurationError(
            f"The Temporal store must be sqlite:///PATH, a path ending in .db / .sqlite, or postgresql://..., got "
            f"{text[:60]!r}."
        )
    return SQLiteTemporalStore(text)
