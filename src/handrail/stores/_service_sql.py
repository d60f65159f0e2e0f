"""The service store's tables, shared by the SQLite and PostgreSQL snapshot stores (schema version 4).

Tables (every time in microseconds since the Unix epoch, every ``data`` the record's canonical JSON):

* ``handrail_tokens``: one row per token, ``token_id`` the key, ``name``, ``created_us``, ``revoked_us`` (NULL
  while valid) and ``data`` (the record and the SHA-256 of the token's text, never the text). A partial unique
  index keeps names unique among the tokens not revoked.
* ``handrail_events``: the event log, ``id`` increasing (SQLite ``AUTOINCREMENT``; PostgreSQL an identity
  column, appended under a transaction-scoped advisory lock so that ids are also in commit order: a reader that
  saw id ``n`` never later finds a smaller one appear), ``kind``, ``at_us``, ``data`` (the event's JSON data).
  Every :attr:`~handrail.stores._service_base.ServiceStoreBase.prune_every` appends the events older than the
  newest :data:`~handrail.stores.service.EVENTS_KEPT` are deleted, in the appending transaction, and
  ``handrail_service_meta`` keeps the highest id deleted (``events_pruned_up_to``), which tells a reader that
  asks for older events that it missed some.
* ``handrail_runs``: one row per service run, ``run_id`` the key, ``status``, ``version``, ``created_us`` (the
  columns the queries use) and ``data``. An update is ``UPDATE ... WHERE run_id = ? AND version = ?``.

An approval change writes its events in its own transaction, last (just before the commit), so the event and
the change are committed together or not at all.
"""

from __future__ import annotations

import contextlib
import json
from abc import abstractmethod
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Literal

from handrail.dataclasses._approval_checks import canonical_json, iso
from handrail.dataclasses.service import RunRecord, RunStatus, ServiceEvent, TokenInfo
from handrail.errors import CorruptRecordError
from handrail.stores._events import EventItem
from handrail.stores._service_base import ServiceStoreBase
from handrail.stores._service_records import (
    event_from_dict,
    run_from_dict,
    run_to_dict,
    token_from_dict,
    token_to_dict,
)
from handrail.stores.approvals import micros

__all__ = ["SQLServiceRecords", "service_migration"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_PRUNED = "events_pruned_up_to"


def service_migration(dialect: Literal["sqlite", "postgres"]) -> str:
    """The migration script that adds the service tables (schema version 4) in ``dialect``."""
    blob = "BLOB" if dialect == "sqlite" else "BYTEA"
    event_id = (
        "INTEGER PRIMARY KEY AUTOINCREMENT"
        if dialect == "sqlite"
        else "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
    )
    return f"""
    CREATE TABLE IF NOT EXISTS handrail_tokens (
        token_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        created_us BIGINT NOT NULL,
        revoked_us BIGINT,
        data {blob} NOT NULL
    );
    CREATE UNIQUE INDEX IF NOT EXISTS handrail_tokens_valid_name ON handrail_tokens (name) WHERE revoked_us IS NULL;
    CREATE TABLE IF NOT EXISTS handrail_events (
        id {event_id},
        kind TEXT NOT NULL,
        at_us BIGINT NOT NULL,
        data {blob} NOT NULL
    );
    CREATE TABLE IF NOT EXISTS handrail_service_meta (
        name TEXT PRIMARY KEY,
        value BIGINT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS handrail_runs (
        run_id TEXT PRIMARY KEY,
        status TEXT NOT NULL,
        version BIGINT NOT NULL,
        created_us BIGINT NOT NULL,
        data {blob} NOT NULL
    );
    CREATE INDEX IF NOT EXISTS handrail_runs_newest ON handrail_runs (created_us, run_id);
    CREATE INDEX IF NOT EXISTS handrail_runs_by_status ON handrail_runs (status, created_us, run_id);
    """


def _bytes(value: object) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return b"" if value is None else str(value).encode("utf-8", "surrogatepass")


def _moment(us: object) -> datetime:
    if isinstance(us, bool) or not isinstance(us, int):
        raise TypeError(f"not a time in microseconds: {us!r:.40}")
    return _EPOCH + timedelta(microseconds=us)


class SQLServiceRecords(ServiceStoreBase):
    """The service primitives over SQL; a backend gives the placeholder, transactions and statements."""

    _placeholder: ClassVar[str] = "?"
    _lock_row: ClassVar[str] = ""

    @abstractmethod
    def _sql_transaction(self) -> contextlib.AbstractContextManager[Any]:
        """One write transaction (it may create a missing SQLite file); yields the handle statements take."""

    @abstractmethod
    def _sql_execute(self, handle: Any, sql: str, params: tuple[Any, ...]) -> Any:
        """Run one statement in the transaction ``handle``; returns the cursor."""

    @abstractmethod
    def _sql_query(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """Run one query outside any transaction; its rows (none for a SQLite file that does not exist)."""

    def _events_locked(self, handle: Any) -> None:
        """Called in the transaction before its events are inserted (PostgreSQL: the advisory lock)."""

    def _events_inserted(self, handle: Any, last_id: int) -> None:
        """Called in the transaction after its events are inserted (PostgreSQL: ``NOTIFY``)."""

    def _q(self, sql: str) -> str:
        return sql if self._placeholder == "?" else sql.replace("?", self._placeholder)

    def _x(self, handle: Any, sql: str, *params: Any) -> Any:
        return self._sql_execute(handle, self._q(sql), params)

    def _rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        return self._sql_query(self._q(sql), params)

    # -- tokens ------------------------------------------------------------------------------------

    def _token_decode(self, token_id: object, revoked_us: object, data: object) -> tuple[TokenInfo, str]:
        token, secret_hash = token_from_dict(f"{self}: token {token_id}", _json(self, "token", token_id, data))
        column = None if revoked_us is None else micros(_moment(revoked_us))
        held = None if token.revoked_at is None else micros(token.revoked_at)
        if token.token_id != token_id or column != held:
            raise CorruptRecordError(
                f"{self}: the row of token {token_id} is damaged: its columns disagree with its record "
                "(edited by hand?)."
            )
        return token, secret_hash

    def _token_insert(self, token: TokenInfo, secret_hash: str) -> bool:
        data = canonical_json(token_to_dict(token, secret_hash))
        with self._sql_transaction() as handle:
            cursor = self._x(
                handle, "INSERT INTO handrail_tokens (token_id, name, created_us, revoked_us, data) "
                "VALUES (?, ?, ?, NULL, ?) ON CONFLICT DO NOTHING",
                token.token_id, token.name, micros(token.created_at), data,
            )  # fmt: skip
            return bool(cursor.rowcount == 1)

    def _token_rows(self) -> list[tuple[TokenInfo, str]]:
        rows = self._rows("SELECT token_id, revoked_us, data FROM handrail_tokens ORDER BY created_us, token_id")
        return [self._token_decode(*row) for row in rows]

    def _token_get(self, token_id: str) -> tuple[TokenInfo, str] | None:
        rows = self._rows("SELECT token_id, revoked_us, data FROM handrail_tokens WHERE token_id = ?", token_id)
        return self._token_decode(*rows[0]) if rows else None

    def _token_revoke(self, name_or_id: str, at: datetime) -> TokenInfo | None:
        from dataclasses import replace

        with self._sql_transaction() as handle:
            rows = self._x(
                handle, "SELECT token_id, revoked_us, data FROM handrail_tokens WHERE revoked_us IS NULL AND "
                f"(token_id = ? OR name = ?) ORDER BY CASE WHEN token_id = ? THEN 0 ELSE 1 END{self._lock_row}",
                name_or_id, name_or_id, name_or_id,
            ).fetchall()  # fmt: skip
            if not rows:
                return None
            token, secret_hash = self._token_decode(*rows[0])
            revoked = replace(token, revoked_at=at)
            self._x(
                handle, "UPDATE handrail_tokens SET revoked_us = ?, data = ? WHERE token_id = ?",
                micros(at), canonical_json(token_to_dict(revoked, secret_hash)), token.token_id,
            )  # fmt: skip
            return revoked

    # -- events ------------------------------------------------------------------------------------

    def _events_write(self, handle: Any, items: Sequence[EventItem]) -> None:
        self._insert_events(handle, items)

    def _insert_events(self, handle: Any, items: Sequence[EventItem]) -> int:
        """Insert ``items`` in the transaction ``handle``, prune when due; the last id (ids are contiguous)."""
        if not items:
            return 0
        self._events_locked(handle)
        statement = self._q("INSERT INTO handrail_events (kind, at_us, data) VALUES (?, ?, ?)")
        rows = [(kind, micros(at), canonical_json(data)) for kind, at, data in items]
        if len(rows) == 1:
            self._sql_execute(handle, statement, rows[0])
        else:
            self._sql_executemany(handle, statement, rows)
        last = int(self._x(handle, "SELECT MAX(id) FROM handrail_events").fetchone()[0])
        cutoff = self._prune_due(last - len(rows) + 1, last)
        if cutoff is not None and self._x(handle, "DELETE FROM handrail_events WHERE id <= ?", cutoff).rowcount:
            found = self._x(handle, "SELECT value FROM handrail_service_meta WHERE name = ?", _PRUNED).fetchone()
            if found is None or int(found[0]) < cutoff:
                self._x(
                    handle, "INSERT INTO handrail_service_meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO "
                    "UPDATE SET value = excluded.value", _PRUNED, cutoff,
                )  # fmt: skip
        self._events_inserted(handle, last)
        return last

    def _sql_executemany(self, handle: Any, sql: str, rows: list[tuple[Any, ...]]) -> None:
        """Run one statement for many rows (a backend may do it in one round trip)."""
        for row in rows:
            self._sql_execute(handle, sql, row)

    def _events_append(self, items: Sequence[EventItem]) -> list[ServiceEvent]:
        with self._sql_transaction() as handle:
            last = self._insert_events(handle, items)
        first = last - len(items) + 1
        return [ServiceEvent(first + i, kind, at, data) for i, (kind, at, data) in enumerate(items)]

    def _events_read(self, after_id: int, limit: int) -> tuple[list[ServiceEvent], int, int]:
        rows = self._rows(
            "SELECT id, kind, at_us, data FROM handrail_events WHERE id > ? ORDER BY id LIMIT ?", after_id, limit
        )
        events = [self._event_decode(*row) for row in rows]
        # read after the events: a prune in between shows as a gap, never as a silent loss
        found = self._rows(
            "SELECT (SELECT MAX(id) FROM handrail_events), (SELECT value FROM handrail_service_meta WHERE name = ?)",
            _PRUNED,
        )
        newest, pruned = found[0] if found else (None, None)
        return events, int(pruned or 0), int(newest or 0)

    def _event_decode(self, event_id: object, kind: object, at_us: object, data: object) -> ServiceEvent:
        where = f"{self}: event {event_id}"
        try:
            at = iso(_moment(at_us))
        except (TypeError, ValueError, OverflowError) as exc:
            raise CorruptRecordError(f"{where} cannot be read: its time {at_us!r:.40} is not one") from exc
        payload = _json(self, "event", event_id, data)
        return event_from_dict(where, {"id": event_id, "kind": kind, "at": at, "data": payload})

    def _events_newest(self) -> int:
        rows = self._rows("SELECT MAX(id) FROM handrail_events")
        return int(rows[0][0] or 0) if rows else 0

    # -- runs --------------------------------------------------------------------------------------

    def _run_decode(self, run_id: object, status: object, version: object, data: object) -> RunRecord:
        record = run_from_dict(f"{self}: run {run_id}", _json(self, "run", run_id, data))
        if (record.run_id, record.status, record.version) != (run_id, status, version):
            raise CorruptRecordError(
                f"{self}: the row of run {run_id} is damaged: its columns ({status!r:.20}, version {version!r:.20}) "
                f"disagree with its record ({record.status}, version {record.version}; edited by hand?)."
            )
        return record

    def _run_insert(self, record: RunRecord) -> bool:
        with self._sql_transaction() as handle:
            cursor = self._x(
                handle, "INSERT INTO handrail_runs (run_id, status, version, created_us, data) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (run_id) DO NOTHING",
                record.run_id, record.status, record.version, micros(record.created_at),
                canonical_json(run_to_dict(record)),
            )  # fmt: skip
            return bool(cursor.rowcount == 1)

    def _run_get(self, run_id: str) -> RunRecord | None:
        rows = self._rows("SELECT run_id, status, version, data FROM handrail_runs WHERE run_id = ?", run_id)
        return self._run_decode(*rows[0]) if rows else None

    def _run_replace(self, updated: RunRecord, expected_version: int) -> RunRecord | None:
        with self._sql_transaction() as handle:
            cursor = self._x(
                handle, "UPDATE handrail_runs SET status = ?, version = ?, data = ? WHERE run_id = ? AND version = ?",
                updated.status, updated.version, canonical_json(run_to_dict(updated)), updated.run_id,
                expected_version,
            )  # fmt: skip
            if cursor.rowcount == 1:
                return None
        current = self._run_get(updated.run_id)
        assert current is not None  # run records are never deleted
        return current

    def _run_list(self, status: RunStatus | None, limit: int, before: tuple[datetime, str] | None) -> list[RunRecord]:
        clauses: list[str] = []
        params: list[Any] = []
        if status is not None:
            clauses.append("status = ?")
            params.append(status)
        if before is not None:
            clauses.append("(created_us < ? OR (created_us = ? AND run_id < ?))")
            params += [micros(before[0]), micros(before[0]), before[1]]
        where = f"WHERE {' AND '.join(clauses)} " if clauses else ""
        rows = self._rows(
            f"SELECT run_id, status, version, data FROM handrail_runs {where}ORDER BY created_us DESC, run_id DESC "
            "LIMIT ?",
            *params, limit,
        )  # fmt: skip
        found = []
        for row in rows:
            with contextlib.suppress(CorruptRecordError):  # refused by name when read on its own
                found.append(self._run_decode(*row))
        return found


def _json(store: object, what: str, key: object, data: object) -> Any:
    try:
        return json.loads(_bytes(data))
    except (ValueError, RecursionError) as exc:
        raise CorruptRecordError(f"{store}: the row of {what} {key} cannot be read: {exc}") from exc
