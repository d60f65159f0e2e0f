"""What a snapshot store backend supplies, and the claim (lease) bookkeeping shared by all backends.

A backend (a directory of files, a SQLite file, a PostgreSQL database) supplies: an exclusive claim per
snapshot id that dies with its process (:meth:`SnapshotRecords._try_claim`), a write scope for one record
that also excludes claims held elsewhere (:meth:`SnapshotRecords._scope`), and reads and writes of one
record's bytes inside it. The bytes are exactly what :func:`~handrail.dataclasses.snapshot.encode_snapshot`
writes, so a record is a self-contained snapshot file wherever it lives.

During a tool step the claim's holder does not rewrite the whole record around every call: after the step's
first full write, :meth:`~handrail.stores._snapshot_base.SnapshotStoreBase.append_entries` keeps only the
changed ledger entries beside the record (a directory store: the journal file ``.<id>.json.journal``; a
database: rows of an entries table). Every read folds them into the record's ledger in one place
(:meth:`SnapshotRecords._decode`, through :func:`~handrail.dataclasses.snapshot.decode_snapshot`), and every
full write of the record absorbs them: the new record is written from the folded ledger (or the run's own,
which is newer) and the kept entries are dropped with it (a database: in the same transaction; a directory
store: a journal names the exact record it extends, so a journal left behind by a crash after the rename is
never applied to the newer record).

Who may write what:

* ``record_decision`` never runs while a claim is held (by anyone, this store object included): it waits up
  to ``lock_timeout`` seconds for the claim, then raises SnapshotUnavailableError.
* ``replace``, ``continue_in``, ``update_ledger`` and ``mark_done`` are meant for the claim's holder: through
  the store object that holds the claim they write at once; through any other they first wait (up to
  ``lock_timeout``) for the claim like a decision does.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

from handrail.core.serialization import default_from_dict, default_to_dict, init_parameters
from handrail.dataclasses.snapshot import AgentSnapshot, decode_snapshot
from handrail.errors import ConfigurationError, CorruptRecordError, SnapshotError, SnapshotUnavailableError, StoreError
from handrail.stores._snapshot_common import check_snapshot_id

__all__ = ["Changes", "OnSnapshotError", "Release", "SnapshotLease", "SnapshotRecords"]

Changes = list[tuple[str, bytes]]
"""Ledger entries kept beside a record: ``(label or call id, UTF-8 JSON {tool_call_id: entry})``, oldest first."""

OnSnapshotError = Callable[[str, Exception], None]
"""Called by ``list_pending`` / ``list_paused`` with the id of a record that cannot be read and the error."""

Release = Callable[[], None]
Mode = Literal["new", "holder", "decide"]
_KNOWN_SHOWN = 5


class SnapshotLease:
    """The claim on one snapshot, held by one resumed run (a :class:`~handrail.stores.types.Lease`).

    Released by :meth:`release` (or leaving a ``with`` block), or by the operating system / the database
    server when the holding process dies.
    """

    def __init__(self, snapshot_id: str, store: str, release: Release, forget: Callable[[SnapshotLease], None]):
        self.snapshot_id = snapshot_id
        """The claimed snapshot's id."""
        self.store = store
        """The store, as its error messages name it."""
        self._release: Release | None = release
        self._forget = forget
        self._lock = threading.Lock()

    @property
    def held(self) -> bool:
        """True until the lease is released."""
        return self._release is not None

    def release(self) -> None:
        """Give the claim up; calling it again does nothing."""
        with self._lock:
            release, self._release = self._release, None
        if release is not None:
            self._forget(self)
            release()

    def __enter__(self) -> SnapshotLease:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"SnapshotLease({self.snapshot_id!r}, store={self.store!r}, held={self.held})"


def _warn(snapshot_id: str, exc: Exception) -> None:
    warnings.warn(f"Skipping snapshot {snapshot_id}: {exc}", UserWarning, stacklevel=4)


def _check_timeout(lock_timeout: Any) -> float:
    if isinstance(lock_timeout, bool) or not isinstance(lock_timeout, int | float) or not lock_timeout >= 0:
        raise ConfigurationError(f"lock_timeout must be a number of seconds >= 0, got {lock_timeout!r}.")
    return float(lock_timeout)


class SnapshotRecords(ABC):
    """The backend primitives of a snapshot store and the helpers over them (see the module docstring).

    Args:
        allowed_modules: Module prefixes whose classes state values in the records may name, besides handrail's.
        lock_timeout: Seconds a decision (or a write through a store object that holds no claim) waits for a
            claim held elsewhere before raising SnapshotUnavailableError.
        on_error: Called by :meth:`list_pending` / :meth:`list_paused` with each record that cannot be read and
            the error, which skip it; default: a ``UserWarning`` naming the store and the id.

    Raises:
        ConfigurationError: For a negative or non-numeric ``lock_timeout``.
    """

    def __init__(
        self, *, allowed_modules: Iterable[str] = (), lock_timeout: float = 5.0, on_error: OnSnapshotError | None = None
    ) -> None:
        self.allowed_modules: tuple[str, ...] = tuple(allowed_modules)
        """Module prefixes trusted for classes named inside the records."""
        self.lock_timeout = _check_timeout(lock_timeout)
        """Seconds to wait for a claim held elsewhere."""
        self.on_error = on_error
        """What :meth:`list_paused` does with an unreadable record (None: warn)."""
        self.opened_from: str | None = None
        """The URL of a registered scheme the store was opened from, when its own locations would not name that
        scheme (:func:`~handrail.stores.open_snapshot_store` sets it); :meth:`locator` then writes
        ``<url>#<id>``, so a snapshot's ``location`` leads back through the scheme's factory."""
        self._held: dict[str, SnapshotLease] = {}
        self._held_lock = threading.Lock()

    # -- backend primitives ------------------------------------------------------------------------

    @abstractmethod
    def __str__(self) -> str:
        """The store as error messages name it, e.g. ``FileSnapshotStore('/abs/dir')``."""

    @abstractmethod
    def locator(self, snapshot_id: str) -> str:
        """What ``AgentSnapshot.location`` holds for the snapshot."""

    @abstractmethod
    def _try_claim(self, snapshot_id: str) -> Release | None:
        """Take the claim on ``snapshot_id`` without waiting: its release function, or None when held elsewhere."""

    @abstractmethod
    def _scope(self, snapshot_id: str | None) -> contextlib.AbstractContextManager[Any]:
        """An atomic write scope (a transaction; for files: nothing) yielding the handle the reads/writes take.

        With an id: the claim on it must be free, or become free within ``lock_timeout`` (else
        SnapshotUnavailableError from :meth:`_being_resumed`), and stays excluded until the scope ends.
        """

    @abstractmethod
    def _read(self, handle: Any, snapshot_id: str) -> bytes | None:
        """The record's bytes, or None when there is none (``handle`` None: outside any scope)."""

    def _changes(self, handle: Any, snapshot_id: str, data: bytes) -> Changes:
        """The ledger entries kept beside the record whose bytes are ``data``, oldest first, each labelled for errors.

        Read after ``data`` (a database) or made sure to extend exactly ``data`` (a directory store), so a read
        never applies entries older than the record.
        """
        return []

    def _read_full(self, handle: Any, snapshot_id: str) -> tuple[bytes, Changes] | None:
        """The record's bytes and the entries kept beside it, or None when there is no record."""
        data = self._read(handle, snapshot_id)
        return None if data is None else (data, self._changes(handle, snapshot_id, data))

    @abstractmethod
    def _append(self, handle: Any, snapshot_id: str, changes: Changes) -> bool:
        """Keep ``(tool_call_id, entry JSON)`` changes beside the record, durably; False when there is no record."""

    def _exists(self, snapshot_id: str) -> bool:
        """Whether a record exists (outside any scope)."""
        return self._read(None, snapshot_id) is not None

    @abstractmethod
    def _insert(self, handle: Any, snapshot_id: str, snapshot: AgentSnapshot, data: bytes) -> bool:
        """Add a record; False (and nothing written) when the id exists."""

    @abstractmethod
    def _update(self, handle: Any, snapshot_id: str, snapshot: AgentSnapshot, data: bytes) -> bool:
        """Replace a record; False (and nothing written) when there is none."""

    @abstractmethod
    def _records(self, paused_only: bool) -> Iterator[tuple[str, bytes, Changes]]:
        """``(id, bytes, kept entries)`` of the records (a backend may yield any status: they are filtered)."""

    @abstractmethod
    def _some_ids(self) -> list[str]:
        """A few known ids, newest first, for error messages."""

    def _decode(self, snapshot_id: str, data: bytes, changes: Changes | None = None) -> AgentSnapshot:
        """The snapshot in a record with the entries kept beside it folded in (``location`` None).

        A corrupt record, or a kept entry that is not valid (named), raises an error naming store and id.

        A database record that cannot be read is a CorruptRecordError (the file store overrides this: a bad file is a
        SnapshotError naming the file).
        """
        what = f"{self}: the record of snapshot {snapshot_id}"
        try:
            return decode_snapshot(
                data,
                source=self.locator(snapshot_id),
                allowed_modules=self.allowed_modules,
                what=what,
                changes=changes or (),
            )
        except SnapshotError as exc:
            raise CorruptRecordError(str(exc)) from exc

    def _file_path(self, snapshot_id: str) -> Path | None:
        """The record's file, for a directory store (``PendingApproval.path``)."""
        return None

    def close(self) -> None:  # noqa: B027 - a backend without connections has nothing to close
        """Release what the store holds open (connections); it reopens on next use. Leases are not released."""

    def _init_parameters(self) -> dict[str, Any]:
        """The backend's own constructor arguments, as JSON data."""
        return {}

    def to_dict(self) -> dict[str, Any]:
        """``{"type": <class path>, "init_parameters": {...}}`` (``on_error`` is not written)."""
        params = {**self._init_parameters(), "lock_timeout": self.lock_timeout}
        if self.allowed_modules:
            params["allowed_modules"] = list(self.allowed_modules)
        return default_to_dict(self, **params)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Rebuild a store from :meth:`to_dict` output.

        Raises:
            SerializationError: For data without ``init_parameters``, or unknown or missing parameters.
        """
        params = init_parameters(data, cls)
        store: Self = default_from_dict(cls, {**data, "init_parameters": cls._read_parameters(params)})
        return store

    @classmethod
    def _read_parameters(cls, params: dict[str, Any]) -> dict[str, Any]:
        return params

    # -- shared helpers ----------------------------------------------------------------------------

    def _id(self, snapshot_id: Any) -> str:
        checked = check_snapshot_id(snapshot_id)
        return check_snapshot_id(checked.removesuffix(".json"))

    def _unknown(self, snapshot_id: str) -> SnapshotError:
        known = self._some_ids()[:_KNOWN_SHOWN]
        listed = f"known ids include {known}" if known else "it holds no snapshots"
        return SnapshotError(f"No snapshot {snapshot_id!r} in {self}; {listed}.")

    def _being_resumed(self, snapshot_id: str) -> SnapshotUnavailableError:
        waited = f" for {self.lock_timeout:g} s" if self.lock_timeout else ""
        return SnapshotUnavailableError(
            f"Snapshot {snapshot_id} is being resumed (its claim in {self} stayed held{waited}); "
            "try again when that run has paused or finished."
        )

    def _holds(self, snapshot_id: str) -> bool:
        with self._held_lock:
            return snapshot_id in self._held

    def _guarded(self, snapshot_id: str | None, mode: Mode) -> contextlib.AbstractContextManager[Any]:
        if snapshot_id is None or mode == "new":
            return self._scope(None)
        if self._holds(snapshot_id):
            if mode == "decide":
                raise SnapshotUnavailableError(
                    f"Snapshot {snapshot_id} is being resumed (this store object holds its claim); "
                    "decisions are recorded while no run holds it."
                )
            return self._scope(None)
        return self._scope(snapshot_id)

    def _located(self, snapshot_id: str, snapshot: AgentSnapshot) -> AgentSnapshot:
        snapshot.location = self.locator(snapshot_id)
        return snapshot

    def _read_snapshot(self, handle: Any, snapshot_id: str) -> AgentSnapshot:
        record = self._read_full(handle, snapshot_id)
        if record is None:
            raise self._unknown(snapshot_id)
        return self._located(snapshot_id, self._decode(snapshot_id, *record))

    def _lease(self, snapshot_id: str, release: Release) -> SnapshotLease:
        def forget(lease: SnapshotLease) -> None:
            with self._held_lock:
                if self._held.get(snapshot_id) is lease:
                    del self._held[snapshot_id]

        lease = SnapshotLease(snapshot_id, str(self), release, forget)
        with self._held_lock:
            self._held[snapshot_id] = lease
        return lease

    def _claim_or_raise(self, snapshot_id: str, what: str) -> Release:
        if self._holds(snapshot_id):
            raise SnapshotUnavailableError(f"Snapshot {snapshot_id} is {what} (this store object holds its claim).")
        release = self._try_claim(snapshot_id)
        if release is None:
            raise SnapshotUnavailableError(f"Snapshot {snapshot_id} is {what} (its claim in {self} is held).")
        return release

    def _paused(self) -> list[tuple[str, AgentSnapshot]]:
        return self._listed(("paused",), None)

    def _listed(
        self, statuses: Collection[str], on_error: Callable[[str, Exception], None] | None
    ) -> list[tuple[str, AgentSnapshot]]:
        report = on_error or self.on_error
        found: list[tuple[str, AgentSnapshot]] = []
        for snapshot_id, data, changes in self._records(paused_only=tuple(statuses) == ("paused",)):
            try:
                snapshot = self._decode(snapshot_id, data, changes)
            except (ConfigurationError, StoreError, OSError) as exc:
                if report is not None:
                    report(snapshot_id, exc)
                else:
                    _warn(f"{snapshot_id} in {self}", exc)
                continue
            if snapshot.status in statuses:
                found.append((snapshot_id, self._located(snapshot_id, snapshot)))
        found.sort(key=lambda item: (item[1].timestamp.timestamp(), item[0]))
        return found
