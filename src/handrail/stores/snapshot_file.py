"""A snapshot store in a directory of JSON files: one file per snapshot, ``<id>.json``.

Each file is exactly a snapshot file as :func:`~handrail.dataclasses.snapshot.write_snapshot` writes it
(UTF-8 JSON, written atomically, mode 0o600), so a paused run's snapshot can be read, copied or decided on
with or without the store. A claim is an exclusive ``flock`` on the sidecar lock file
``.<id>.json.lock`` (:func:`~handrail.core.files.lock_path_for`), released when the process dies; lock
files stay behind on purpose (deleting one would let two holders lock two different files). Processes on
one machine share a directory safely; a network file system whose ``flock`` is not shared between machines
does not.

Example:
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
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from handrail.core.files import FileLock, atomic_write, lock_path_for
from handrail.dataclasses.snapshot import AgentSnapshot, MessageCache, decode_snapshot, encode_snapshot
from handrail.errors import SnapshotUnavailableError
from handrail.stores._snapshot_base import OnSnapshotError, Release, SnapshotStoreBase
from handrail.stores._snapshot_common import check_snapshot, id_from_name

__all__ = ["FileSnapshotStore"]


class FileSnapshotStore(SnapshotStoreBase):
    """Snapshots as ``<directory>/<id>.json`` files (see the module docstring).

    Args:
        directory: The snapshot directory; created (mode 0o700) on the first write (until then the store lists
            nothing).
        allowed_modules: Module prefixes whose classes state values in the files may name, besides handrail's.
        lock_timeout: Seconds a decision waits for a claim held elsewhere (a resumed run holds its claim for the
            whole run) before raising SnapshotUnavailableError.
        on_error: Called by ``list_pending`` / ``list_paused`` with the id of each unreadable file and the error
            (the file is skipped); default: a ``UserWarning`` naming it.

    Raises:
        ConfigurationError: For a negative or non-numeric ``lock_timeout``.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        allowed_modules: Iterable[str] = (),
        lock_timeout: float = 5.0,
        on_error: OnSnapshotError | None = None,
    ) -> None:
        super().__init__(allowed_modules=allowed_modules, lock_timeout=lock_timeout, on_error=on_error)
        self.directory = Path(directory).absolute()
        """The snapshot directory (absolute)."""

    def __str__(self) -> str:
        return f"FileSnapshotStore('{self.directory}')"

    def __repr__(self) -> str:
        return str(self)

    def _init_parameters(self) -> dict[str, Any]:
        return {"directory": str(self.directory)}

    def path_of(self, snapshot_id: str) -> Path:
        """The file of a snapshot id: ``<directory>/<id>.json`` (absolute; it need not exist).

        Raises:
            ConfigurationError: For an invalid id.
        """
        return self.directory / f"{self._id(snapshot_id)}.json"

    def locator(self, snapshot_id: str) -> str:
        """The file's absolute path (what ``AgentSnapshot.location`` holds for it)."""
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
        atomic_write(self.path_of(snapshot_id), data)

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

    def _records(self, paused_only: bool) -> Iterator[tuple[str, bytes]]:
        if not self.directory.exists():  # nothing was written yet
            return
        for path in self.files():
            try:
                data = path.read_bytes()
            except FileNotFoundError:  # renamed by a run pausing again while we list
                continue
            yield path.stem, data

    def _some_ids(self) -> list[str]:
        try:
            files = self.files()
        except OSError:
            return []
        files.sort(key=lambda p: p.stat().st_mtime if p.exists() else 0.0, reverse=True)
        return [p.stem for p in files]

    def _decode(self, snapshot_id: str, data: bytes) -> AgentSnapshot:
        return decode_snapshot(data, source=str(self.path_of(snapshot_id)), allowed_modules=self.allowed_modules)

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
            atomic_write(old, data)
            os.replace(old, new)
            atomic_write(old, tombstone)
        return new_id
