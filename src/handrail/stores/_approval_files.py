"""Approval records in a directory store: ``<directory>/approvals/<id>.json``, one file per approval.

A file holds the record and its whole audit trail, ``{"approval": {...}, "audit": [{...}, ...],
"schema_version": 1}`` (UTF-8 JSON, mode 0o600), so a change and its audit entry land together: every change
reads the file, and rewrites it atomically (temp file, fsync, rename) under an exclusive ``flock`` on
``approvals/.<id>.json.lock`` held for the whole read-check-write (waiting at most ``lock_timeout``). Listing
reads every file; a directory store suits one machine and modest numbers of approvals.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from handrail.core._files import FileLock, atomic_write, lock_path_for
from handrail.dataclasses._approval_checks import canonical_json
from handrail.dataclasses.approval import Approval
from handrail.dataclasses.approval_audit import ApprovalAuditEntry
from handrail.errors import ApprovalNotFoundError, CorruptRecordError, SnapshotUnavailableError
from handrail.stores._approval_base import ApprovalStoreBase

__all__ = ["FileApprovalRecords"]

_FORMAT = 1


@dataclass
class _Open:
    """One approval file as read inside its lock, and what the scope will write back."""

    record: bytes | None
    audit: list[bytes] = field(default_factory=list)
    changed: bool = False


class FileApprovalRecords(ApprovalStoreBase):
    """The approval primitives over files (mixed into :class:`~handrail.stores.snapshot_file.FileSnapshotStore`)."""

    directory: Path
    lock_timeout: float

    @property
    def approvals_directory(self) -> Path:
        """``<directory>/approvals``."""
        return self.directory / "approvals"

    def approval_path(self, approval_id: str) -> Path:
        """The file of an approval: ``<directory>/approvals/<id>.json``."""
        return self.approvals_directory / f"{self._approval_key(approval_id)}.json"

    def _approval_parse(self, approval_id: str, raw: bytes) -> _Open:
        try:
            data = json.loads(raw)
            if not isinstance(data, dict) or data.get("schema_version") != _FORMAT:
                raise ValueError(f"not an approval file of schema_version {_FORMAT}")
            audit = data["audit"]
            if not isinstance(audit, list):
                raise ValueError("'audit' is not a list")
            return _Open(canonical_json(data["approval"]), [canonical_json(entry) for entry in audit])
        except (ValueError, TypeError, KeyError, RecursionError) as exc:
            raise CorruptRecordError(
                f"{self}: the approval file {self.approval_path(approval_id)} cannot be read: {exc}"
            ) from exc

    def _approval_file(self, approval_id: str) -> _Open:
        try:
            raw = self.approval_path(approval_id).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return _Open(None)
        return self._approval_parse(approval_id, raw)

    @contextlib.contextmanager
    def _approval_scope(self, approval_id: str, *, new: bool = False) -> Iterator[_Open]:
        path = self.approval_path(approval_id)
        if new:
            self.approvals_directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        elif not path.is_file():
            raise ApprovalNotFoundError(f"No approval {approval_id} in {self}.")
        lock = FileLock(lock_path_for(path), timeout=self.lock_timeout)
        if not lock.acquire():
            raise SnapshotUnavailableError(
                f"Approval {approval_id} in {self} is being changed by another process (its lock stayed held for "
                f"{self.lock_timeout:g} s); try again."
            )
        try:
            handle = self._approval_file(approval_id)
            yield handle
            if handle.changed and handle.record is not None:
                body = b",".join(handle.audit)
                data = b'{"approval":%s,"audit":[%s],"schema_version":%d}\n' % (handle.record, body, _FORMAT)
                atomic_write(path, data)
        finally:
            lock.release()

    def _approval_read(self, handle: Any, approval_id: str) -> bytes | None:
        opened: _Open = handle if handle is not None else self._approval_file(approval_id)
        return opened.record

    def _approval_write(self, handle: Any, approval: Approval, data: bytes, *, expected_version: int | None) -> bool:
        opened: _Open = handle
        if expected_version is None:
            if opened.record is not None:
                return False
        else:
            if opened.record is None:
                return False
            current = self._decode_approval(approval.id, opened.record)
            if current.status != "pending" or current.version != expected_version:
                return False
        opened.record, opened.changed = data, True
        return True

    def _audit_read(self, handle: Any, approval_id: str) -> list[bytes]:
        opened: _Open = handle if handle is not None else self._approval_file(approval_id)
        return list(opened.audit)

    def _audit_write(self, handle: Any, entry: ApprovalAuditEntry, data: bytes) -> None:
        opened: _Open = handle
        opened.audit.append(data)
        opened.changed = True

    def _approval_all(self) -> Iterator[tuple[str, bytes | CorruptRecordError]]:
        folder = self.approvals_directory
        if not folder.is_dir():
            return
        for path in sorted(folder.glob("ap_*.json")):
            try:
                raw = path.read_bytes()
            except FileNotFoundError:  # pragma: no cover - files are never deleted
                continue
            try:
                record = self._approval_parse(path.stem, raw).record
            except CorruptRecordError as exc:
                yield path.stem, exc  # one damaged file must not hide the others
                continue
            if record is not None:
                yield path.stem, record
