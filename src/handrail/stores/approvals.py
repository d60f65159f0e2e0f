"""The approval store protocol: approval records and their audit trails, kept in a snapshot store.

Every snapshot store kind implements :class:`ApprovalStore` (through
:class:`~handrail.stores._approval_base.ApprovalStoreBase`): a directory store keeps one file per approval,
``<directory>/approvals/<id>.json`` (the record and its audit trail, written atomically under the file's lock);
SQLite and PostgreSQL keep the tables ``handrail_approvals``, ``handrail_approval_labels`` and
``handrail_approval_audit`` (the snapshot stores' schema version 3).

The rules every backend follows (the conformance suite :class:`~handrail.testing.store_suites.ApprovalStoreSuite`
checks them):

* ``create_approval`` is idempotent on the id: creating the same approval again returns the stored one; a
  record with the same id but another tool, snapshot or digest is refused (ApprovalConflictError). Creating
  writes the ``created`` audit entry in the same transaction.
* ``decide_approval`` is a compare-and-set on ``(status = pending, version = expected_version)``: of two
  deciders exactly one wins. A terminal approval raises ApprovalClosedError, a stale version (still pending)
  ApprovalConflictError; both carry the record as it is now (status, decider, time). A pending approval whose
  expiry time has come (``expires_at <= at``) is expired first, in the same transaction, and the decision is
  refused with ApprovalClosedError. The ``decided`` audit entry is written with the record.
* ``list_approvals`` is newest first (``created_at``, then id, both descending) with keyset cursors: every item
  that matches the filter is returned exactly once across pages, even when approvals are added while paging.
* Times are timezone-aware; a store keeps them to the microsecond, in UTC.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from handrail.dataclasses._approval_checks import Checker
from handrail.dataclasses.approval import STATUSES, Approval, ApprovalStatus, Decision
from handrail.dataclasses.approval_audit import ApprovalAuditEntry
from handrail.errors import ConfigurationError

__all__ = ["MAX_PAGE", "ApprovalFilter", "ApprovalPage", "ApprovalStore", "micros"]

MAX_PAGE = 100
"""The most approvals one page holds."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def micros(moment: datetime) -> int:
    """Microseconds since the Unix epoch (UTC) of a timezone-aware time: how SQL stores keep times."""
    delta = moment.astimezone(UTC) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


_FIRST_MICROS, _LAST_MICROS = micros(datetime.min.replace(tzinfo=UTC)), micros(datetime.max.replace(tzinfo=UTC))


@dataclass(frozen=True, slots=True)
class ApprovalFilter:
    """Which approvals to list or count; every field given must match (None: any).

    Raises:
        ConfigurationError / ConfigurationTypeError: An unknown status, a naive time, a field of the wrong type.
    """

    status: ApprovalStatus | None = None
    """Only this status."""
    tool_name: str | None = None
    """Only calls of this tool."""
    agent_name: str | None = None
    """Only this agent's."""
    run_id: str | None = None
    """Only this run's."""
    label: str | None = None
    """Only those carrying this label."""
    created_after: datetime | None = None
    """Only those created strictly after this time."""
    created_before: datetime | None = None
    """Only those created strictly before this time."""
    expires_before: datetime | None = None
    """Only those with an expiry time strictly before this time."""
    decided_by: str | None = None
    """Only those decided (or cancelled) by this principal."""

    def __post_init__(self) -> None:
        checker = Checker("ApprovalFilter", reading=False)
        checker.choice("status", self.status, STATUSES, optional=True)
        for name in ("tool_name", "agent_name", "run_id", "label", "decided_by"):
            checker.text(name, getattr(self, name), optional=True, empty=True)
        for name in ("created_after", "created_before", "expires_before"):
            checker.moment(name, getattr(self, name), optional=True)

    def matches(self, approval: Approval) -> bool:
        """Whether ``approval`` passes the filter (what the SQL stores compute in their WHERE clause)."""
        checks = (
            self.status is None or approval.status == self.status,
            self.tool_name is None or approval.tool_name == self.tool_name,
            self.agent_name is None or approval.agent_name == self.agent_name,
            self.run_id is None or approval.run_id == self.run_id,
            self.label is None or self.label in approval.labels,
            self.created_after is None or approval.created_at > self.created_after,
            self.created_before is None or approval.created_at < self.created_before,
            self.expires_before is None
            or (approval.expires_at is not None and approval.expires_at < self.expires_before),
            self.decided_by is None or approval.decided_by == self.decided_by,
        )
        return all(checks)


@dataclass(frozen=True, slots=True)
class ApprovalPage:
    """One page of :meth:`ApprovalStore.list_approvals`."""

    items: tuple[Approval, ...]
    """The approvals, newest first."""
    next_cursor: str | None
    """Pass it as ``cursor`` for the next page; None when this is the last."""


def encode_cursor(approval: Approval) -> str:
    """The opaque cursor after ``approval``: URL-safe base64 of ``[created_at µs, id]``."""
    raw = json.dumps([micros(approval.created_at), approval.id], separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> tuple[int, str]:
    """``(created_at µs, id)`` of a cursor from :func:`encode_cursor`.

    Raises:
        ConfigurationError: Not such a cursor.
    """
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created, approval_id = json.loads(raw)
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
        raise ConfigurationError(f"cursor {cursor!r:.80} is not a cursor this store gave out.") from None
    if type(created) is not int or not _FIRST_MICROS <= created <= _LAST_MICROS or not isinstance(approval_id, str):
        raise ConfigurationError(f"cursor {cursor!r:.80} is not a cursor this store gave out.")
    return created, approval_id


def check_limit(limit: object) -> int:
    """A page size from 1 to :data:`MAX_PAGE` (ConfigurationError otherwise)."""
    if type(limit) is not int or not 1 <= limit <= MAX_PAGE:
        raise ConfigurationError(f"limit must be an int from 1 to {MAX_PAGE}, got {limit!r:.80}.")
    return limit


@runtime_checkable
class ApprovalStore(Protocol):
    """Keeps approval records and their audit trails (see the module docstring for the rules)."""

    def create_approval(self, approval: Approval, *, details: Mapping[str, Any] | None = None) -> Approval:
        """Store a pending approval (version 1) and its ``created`` audit entry; the stored one if it exists."""
        ...

    def create_approvals(
        self, approvals: Sequence[Approval], *, details: Mapping[str, Any] | None = None
    ) -> list[Approval]:
        """Store the approvals of one pause at once, each unless its id is taken; what is stored, in order."""
        ...

    def get_approval(self, approval_id: str) -> Approval:
        """The approval (ApprovalNotFoundError for an unknown id)."""
        ...

    def list_approvals(
        self, filter: ApprovalFilter | None = None, *, limit: int = 50, cursor: str | None = None
    ) -> ApprovalPage:
        """A page of the approvals that match, newest first."""
        ...

    def count_approvals(self, filter: ApprovalFilter | None = None) -> dict[str, int]:
        """How many approvals match, per status (every status present; the filter's status is ignored)."""
        ...

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
        """Decide (one vote toward the quorum), as a compare-and-set on the version; returns the updated approval."""
        ...

    def cancel_approval(
        self, approval_id: str, *, expected_version: int, at: datetime, principal: str | None = None,
        reason: str | None = None,
    ) -> Approval:  # fmt: skip
        """Cancel a pending approval (compare-and-set, as for a decision); returns the updated approval."""
        ...

    def expire_approvals(self, now: datetime) -> list[Approval]:
        """Expire every pending approval whose ``expires_at <= now``; returns them (expired), oldest expiry first."""
        ...

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
        """Append an ``executed`` entry to the approval's audit trail; returns it (chained)."""
        ...

    def audit_trail(self, approval_id: str) -> list[ApprovalAuditEntry]:
        """The approval's audit entries in order, the hash chain verified."""
        ...
