"""The approval service: list, count, read and decide the approvals of a snapshot store, with one set of checks.

:class:`ApprovalService` is the layer the HTTP API, the ``handrail approvals`` commands and Python code share. It
holds no state of its own: everything is in the store (:class:`~handrail.stores.approvals.ApprovalStore`, which
the three built-in snapshot stores are), so any number of services on the same store agree.

Deciding (:meth:`ApprovalService.decide`) goes through
:func:`~handrail.stores._approval_decide.decide_call`, the function ``record_decision`` and ``handrail approvals
approve|reject`` use too: a compare-and-set on the approval's version (of two deciders exactly one wins), an
identical repeat returns the stored result, and the matching decision is written into the paused snapshot, so
``handrail.resume()`` / ``handrail resume`` run (or reject) the call as decided.

Errors (all :class:`~handrail.errors.HandrailError`; the HTTP status the API maps each to):

* :class:`~handrail.errors.ApprovalNotFoundError` (404): no such approval;
* :class:`~handrail.errors.ApprovalConflictError` (412): ``expected_version`` is stale, still pending;
* :class:`~handrail.errors.ApprovalClosedError` (409): decided otherwise; ``current`` names who, what, when;
* :class:`~handrail.errors.ApprovalExpiredError` (410): it expired before the decision;
* :class:`~handrail.errors.ApprovalDecisionError` (422): not allowed, tool renamed, edit refused (``errors``);
* :class:`~handrail.errors.IdempotencyKeyReusedError` (422): the key came with another body.

Examples:
    >>> import tempfile
    >>> from handrail.stores import FileSnapshotStore
    >>> service = ApprovalService(FileSnapshotStore(tempfile.mkdtemp()))
    >>> service.counts()["pending"], service.list().items
    (0, ())
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from handrail.dataclasses.approval import Approval, Decision, check_principal
from handrail.dataclasses.approval_audit import ApprovalAuditEntry
from handrail.dataclasses.chat_message import ChatMessage
from handrail.dataclasses.service import Principal
from handrail.errors import ConfigurationError, ConfigurationTypeError, PermissionDeniedError, SnapshotError
from handrail.stores._approval_decide import Deliver, current_snapshot, decide_call
from handrail.stores._approval_decide import expire_due as _expire_due
from handrail.stores.approvals import MAX_PAGE, ApprovalFilter, ApprovalPage, ApprovalStore

__all__ = ["ApprovalDetail", "ApprovalService", "DecisionResult"]

Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class ApprovalDetail:
    """One approval with the conversation that led to it (:meth:`ApprovalService.get`)."""

    approval: Approval
    """The approval as it is now."""
    messages: tuple[ChatMessage, ...]
    """The last messages of its snapshot (oldest first; empty when the snapshot is gone)."""


@dataclass(frozen=True, slots=True)
class DecisionResult:
    """What :meth:`ApprovalService.decide` did."""

    approval: Approval
    """The approval as decided."""
    replayed: bool
    """True when the request repeated the recorded decision (a retry): nothing new was written."""


class ApprovalService:
    """List, count, read and decide approvals in ``store``; the principal always comes from the caller.

    Args:
        store: A store that keeps approvals (FileSnapshotStore, SQLiteSnapshotStore, PostgresSnapshotStore).
        clock: Returns now (timezone-aware); tests inject one to judge expiry.
        backends: ``{backend: deliver}``: how a decision reaches a run of another backend than this store's
            snapshots (``{"temporal": ...}``: the ``decide`` Update of a Temporal workflow, see
            :data:`~handrail.stores._approval_decide.Deliver`). An approval whose ``backend`` has none here takes
            no decision from this service (nothing could tell its run).

    Raises:
        ConfigurationTypeError: ``store`` keeps no approvals, or ``clock`` (or a backend) is not callable.
    """

    def __init__(self, store: Any, *, clock: Clock | None = None,
                 backends: Mapping[str, Deliver] | None = None) -> None:  # fmt: skip
        if not isinstance(store, ApprovalStore):
            raise ConfigurationTypeError(
                f"ApprovalService needs a store that keeps approvals (the built-in snapshot stores); "
                f"{type(store).__name__} has no approval records."
            )
        if clock is not None and not callable(clock):
            raise ConfigurationTypeError(f"clock must be a callable returning now, got {type(clock).__name__}.")
        self.store: Any = store
        """The store."""
        self.clock: Clock = clock or _utc_now
        """Returns now."""
        for name, deliver in (backends or {}).items():
            if not callable(deliver):
                raise ConfigurationTypeError(f"backends[{name!r}] must be callable, got {type(deliver).__name__}.")
        self.backends: dict[str, Deliver] = dict(backends or {})
        """How decisions reach the runs of other backends, by ``Approval.backend``."""

    def list(self, filters: ApprovalFilter | None = None, cursor: str | None = None, limit: int = 50) -> ApprovalPage:
        """A page of approvals matching ``filters``, newest first; pass ``next_cursor`` on for the next page.

        Raises:
            ConfigurationError: ``limit`` outside 1 to 100, or a cursor this store did not give out.
        """
        if type(limit) is not int or not 1 <= limit <= MAX_PAGE:
            raise ConfigurationError(f"limit must be an int from 1 to {MAX_PAGE}, got {limit!r:.80}.")
        page: ApprovalPage = self.store.list_approvals(filters, limit=limit, cursor=cursor)
        return page

    def every(self, filters: ApprovalFilter | None = None) -> Iterator[Approval]:
        """Every approval matching ``filters``, newest first, read a page of 100 at a time (each exactly once)."""
        cursor = None
        while True:
            page = self.list(filters, cursor=cursor, limit=MAX_PAGE)
            yield from page.items
            cursor = page.next_cursor
            if cursor is None:
                return

    def counts(self, filters: ApprovalFilter | None = None) -> dict[str, int]:
        """How many approvals match ``filters`` (its status ignored), per status (every status a key).

        A directory store skips a record it cannot read; SQL stores count by the rows' ``status`` column, so a
        damaged row still counts under its column's status (:meth:`unreadable` names it).
        """
        counts: dict[str, int] = self.store.count_approvals(filters)
        return counts

    def unreadable(self) -> builtins.list[tuple[str, str]]:
        """The approvals whose record cannot be read (damaged or edited by hand), as ``(id, error)``, by id.

        :meth:`list` and :meth:`expire_due` skip them, so one damaged record never blocks the others; reading
        one on its own (:meth:`get`, :meth:`decide`) raises CorruptRecordError naming it. This reads every record.
        """
        find = getattr(self.store, "unreadable_approvals", None)
        found: builtins.list[tuple[str, str]] = find() if callable(find) else []
        return found

    def get(self, approval_id: str, context_messages: int = 6) -> ApprovalDetail:
        """The approval and the last ``context_messages`` messages of the snapshot holding its call.

        Raises:
            ApprovalNotFoundError: No such approval. ConfigurationError: ``context_messages`` is negative.
        """
        if type(context_messages) is not int or context_messages < 0:
            raise ConfigurationError(f"context_messages must be an int >= 0, got {context_messages!r:.80}.")
        approval: Approval = self.store.get_approval(approval_id)
        messages: tuple[ChatMessage, ...] = ()
        if context_messages:
            try:
                snapshot = self.store.load(approval.snapshot_id)
            except (SnapshotError, FileNotFoundError):
                snapshot = None
            if snapshot is not None:
                messages = tuple(snapshot.messages[-context_messages:])
        return ApprovalDetail(approval, messages)

    def audit_trail(self, approval_id: str) -> builtins.list[ApprovalAuditEntry]:
        """The approval's audit entries, oldest first, their hash chain verified."""
        trail: builtins.list[ApprovalAuditEntry] = self.store.audit_trail(approval_id)
        return trail

    def decide(
        self,
        approval_id: str,
        decision: Decision,
        *,
        principal: str | Principal,
        feedback: str | None = None,
        arguments: dict[str, Any] | None = None,
        tool_name: str | None = None,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> DecisionResult:
        """Decide one approval, and record the decision in its paused snapshot for the resume.

        An approval of another backend (a Temporal run) is decided by its run: after the same checks, the
        decision goes to the run (:attr:`backends`), which may refuse it (nothing is recorded then), and the
        record follows what the run accepted.

        Args:
            approval_id: The approval.
            decision: ``approve``, ``edit`` or ``reject`` (one of its ``allowed_decisions``).
            principal: Who decides: the authenticated caller (recorded as the decider; never from a request body). A
                :class:`~handrail.dataclasses.service.Principal` (the HTTP API's) is held to its role and tool
                patterns; a name (the CLI's ``--by`` on the local machine, Python) is trusted as given.
            feedback: Text for the model (a rejection's reason reaches it).
            arguments: An edit's new arguments (they replace the stored ones; validated against the stored
                schema as the agent validates edits). Ignored for approve and reject: the stored arguments run.
            tool_name: The tool an edit names, if the client sent one; another than the approval's is refused.
            expected_version: The version the decider saw (``If-Match``); None: whatever it is now.
            idempotency_key: The request's ``Idempotency-Key``.
            details: JSON data for the audit entry (client address, user agent).

        Returns:
            The result; ``replayed`` True for an identical repeat (same principal, decision and content).

        Raises:
            HandrailError: The errors listed in the module docstring.
            PermissionDeniedError: The principal may not decide this tool (a viewer; an approver whose patterns do
                not match it).
            SnapshotUnavailableError: The decision is recorded in the approval but its snapshot is held by a resume
                right now (the same request again completes it).
        """
        name = principal.name if isinstance(principal, Principal) else principal
        check_principal(name)
        if feedback is not None and not isinstance(feedback, str):
            raise ConfigurationTypeError(f"feedback must be a str or None, got {type(feedback).__name__}.")
        approval: Approval = self.store.get_approval(approval_id)
        if isinstance(principal, Principal) and not principal.may_decide(approval.tool_name):
            raise PermissionDeniedError(
                f"{principal.name} ({principal.role}) may not decide calls of {approval.tool_name!r}"
                + ("" if principal.role == "viewer" else f" (allowed tools: {', '.join(principal.tools)})")
                + f"; approval {approval.id} is unchanged.",
                principal=principal.name,
            )
        decided, wrote = decide_call(
            self.store, approval, decision, principal=name, at=self.clock(), feedback=feedback,
            arguments=arguments, tool_name=tool_name, expected_version=expected_version,
            idempotency_key=idempotency_key, details=details, deliver=self.backends.get(approval.backend),
        )  # fmt: skip
        return DecisionResult(decided, replayed=not wrote)

    def expire_due(self, now: datetime | None = None) -> builtins.list[Approval]:
        """One pass of the expiry sweeper: expire every pending approval whose ``expires_at <= now``.

        Each expiry applies the approval's ``on_expiry``: ``reject`` (the default: fail closed, feedback
        "Approval request expired" on the record, status ``expired``, no ``decided_by``; the model is told the call
        was not approved because the request expired, not that a person rejected it) or ``approve`` (only when the
        strategy set it). The matching decision goes into the snapshot holding the call (as a person's decision
        does), so ``handrail.resume()`` then rejects or runs the call. Nothing is kept in
        memory: a pass after a restart finds the same due approvals in the store, and a decision on an expired
        one raises ApprovalExpiredError.

        Args:
            now: The time to judge expiry by (timezone-aware); None: :attr:`clock`.

        Returns:
            The approvals this pass expired, oldest expiry first (one decided meanwhile is not among them, nor
            one whose record cannot be read: :meth:`unreadable` names those). Each is recorded as expired at its
            ``expires_at`` (the audit entry's details keep this pass's time as ``swept_at``).
        """
        moment = self.clock() if now is None else now
        if not isinstance(moment, datetime) or moment.tzinfo is None:
            raise ConfigurationError(f"now must be a timezone-aware datetime, got {moment!r:.80}.")
        return _expire_due(self.store, moment)

    def snapshot_of(self, approval_id: str) -> str | None:
        """The id of the snapshot holding the approval's call now (the one to resume), or None."""
        approval: Approval = self.store.get_approval(approval_id)
        snapshot = current_snapshot(self.store, approval.snapshot_id)
        return None if snapshot is None else snapshot.snapshot_id
