"""A snapshot store in a directory of JSON files: one file per snapshot, ``<id>.json``.

Each file is exactly a snapshot file as :func:`~handrail.dataclasses.snapshot.write_snapshot` writes it
(UTF-8 JSON, written atomically, mode 0o600), so a paused run's snapshot can be read, copied or decided on
with or without the store. A claim is an exclusive ``flock`` on the sidecar lock file
``.<id>.json.lock`` (:func:`~handrail.core._files.lock_path_for`), released when the process dies; lock
files stay behind on purpose (deleting one would let two holders lock two different files). Processes on
one machine share a directory safely; a network file system whose ``flock`` is not shared between machines
does not.

During a tool step the claim's holder keeps changed ledger entries in a journal beside the file,
``.<id>.json.journal`` (mode 0o600): a header line naming the record it extends (the SHA-256 of the file's
bytes), then one fsynced JSON line ``{tool_call_id: entry}`` per change. Reads fold the lines into the
file's ledger; a torn last line (a crash mid-append) is ignored, and a journal whose header names other bytes
(left behind by a crash after the file was rewritten, which absorbed it) is never applied. Every rewrite of
the file removes the journal after the rename. A copy of the file alone holds the ledger as of its last full
write: copy the journal with it, or copy a record that is not ``running``.

Examples:
    >>> import tempfile
    >>> from handrail.dataclasses import AgentBreakpoint, AgentSnapshot, Breakpoint, ChatMessage
    >>> store = FileSnapshotStore(tempfile.mkdtemp())
    >>> snap = AgentSnapshot(messages=[ChatMessage.from_user("Hi")], state={}, component_visits={},
    ...                      break_point=AgentBreakpoint("helper", Breakpoint()), position="chat_generator")
    >>> snapshot_id = store.save(snap)
    >>> store.load(snapshot_id) == snap, store.load(snapshot_id).location == store.locator(snapshot_id)
    (True, True)
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from handrail.core._files import FileLock, atomic_write, lock_path_for
from handrail.dataclasses.snapshot import AgentSnapshot, MessageCache, decode_snapshot, encode_snapshot
from handrail.errors import ConfigurationError, ConfigurationTypeError, SnapshotUnavailableError
from handrail.stores._approval_files import FileApprovalRecords
from handrail.stores._service_files import FileServiceRecords
from handrail.stores._snapshot_base import OnSnapshotError, Release, SnapshotStoreBase
from handrail.stores._snapshot_common import check_snapshot, id_from_name
from handrail.stores._snapshot_records import Changes

__all__ = ["FileSnapshotStore"]


class FileSnapshotStore(SnapshotStoreBase, FileApprovalRecords, FileServiceRecords):
    """Snapshots as ``<directory>/<id>.json`` files (see the module docstring), approvals in ``approvals/``.

    Approval records and their audit trails are kept as :mod:`handrail.stores._approval_files` describes; the
    service's tokens, event log and runs (:class:`~handrail.stores.service.ServiceStore`) in ``service/``, as
    :mod:`handrail.stores._service_files` describes.

    Args:
        directory: The snapshot directory; created (mode 0o700) on the first write (until then the store lists
            nothing).
        allowed_modules: Module prefixes whose classes state values in the files may name, besides handrail's.
        lock_timeout: Seconds a decision waits for a claim held elsewhere (a resumed run holds its claim for the
            whole run) before raising SnapshotUnavailableError.
        on_error: Called by ``list_pending`` / ``list_paused`` with the id of each unreadable file and the error
            (the file is skipped); default: a ``UserWarning`` naming it.

    Raises:
        ConfigurationError: For an empty ``directory`` (``"."`` names the current one), or a negative or
            non-numeric ``lock_timeout``.
        ConfigurationTypeError: ``directory`` is not a str or path.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        allowed_modules: Iterable[str] = (),
        lock_timeout: float = 5.0,
        on_error: OnSnapshotError | None = None,
    ) -> None:
        if not isinstance(directory, str | os.PathLike):
            raise ConfigurationTypeError(f"A snapshot directory is a str or path, got {type(directory).__name__}.")
        if not os.fspath(directory).strip():
            raise ConfigurationError(
                f"A FileSnapshotStore needs a directory, got {os.fspath(directory)!r} (it would be the current "
                f"directory); give '.' to mean that one."
            )
        super().__init__(allowed_modules=allowed_modules, lock_timeout=lock_timeout, on_error=on_error)
        self.directory = Path(directory).absolute()
        """The snapshot directory (absolute)."""
        self._journal_lock = threading.Lock()
        self._headers: dict[str, tuple[tuple[int, int, int], bytes]] = {}

    def __str__(self) -> str:
        return f"FileSnapshotStore('{self.directory}')"

    def __repr__(self) -> str:
        return str(self)

    def _init_parameters(self) -> dict[str, Any]:
        return {"directory": str(self.directory)}

    def close(self) -> None:
        """Stop the event watcher thread, if :meth:`wait_for_events` started one (a later wait starts it again)."""
        self._close_watcher()

    def path_of(self, snapshot_id: str) -> Path:
        """The file of a snapshot id: ``<directory>/<id>.json`` (absolute; it need not exist).

        Raises:
            ConfigurationError: For an invalid id.
        """
        return self.directory / f"{self._id(snapshot_id)}.json"

    def journal_of(self, snapshot_id: str) -> Path:
        """The journal of a snapshot id: ``<directory>/.<id>.json.journal`` (it exists only while entries are kept)."""
        return self.directory / f".{self._id(snapshot_id)}.json.journal"

    def locator(self, snapshot_id: str) -> str:
        """The file's absolute path (what ``AgentSnapshot.location`` holds for it).

        ``<url>#<id>`` instead for a store opened from a URL of a registered scheme (:attr:`opened_from`).
        """
        if self.opened_from is not None:
            return f"{self.opened_from}#{self._id(snapshot_id)}"
        return str(self.path_of(snapshot_id))

    def files(self) -> list[Path]:
        """The snapshot files: ``*.json`` in the directory, not hidden (temp and lock files start with ``.``).

        Returns:
            Absolute paths, sorted by name.

        Raises:
            FileNotFoundError: When the directory does not exist.
            NotADirectoryError: When it is not a directory.
        """
        folder = self.directory
        if not folder.exists():
            raise FileNotFoundError(f"Snapshot directory {folder} does not exist.")
        if not folder.is_dir():
            raise NotADirectoryError(f"{folder} is not a directory.")
        return sorted(p for p in folder.iterdir() if p.suffix == ".json" and not p.name.startswith(".") and p.is_file())

    # -- backend primitives ------------------------------------------------------------------------

    def _file_path(self, snapshot_id: str) -> Path | None:
        return self.path_of(snapshot_id)

    def _try_claim(self, snapshot_id: str) -> Release | None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        lock = FileLock(lock_path_for(self.path_of(snapshot_id)), timeout=0)
        return lock.release if lock.acquire() else None

    @contextlib.contextmanager
    def _scope(self, snapshot_id: str | None) -> Iterator[None]:
        if snapshot_id is None:
            yield None
            return
        path = self.path_of(snapshot_id)
        if not path.is_file():
            raise self._unknown(snapshot_id)
        lock = FileLock(lock_path_for(path), timeout=self.lock_timeout)
        if not lock.acquire():
            raise self._being_resumed(snapshot_id)
        try:
            yield None
        finally:
            lock.release()

    def _read(self, handle: Any, snapshot_id: str) -> bytes | None:
        try:
            with open(self.path_of(snapshot_id), "rb") as file:
                return file.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def _write(self, snapshot_id: str, data: bytes) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        with self._journal_lock:
            atomic_write(self.path_of(snapshot_id), data)
            self._drop_kept(None, snapshot_id)

    def _drop_kept(self, handle: Any, snapshot_id: str) -> None:
        """The record was rewritten whole (its bytes absorbed the journal): the journal goes (a crash first: stale)."""
        self._headers.pop(snapshot_id, None)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.journal_of(snapshot_id))

    # -- the journal -------------------------------------------------------------------------------

    @staticmethod
    def _header(data: bytes) -> bytes:
        return b'{"journal_of":"sha256:%s"}\n' % hashlib.sha256(data).hexdigest().encode("ascii")

    def _current_header(self, snapshot_id: str) -> bytes | None:
        """The journal header of the record as it is now (None: no record); cached by the file's identity."""
        try:
            with open(self.path_of(snapshot_id), "rb") as file:
                stat = os.fstat(file.fileno())
                key = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
                known = self._headers.get(snapshot_id)
                if known is not None and known[0] == key:
                    return known[1]
                header = self._header(file.read())
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        self._headers[snapshot_id] = (key, header)
        return header

    def _append(self, handle: Any, snapshot_id: str, changes: Changes) -> bool:
        lines = b"".join(line + b"\n" for _, line in changes)
        path = self.journal_of(snapshot_id)
        with self._journal_lock:
            header = self._current_header(snapshot_id)
            if header is None:
                return False
            try:
                fd = os.open(path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
            except FileNotFoundError:
                fd = -1
            if fd >= 0:
                with open(fd, "r+b", closefd=True) as file:
                    if file.readline() == header:  # the journal of this very record: append
                        end = file.seek(0, os.SEEK_END)
                        file.seek(end - 1)
                        if file.read(1) != b"\n":  # a torn line of a crashed append: cut it off first
                            file.seek(0)
                            file.truncate(file.read().rfind(b"\n") + 1)
                        file.seek(0, os.SEEK_END)
                        file.write(lines)
                        file.flush()
                        os.fsync(file.fileno())
                        return True
            atomic_write(path, header + lines)  # none yet, or a stale one (of bytes a rewrite replaced)
            return True

    def _read_journal(self, snapshot_id: str) -> bytes | None:
        try:
            with open(self.journal_of(snapshot_id), "rb") as file:
                return file.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def _journal_lines(self, snapshot_id: str, journal: bytes | None, data: bytes) -> Changes:
        """The complete lines of a journal that extends exactly ``data`` (else none), labelled for errors."""
        if not journal:
            return []
        head, newline, rest = journal.partition(b"\n")
        if not newline or head + newline != self._header(data):
            return []  # left by a crash after a rewrite (which absorbed it), or for other bytes: never applied
        lines = rest.split(b"\n")
        lines.pop()  # what follows the last newline: nothing, or a torn line of a crashed append
        where = self.journal_of(snapshot_id)
        return [(f"journal {where} line {number}", line) for number, line in enumerate(lines, start=2)]

    def _read_full(self, handle: Any, snapshot_id: str) -> tuple[bytes, Changes] | None:
        journal = self._read_journal(snapshot_id)  # first: a rewrite after this read absorbed what it holds
        data = self._read(handle, snapshot_id)
        return None if data is None else (data, self._journal_lines(snapshot_id, journal, data))

    def _insert(self, handle: Any, snapshot_id: str, snapshot: AgentSnapshot, data: bytes) -> bool:
        if self.path_of(snapshot_id).exists():
            return False
        self._write(snapshot_id, data)
        return True

    def _update(self, handle: Any, snapshot_id: str, snapshot: AgentSnapshot, data: bytes) -> bool:
        if not self.path_of(snapshot_id).is_file():
            return False
        self._write(snapshot_id, data)
        return True

    def _records(self, paused_only: bool) -> Iterator[tuple[str, bytes, Changes]]:
        if not self.directory.exists():  # nothing was written yet
            return
        for path in self.files():
            journal = self._read_journal(path.stem)
            try:
                data = path.read_bytes()
            except FileNotFoundError:  # renamed by a run pausing again while we list
                continue
            yield path.stem, data, self._journal_lines(path.stem, journal, data)

    def _some_ids(self) -> list[str]:
        try:
            files = self.files()
        except OSError:
            return []
        files.sort(key=lambda p: p.stat().st_mtime if p.exists() else 0.0, reverse=True)
        return [p.stem for p in files]

    def _decode(self, snapshot_id: str, data: bytes, changes: Changes | None = None) -> AgentSnapshot:
        return decode_snapshot(
            data, source=str(self.path_of(snapshot_id)), allowed_modules=self.allowed_modules, changes=changes or ()
        )

    # -- files do the pause-again move in three atomic steps -----------------------------------------

    def continue_in(
        self, snapshot_id: str, snapshot: AgentSnapshot, name: str, cache: MessageCache | None = None
    ) -> str:
        """The resumed run paused again: see :meth:`SnapshotStoreBase.continue_in`.

        In three atomic steps: the new content is written over the old file, the file is renamed to the new
        id, and the tombstone is written under the old name. A crash between them leaves the new pause under
        the old id (``paused``) or under the new one with the old id missing (its decisions are recorded in
        the new file): never a pause that is lost or listed twice.
        """
        snapshot_id = self._id(snapshot_id)
        new_id = id_from_name(name)
        data = encode_snapshot(check_snapshot(snapshot), cache)
        tombstone = encode_snapshot(dataclasses.replace(snapshot, status="resumed", continued_in=new_id), cache)
        old, new = self.path_of(snapshot_id), self.path_of(new_id)
        with self._guarded(snapshot_id, "holder"):
            if not old.is_file():
                raise self._unknown(snapshot_id)
            if new.exists():
                raise SnapshotUnavailableError(f"Snapshot {new_id} already exists in {self}.")
            with self._journal_lock:
                atomic_write(old, data)  # absorbs the old id's journal (stale from here on)
                os.replace(old, new)
                atomic_write(old, tombstone)
                self._drop_kept(None, snapshot_id)
        return new_id
