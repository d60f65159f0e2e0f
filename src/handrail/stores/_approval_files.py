"""Approval records in a directory store: ``<directory>/approvals/<id>.json``, one file per approval.

A file holds the record and its whole audit trail, ``{"approval": {...}, "audit": [{...}, ...],
"schema_version": 1}`` (UTF-8 JSON, mode 0o600), so a change and its audit entry land together: every change
reads the file, and rewrites it atomically (temp file, fsync, rename) under an exclusive ``flock`` on
``approvals/.<id>.json.lock`` held for the whole read-check-write (waiting at most ``lock_timeout``). The
change's events are appended to the store's event log (``service/events.jsonl``) after the file is renamed,
still under its lock. Listing reads every file; a directory store suits one machine and modest numbers of
approvals.

A batch (a pause's approvals, a batch of the expiry sweep) locks its files together, in id order, and writes
them together: every changed file's temp file is written, then each is fsynced, renamed, and the folder is
fsynced once (instead of two fsyncs per file), then the batch's events are appended (one fsync). Each file is
as durable as a single change's, and a crash leaves each file old or new, never torn; a crash between the
renames and the event append loses those events (the approvals are what they say). The fsyncs stay even for
the sweep, whose expiries the next sweep would make again: a file renamed before its data reached the disk may
be empty after a crash on some file systems, and the record and its audit trail would be lost.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from handrail.core._files import FileLock, atomic_write, fsync_directory, lock_path_for
from handrail.dataclasses._approval_checks import canonical_json
from handrail.dataclasses.approval import Approval
from handrail.dataclasses.approval_audit import ApprovalAuditEntry
from handrail.errors import ApprovalNotFoundError, CorruptRecordError, SnapshotUnavailableError
from handrail.stores._approval_base import ApprovalStoreBase
from handrail.stores._events import EventItem

__all__ = ["FileApprovalRecords"]

_FORMAT = 1


@dataclass
class _Open:
    """One approval file as read inside its lock, and what the scope will write back."""

    record: bytes | None
    audit: list[bytes] = field(default_factory=list)
    changed: bool = False
    events: list[EventItem] = field(default_factory=list)
    """The change's events, appended to the log once the file is written."""
    decoded: tuple[bytes, Approval] | None = None
    """``record`` and its approval, once decoded (a change reads the record, then compares-and-sets it)."""

    def content(self) -> bytes:
        """The file's new bytes."""
        assert self.record is not None
        body = b",".join(self.audit)
        return b'{"approval":%s,"audit":[%s],"schema_version":%d}\n' % (self.record, body, _FORMAT)


@dataclass
class _Batch:
    """The files of a batch, each read on first use inside the batch's locks, and the batch's events."""

    store: FileApprovalRecords
    opened: dict[str, _Open] = field(default_factory=dict)
    events: list[EventItem] = field(default_factory=list)

    def get(self, approval_id: str) -> _Open:
        if approval_id not in self.opened:
            self.opened[approval_id] = self.store._approval_file(approval_id)
        return self.opened[approval_id]


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

    def _approval_lock(self, approval_id: str) -> FileLock:
        lock = FileLock(lock_path_for(self.approval_path(approval_id)), timeout=self.lock_timeout)
        if not lock.acquire():
            raise SnapshotUnavailableError(
                f"Approval {approval_id} in {self} is being changed by another process (its lock stayed held for "
                f"{self.lock_timeout:g} s); try again."
            )
        return lock

    @contextlib.contextmanager
    def _approval_scope(self, approval_id: str, *, new: bool = False) -> Iterator[_Open]:
        path = self.approval_path(approval_id)
        if new:
            self.approvals_directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        elif not path.is_file():
            raise ApprovalNotFoundError(f"No approval {approval_id} in {self}.")
        lock = self._approval_lock(approval_id)
        try:
            handle = self._approval_file(approval_id)
            yield handle
            if handle.changed and handle.record is not None:
                atomic_write(path, handle.content())
                if handle.events:
                    self._events_append(handle.events)
        finally:
            lock.release()

    @contextlib.contextmanager
    def _approvals_scope(self, approval_ids: Sequence[str], *, new: bool) -> Iterator[_Batch]:
        if new:
            self.approvals_directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        locks: list[FileLock] = []
        try:
            for approval_id in sorted(set(approval_ids)):  # one order for every batch: no two wait for each other
                locks.append(self._approval_lock(approval_id))
            batch = _Batch(self)
            yield batch
            changed = [(self.approval_path(k), o.content()) for k, o in batch.opened.items() if o.changed and o.record]
            _write_files(self.approvals_directory, changed)
            if batch.events:
                self._events_append(batch.events)
        finally:
            for lock in locks:
                lock.release()

    def _approval_handle(self, scope: Any, approval_id: str) -> Any:
        batch: _Batch = scope
        return batch.get(approval_id)

    def _events_write(self, handle: Any, items: Sequence[EventItem]) -> None:
        target: _Open | _Batch = handle
        target.events.extend(items)  # appended by the scope, after its files are written

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
            current = self._current_approval(opened, approval.id)
            if current.status != "pending" or current.version != expected_version:
                return False
        opened.record, opened.changed = data, True
        return True

    def _current_approval(self, handle: Any, approval_id: str) -> Approval:
        opened: _Open | None = handle
        if opened is not None and opened.decoded is not None and opened.decoded[0] is opened.record:
            return opened.decoded[1]
        approval = super()._current_approval(handle, approval_id)
        if opened is not None and opened.record is not None:
            opened.decoded = (opened.record, approval)
        return approval

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


def _write_files(folder: Path, files: list[tuple[Path, bytes]]) -> None:
    """Replace each file atomically (temp file, fsync, rename), with one fsync of ``folder`` for them all.

    Raises:
        OSError: A write failed: files renamed before it are new, the others old; temp files are removed.
    """
    if not files:
        return
    if len(files) == 1:
        atomic_write(*files[0])
        return
    temps: list[tuple[str, Path]] = []
    try:
        for path, data in files:
            temp = str(path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp"))
            fd = os.open(temp, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o600)
            temps.append((temp, path))
            with open(fd, "wb", closefd=True) as out:
                out.write(data)
        for temp, _ in temps:  # after every write: the file system flushes them together
            fd = os.open(temp, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        for temp, path in temps:
            os.replace(temp, path)
    finally:
        for temp, _ in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
    fsync_directory(folder)
