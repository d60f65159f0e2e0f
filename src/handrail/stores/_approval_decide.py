"""Deciding one paused call: its approval record and its snapshot's decision, kept in step by one function.

A call a policy sent to a person is known twice in a store that keeps approvals: as its
:class:`~handrail.dataclasses.approval.Approval` (what the inbox lists and decides) and as a pending ledger entry
of the paused snapshot (what a resumed run applies). :func:`decide_call` is the only way a decision is recorded
for such a call, whoever asks: the approval service, ``handrail approvals approve|reject`` and
:func:`~handrail.human_in_the_loop.snapshots.record_decision` (through ``SnapshotStoreBase.decide``). It

1. refuses what the approval refuses (a decision outside ``allowed_decisions``, an edit that renames the tool or
   fails the stored schema) before anything is written;
2. decides the approval by a compare-and-set on its version (the arbiter: of two deciders exactly one wins);
   an identical repeat of the decision recorded returns it; a different one raises ApprovalClosedError (or
   ApprovalExpiredError) naming the winner, the decision and the time;
3. writes the matching :class:`~handrail.dataclasses.decisions.ToolExecutionDecision` into the snapshot that
   holds the call now (the approval's snapshot, or the one its run continued in: ``continued_in``).

On a SQL store steps 2 and 3 are one transaction when the snapshot's claim is free (``_joint_scope``): they
commit together or not at all. Otherwise (a directory store; a resume holds the claim) step 3 follows step 2:
if it cannot be written now (the snapshot is claimed by a resume for longer than the lock
timeout, or the process dies in between), the approval is decided and the snapshot is not; the same request
again writes it (an identical repeat repairs), and so does the run's next pause (:func:`sync_snapshot` of every
held call whose approval is decided already).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from handrail.dataclasses.approval import Approval, Decision, approval_id
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import AgentSnapshot
from handrail.errors import (
    ApprovalClosedError,
    ApprovalConflictError,
    ApprovalDecisionError,
    ApprovalExpiredError,
    ApprovalNotFoundError,
    SnapshotError,
    SnapshotUnavailableError,
)
from handrail.stores._approval_request import (
    INJECTED_KEY,
    check_allowed,
    check_initiator,
    check_not_voted,
    edit_problems,
    edited_arguments,
    injected_values,
    not_unicode,
    replayed,
    requorum,
)
from handrail.stores._approval_rules import refusal
from handrail.stores._snapshot_common import awaiting_decision, recorded_decision, waits_for_decision

__all__ = [
    "INJECTED_KEY",
    "Deliver",
    "approval_of_call",
    "decide_call",
    "edit_problems",
    "expire_due",
    "snapshot_decision",
    "sync_snapshot",
    "sync_snapshots",
]

Deliver = Callable[..., object]
"""``deliver(approval, decision, *, principal, arguments, feedback)``: hands a decision on an approval of another
backend (``approval.backend``: a Temporal run) to the run that owns the call, before the record is written.
``arguments`` are an edit's as the record keeps them (the State's values put back), else None. It returns once
the run accepted the decision, or raises a HandrailError (the run refused it: nothing is recorded)."""

_CHAIN_LIMIT = 10_000
_VOTE_ATTEMPTS = 10
"""How often a decision without ``expected_version`` is tried again when other votes land meanwhile."""


def _closed(current: Approval, error: ApprovalConflictError | None = None) -> ApprovalConflictError:
    """The refusal of a decision for the terminal ``current`` (expired: its own class)."""
    if current.status == "expired":
        at = current.decided_at.isoformat() if current.decided_at else "?"
        return ApprovalExpiredError(
            f"Approval {current.id} expired at {at} (on expiry: {current.on_expiry}); it takes no decision.",
            approval_id=current.id, current=current, expected_version=error.expected_version if error else None,
        )  # fmt: skip
    if error is not None:
        return error
    at = current.decided_at.isoformat() if current.decided_at else "?"
    return ApprovalClosedError(
        f"Approval {current.id} is {current.status} ({current.decision}) by {current.decided_by or 'nobody'} at "
        f"{at} (version {current.version}); it takes no more decisions.",
        approval_id=current.id, current=current, expected_version=None,
    )  # fmt: skip


class _VotedMeanwhile(Exception):
    """The compare-and-set found the approval still pending at another version: somebody voted meanwhile."""

    def __init__(self, current: Approval, error: ApprovalConflictError, delivered: bool = False) -> None:
        super().__init__(str(error))
        self.current = current
        self.error = error
        self.delivered = delivered
        """The run of another backend accepted the decision already: the record must follow it."""


def decide_call(
    store: Any,
    approval: Approval,
    decision: Decision,
    *,
    principal: str,
    at: datetime,
    feedback: str | None = None,
    arguments: dict[str, Any] | None = None,
    tool_name: str | None = None,
    expected_version: int | None = None,
    idempotency_key: str | None = None,
    details: Mapping[str, Any] | None = None,
    deliver: Deliver | None = None,
) -> tuple[Approval, bool]:
    """Decide ``approval`` (as read just now from ``store``) and record the decision in its snapshot.

    The decision is one vote (:mod:`~handrail.dataclasses.approval_quorum`): the approval is decided, and its
    snapshot gets the decision, only when the vote rejects or reaches the quorum; a vote short of it leaves the
    approval pending at ``version + 1``. Without ``expected_version`` a vote that meets another vote landed
    meanwhile (still pending, the same arguments) is tried again on the new version; one that meets an edit is
    refused (ApprovalConflictError): its decider has not seen the new arguments.

    Args:
        store: A snapshot store that keeps approvals (the three built-in ones).
        approval: The approval as read from ``store``.
        decision: ``approve``, ``edit`` or ``reject``.
        principal: Who decides (the caller's authenticated name).
        at: Now (timezone-aware; expiry is judged against it).
        feedback: Text for the model.
        arguments: The edited arguments (only read for an edit; replaced, not merged).
        tool_name: The tool an edit names, if the client sent one: it must be the approval's.
        expected_version: The version the decider saw (None: the one read).
        idempotency_key: The request's ``Idempotency-Key``, kept on the vote.
        details: JSON data for the audit entry.
        deliver: For an approval of another backend (a Temporal run: no snapshot here), what hands the decision
            to its run (:data:`Deliver`), called once every check above passed and the request is no retry of a
            recorded one, before the compare-and-set; the run is the arbiter (its refusal leaves the record
            unchanged). ``expected_version`` is checked before it (a stale one is refused unsent), and once the
            run accepted the decision the record follows it at whatever version it is then. Without ``deliver``
            such an approval takes no decision here (ApprovalDecisionError): writing the record alone would not
            reach the run.

    Returns:
        ``(the approval as it now is, True when this call recorded the vote)``; False for an identical repeat (the
        stored result, with the snapshot's decision written again if it was missing).

    Raises:
        ApprovalDecisionError: Not allowed, a renamed tool, refused edited arguments (``errors`` lists them), edited
            arguments the recorded policy cannot judge, or a principal approving arguments it approved already.
        PermissionDeniedError: The principal is the run's initiator, and the policy forbids the initiator to approve.
        IdempotencyKeyReusedError: ``idempotency_key`` is on the record with another decision or content.
        ApprovalExpiredError: It expired (now, or before).
        ApprovalClosedError: Somebody else decided it (``current`` names who, what and when).
        ApprovalConflictError: Still pending at another version than ``expected_version`` (or, without it, its
            arguments were edited meanwhile).
        SnapshotUnavailableError: The approval is decided but its snapshot is held by a resume right now: the
            same request again writes the snapshot's decision.
    """
    request: dict[str, Any] = {"principal": principal, "at": at, "feedback": feedback, "arguments": arguments,
               "tool_name": tool_name, "idempotency_key": idempotency_key, "details": details,
               "deliver": deliver}  # fmt: skip
    for attempt in range(_VOTE_ATTEMPTS):
        try:
            return _decide_once(store, approval, decision, expected_version or approval.version, **request)
        except _VotedMeanwhile as moved:
            if (expected_version is not None and not moved.delivered) or (
                moved.current.args_digest != approval.args_digest
            ):
                raise moved.error from None
            if attempt == _VOTE_ATTEMPTS - 1:
                raise moved.error from None
            if moved.delivered:  # the run took it: the record follows at its version now (delivered again: a no-op)
                expected_version = None
            approval = moved.current
    raise AssertionError("unreachable")  # pragma: no cover


def _decide_once(
    store: Any, approval: Approval, decision: Decision, version: int, *, principal: str, at: datetime,
    feedback: str | None, arguments: dict[str, Any] | None, tool_name: str | None, idempotency_key: str | None,
    details: Mapping[str, Any] | None, deliver: Deliver | None = None,
) -> tuple[Approval, bool]:  # fmt: skip
    """One attempt of :func:`decide_call` against ``approval`` at ``version``."""
    edited, quorum, delivered = None, None, False
    if not approval.terminal and not approval.due(at):  # a due one is expired by the store, and refused (410)
        check_allowed(approval, decision, tool_name)
        check_initiator(approval, decision, principal)
        edited = edited_arguments(approval, decision, arguments)
        if replayed(approval, decision, principal, feedback, edited, idempotency_key):
            return approval, False  # a vote of this very request, the approval still pending
        check_not_voted(approval, decision, principal)
        quorum = requorum(approval, edited)
        if approval.backend != "local":
            _deliver(approval, decision, version, deliver, principal=principal, arguments=edited, feedback=feedback)
            delivered = True
    elif decision == "edit" and isinstance(arguments, dict) and not_unicode(arguments) is None:
        edited = {**arguments, **injected_values(approval)}  # to tell a retry of the recorded edit
    try:
        if approval.terminal:
            if approval.status == "expired":
                _sync_quietly(store, approval)
            raise _closed(approval)
        updated = _record(
            store, approval, decision, version, principal=principal, at=at, feedback=feedback, arguments=edited,
            idempotency_key=idempotency_key, details=details, quorum=quorum,
        )  # fmt: skip
    except ApprovalConflictError as exc:
        current = exc.current
        if not isinstance(current, Approval):
            raise
        if current.status == "expired":  # expired by this very request (or before): its snapshot gets the expiry
            _sync_quietly(store, current)
        if replayed(current, decision, principal, feedback, edited, idempotency_key):
            sync_snapshot(store, current)
            return current, delivered  # delivered: the run recorded this very vote first (its record activity)
        if not current.terminal:
            raise _VotedMeanwhile(current, exc, delivered) from None
        raise _closed(current, exc) from None
    return updated, True


def _record(
    store: Any, approval: Approval, decision: Decision, version: int, *, principal: str, at: datetime,
    feedback: str | None, arguments: dict[str, Any] | None, idempotency_key: str | None,
    details: Mapping[str, Any] | None, quorum: int | None,
) -> Approval:  # fmt: skip
    """The vote's compare-and-set and, when it decides the approval, the snapshot's decision (:func:`sync_snapshot`).

    A SQL store does both in one transaction (``_joint_scope``) when the snapshot's claim is free at once: one
    commit, one read of the snapshot, and the approval and its snapshot change together or not at all. When the
    claim is held (a resume), or the run continued in another snapshot, the snapshot is written after the commit
    as for a directory store.
    """
    joint = getattr(store, "_joint_scope", None) if approval.backend == "local" else None
    if joint is None:
        updated: Approval = store.decide_approval(
            approval.id, decision, expected_version=version, principal=principal, at=at, feedback=feedback,
            arguments=arguments, idempotency_key=idempotency_key, details=details, quorum=quorum,
        )  # fmt: skip
        sync_snapshot(store, updated)
        return updated
    key, moment, extra = store._decision_checked(approval.id, at, version, details)
    events: list[Any] = []
    with joint(key, approval.snapshot_id) as (handle, free):
        updated, refused = store._decide_in(
            handle, events, key, decision, expected_version=version, principal=principal, at=moment,
            feedback=feedback, arguments=arguments, idempotency_key=idempotency_key, details=extra, quorum=quorum,
            known=approval,
        )  # fmt: skip
        synced = refused is None and free and _sync_in_scope(store, handle, updated)
        if events:
            store._events_write(handle, events)
    if refused is not None:
        raise refused
    if not synced:
        sync_snapshot(store, updated)
    return updated


def _deliver(approval: Approval, decision: Decision, version: int, deliver: Deliver | None, *, principal: str,
             arguments: dict[str, Any] | None, feedback: str | None) -> None:  # fmt: skip
    """Hand a decision on an approval of another backend to its run (its refusal raised: nothing recorded)."""
    if deliver is None:
        raise ApprovalDecisionError(
            f"Approval {approval.id} belongs to a {approval.backend} run: its decision must reach the run, and this "
            f"service has no {approval.backend} connection (handrail serve --temporal HOST:PORT, or "
            "handrail.temporal.decide). Nothing was recorded.",
            approval_id=approval.id,
        )
    if version != approval.version:
        raise refusal(approval, version)
    deliver(approval, decision, principal=principal, arguments=arguments, feedback=feedback)


def _sync_in_scope(store: Any, handle: Any, approval: Approval) -> bool:
    """:func:`sync_snapshot` inside a joint scope holding the snapshot's claim; False: the caller does it after.

    False when the run continued in another snapshot (the chain is followed outside the transaction).
    """
    if approval.decision is None or approval.status == "cancelled":
        return True
    try:
        snapshot: AgentSnapshot = store._read_snapshot(handle, approval.snapshot_id)
    except (SnapshotError, FileNotFoundError):
        return True  # as sync_snapshot: no snapshot to write
    if snapshot.status == "resumed" and snapshot.continued_in:
        return False
    if waits_for_decision(snapshot, approval.tool_call_id):  # else finished, or the decision is there already
        store._decide_in_scope(handle, approval.snapshot_id, snapshot, snapshot_decision(approval),
                               decided_by=approval.decided_by)  # fmt: skip
    return True


def _sync_quietly(store: Any, approval: Approval) -> None:
    """:func:`sync_snapshot`, unless the snapshot is held by a resume now (the run's next pause writes it)."""
    import contextlib

    from handrail.errors import SnapshotUnavailableError

    with contextlib.suppress(SnapshotUnavailableError):
        sync_snapshot(store, approval)


def expire_due(store: Any, now: datetime) -> list[Approval]:
    """Expire every approval of ``store`` due at ``now`` and write each expiry's decision into its snapshot.

    The expiry is the approval's compare-and-set (one decided meanwhile stays decided); the snapshot's decision
    is :func:`snapshot_decision` of the expired record (``on_expiry``, the feedback "Approval request expired"
    for a rejection, decided by ``expiry``), written as for a person's decision (:func:`sync_snapshot`, the
    ``continued_in`` rule). A snapshot held by a resume right now gets it at the run's next pause.

    Returns:
        The approvals this pass expired, oldest expiry first.
    """
    expired: list[Approval] = store.expire_approvals(now)
    by_snapshot: dict[str, list[Approval]] = {}
    for approval in expired:
        by_snapshot.setdefault(approval.snapshot_id, []).append(approval)
    for group in by_snapshot.values():  # one read and one write per snapshot, not per approval
        with contextlib.suppress(SnapshotUnavailableError):  # held by a resume now: the run's next pause writes it
            sync_snapshots(store, group)
    return expired


def snapshot_decision(approval: Approval) -> ToolExecutionDecision:
    """The snapshot's decision for a decided (or expired) approval: what the resumed run applies."""
    assert approval.decision is not None
    execute = approval.decision != "reject"
    params = None
    if approval.decision == "edit":
        injected = injected_values(approval)
        params = {k: v for k, v in approval.arguments.items() if k not in injected}
    return ToolExecutionDecision(
        approval.tool_name, execute, approval.tool_call_id, feedback=approval.feedback, final_tool_params=params,
        decided_by=approval.decided_by or "expiry",
    )  # fmt: skip


def current_snapshot(store: Any, snapshot_id: str) -> AgentSnapshot | None:
    """The snapshot the run of ``snapshot_id`` is at now: it, or the last one it continued in (None: unknown)."""
    seen: set[str] = set()
    try:
        snapshot = store.load(snapshot_id)
        while snapshot.status == "resumed" and snapshot.continued_in and len(seen) < _CHAIN_LIMIT:
            seen.add(snapshot.snapshot_id or "")
            if snapshot.continued_in in seen:
                break
            snapshot = store.load(snapshot.continued_in)
    except (SnapshotError, FileNotFoundError):
        return None
    return snapshot  # type: ignore[no-any-return]


def sync_snapshot(store: Any, approval: Approval) -> None:
    """Write ``approval``'s decision into the snapshot holding its call, unless it is there or the call moved on.

    The snapshot is judged again under its claim: a run that finished or went on meanwhile (a resumer took the
    decision from the approval) needs nothing more, and that is no error for the decider (a retry of a decision
    whose run is done answers with the stored result).
    """
    if approval.decision is None or approval.status == "cancelled" or approval.backend != "local":
        return
    for _ in range(3):  # the run may go on to its next snapshot between the read and the claim
        snapshot = current_snapshot(store, approval.snapshot_id)
        if snapshot is None or snapshot.snapshot_id is None or not waits_for_decision(snapshot, approval.tool_call_id):
            return  # finished, being resumed (the resumed run pauses again, and syncs then), or decided there
        now, _ = store._decide_in_snapshot(
            snapshot.snapshot_id, snapshot_decision(approval), decided_by=approval.decided_by, if_waiting=True
        )
        if now.status != "resumed":
            return


def sync_snapshots(store: Any, approvals: Sequence[Approval]) -> None:
    """:func:`sync_snapshot` for approvals of one snapshot at once: one read of it and one write of their decisions.

    (The expiry sweep of a pause holding 200 calls wrote the snapshot 200 times, reading it twice each time.)
    """
    decided = [a for a in approvals if a.decision is not None and a.status != "cancelled"]
    if not decided:
        return
    snapshot = current_snapshot(store, decided[0].snapshot_id)
    if snapshot is None or snapshot.status != "paused" or snapshot.snapshot_id is None:
        return  # finished, or being resumed (the resumed run pauses again, and syncs then)
    waiting = {call.id for call in awaiting_decision(snapshot)}  # (not decided in the snapshot yet)
    decisions = [snapshot_decision(a) for a in decided if a.tool_call_id in waiting]
    if decisions:
        store._decide_many_in_snapshot(snapshot.snapshot_id, decisions)


def approval_of_call(store: Any, snapshot: AgentSnapshot, tool_call_id: str) -> Approval | None:
    """The approval of call ``tool_call_id`` of ``snapshot``'s run, or None (no run id, no record)."""
    run_id = snapshot.run_id
    if run_id is None:
        return None
    try:
        found: Approval = store.get_approval(approval_id(run_id, tool_call_id))
    except ApprovalNotFoundError:
        return None
    return found


def _os_principal() -> str:
    from handrail.stores._snapshot_common import _os_user

    return _os_user()


def decide_recorded(
    store: Any, snapshot_id: str, decision: ToolExecutionDecision, decided_by: str | None
) -> tuple[AgentSnapshot, bool] | None:
    """A decision given the old way (``record_decision``, ``handrail approvals``) for a call with an approval.

    Checked against the snapshot first, exactly as before (so the old errors stay), then decided through
    :func:`decide_call`. None when the call has no approval record (the caller records it in the snapshot alone).
    """
    from datetime import UTC
    from datetime import datetime as _datetime

    from handrail.stores._snapshot_common import with_decision

    snapshot = store.load(snapshot_id)
    if snapshot.status != "paused":
        return None  # it takes no decision: the snapshot's own path refuses it, with its own error
    approval = approval_of_call(store, snapshot, decision.tool_call_id or "")
    if approval is None:
        return None
    updated = with_decision(snapshot, decision, decided_by=decided_by)  # refuses what it refused before
    principal = decided_by or decision.decided_by or _os_principal()
    if updated is snapshot:  # the same decision is in the snapshot already: the approval follows it, if behind
        recorded = recorded_decision(snapshot, approval.tool_call_id)
        if recorded is not None and not approval.terminal:
            kind, edited = _kind_of(approval, recorded)
            decide_call(store, approval, kind, principal=recorded.decided_by or principal, at=_datetime.now(UTC),
                        feedback=recorded.feedback, arguments=edited)  # fmt: skip
        return snapshot, False
    kind, edited = _kind_of(approval, decision)
    _, wrote = decide_call(
        store, approval, kind, principal=principal, at=_datetime.now(UTC), feedback=decision.feedback,
        arguments=edited,
    )  # fmt: skip
    loaded: AgentSnapshot = store.load(snapshot_id)
    return loaded, wrote


def _kind_of(approval: Approval, decision: ToolExecutionDecision) -> tuple[Decision, dict[str, Any] | None]:
    """The approval decision a ToolExecutionDecision makes, with an edit's arguments."""
    if not decision.execute:
        return "reject", None
    params = decision.final_tool_params
    injected = injected_values(approval)
    proposed = {k: v for k, v in approval.arguments.items() if k not in injected}
    if params is None or params == approval.arguments or params == proposed:
        return "approve", None
    return "edit", dict(params)
