"""The :class:`~handrail.stores.approvals.ApprovalStore` protocol written once over a backend's primitives.

A backend supplies an exclusive write scope per approval (:meth:`ApprovalStoreBase._approval_scope`: a
transaction, or for files the approval file's lock), reads and writes of one record's bytes and of its audit
entries inside it, and (optionally, for speed) the queries behind listing, counting and the expiry sweep. The
rules (what a decision checks, what each change writes to the audit trail and to the store's event log, in
the same scope) live here only.

Every change of an approval appends its event (``approval.created`` / ``decided`` / ``expired`` / ``cancelled``,
:func:`~handrail.stores._approval_rules.event_of`) through :meth:`~handrail.stores._events.EventLog._events_write`
at the end of the change's scope: in its transaction on SQL stores, under the approval file's lock in a
directory store. The batch paths (a pause's ``create_approvals``, the expiry sweep) change many approvals in one
scope (:meth:`ApprovalStoreBase._approvals_scope`): one transaction on SQL, one durable write of the changed files
for a directory store.
"""

from __future__ import annotations

import contextlib
from abc import abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

from handrail.dataclasses._approval_checks import Checker, canonical_json, iso
from handrail.dataclasses.approval import Approval, Decision
from handrail.dataclasses.approval_audit import ApprovalAuditEntry, arguments_diff
from handrail.errors import ApprovalConflictError, ApprovalNotFoundError, ConfigurationTypeError, CorruptRecordError
from handrail.stores._approval_reading import ApprovalReading, Cursor
from handrail.stores._approval_rules import check_details, check_moment, check_new, event_of, refusal
from handrail.stores._events import EventItem, EventLog
from handrail.stores.approvals import (
    ApprovalFilter,
    ApprovalPage,
    check_limit,
    decode_cursor,
    encode_cursor,
)

__all__ = ["ApprovalStoreBase", "Cursor"]


class ApprovalStoreBase(ApprovalReading, EventLog):
    """Approval records and audit trails over backend primitives (mixed into the snapshot stores)."""

    # -- backend primitives ------------------------------------------------------------------------

    @abstractmethod
    def _approval_scope(self, approval_id: str, *, new: bool = False) -> contextlib.AbstractContextManager[Any]:
        """An atomic, exclusive write scope for one approval, yielding the handle the reads and writes take.

        ``new``: the scope may create the backing file or directory (only ``create_approval`` passes it).
        """

    @abstractmethod
    def _approval_write(self, handle: Any, approval: Approval, data: bytes, *, expected_version: int | None) -> bool:
        """Insert (``expected_version`` None; False when the id exists) or compare-and-set the record.

        A compare-and-set replaces the record only where it is ``pending`` at ``expected_version``; False otherwise.
        """

    @abstractmethod
    def _audit_read(self, handle: Any, approval_id: str) -> list[bytes]:
        """The audit entries' bytes, in ``seq`` order (``handle`` None: outside any scope)."""

    @abstractmethod
    def _audit_write(self, handle: Any, entry: ApprovalAuditEntry, data: bytes) -> None:
        """Append one audit entry."""

    def _approvals_scope(self, approval_ids: Sequence[str], *, new: bool) -> contextlib.AbstractContextManager[Any]:
        """One write scope for several approvals (SQL: one transaction); :meth:`_approval_handle` gives each's handle.

        The default is :meth:`_approval_scope` of the first id, for a backend whose scope is a transaction.
        """
        return self._approval_scope(approval_ids[0], new=new)

    def _approval_handle(self, scope: Any, approval_id: str) -> Any:
        """The handle of one approval inside a scope of :meth:`_approvals_scope` (it may read the record now)."""
        return scope

    def _append_entry(self, handle: Any, approval_id: str, **fields: Any) -> ApprovalAuditEntry:
        entries = self._decode_entries(approval_id, self._audit_read(handle, approval_id))
        entry = ApprovalAuditEntry.chained(entries[-1] if entries else None, approval_id=approval_id, **fields)
        self._audit_write(handle, entry, canonical_json(entry.to_dict()))
        return entry

    def _approval_cas(self, handle: Any, updated: Approval, expected: int) -> None:
        if not self._approval_write(handle, updated, canonical_json(updated.to_dict()), expected_version=expected):
            raise refusal(
                self._current_approval(handle, updated.id), expected
            )  # pragma: no cover - the scope excludes it

    def _approval_expire(self, handle: Any, current: Approval, at: datetime) -> Approval:
        """Expire the due ``current``, found due at ``at`` (a sweep's or a late decider's clock).

        It expired at its ``expires_at``: that is the record's ``decided_at`` and the audit entry's time; ``at``
        goes into the entry's details as ``swept_at``.
        """
        moment = current.expires_at or at
        expired = current.expired(moment)
        self._approval_cas(handle, expired, current.version)
        self._append_entry(
            handle, current.id, kind="expired", at=moment, decision=expired.decision, feedback=expired.feedback,
            details={"swept_at": iso(at)},
        )  # fmt: skip
        return expired

    @contextlib.contextmanager
    def _changing(self, approval_id: str, *, new: bool = False) -> Iterator[tuple[Any, list[EventItem]]]:
        """The write scope of one approval and the list of its change's events, written last in that scope."""
        events: list[EventItem] = []
        with self._approval_scope(approval_id, new=new) as handle:
            yield handle, events
            if events:
                self._events_write(handle, events)

    @contextlib.contextmanager
    def _changing_many(
        self, approval_ids: Sequence[str], *, new: bool = False
    ) -> Iterator[tuple[Any, list[EventItem]]]:
        """:meth:`_changing` for several approvals at once (:meth:`_approvals_scope`)."""
        events: list[EventItem] = []
        with self._approvals_scope(approval_ids, new=new) as scope:
            yield scope, events
            if events:
                self._events_write(scope, events)

    def _batches(self, ids: list[str], *, whole: bool) -> Iterator[list[str]]:
        """``ids`` in the batches one scope takes: all at once (``whole``, on SQL), else :attr:`_batch_size` each."""
        size = len(ids) if whole and self._approvals_in_one_transaction else self._batch_size
        for start in range(0, len(ids), max(1, size)):
            yield ids[start : start + size]

    # -- the protocol ------------------------------------------------------------------------------

    _approvals_in_one_transaction: ClassVar[bool] = False
    """True where one scope can hold writes to several approvals (SQL: one transaction); a directory store locks
    the files of a batch together."""
    _batch_size: ClassVar[int] = 64
    """How many approvals one scope of the expiry sweep changes (a directory store: files locked at once)."""

    def create_approval(self, approval: Approval, *, details: Mapping[str, Any] | None = None) -> Approval:
        """Store a pending approval and its ``created`` audit entry, or return the one stored under its id.

        Args:
            approval: A new approval (:meth:`Approval.new`): pending, version 1.
            details: JSON data for the ``created`` audit entry (e.g. the policy that asked).

        Returns:
            The stored approval: ``approval``, or the one created before with the same id.

        Raises:
            ConfigurationError: ``approval`` is not pending at version 1.
            ApprovalConflictError: An approval with this id exists for another tool, snapshot or arguments.
            StoreError: The backend failed; nothing was written.
        """
        check_new(approval)
        with self._changing(approval.id, new=True) as (handle, events):
            stored = self._create_or_stored(handle, approval, check_details(details), events)
        if stored is approval:
            return approval
        same = (stored.tool_name, stored.snapshot_id, stored.args_digest) == (
            approval.tool_name, approval.snapshot_id, approval.args_digest
        )  # fmt: skip
        # an edited approval's digest is of the edited arguments: the same pause created again still matches
        if not same and not (stored.status == "edited" and stored.snapshot_id == approval.snapshot_id):
            raise ApprovalConflictError(
                f"Approval {approval.id} exists in {self} for tool {stored.tool_name!r}, snapshot "
                f"{stored.snapshot_id!r}, arguments {stored.args_digest}; the new one differs "
                f"({approval.tool_name!r}, {approval.snapshot_id!r}, {approval.args_digest}).",
                approval_id=approval.id, current=stored, expected_version=None,
            )  # fmt: skip
        return stored

    def create_approvals(
        self, approvals: Sequence[Approval], *, details: Mapping[str, Any] | None = None
    ) -> list[Approval]:
        """Store the approvals of one pause at once, each unless its id is taken; returns what is stored, in order.

        An approval whose id exists is not written again and comes back as stored, whatever changed since (a call
        held again by a later pause keeps its first record). SQL stores write the batch in one transaction (all or
        nothing); a directory store writes the files of each 64 approvals together (each file fsynced before its
        rename, the folder once), then their events.

        Raises:
            ConfigurationError: An approval is not pending at version 1.
            StoreError: The backend failed (SQL: nothing was written).
        """
        for approval in approvals:
            check_new(approval)
        extra = check_details(details)
        if not approvals:
            return []
        by_id: dict[str, Approval] = {}
        for approval in approvals:
            by_id.setdefault(approval.id, approval)  # an id given twice: the first one is created
        stored: dict[str, Approval] = {}
        for batch in self._batches(list(by_id), whole=True):
            with self._changing_many(batch, new=True) as (scope, events):
                for key in batch:
                    handle = self._approval_handle(scope, key)
                    stored[key] = self._create_or_stored(handle, by_id[key], extra, events)
        return [stored[a.id] for a in approvals]

    def _create_or_stored(
        self, handle: Any, approval: Approval, extra: dict[str, Any], events: list[EventItem]
    ) -> Approval:
        """Insert ``approval`` with its ``created`` entry and event, or return the record stored under its id."""
        existing = self._approval_read(handle, approval.id)
        if existing is None and self._approval_write(
            handle, approval, canonical_json(approval.to_dict()), expected_version=None
        ):
            self._append_entry(
                handle, approval.id, kind="created", at=approval.created_at, args_digest=approval.args_digest,
                details=extra,
            )  # fmt: skip
            events.append(event_of("created", approval, approval.created_at))
            return approval
        return self._current_approval(handle, approval.id)

    def get_approval(self, approval_id: str) -> Approval:
        """The approval as it is now.

        Raises:
            ApprovalNotFoundError: No such id. CorruptRecordError: The record cannot be read.
        """
        return self._current_approval(None, self._approval_key(approval_id))

    def list_approvals(
        self, filter: ApprovalFilter | None = None, *, limit: int = 50, cursor: str | None = None
    ) -> ApprovalPage:
        """A page of the approvals that match ``filter``, newest first (``created_at``, then id).

        Args:
            filter: What must match (None: everything).
            limit: Page size, 1 to 100.
            cursor: ``next_cursor`` of the previous page (None: the first page).

        Raises:
            ConfigurationError: A bad limit or cursor.
        """
        chosen = filter or ApprovalFilter()
        if not isinstance(chosen, ApprovalFilter):
            raise ConfigurationTypeError(f"filter must be an ApprovalFilter, got {type(filter).__name__}.")
        size = check_limit(limit)
        after = None if cursor is None else decode_cursor(cursor)
        found = self._approval_scan(chosen, after, size + 1)
        items = tuple(found[:size])
        return ApprovalPage(items, encode_cursor(items[-1]) if len(found) > size else None)

    def count_approvals(self, filter: ApprovalFilter | None = None) -> dict[str, int]:
        """How many approvals match ``filter`` (its ``status`` ignored), per status; every status is a key."""
        chosen = filter or ApprovalFilter()
        if not isinstance(chosen, ApprovalFilter):
            raise ConfigurationTypeError(f"filter must be an ApprovalFilter, got {type(filter).__name__}.")
        if chosen.status is not None:
            chosen = ApprovalFilter(**{**_fields(chosen), "status": None})
        return self._approval_counts(chosen)

    def decide_approval(
        self,
        approval_id: str,
        decision: Decision,
        *,
        expected_version: int,
        principal: str,
        at: datetime,
        feedback: str | None = None,
        arguments: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
        details: Mapping[str, Any] | None = None,
        quorum: int | None = None,
    ) -> Approval:
        """Decide a pending approval: a compare-and-set on ``expected_version``, with its audit entry.

        The decision is one vote (:meth:`Approval.decided`): a reject, or the vote that reaches the approval's
        quorum, decides it (audit entry ``decided``); a vote short of the quorum leaves it pending at
        ``version + 1`` (audit entry ``voted``). Each entry's details carry ``quorum`` (needed) and ``approvers``
        (the principals counted so far).

        Args:
            approval_id: The approval.
            decision: ``approve``, ``edit`` or ``reject`` (one of its ``allowed_decisions``).
            expected_version: The version the decider saw.
            principal: Who decides (the authenticated name; never one from a request body).
            at: Now (timezone-aware; tests inject the clock).
            feedback: Text for the model.
            arguments: The edited arguments (only with ``edit``; not validated here: the service validates them
                against ``arguments_schema`` first).
            idempotency_key: Kept on the record.
            details: JSON data for the audit entry (a client's address, user agent).
            quorum: For an edit: the quorum the recorded policy asks for the edited arguments (None: unchanged).

        Returns:
            The updated approval (``version + 1``; still pending when the quorum is not reached).

        Raises:
            ApprovalClosedError: It is terminal already, or its expiry time has come (it is expired now, and
                stays so); ``current`` holds the record.
            ApprovalConflictError: Still pending, at another version than ``expected_version``.
            ApprovalNotFoundError: No such id.
            ConfigurationError: The decision is not allowed, arguments without an edit (or none with one), a bad
                principal, a naive time, a principal approving arguments it approved already.
            PermissionDeniedError: The principal is the run's initiator, who may not approve it.
        """
        key, moment, extra = self._decision_checked(approval_id, at, expected_version, details)
        with self._changing(key) as (handle, events):
            updated, refused = self._decide_in(
                handle, events, key, decision, expected_version=expected_version, principal=principal, at=moment,
                feedback=feedback, arguments=arguments, idempotency_key=idempotency_key, details=extra, quorum=quorum,
            )  # fmt: skip
        if refused is not None:
            raise refused
        return updated

    def _decision_checked(
        self, approval_id: str, at: datetime, expected_version: int, details: Mapping[str, Any] | None
    ) -> tuple[str, datetime, dict[str, Any]]:
        """:meth:`decide_approval`'s arguments checked before any scope opens: ``(key, at, details)``."""
        key = self._approval_key(approval_id)
        moment = check_moment("at", at)
        Checker("decide_approval", reading=False).integer("expected_version", expected_version, minimum=1)
        return key, moment, check_details(details)

    def _decide_in(
        self, handle: Any, events: list[EventItem], key: str, decision: Decision, *, expected_version: int,
        principal: str, at: datetime, feedback: str | None, arguments: dict[str, Any] | None,
        idempotency_key: str | None, details: dict[str, Any], quorum: int | None, known: Approval | None = None,
    ) -> tuple[Approval, ApprovalConflictError | None]:  # fmt: skip
        """The body of :meth:`decide_approval` inside an open write scope (its arguments checked).

        ``known``: the record as the caller read it (its version the expected one, as a rule); a backend that can
        tell cheaply that the stored record is still that one uses it instead of decoding the row again.

        Returns:
            ``(the record now, None)``, or ``(the record, the refusal to raise once the scope is closed)``: an
            expiry found due is written (and kept) before the decision is refused.
        """
        current = self._current_approval(handle, key) if known is None else self._still_current(handle, known)
        if current.due(at):
            expired = self._approval_expire(handle, current, at)
            events.append(event_of("expired", expired, expired.decided_at or at))
            return expired, refusal(expired, expected_version)
        if current.terminal or current.version != expected_version:
            return current, refusal(current, expected_version)
        updated = current.decided(
            decision, principal=principal, at=at, feedback=feedback, arguments=arguments,
            idempotency_key=idempotency_key, quorum=quorum,
        )  # fmt: skip
        self._approval_cas(handle, updated, expected_version)
        changes = arguments_diff(current.arguments, updated.arguments) if decision == "edit" else ()
        extra = details
        if updated.quorum > 1 or current.votes:
            extra = {**extra, "quorum": updated.quorum, "approvers": list(updated.approvers)}
        self._append_entry(
            handle, key, kind="voted" if updated.status == "pending" else "decided",
            at=at, principal=updated.votes[-1].principal, decision=decision, feedback=feedback,
            changes=changes, args_digest=updated.args_digest, details=extra,
        )  # fmt: skip
        events.append(event_of("voted" if updated.status == "pending" else "decided", updated, at))
        return updated, None

    def _still_current(self, handle: Any, known: Approval) -> Approval:
        """The stored record of ``known``'s id inside a write scope: ``known`` itself when it is unchanged.

        This default reads and decodes the record; the SQL backends compare the row's version and status columns.
        """
        return self._current_approval(handle, known.id)

    def cancel_approval(
        self,
        approval_id: str,
        *,
        expected_version: int,
        at: datetime,
        principal: str | None = None,
        reason: str | None = None,
    ) -> Approval:
        """Cancel a pending approval (its run ended otherwise): a compare-and-set like :meth:`decide_approval`.

        Raises:
            The errors of :meth:`decide_approval`.
        """
        moment = check_moment("at", at)

        def cancel(handle: Any, key: str, current: Approval) -> tuple[Approval, Any]:
            updated = current.cancelled(moment, principal=principal, reason=reason)
            self._approval_cas(handle, updated, expected_version)
            self._append_entry(handle, key, kind="cancelled", at=moment, principal=principal, feedback=reason)
            return updated, event_of("cancelled", updated, moment)

        return self._transition(approval_id, expected_version, cancel)

    def expire_approval(
        self, approval_id: str, *, expected_version: int, at: datetime, details: Mapping[str, Any] | None = None
    ) -> Approval:
        """Expire one pending approval because its run's own timer fired (a Temporal run), whatever its ``due``.

        A compare-and-set like :meth:`decide_approval`, with the ``expired`` audit entry and event; the record
        expires at its ``expires_at`` (``at`` when it has none). The sweep (:meth:`expire_approvals`) never
        expires such a record: only the run that owns the timer does, through this.

        Raises:
            The errors of :meth:`decide_approval`.
        """
        moment = check_moment("at", at)
        extra = check_details(details)

        def expire(handle: Any, key: str, current: Approval) -> tuple[Approval, Any]:
            expired = current.expired(current.expires_at or moment)
            self._approval_cas(handle, expired, expected_version)
            self._append_entry(
                handle, key, kind="expired", at=current.expires_at or moment, decision=expired.decision,
                feedback=expired.feedback, details={**extra, "recorded_at": iso(moment)},
            )  # fmt: skip
            return expired, event_of("expired", expired, expired.decided_at or moment)

        return self._transition(approval_id, expected_version, expire)

    def _transition(
        self, approval_id: str, expected_version: int, change: Callable[[Any, str, Approval], tuple[Approval, Any]]
    ) -> Approval:
        """One compare-and-set of a pending approval (a decided record or a stale version is refused).

        ``change(handle, key, current)`` writes the new record and its audit entry, and returns ``(the new record,
        its event)``.
        """
        key = self._approval_key(approval_id)
        refused: ApprovalConflictError | None = None
        updated: Approval | None = None
        with self._changing(key) as (handle, events):
            current = self._current_approval(handle, key)
            if current.terminal or current.version != expected_version:
                refused = refusal(current, expected_version)
            else:
                updated, event = change(handle, key, current)
                events.append(event)
        if refused is not None:
            raise refused
        assert updated is not None
        return updated

    def expire_approvals(self, now: datetime) -> list[Approval]:
        """Expire every pending approval whose ``expires_at <= now``, each with its ``expired`` audit entry.

        Each is a compare-and-set of its own (read again in the scope: one decided meanwhile stays decided and is
        not returned), with its ``approval.expired`` event. They are changed in batches of :attr:`_batch_size`:
        one transaction each on SQL; for a directory store the batch's files are locked together and written
        together (each file fsynced before its rename, the folder once, then the events). A record that cannot
        be read is skipped (:meth:`unreadable_approvals` names it); the others still expire.

        Returns:
            The approvals expired by this call, oldest expiry first.
        """
        moment = check_moment("now", now)
        expired: list[Approval] = []
        for batch in self._batches(self._approval_due(moment), whole=False):
            with self._changing_many(batch) as (scope, events):
                for approval_id in batch:
                    try:
                        handle = self._approval_handle(scope, approval_id)
                        current = self._current_approval(handle, approval_id)
                    except (CorruptRecordError, ApprovalNotFoundError):
                        continue  # damaged: refused by name when read on its own; it must not stop the sweep
                    if current.due(moment):
                        done = self._approval_expire(handle, current, moment)
                        events.append(event_of("expired", done, done.decided_at or moment))
                        expired.append(done)
        return expired

    def append_audit(
        self,
        approval_id: str,
        *,
        at: datetime,
        outcome: str,
        duration_ms: float | None = None,
        args_digest: str | None = None,
        principal: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> ApprovalAuditEntry:
        """Append an ``executed`` entry (a runner ran, or failed to run, the approved call).

        Raises:
            ApprovalNotFoundError: No such id. ConfigurationError: A bad field (named).
        """
        key = self._approval_key(approval_id)
        moment = check_moment("at", at)
        extra = check_details(details)
        with self._approval_scope(key) as handle:
            self._current_approval(handle, key)
            return self._append_entry(
                handle, key, kind="executed", at=moment, outcome=outcome, duration_ms=duration_ms,
                args_digest=args_digest, principal=principal, details=extra,
            )  # fmt: skip

    def audit_trail(self, approval_id: str) -> list[ApprovalAuditEntry]:
        """The approval's audit entries, oldest first, their hash chain verified.

        Raises:
            ApprovalNotFoundError: No such id. CorruptRecordError: An entry was changed, removed or cannot be read.
        """
        key = self._approval_key(approval_id)
        rows = self._audit_read(None, key)
        if not rows:
            self._current_approval(None, key)  # unknown id: ApprovalNotFoundError
            raise CorruptRecordError(f"{self}: approval {key} has no audit trail (its 'created' entry is missing).")
        return self._decode_entries(key, rows)


def _fields(filter: ApprovalFilter) -> dict[str, Any]:
    return {name: getattr(filter, name) for name in ApprovalFilter.__dataclass_fields__}
