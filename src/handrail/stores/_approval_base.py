"""The :class:`~handrail.stores.approvals.ApprovalStore` protocol written once over a backend's primitives.

A backend supplies an exclusive write scope per approval (:meth:`ApprovalStoreBase._approval_scope`: a
transaction, or for files the approval file's lock), reads and writes of one record's bytes and of its audit
entries inside it, and (optionally, for speed) the queries behind listing, counting and the expiry sweep. The
rules (what a decision checks, what each change writes to the audit trail, in the same scope) live here only.
"""

from __future__ import annotations

import contextlib
import json
import re
from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

from handrail.dataclasses._approval_checks import Checker, canonical_json, iso
from handrail.dataclasses.approval import STATUSES, Approval, Decision
from handrail.dataclasses.approval_audit import ApprovalAuditEntry, arguments_diff, verify_chain
from handrail.errors import (
    ApprovalClosedError,
    ApprovalConflictError,
    ApprovalNotFoundError,
    ConfigurationError,
    ConfigurationTypeError,
    CorruptRecordError,
)
from handrail.stores.approvals import (
    ApprovalFilter,
    ApprovalPage,
    check_limit,
    decode_cursor,
    encode_cursor,
    micros,
)

__all__ = ["ApprovalStoreBase"]

_ID = re.compile(r"ap_[0-9a-f]{32}")
Cursor = tuple[int, str]


def _moment(name: str, value: object) -> datetime:
    moment = Checker("approval store", reading=False).moment(name, value)
    assert moment is not None
    return moment


def _details(value: Mapping[str, Any] | None) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigurationTypeError(f"details must be a mapping of JSON data, got {type(value).__name__}.")
    data: dict[str, Any] = Checker("audit entry", reading=False).json_data("details", dict(value))
    return data


def _refusal(current: Approval, expected: int | None) -> ApprovalConflictError:
    """The error for a compare-and-set refused against ``current``, naming its status, decider and time."""
    who = f" by {current.decided_by}" if current.decided_by else ""
    when = f" at {iso(current.decided_at)}" if current.decided_at else ""
    what = f" ({current.decision})" if current.decision and current.status in ("expired",) else ""
    wanted = "" if expected is None else f"; the request expected version {expected}"
    if current.terminal:
        message = (
            f"Approval {current.id} is {current.status}{what}{who}{when} (version {current.version}){wanted}; "
            "it takes no more decisions."
        )
        return ApprovalClosedError(message, approval_id=current.id, current=current, expected_version=expected)
    message = (
        f"Approval {current.id} is at version {current.version} (still pending){wanted}: it changed since it was "
        "read; read it again."
    )
    return ApprovalConflictError(message, approval_id=current.id, current=current, expected_version=expected)


def _check_new(approval: object) -> None:
    if not isinstance(approval, Approval):
        raise ConfigurationTypeError(f"Expected an Approval, got {type(approval).__name__}.")
    if approval.status != "pending" or approval.version != 1:
        raise ConfigurationError(f"A new approval is pending at version 1; {approval.id} is {approval.status}.")


class ApprovalStoreBase:
    """Approval records and audit trails over backend primitives (mixed into the snapshot stores)."""

    # -- backend primitives ------------------------------------------------------------------------

    @abstractmethod
    def _approval_scope(self, approval_id: str, *, new: bool = False) -> contextlib.AbstractContextManager[Any]:
        """An atomic, exclusive write scope for one approval, yielding the handle the reads and writes take.

        ``new``: the scope may create the backing file or directory (only ``create_approval`` passes it).
        """

    @abstractmethod
    def _approval_read(self, handle: Any, approval_id: str) -> bytes | None:
        """The record's bytes (``handle`` None: outside any scope), or None."""

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

    def _approval_all(self) -> Iterator[tuple[str, bytes | CorruptRecordError]]:
        """Every record as ``(id, bytes)``, or ``(id, the error)`` for one that cannot be read.

        The default queries below filter them; SQL stores override those.
        """
        raise NotImplementedError  # pragma: no cover - a backend overrides this or the three queries

    def _approval_scan(self, filter: ApprovalFilter, after: Cursor | None, limit: int) -> list[Approval]:
        """Up to ``limit`` matching approvals, newest first, strictly after the cursor ``after``."""
        found = [a for a in self._decoded_all() if filter.matches(a)]
        found.sort(key=lambda a: (micros(a.created_at), a.id), reverse=True)
        if after is not None:
            found = [a for a in found if (micros(a.created_at), a.id) < after]
        return found[:limit]

    def _approval_counts(self, filter: ApprovalFilter) -> dict[str, int]:
        counts: dict[str, int] = dict.fromkeys(STATUSES, 0)
        for approval in self._decoded_all():
            if filter.matches(approval):
                counts[approval.status] += 1
        return counts

    def _approval_due(self, now: datetime) -> list[str]:
        """The ids of pending approvals with ``expires_at <= now``, oldest expiry first."""
        due = [a for a in self._decoded_all() if a.due(now)]
        due.sort(key=lambda a: (micros(a.expires_at or now), a.id))
        return [a.id for a in due]

    def _decoded_all(self, unreadable: list[tuple[str, str]] | None = None) -> Iterator[Approval]:
        """Every readable record; a damaged one is skipped (and appended to ``unreadable`` as ``(id, error)``)."""
        for approval_id, data in self._approval_all():
            try:
                if isinstance(data, CorruptRecordError):
                    raise data
                yield self._decode_approval(approval_id, data)
            except CorruptRecordError as exc:
                if unreadable is not None:
                    unreadable.append((approval_id, str(exc)))

    def unreadable_approvals(self) -> list[tuple[str, str]]:
        """The approvals whose record cannot be read (damaged, hand-edited), as ``(id, error)``, by id.

        Listing, counting and the expiry sweep skip them (each is refused by name when read on its own); this
        names them, reading every record.
        """
        unreadable: list[tuple[str, str]] = []
        for _ in self._decoded_all(unreadable):
            pass
        return sorted(unreadable)

    # -- helpers -----------------------------------------------------------------------------------

    def _approval_key(self, approval_id: object) -> str:
        if not isinstance(approval_id, str):
            raise ConfigurationTypeError(f"An approval id is a str, got {type(approval_id).__name__}.")
        if not _ID.fullmatch(approval_id):
            raise ApprovalNotFoundError(
                f"No approval {approval_id!r:.80} in {self}: approval ids look like ap_<32 hex>."
            )
        return approval_id

    def _decode_approval(self, approval_id: str, data: bytes) -> Approval:
        try:
            approval = Approval.from_dict(json.loads(data))
        except (ValueError, TypeError, RecursionError) as exc:  # SerializationError is a ValueError
            raise CorruptRecordError(f"{self}: the record of approval {approval_id} cannot be read: {exc}") from exc
        if approval.id != approval_id:
            raise CorruptRecordError(f"{self}: the record of approval {approval_id} holds approval {approval.id}.")
        return approval

    def _decode_entries(self, approval_id: str, rows: list[bytes]) -> list[ApprovalAuditEntry]:
        try:
            entries = [ApprovalAuditEntry.from_dict(json.loads(row)) for row in rows]
            verify_chain(entries)
        except (ValueError, TypeError, RecursionError) as exc:  # ConfigurationError is a ValueError
            raise CorruptRecordError(f"{self}: the audit trail of approval {approval_id} is damaged: {exc}") from exc
        if any(entry.approval_id != approval_id for entry in entries):
            raise CorruptRecordError(f"{self}: the audit trail of approval {approval_id} holds another's entries.")
        return entries

    def _current_approval(self, handle: Any, approval_id: str) -> Approval:
        data = self._approval_read(handle, approval_id)
        if data is None:
            raise ApprovalNotFoundError(f"No approval {approval_id} in {self}.")
        return self._decode_approval(approval_id, data)

    def _append_entry(self, handle: Any, approval_id: str, **fields: Any) -> ApprovalAuditEntry:
        entries = self._decode_entries(approval_id, self._audit_read(handle, approval_id))
        entry = ApprovalAuditEntry.chained(entries[-1] if entries else None, approval_id=approval_id, **fields)
        self._audit_write(handle, entry, canonical_json(entry.to_dict()))
        return entry

    def _approval_cas(self, handle: Any, updated: Approval, expected: int) -> None:
        if not self._approval_write(handle, updated, canonical_json(updated.to_dict()), expected_version=expected):
            raise _refusal(
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

    # -- the protocol ------------------------------------------------------------------------------

    _approvals_in_one_transaction: ClassVar[bool] = False
    """True where one scope can hold writes to several approvals (SQL: one transaction); a directory store locks
    each approval's file on its own."""

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
        _check_new(approval)
        with self._approval_scope(approval.id, new=True) as handle:
            stored = self._create_or_stored(handle, approval, _details(details))
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
        nothing); a directory store writes each approval's file on its own.

        Raises:
            ConfigurationError: An approval is not pending at version 1.
            StoreError: The backend failed (SQL: nothing was written).
        """
        for approval in approvals:
            _check_new(approval)
        extra = _details(details)
        if not approvals:
            return []
        if self._approvals_in_one_transaction:
            with self._approval_scope(approvals[0].id, new=True) as handle:
                return [self._create_or_stored(handle, a, extra) for a in approvals]
        out = []
        for approval in approvals:
            with self._approval_scope(approval.id, new=True) as handle:
                out.append(self._create_or_stored(handle, approval, extra))
        return out

    def _create_or_stored(self, handle: Any, approval: Approval, extra: dict[str, Any]) -> Approval:
        """Insert ``approval`` with its ``created`` entry and return it, or return the record stored under its id."""
        existing = self._approval_read(handle, approval.id)
        if existing is None and self._approval_write(
            handle, approval, canonical_json(approval.to_dict()), expected_version=None
        ):
            self._append_entry(
                handle, approval.id, kind="created", at=approval.created_at, args_digest=approval.args_digest,
                details=extra,
            )  # fmt: skip
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
    ) -> Approval:
        """Decide a pending approval: a compare-and-set on ``expected_version``, with its ``decided`` audit entry.

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

        Returns:
            The updated approval (terminal, ``version + 1``).

        Raises:
            ApprovalClosedError: It is terminal already, or its expiry time has come (it is expired now, and
                stays so); ``current`` holds the record.
            ApprovalConflictError: Still pending, at another version than ``expected_version``.
            ApprovalNotFoundError: No such id.
            ConfigurationError: The decision is not allowed, arguments without an edit (or none with one), a bad
                principal, a naive time.
        """
        key = self._approval_key(approval_id)
        moment = _moment("at", at)
        Checker("decide_approval", reading=False).integer("expected_version", expected_version, minimum=1)
        extra = _details(details)
        refused: ApprovalConflictError | None = None
        with self._approval_scope(key) as handle:
            current = self._current_approval(handle, key)
            if current.due(moment):
                refused = _refusal(self._approval_expire(handle, current, moment), expected_version)
            elif current.terminal or current.version != expected_version:
                refused = _refusal(current, expected_version)
            else:
                updated = current.decided(
                    decision, principal=principal, at=moment, feedback=feedback, arguments=arguments,
                    idempotency_key=idempotency_key,
                )  # fmt: skip
                self._approval_cas(handle, updated, expected_version)
                changes = arguments_diff(current.arguments, updated.arguments) if decision == "edit" else ()
                self._append_entry(
                    handle, key, kind="decided", at=moment, principal=updated.decided_by, decision=decision,
                    feedback=feedback, changes=changes, args_digest=updated.args_digest, details=extra,
                )  # fmt: skip
        if refused is not None:
            raise refused
        return updated

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
        key = self._approval_key(approval_id)
        moment = _moment("at", at)
        refused: ApprovalConflictError | None = None
        with self._approval_scope(key) as handle:
            current = self._current_approval(handle, key)
            if current.terminal or current.version != expected_version:
                refused = _refusal(current, expected_version)
            else:
                updated = current.cancelled(moment, principal=principal, reason=reason)
                self._approval_cas(handle, updated, expected_version)
                self._append_entry(handle, key, kind="cancelled", at=moment, principal=principal, feedback=reason)
        if refused is not None:
            raise refused
        return updated

    def expire_approvals(self, now: datetime) -> list[Approval]:
        """Expire every pending approval whose ``expires_at <= now``, each with its ``expired`` audit entry.

        Each is a compare-and-set of its own: one decided meanwhile stays decided and is not returned. A record
        that cannot be read is skipped (:meth:`unreadable_approvals` names it); the others still expire.

        Returns:
            The approvals expired by this call, oldest expiry first.
        """
        moment = _moment("now", now)
        expired: list[Approval] = []
        for approval_id in self._approval_due(moment):
            try:
                with self._approval_scope(approval_id) as handle:
                    current = self._current_approval(handle, approval_id)
                    if current.due(moment):
                        expired.append(self._approval_expire(handle, current, moment))
            except CorruptRecordError:
                continue  # damaged: refused by name when read on its own; it must not stop the sweep
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
        moment = _moment("at", at)
        extra = _details(details)
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
