"""The service store in a directory store's folder: ``<directory>/service/``.

Files (UTF-8 JSON, mode 0o600, the folders 0o700; each written under the exclusive ``flock`` of its sidecar
lock file ``.<name>.lock``, waiting at most ``lock_timeout``):

* ``tokens.json``: ``{"schema_version": 1, "tokens": [...]}``, every token's record and the SHA-256 of its text
  (never the text), rewritten atomically (temp file, fsync, rename) by ``add_token`` and ``revoke_token``.
* ``events.jsonl``: the event log, a header line ``{"pruned_up_to": N, "schema_version": 1}`` then one event
  per line (``{"at", "data", "id", "kind"}``), appended with one ``write`` and one fsync per change. The next id
  is the last line's plus one, under the lock, so ids increase across processes. A last line torn by a crash
  (no newline) is ignored by readers and cut off by the next append. When the file holds half again as many
  events as :attr:`~handrail.stores._service_base.ServiceStoreBase.events_kept`, an append rewrites it
  atomically with the newest ``events_kept`` and the highest id dropped in the header. A reader keeps what it
  read and reads only what was appended since (a changed file, after such a rewrite, is read again whole).
* ``runs/<run id>.json``: ``{"run": {...}, "schema_version": 1}``, written atomically; the run's claim is a
  ``flock`` on ``runs/.<run id>.claim`` (released when the process dies).

A file that cannot be read is refused with CorruptRecordError naming it (``list_runs`` skips a damaged run).
"""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from handrail.core._files import FileLock, atomic_write, lock_path_for
from handrail.dataclasses._approval_checks import canonical_json
from handrail.dataclasses.service import RunRecord, RunStatus, ServiceEvent, TokenInfo
from handrail.errors import CorruptRecordError, SnapshotUnavailableError
from handrail.stores._events import EventItem
from handrail.stores._service_base import Release, ServiceStoreBase
from handrail.stores._service_records import (
    event_from_dict,
    event_to_dict,
    run_from_dict,
    run_to_dict,
    token_from_dict,
    token_to_dict,
)

__all__ = ["FileServiceRecords"]

_FORMAT = 1
_TAIL = 65_536


@dataclass
class _Log:
    """What this store object has read of ``events.jsonl``: the file (inode), how far, and the events."""

    inode: int = -1
    offset: int = 0
    pruned: int = 0
    ids: list[int] = field(default_factory=list)
    events: list[ServiceEvent] = field(default_factory=list)


class FileServiceRecords(ServiceStoreBase):
    """The service primitives over files (mixed into :class:`~handrail.stores.snapshot_file.FileSnapshotStore`)."""

    directory: Path
    lock_timeout: float

    @property
    def service_directory(self) -> Path:
        """``<directory>/service``."""
        return self.directory / "service"

    def _service_folder(self, *parts: str) -> Path:
        folder = self.service_directory.joinpath(*parts)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return folder

    @contextlib.contextmanager
    def _locked(self, path: Path) -> Iterator[None]:
        lock = FileLock(lock_path_for(path), timeout=self.lock_timeout)
        if not lock.acquire():
            raise SnapshotUnavailableError(
                f"{path} in {self} is being changed by another process (its lock stayed held for "
                f"{self.lock_timeout:g} s); try again."
            )
        try:
            yield
        finally:
            lock.release()

    def _read_json(self, path: Path, key: str) -> Any:
        """The ``key`` of a JSON file of this format (None when the file does not exist)."""
        try:
            raw = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            data = json.loads(raw)
            if not isinstance(data, dict) or data.get("schema_version") != _FORMAT or key not in data:
                raise ValueError(f"not a file of schema_version {_FORMAT} holding {key!r}")
        except (ValueError, RecursionError) as exc:
            raise CorruptRecordError(f"{self}: {path} cannot be read: {exc}") from exc
        return data[key]

    # -- tokens ------------------------------------------------------------------------------------

    @property
    def _tokens_path(self) -> Path:
        return self.service_directory / "tokens.json"

    def _tokens_read(self) -> list[tuple[TokenInfo, str]]:
        path = self._tokens_path
        rows = self._read_json(path, "tokens")
        if rows is None:
            return []
        if not isinstance(rows, list):
            raise CorruptRecordError(f"{self}: {path} cannot be read: 'tokens' is not a list")
        return [token_from_dict(f"{self}: {path}", row) for row in rows]

    def _tokens_write(self, tokens: list[tuple[TokenInfo, str]]) -> None:
        rows = [token_to_dict(token, secret_hash) for token, secret_hash in tokens]
        atomic_write(self._tokens_path, canonical_json({"schema_version": _FORMAT, "tokens": rows}) + b"\n")

    def _token_insert(self, token: TokenInfo, secret_hash: str) -> bool:
        self._service_folder()
        with self._locked(self._tokens_path):
            tokens = self._tokens_read()
            if any(t.name == token.name and t.revoked_at is None for t, _ in tokens):
                return False
            self._tokens_write([*tokens, (token, secret_hash)])
        return True

    def _token_rows(self) -> list[tuple[TokenInfo, str]]:
        tokens = self._tokens_read()
        return sorted(tokens, key=lambda row: (row[0].created_at, row[0].token_id))

    def _token_get(self, token_id: str) -> tuple[TokenInfo, str] | None:
        return next((row for row in self._tokens_read() if row[0].token_id == token_id), None)

    def _token_revoke(self, name_or_id: str, at: datetime) -> TokenInfo | None:
        if not self._tokens_path.exists():
            return None
        with self._locked(self._tokens_path):
            tokens = self._tokens_read()
            valid = [i for i, (t, _) in enumerate(tokens) if t.revoked_at is None]
            chosen = [i for i in valid if tokens[i][0].token_id == name_or_id] or [
                i for i in valid if tokens[i][0].name == name_or_id
            ]
            if not chosen:
                return None
            token, secret_hash = tokens[chosen[0]]
            revoked = replace(token, revoked_at=at)
            tokens[chosen[0]] = (revoked, secret_hash)
            self._tokens_write(tokens)
        return revoked

    # -- events ------------------------------------------------------------------------------------

    @property
    def events_path(self) -> Path:
        """The event log: ``<directory>/service/events.jsonl``."""
        return self.service_directory / "events.jsonl"

    def _events_append(self, items: Sequence[EventItem]) -> list[ServiceEvent]:
        if not items:
            return []
        self._service_folder()
        path = self.events_path
        with self._locked(path):
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
            try:
                pruned, last, valid = self._events_tail(fd)
                if valid == 0:
                    header = canonical_json({"pruned_up_to": pruned, "schema_version": _FORMAT}) + b"\n"
                    os.ftruncate(fd, 0)
                    os.pwrite(fd, header, 0)
                    valid = len(header)
                else:
                    os.ftruncate(fd, valid)  # a line torn by a crash goes (nothing if the file ends whole)
                events = [ServiceEvent(last + 1 + i, kind, at, data) for i, (kind, at, data) in enumerate(items)]
                os.pwrite(fd, b"".join(canonical_json(event_to_dict(e)) + b"\n" for e in events), valid)
                os.fsync(fd)
            finally:
                os.close(fd)
            if events[-1].id - pruned > self.events_kept + max(self.prune_every, self.events_kept // 2):
                self._events_prune(events[-1].id - self.events_kept)
        return events

    def _events_tail(self, fd: int) -> tuple[int, int, int]:
        """``(pruned_up_to, the last id, the length of the file's whole lines)`` of the open log (0s: empty)."""
        size = os.fstat(fd).st_size
        if size == 0:
            return 0, 0, 0
        first = os.pread(fd, min(size, _TAIL), 0)
        if b"\n" not in first:
            return 0, 0, 0  # a header torn by a crash: the file held no event yet
        pruned = self._log_header(first[: first.index(b"\n")])
        window = _TAIL
        while True:
            start = max(0, size - window)
            chunk = os.pread(fd, size - start, start)
            end = chunk.rfind(b"\n")
            lines = chunk[: end + 1].splitlines()
            valid = start + end + 1
            if len(lines) >= 2 or start == 0:
                break
            window *= 4
        if start == 0 and len(lines) == 1:
            return pruned, pruned, valid  # only the header
        event = self._event_line(lines[-1], "the last line")
        return pruned, event.id, valid

    def _log_header(self, line: bytes) -> int:
        try:
            data = json.loads(line)
            pruned = data["pruned_up_to"]
            if data.get("schema_version") != _FORMAT or type(pruned) is not int or pruned < 0:
                raise ValueError(f"not an event log header of schema_version {_FORMAT}")
        except (ValueError, TypeError, KeyError) as exc:
            raise CorruptRecordError(f"{self}: {self.events_path} cannot be read: its header line: {exc}") from exc
        return int(pruned)

    def _event_line(self, line: bytes, where: str) -> ServiceEvent:
        try:
            data = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise CorruptRecordError(f"{self}: {self.events_path} cannot be read: {where}: {exc}") from exc
        return event_from_dict(f"{self}: {self.events_path} ({where})", data)

    def _events_prune(self, cutoff: int) -> None:
        """Rewrite the log with the events after ``cutoff`` (called holding its lock)."""
        path = self.events_path
        lines = path.read_bytes().splitlines(keepends=True)
        kept = [line for line in lines[1:] if line.endswith(b"\n") and self._event_line(line, "a line").id > cutoff]
        header = canonical_json({"pruned_up_to": cutoff, "schema_version": _FORMAT}) + b"\n"
        atomic_write(path, header + b"".join(kept))

    def _log(self) -> _Log:
        """What is in the log now: read on from where this store object stopped (again whole after a rewrite)."""
        lock: threading.Lock = self.__dict__.setdefault("_log_lock", threading.Lock())
        with lock:
            log: _Log = self.__dict__.setdefault("_event_log", _Log())
            try:
                fd = os.open(self.events_path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            except (FileNotFoundError, NotADirectoryError):
                log = self.__dict__["_event_log"] = _Log()
                return log
            try:
                stat = os.fstat(fd)
                if stat.st_ino != log.inode or stat.st_size < log.offset:
                    log = self.__dict__["_event_log"] = _Log(inode=stat.st_ino)
                if stat.st_size > log.offset:
                    self._read_on(fd, log, stat.st_size)
            finally:
                os.close(fd)
            return log

    def _read_on(self, fd: int, log: _Log, size: int) -> None:
        chunk = os.pread(fd, size - log.offset, log.offset)
        end = chunk.rfind(b"\n")
        if end < 0:
            return  # only a line being written (or torn)
        lines = chunk[: end + 1].splitlines()
        if log.offset == 0:
            log.pruned = self._log_header(lines[0])
            lines = lines[1:]
        for number, line in enumerate(lines):
            event = self._event_line(line, f"line {len(log.ids) + number + 2}")
            if not log.ids or event.id > log.ids[-1]:
                log.ids.append(event.id)
                log.events.append(event)
        log.offset += end + 1

    def _events_read(self, after_id: int, limit: int) -> tuple[list[ServiceEvent], int, int]:
        log = self._log()
        start = bisect.bisect_right(log.ids, after_id)
        return log.events[start : start + limit], log.pruned, log.ids[-1] if log.ids else log.pruned

    def _events_newest(self) -> int:
        log = self._log()
        return log.ids[-1] if log.ids else log.pruned

    # -- runs --------------------------------------------------------------------------------------

    def run_path(self, run_id: str) -> Path:
        """The file of a run record: ``<directory>/service/runs/<run id>.json``."""
        return self.service_directory / "runs" / f"{self._run_key(run_id)}.json"

    def _run_file(self, path: Path) -> RunRecord | None:
        data = self._read_json(path, "run")
        if data is None:
            return None
        record = run_from_dict(f"{self}: {path}", data)
        if path.name != f"{record.run_id}.json":
            raise CorruptRecordError(f"{self}: {path} holds the run {record.run_id}.")
        return record

    def _run_write(self, record: RunRecord) -> None:
        atomic_write(self.run_path(record.run_id),
                     canonical_json({"run": run_to_dict(record), "schema_version": _FORMAT}) + b"\n")  # fmt: skip

    def _run_insert(self, record: RunRecord) -> bool:
        self._service_folder("runs")
        path = self.run_path(record.run_id)
        with self._locked(path):
            if path.exists():
                return False
            self._run_write(record)
        return True

    def _run_get(self, run_id: str) -> RunRecord | None:
        return self._run_file(self.run_path(run_id))

    def _run_replace(self, updated: RunRecord, expected_version: int) -> RunRecord | None:
        path = self.run_path(updated.run_id)
        with self._locked(path):
            current = self._run_file(path)
            assert current is not None  # run records are never deleted
            if current.version != expected_version:
                return current
            self._run_write(updated)
        return None

    def _run_list(self, status: RunStatus | None, limit: int, before: tuple[datetime, str] | None) -> list[RunRecord]:
        folder = self.service_directory / "runs"
        if not folder.is_dir():
            return []
        found = []
        for path in folder.glob("*.json"):
            if path.name.startswith("."):
                continue
            with contextlib.suppress(CorruptRecordError):  # refused by name when read on its own
                record = self._run_file(path)
                if record is None or (status is not None and record.status != status):
                    continue
                if before is None or (record.created_at, record.run_id) < before:
                    found.append(record)
        found.sort(key=lambda r: (r.created_at, r.run_id), reverse=True)
        return found[:limit]

    def _run_claim(self, run_id: str) -> Release | None:
        lock = FileLock(self._service_folder("runs") / f".{run_id}.claim", timeout=0)
        return lock.release if lock.acquire() else None
