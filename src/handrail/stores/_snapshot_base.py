"""The snapshot store template: the SnapshotStore protocol written once over the backend primitives.

See :mod:`handrail.stores._snapshot_records` for the primitives and for who may write what while a run holds
a snapshot's claim.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from handrail.dataclasses.decisions import ToolExecutionDecision, check_decided_by
from handrail.dataclasses.snapshot import AgentSnapshot, LedgerEntry, MessageCache, encode_entries, encode_snapshot
from handrail.errors import (
    ConfigurationError,
    ConfigurationTypeError,
    DecisionConflictError,
    SnapshotUnavailableError,
)
from handrail.stores._snapshot_common import (
    check_snapshot,
    id_from_name,
    new_snapshot_id,
    pending_approvals,
    unavailable_error,
    waits_for_decision,
    with_decision,
)
from handrail.stores._snapshot_records import OnSnapshotError, Release, SnapshotLease, SnapshotRecords
from handrail.stores.types import PendingApproval

__all__ = ["OnSnapshotError", "Release", "SnapshotLease", "SnapshotStoreBase"]

_SAVE_TRIES = 5


class SnapshotStoreBase(SnapshotRecords):
    """Everything a snapshot store does, over the primitives of :class:`SnapshotRecords` (see it for the arguments).

    That is the :class:`~handrail.stores.types.SnapshotStore` protocol, plus ``list_paused``.
    """

    def save(self, snapshot: AgentSnapshot) -> str:
        """Store ``snapshot`` under a new, unique id.

        Args:
            snapshot: The snapshot (not modified; its ``location`` is ignored).

        Returns:
            The id: ``[<agent>_]<component>_<visit>_<UTC time>_<8 hex>``, as a snapshot file's stem.

        Raises:
            SerializationError: A value cannot be written (named); nothing was written.
            StoreError / OSError: The backend failed; nothing was written.
        """
        data = encode_snapshot(check_snapshot(snapshot))
        for _ in range(_SAVE_TRIES):
            snapshot_id = new_snapshot_id(snapshot)
            with self._guarded(None, "new") as handle:
                if self._insert(handle, snapshot_id, snapshot, data):
                    return snapshot_id
        raise SnapshotUnavailableError(f"No free snapshot id in {self} after {_SAVE_TRIES} tries.")  # pragma: no cover

    def load(self, snapshot_id: str) -> AgentSnapshot:
        """Read a snapshot; its ``location`` is set to :meth:`locator` of the id.

        Args:
            snapshot_id: The id (a trailing ``.json`` is ignored).

        Returns:
            The snapshot.

        Raises:
            SnapshotError: No such id (the message lists a few known ids); for a directory store also a
                truncated or invalid file (named).
            StoreError: The backend failed, or (databases) the record is corrupt: the message names the store
                and the id.
        """
        snapshot_id = self._id(snapshot_id)
        return self._read_snapshot(None, snapshot_id)

    def list_paused(self) -> list[AgentSnapshot]:
        """The snapshots whose status is ``paused``, oldest first (``location`` set).

        Unreadable records are passed to ``on_error`` (default: a ``UserWarning`` naming the store and id) and
        skipped.

        Returns:
            The snapshots, sorted by timestamp, then id.
        """
        return [snapshot for _, snapshot in self._paused()]

    def list_snapshots(
        self,
        statuses: Collection[str] = ("paused",),
        *,
        on_error: Callable[[str, Exception], None] | None = None,
    ) -> list[AgentSnapshot]:
        """The snapshots whose status is one of ``statuses``, oldest first (``location`` set).

        Args:
            statuses: E.g. ``("paused", "running")`` (a ``running`` record whose id is not :meth:`claimed` belongs
                to a run that was interrupted).
            on_error: Called with ``(snapshot id, error)`` for an unreadable record (default: the store's
                ``on_error``, else a ``UserWarning``); the record is skipped.

        Returns:
            The snapshots, sorted by timestamp, then id.
        """
        return [snapshot for _, snapshot in self._listed(tuple(statuses), on_error)]

    def exists(self, snapshot_id: str) -> bool:
        """Whether the store holds a record with this id.

        Raises:
            ConfigurationError: An id the store refuses (a path, ``#``, a leading ``.``).
        """
        return self._exists(self._id(snapshot_id))

    def known_ids(self, limit: int = 10) -> list[str]:
        """A few ids the store holds, newest first (for messages that name what is there)."""
        return self._some_ids()[:limit]

    def list_pending(self) -> list[PendingApproval]:
        """One entry per tool call waiting for a decision in a paused snapshot.

        Returns:
            Sorted by the snapshot's ``created_at`` (its timestamp), then snapshot id; calls in call order.
            Unreadable records are skipped as :meth:`list_paused` describes.
        """
        pending: list[PendingApproval] = []
        for snapshot_id, snapshot in self._paused():
            pending.extend(pending_approvals(snapshot, snapshot_id, self._file_path(snapshot_id)))
        return pending

    def record_decision(
        self, snapshot_id: str, decision: ToolExecutionDecision, *, decided_by: str | None = None
    ) -> AgentSnapshot:
        """Record a person's decision on one pending call: an atomic compare-and-set of the record.

        Checked as :func:`~handrail.stores._snapshot_common.with_decision` describes, against the record as it
        is now in the store (not any copy in memory). A refused decision, or the same decision again, writes
        nothing.

        Args:
            snapshot_id: The paused snapshot.
            decision: The decision; its ``tool_call_id`` names the call.
            decided_by: Who decided; default (None) the decision's ``decided_by``, else the OS user. An empty or
                blank name is refused (ConfigurationError), as the CLI's ``--by`` is.

        Returns:
            The snapshot as it now is in the store (``location`` set).

        Raises:
            SnapshotUnavailableError: The snapshot is claimed by a resumed run (for longer than
                ``lock_timeout``; exit code 5); or, exit code 2, its run finished (SnapshotFinishedError), it was
                resumed already (SnapshotResumedError) or it was interrupted: it says ``running`` while no process
                holds its claim (SnapshotInterruptedError).
            DecisionConflictError: A different decision is recorded for the call.
            ConfigurationError: Unknown or non-pending call, another tool's name, edited arguments refused by the
                tool's JSON Schema, an empty or blank ``decided_by``, or (SnapshotError) an unknown snapshot id.
            StoreError: The backend failed or the record is corrupt.
        """
        return self.decide(snapshot_id, decision, decided_by=decided_by)[0]

    def decide(
        self, snapshot_id: str, decision: ToolExecutionDecision, *, decided_by: str | None = None
    ) -> tuple[AgentSnapshot, bool]:
        """:meth:`record_decision`, saying whether this call recorded the decision.

        Returns:
            ``(the snapshot as it now is in the store, True when this call wrote the decision)``; False when the
            same decision was recorded already (by whoever decided first: the snapshot's decision for the call
            names them), and nothing was written.

        In a store that keeps approvals (:class:`~handrail.stores.approvals.ApprovalStore`), a call that has an
        approval record is decided through :func:`~handrail.stores._approval_decide.decide_call`, as the approval
        service decides it: the approval (a compare-and-set) and the snapshot never disagree.

        Raises:
            HandrailError: The errors of :meth:`record_decision`.
            ApprovalClosedError: For a call with an approval: a different decision, or an expiry
                (ApprovalExpiredError), came first.
            ApprovalDecisionError: For a call with an approval: the approval does not allow the decision, or refuses
                the edit.
        """
        snapshot_id = self._id(snapshot_id)
        if not isinstance(decision, ToolExecutionDecision):
            raise ConfigurationTypeError(f"Expected a ToolExecutionDecision, got {type(decision).__name__}.")
        check_decided_by(decided_by, "decided_by")
        from handrail.stores._approval_base import ApprovalStoreBase

        if isinstance(self, ApprovalStoreBase):
            from handrail.stores._approval_decide import decide_recorded

            found = decide_recorded(self, snapshot_id, decision, decided_by)
            if found is not None:
                return found
        return self._decide_in_snapshot(snapshot_id, decision, decided_by=decided_by)

    def _decide_in_snapshot(
        self,
        snapshot_id: str,
        decision: ToolExecutionDecision,
        *,
        decided_by: str | None = None,
        if_waiting: bool = False,
    ) -> tuple[AgentSnapshot, bool]:
        """Record ``decision`` in the snapshot only (the approval record, if any, is the caller's).

        ``if_waiting``: an approval's decision copied into its snapshot: when the snapshot, read under its claim,
        no longer waits for it (the run finished or went on, or the decision is there), nothing is written and
        nothing is raised.
        """
        snapshot_id = self._id(snapshot_id)
        if not isinstance(decision, ToolExecutionDecision):
            raise ConfigurationTypeError(f"Expected a ToolExecutionDecision, got {type(decision).__name__}.")
        check_decided_by(decided_by, "decided_by")  # before the record is claimed: nothing is written
        with self._guarded(snapshot_id, "decide") as handle:
            snapshot = self._read_snapshot(handle, snapshot_id)
            if if_waiting and not waits_for_decision(snapshot, decision.tool_call_id):
                return snapshot, False
            # the scope waited for the claim: a snapshot that says 'running' now is held by nobody (interrupted)
            interrupted = unavailable_error(snapshot, held=False) if snapshot.status == "running" else None
            if interrupted is not None:
                raise interrupted
            updated = self._decide_in_scope(handle, snapshot_id, snapshot, decision, decided_by=decided_by)
        return updated, updated is not snapshot

    def _decide_in_scope(
        self,
        handle: Any,
        snapshot_id: str,
        snapshot: AgentSnapshot,
        decision: ToolExecutionDecision,
        *,
        decided_by: str | None,
    ) -> AgentSnapshot:
        """Record ``decision`` in ``snapshot`` (read just now in ``handle``'s scope, which holds its claim).

        Returns:
            The snapshot as written (``snapshot`` itself when the decision was there already).
        """
        updated = with_decision(snapshot, decision, decided_by=decided_by)
        if updated is not snapshot:
            self._update(handle, snapshot_id, updated, encode_snapshot(updated))
        return updated

    def _decide_many_in_snapshot(self, snapshot_id: str, decisions: Sequence[ToolExecutionDecision]) -> None:
        """Record several decisions in the snapshot in one write (the expiry sweep's, of one paused step).

        Each is recorded as :meth:`_decide_in_snapshot` would, against the record as it is under the scope; one
        the snapshot refuses now (decided otherwise meanwhile, no longer pending) is left out, the others written.
        """
        snapshot_id = self._id(snapshot_id)
        with self._guarded(snapshot_id, "decide") as handle:
            snapshot = self._read_snapshot(handle, snapshot_id)
            interrupted = unavailable_error(snapshot, held=False) if snapshot.status == "running" else None
            if interrupted is not None:
                raise interrupted
            updated = snapshot
            for decision in decisions:
                with contextlib.suppress(DecisionConflictError, ConfigurationError):
                    updated = with_decision(updated, decision)
            if updated is not snapshot:
                self._update(handle, snapshot_id, updated, encode_snapshot(updated))

    def _rewrite(self, snapshot_id: str, change: Callable[[AgentSnapshot], AgentSnapshot]) -> None:
        with self._guarded(snapshot_id, "holder") as handle:
            updated = change(self._read_snapshot(handle, snapshot_id))
            self._update(handle, snapshot_id, updated, encode_snapshot(updated))

    def update_ledger(self, snapshot_id: str, entries: Mapping[str, LedgerEntry]) -> None:
        """Merge ledger entries into the stored snapshot by call id, atomically.

        Args:
            snapshot_id: The snapshot.
            entries: ``{tool_call_id: LedgerEntry}``; they replace the stored entries of the same ids.

        Raises:
            ConfigurationTypeError: ``entries`` is not a mapping of str to LedgerEntry.
            SnapshotError: Unknown id.
            SnapshotUnavailableError: Another store object's claim stayed held past ``lock_timeout``.
            StoreError: The backend failed or the record is corrupt; nothing was written.
        """
        snapshot_id = self._id(snapshot_id)
        if not isinstance(entries, Mapping) or not all(
            isinstance(k, str) and isinstance(v, LedgerEntry) for k, v in entries.items()
        ):
            raise ConfigurationTypeError("update_ledger takes a mapping of tool_call_id (str) to LedgerEntry.")
        merged = dict(entries)
        self._rewrite(snapshot_id, lambda s: dataclasses.replace(s, ledger={**s.ledger, **merged}))

    def mark_done(self, snapshot_id: str, outcome: dict[str, Any] | None = None) -> None:
        """Mark the snapshot's run finished: status ``done``, with ``outcome`` when given (else the old one kept).

        Args:
            snapshot_id: The snapshot.
            outcome: JSON data, e.g. ``{"exit_reason": "text"}``.

        Raises:
            ConfigurationTypeError: ``outcome`` is neither a dict nor None.
            SerializationError: ``outcome`` is not JSON data; nothing was written.
            SnapshotError / SnapshotUnavailableError / StoreError: As for :meth:`update_ledger`.
        """
        snapshot_id = self._id(snapshot_id)
        if outcome is not None and not isinstance(outcome, dict):
            raise ConfigurationTypeError(f"outcome must be a dict or None, got {type(outcome).__name__}.")

        def done(snapshot: AgentSnapshot) -> AgentSnapshot:
            kept = outcome if outcome is not None else snapshot.outcome
            return dataclasses.replace(snapshot, status="done", outcome=kept)

        self._rewrite(snapshot_id, done)

    def claim(self, snapshot_id: str) -> SnapshotLease:
        """Claim a stored snapshot for one resumed run, without waiting.

        The claim excludes other claims and decisions, across processes, until the lease is released or the
        holding process dies. It does not look at the snapshot's status: read it again (:meth:`load`) under the
        claim and decide there.

        Args:
            snapshot_id: The snapshot.

        Returns:
            The lease.

        Raises:
            SnapshotUnavailableError: Naming the id, when the snapshot is claimed already (or a decision is being
                written to it at this moment).
            SnapshotError: Unknown id.
        """
        snapshot_id = self._id(snapshot_id)
        if not self._exists(snapshot_id):  # (records are never deleted: no need to check again under the claim)
            raise self._unknown(snapshot_id)
        release = self._claim_or_raise(snapshot_id, "in use by another run (being resumed, or finishing a tool call)")
        return self._lease(snapshot_id, release)

    def claimed(self, snapshot_id: str) -> bool:
        """Whether a run holds the snapshot's claim right now (a ``running`` snapshot nobody holds was interrupted).

        Args:
            snapshot_id: The snapshot.

        Returns:
            True when this store object or any other (in any process) holds the claim.

        Raises:
            SnapshotError: Unknown id.
        """
        snapshot_id = self._id(snapshot_id)
        if not self._exists(snapshot_id):
            raise self._unknown(snapshot_id)
        if self._holds(snapshot_id):
            return True
        release = self._try_claim(snapshot_id)
        if release is None:
            return True
        release()
        return False

    def create(self, snapshot: AgentSnapshot, name: str) -> tuple[str, SnapshotLease]:
        """Store ``snapshot`` under the id derived from ``name`` and claim it.

        Args:
            snapshot: The snapshot (typically status ``running``: a durable run's first write).
            name: E.g. ``snapshot_file_name(break_point, visit)``; the id is the name without ``.json``.

        Returns:
            ``(id, lease)``.

        Raises:
            ConfigurationError: ``name`` gives an invalid id.
            SnapshotUnavailableError: The id exists or is claimed already.
            SerializationError: A value cannot be written; nothing was written.
        """
        snapshot_id = id_from_name(name)
        data = encode_snapshot(check_snapshot(snapshot))
        release = self._claim_or_raise(snapshot_id, "in use")
        try:
            with self._guarded(None, "new") as handle:
                if not self._insert(handle, snapshot_id, snapshot, data):
                    raise SnapshotUnavailableError(f"Snapshot {snapshot_id} already exists in {self}.")
        except BaseException:
            release()
            raise
        return snapshot_id, self._lease(snapshot_id, release)

    def replace(self, snapshot_id: str, snapshot: AgentSnapshot, cache: MessageCache | None = None) -> None:
        """Rewrite the whole record atomically (the claim's holder calls this before and after each tool call).

        Args:
            snapshot_id: An existing snapshot.
            snapshot: Its new content.
            cache: The run's message cache (messages already encoded are not encoded again).

        Raises:
            SnapshotError: Unknown id; nothing was written.
            SnapshotUnavailableError: Through a store object that holds no claim: another's claim stayed held
                past ``lock_timeout``.
            SerializationError / StoreError: Nothing was written.
        """
        snapshot_id = self._id(snapshot_id)
        data = encode_snapshot(check_snapshot(snapshot), cache)
        with self._guarded(snapshot_id, "holder") as handle:
            if not self._update(handle, snapshot_id, snapshot, data):
                raise self._unknown(snapshot_id)

    def append_entries(
        self, snapshot_id: str, entries: Mapping[str, LedgerEntry], cache: MessageCache | None = None
    ) -> None:
        """Keep changed ledger entries beside the record, durably, without rewriting it (the claim's holder, mid-step).

        Every read of the record sees them folded into its ledger (replacing the entries of the same call ids;
        new ids join at the end, in order), and the next full write of the record (:meth:`replace`, a decision,
        a pause, :meth:`mark_done`...) absorbs them. A directory store appends one fsynced line per entry to a
        journal beside the file; a database upserts rows of an entries table in one transaction. So a durable
        run's write costs what changed, not the whole record.

        Args:
            snapshot_id: An existing snapshot.
            entries: ``{tool_call_id: LedgerEntry}``.
            cache: The run's message cache (an entry is encoded once; the next full write reuses it).

        Raises:
            ConfigurationTypeError: ``entries`` is not a mapping of str to LedgerEntry.
            SnapshotError: Unknown id; nothing was written.
            SnapshotUnavailableError: Through a store object that holds no claim: another's claim stayed held
                past ``lock_timeout``.
            SerializationError / StoreError / OSError: Nothing was kept (a directory store may keep a torn last
                line, which every read ignores).
        """
        snapshot_id = self._id(snapshot_id)
        if not isinstance(entries, Mapping) or not all(
            isinstance(k, str) and isinstance(v, LedgerEntry) for k, v in entries.items()
        ):
            raise ConfigurationTypeError("append_entries takes a mapping of tool_call_id (str) to LedgerEntry.")
        changes = encode_entries(entries, cache)
        if not changes:
            return
        with self._guarded(snapshot_id, "holder") as handle:
            if not self._append(handle, snapshot_id, changes):
                raise self._unknown(snapshot_id)

    def continue_in(
        self, snapshot_id: str, snapshot: AgentSnapshot, name: str, cache: MessageCache | None = None
    ) -> str:
        """The resumed run paused again: store ``snapshot`` under a new id, and mark the old record resumed.

        Atomically (databases: one transaction; files: see FileSnapshotStore), the new record holds
        ``snapshot`` and the old one becomes ``dataclasses.replace(snapshot, status="resumed",
        continued_in=<new id>)``. The caller's lease on the old id stays held until released; the new one is
        not claimed.

        Args:
            snapshot_id: The snapshot the run resumed from.
            snapshot: The new pause.
            name: E.g. ``snapshot_file_name(break_point, visit)``; the new id is the name without ``.json``.
            cache: The run's message cache.

        Returns:
            The new id.

        Raises:
            SnapshotError: Unknown old id; nothing was written.
            SnapshotUnavailableError: The new id exists; nothing was written.
            SerializationError / StoreError: Nothing was written.
        """
        snapshot_id = self._id(snapshot_id)
        new_id = id_from_name(name)
        data = encode_snapshot(check_snapshot(snapshot), cache)
        tombstone = dataclasses.replace(snapshot, status="resumed", continued_in=new_id)
        old_data = encode_snapshot(tombstone, cache)
        with self._guarded(snapshot_id, "holder") as handle:
            if not self._insert(handle, new_id, snapshot, data):
                raise SnapshotUnavailableError(f"Snapshot {new_id} already exists in {self}.")
            if not self._update(handle, snapshot_id, tombstone, old_data):
                raise self._unknown(snapshot_id)  # rolls the insert back
        return new_id
