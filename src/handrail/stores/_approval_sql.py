"""Approval records in SQL tables, shared by the SQLite and PostgreSQL snapshot stores (schema version 3).

Tables: ``handrail_approvals`` (one row per approval: the columns the filters use, times as microseconds since
the Unix epoch, and ``data``: the record's canonical JSON), ``handrail_approval_labels`` (one row per label) and
``handrail_approval_audit`` (one row per audit entry, ``(approval_id, seq)`` the key, ``data`` its canonical
JSON). A decision is ``UPDATE ... WHERE approval_id = ? AND status = 'pending' AND version = ?`` inside a
transaction that read the row first (PostgreSQL: ``FOR UPDATE``; SQLite: ``BEGIN IMMEDIATE``).
"""

from __future__ import annotations

import contextlib
from abc import abstractmethod
from collections.abc import Iterator
from datetime import datetime
from typing import Any, ClassVar

from handrail.dataclasses.approval import STATUSES, Approval
from handrail.dataclasses.approval_audit import ApprovalAuditEntry
from handrail.errors import ApprovalNotFoundError, CorruptRecordError
from handrail.stores._approval_base import ApprovalStoreBase, Cursor
from handrail.stores.approvals import ApprovalFilter, micros

__all__ = ["SQLApprovalRecords", "approval_migration"]


def approval_migration(blob: str) -> str:
    """The migration script that adds the approval tables (``blob``: the binary column type)."""
    return f"""
    CREATE TABLE IF NOT EXISTS handrail_approvals (
        approval_id TEXT PRIMARY KEY,
        run_id TEXT NOT NULL,
        snapshot_id TEXT NOT NULL,
        agent_name TEXT NOT NULL,
        tool_name TEXT NOT NULL,
        status TEXT NOT NULL,
        version BIGINT NOT NULL,
        created_us BIGINT NOT NULL,
        expires_us BIGINT,
        decided_by TEXT,
        data {blob} NOT NULL
    );
    CREATE INDEX IF NOT EXISTS handrail_approvals_newest ON handrail_approvals (created_us, approval_id);
    CREATE INDEX IF NOT EXISTS handrail_approvals_by_status ON handrail_approvals (status, created_us, approval_id);
    CREATE INDEX IF NOT EXISTS handrail_approvals_due ON handrail_approvals (status, expires_us);
    CREATE TABLE IF NOT EXISTS handrail_approval_labels (
        label TEXT NOT NULL,
        approval_id TEXT NOT NULL,
        PRIMARY KEY (label, approval_id)
    );
    CREATE TABLE IF NOT EXISTS handrail_approval_audit (
        approval_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        kind TEXT NOT NULL,
        at_us BIGINT NOT NULL,
        data {blob} NOT NULL,
        PRIMARY KEY (approval_id, seq)
    );
    """


def _where(filter: ApprovalFilter) -> tuple[list[str], list[Any]]:
    """The conditions (``?`` placeholders) and parameters of a filter."""
    conditions: list[str] = []
    params: list[Any] = []
    for column in ("status", "tool_name", "agent_name", "run_id", "decided_by"):
        value = getattr(filter, column)
        if value is not None:
            conditions.append(f"{column} = ?")
            params.append(value)
    for name, condition in (
        ("created_after", "created_us > ?"),
        ("created_before", "created_us < ?"),
        ("expires_before", "expires_us IS NOT NULL AND expires_us < ?"),
    ):
        moment: datetime | None = getattr(filter, name)
        if moment is not None:
            conditions.append(condition)
            params.append(micros(moment))
    if filter.label is not None:
        conditions.append("approval_id IN (SELECT approval_id FROM handrail_approval_labels WHERE label = ?)")
        params.append(filter.label)
    return conditions, params


def _as_bytes(value: object) -> bytes:
    """A ``data`` column as bytes (SQLite keeps any type in any column: an edited row may hold text)."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return b"" if value is None else str(value).encode("utf-8", "surrogatepass")


class SQLApprovalRecords(ApprovalStoreBase):
    """The approval primitives and queries over SQL; a backend gives the placeholder, the row lock and the I/O."""

    _placeholder: ClassVar[str] = "?"
    """``?`` (sqlite3) or ``%s`` (psycopg)."""
    _lock_row: ClassVar[str] = ""
    """Appended to the read of a row inside a scope: ``" FOR UPDATE"`` for PostgreSQL."""
    _approvals_in_one_transaction: ClassVar[bool] = True

    @abstractmethod
    def _approval_execute(self, handle: Any, sql: str, params: tuple[Any, ...]) -> Any:
        """Run one statement in the scope's transaction; returns the cursor."""

    @abstractmethod
    def _approval_query(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """Run one query outside any scope; returns its rows."""

    def _approval_sql(self, sql: str) -> str:
        return sql if self._placeholder == "?" else sql.replace("?", self._placeholder)

    def _approval_exec(self, handle: Any, sql: str, *params: Any) -> Any:
        return self._approval_execute(handle, self._approval_sql(sql), params)

    def _approval_rows(self, handle: Any, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        if handle is None:
            return self._approval_query(self._approval_sql(sql), params)
        rows: list[tuple[Any, ...]] = self._approval_exec(handle, sql, *params).fetchall()
        return rows

    def _approval_read(self, handle: Any, approval_id: str) -> bytes | None:
        lock = self._lock_row if handle is not None else ""
        rows = self._approval_rows(
            handle, f"SELECT data FROM handrail_approvals WHERE approval_id = ?{lock}", approval_id
        )
        return _as_bytes(rows[0][0]) if rows else None

    def _decode_row(self, approval_id: str, status: object, version: object, data: object) -> Approval:
        """The record of one row, refused as damaged when its ``status`` / ``version`` columns disagree with it.

        The queries and the compare-and-set go by the columns, the record by ``data``: a row where they differ
        (a hand edit) would be listed under one status and decided under another, stuck for good.
        """
        approval = self._decode_approval(approval_id, _as_bytes(data))
        for name, column, held in (("status", status, approval.status), ("version", version, approval.version)):
            if column != held:
                raise CorruptRecordError(
                    f"{self}: the row of approval {approval_id} is damaged: its {name} column says {column!r:.40} "
                    f"but its record says {held!r:.40} (edited by hand?)."
                )
        return approval

    def _current_approval(self, handle: Any, approval_id: str) -> Approval:
        lock = self._lock_row if handle is not None else ""
        rows = self._approval_rows(
            handle, f"SELECT status, version, data FROM handrail_approvals WHERE approval_id = ?{lock}", approval_id
        )
        if not rows:
            raise ApprovalNotFoundError(f"No approval {approval_id} in {self}.")
        status, version, data = rows[0]
        return self._decode_row(approval_id, status, version, data)

    def _still_current(self, handle: Any, known: Approval) -> Approval:
        # Every change of a record raises its version, so a row at known's version and status holds known.
        rows = self._approval_rows(
            handle, f"SELECT status, version FROM handrail_approvals WHERE approval_id = ?{self._lock_row}", known.id
        )
        if rows and (rows[0][0], rows[0][1]) == (known.status, known.version):
            return known
        return self._current_approval(handle, known.id)

    def _approval_write(self, handle: Any, approval: Approval, data: bytes, *, expected_version: int | None) -> bool:
        if expected_version is None:
            cursor = self._approval_exec(
                handle,
                "INSERT INTO handrail_approvals (approval_id, run_id, snapshot_id, agent_name, tool_name, status, "
                "version, created_us, expires_us, decided_by, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (approval_id) DO NOTHING",
                approval.id, approval.run_id, approval.snapshot_id, approval.agent_name, approval.tool_name,
                approval.status, approval.version, micros(approval.created_at),
                None if approval.expires_at is None else micros(approval.expires_at), approval.decided_by, data,
            )  # fmt: skip
            if cursor.rowcount != 1:
                return False
            for label in approval.labels:
                self._approval_exec(handle, "INSERT INTO handrail_approval_labels (label, approval_id) VALUES (?, ?)",
                           label, approval.id)  # fmt: skip
            return True
        cursor = self._approval_exec(
            handle,
            "UPDATE handrail_approvals SET status = ?, version = ?, decided_by = ?, data = ? "
            "WHERE approval_id = ? AND status = 'pending' AND version = ?",
            approval.status, approval.version, approval.decided_by, data, approval.id, expected_version,
        )  # fmt: skip
        return bool(cursor.rowcount == 1)

    def _audit_read(self, handle: Any, approval_id: str) -> list[bytes]:
        rows = self._approval_rows(
            handle, "SELECT data FROM handrail_approval_audit WHERE approval_id = ? ORDER BY seq", approval_id
        )
        return [_as_bytes(row[0]) for row in rows]

    def _audit_write(self, handle: Any, entry: ApprovalAuditEntry, data: bytes) -> None:
        self._approval_exec(
            handle,
            "INSERT INTO handrail_approval_audit (approval_id, seq, kind, at_us, data) VALUES (?, ?, ?, ?, ?)",
            entry.approval_id, entry.seq, entry.kind, micros(entry.at), data,
        )  # fmt: skip

    def _approval_scan(self, filter: ApprovalFilter, after: Cursor | None, limit: int) -> list[Approval]:
        """Up to ``limit`` readable matching approvals, newest first; a damaged row is skipped, not a failure."""
        base, params = _where(filter)
        found: list[Approval] = []
        while len(found) < limit:
            conditions = list(base)
            extra: list[Any] = []
            if after is not None:
                conditions.append("(created_us < ? OR (created_us = ? AND approval_id < ?))")
                extra = [after[0], after[0], after[1]]
            where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
            wanted = limit - len(found)
            rows = self._approval_rows(
                None,
                f"SELECT approval_id, status, version, data, created_us FROM handrail_approvals{where} "
                "ORDER BY created_us DESC, approval_id DESC LIMIT ?",
                *params, *extra, wanted,
            )  # fmt: skip
            for approval_id, status, version, data, _ in rows:
                with contextlib.suppress(CorruptRecordError):  # named by unreadable_approvals()
                    found.append(self._decode_row(str(approval_id), status, version, data))
            if len(rows) < wanted:
                break  # no more rows
            after = (int(rows[-1][4]), str(rows[-1][0]))
        return found

    def _approval_all(self) -> Iterator[tuple[str, bytes | CorruptRecordError]]:
        for approval_id, status, version, data in self._approval_rows(
            None, "SELECT approval_id, status, version, data FROM handrail_approvals ORDER BY approval_id"
        ):
            try:
                self._decode_row(str(approval_id), status, version, data)
            except CorruptRecordError as exc:
                yield str(approval_id), exc
                continue
            yield str(approval_id), _as_bytes(data)

    def _approval_counts(self, filter: ApprovalFilter) -> dict[str, int]:
        conditions, params = _where(filter)
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        counts: dict[str, int] = dict.fromkeys(STATUSES, 0)
        for status, count in self._approval_rows(
            None, f"SELECT status, COUNT(*) FROM handrail_approvals{where} GROUP BY status", *params
        ):
            counts[str(status)] = int(count)
        return counts

    def _approval_due(self, now: datetime) -> list[str]:
        rows = self._approval_rows(
            None,
            "SELECT approval_id FROM handrail_approvals WHERE status = 'pending' AND expires_us IS NOT NULL "
            "AND expires_us <= ? ORDER BY expires_us, approval_id",
            micros(now),
        )
        return [str(row[0]) for row in rows]
