"""``handrail approvals`` over the approval service, for stores that keep approval records.

The built-in snapshot stores keep an :class:`~handrail.dataclasses.approval.Approval` per call a strategy paused;
these helpers put the ``approvals`` commands through :class:`~handrail.human_in_the_loop.service.ApprovalService`
for them (the checks the HTTP API will share): ``list`` adds the status counts and the pending approvals (id,
tool, age, time left), ``show`` takes an approval id, ``approve`` / ``reject`` decide through
:meth:`~handrail.human_in_the_loop.service.ApprovalService.decide`, and ``expire`` runs one sweep. A store
without approval records (a user's own) keeps the snapshot-only behaviour.
"""

from __future__ import annotations

import re
import sys
from datetime import UTC, datetime
from typing import Any

from handrail.cli._common import EXIT_USAGE, age, call_line, echo_json, error, fail_usage, printable

__all__ = [
    "APPROVAL_ID",
    "approval_json",
    "decide_approval",
    "list_approvals",
    "parse_now",
    "print_expired",
    "service_of",
    "show_approval",
    "skipped_approvals",
]

APPROVAL_ID = re.compile(r"ap_[0-9a-f]{32}")
"""What an approval id looks like (a snapshot id never does: ``approvals show`` tells them apart by it)."""


def service_of(store: Any) -> Any:
    """An ApprovalService over ``store``, or None when the store keeps no approval records."""
    from handrail.human_in_the_loop.service import ApprovalService
    from handrail.stores.approvals import ApprovalStore

    return ApprovalService(store) if isinstance(store, ApprovalStore) else None


def parse_now(out: Any, text: str | None) -> datetime | None:
    """``--now ISO``: a time (a time without a zone is UTC), None when not given; a usage error otherwise."""
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        fail_usage(out, f"--now {printable(text)} is not an ISO 8601 time (e.g. 2030-01-02T03:04:05+00:00).")
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _left(approval: Any, now: datetime) -> str:
    if approval.expires_at is None:
        return "never expires"
    if approval.expires_at <= now:
        return "due to expire"
    return f"expires in {age(now, approval.expires_at)}"


def approval_json(approval: Any) -> dict[str, Any]:
    """An approval as JSON data (its record's fields)."""
    data: dict[str, Any] = approval.to_dict()
    data.pop("schema_version", None)
    return data


def list_approvals(out: Any, service: Any, as_json: bool) -> dict[str, Any] | None:
    """Print the status counts and each pending approval (``as_json``: return them for the JSON object)."""
    from handrail.stores.approvals import ApprovalFilter

    now = datetime.now(UTC)
    counts = service.counts()
    pending: list[Any] = list(service.every(ApprovalFilter(status="pending")))
    if as_json:
        return {"counts": counts, "approvals": [approval_json(a) for a in pending]}
    shown = ", ".join(f"{status} {count}" for status, count in counts.items() if count or status == "pending")
    out.print(f"Approvals: {shown}", style="bold", markup=False)
    for approval in pending:
        line = call_line(approval.id, approval.tool_name, approval.arguments, limit=120)
        line.append(f"  {age(approval.created_at, now)} old · {_left(approval, now)}", style="dim")
        out.print(line)
    return None


def _quorum_text(approval: Any) -> str | None:
    if approval.quorum == 1 and not approval.votes:
        return None
    names = ", ".join(approval.approvers) or "nobody yet"
    return f"{approval.quorum} approvers needed; approving these arguments: {names}"


def _initiator_text(approval: Any) -> str | None:
    if approval.initiator is None:
        return None
    return f"{approval.initiator}{'' if approval.initiator_may_approve else ' (may not approve)'}"


def show_approval(out: Any, service: Any, approval_id: str, as_json: bool) -> None:
    """Print one approval: the call, the policy's text, its status and decision, its audit trail."""
    detail = service.get(approval_id, context_messages=0)
    approval = detail.approval
    trail = service.audit_trail(approval_id)
    now = datetime.now(UTC)
    if as_json:
        echo_json({**approval_json(approval), "snapshot_now": service.snapshot_of(approval_id),
                   "audit": [e.to_dict() for e in trail]})  # fmt: skip
        return
    out.print(f"Approval {approval.id}", style="bold", markup=False)
    facts = [f"status: {approval.status}", f"created {age(approval.created_at, now)} ago"]
    if approval.status == "pending":
        facts.append(_left(approval, now))
    out.print("  " + " · ".join(facts), markup=False)
    out.print(call_line(approval.tool_call_id, approval.tool_name, approval.arguments))
    for label, value in (("agent", approval.agent_name), ("run", approval.run_id),
                         ("snapshot", approval.snapshot_id), ("tool", approval.tool_description),
                         ("policy", approval.description),
                         ("allowed", ", ".join(approval.allowed_decisions)),
                         ("on expiry", approval.on_expiry if approval.expires_at else None),
                         ("quorum", _quorum_text(approval)),
                         ("initiator", _initiator_text(approval))):  # fmt: skip
        if value:
            out.print(f"  {label}: {printable(value)}", markup=False)
    if approval.terminal:
        when = approval.decided_at.isoformat(timespec="seconds") if approval.decided_at else "?"
        out.print(f"  decided: {approval.decision or 'none'} by {printable(approval.decided_by or 'nobody')} at "
                  f"{when}" + (f" · feedback: {printable(approval.feedback)}" if approval.feedback else ""),
                  markup=False)  # fmt: skip
    out.print("  audit trail:", markup=False)
    for entry in trail:
        who = f" by {printable(entry.principal)}" if entry.principal else ""
        what = f" {entry.decision}" if entry.decision else ""
        outcome = f" outcome {entry.outcome}" if entry.outcome else ""
        out.print(f"    {entry.seq}. {entry.at.isoformat(timespec='seconds')} {entry.kind}{what}{who}{outcome}",
                  markup=False)  # fmt: skip


def decide_approval(
    out: Any, service: Any, approval: Any, decision: str, *, by: str, feedback: str | None, edit: Any
) -> Any:
    """Decide ``approval`` through the service; print what the store holds now; exit 2 on a refusal.

    An identical repeat prints the stored result (exit 0); a different decision exits 2 naming the winner, the
    decision and the time; an expired approval exits 2 saying so.
    """
    from handrail.errors import ApprovalClosedError, ApprovalDecisionError, ApprovalExpiredError

    try:
        result = service.decide(approval.id, decision, principal=by, feedback=feedback, arguments=edit)
    except ApprovalExpiredError as exc:
        current: Any = exc.current
        at = current.decided_at.isoformat(timespec="seconds") if current.decided_at else "?"
        error(out, f"Approval {approval.id} ({printable(approval.tool_name)}) expired at {at}; it takes no decision "
                   f"(on expiry: {current.on_expiry}, recorded in the snapshot for the resume).")  # fmt: skip
        sys.exit(EXIT_USAGE)
    except ApprovalClosedError as exc:
        current = exc.current
        at = current.decided_at.isoformat(timespec="seconds") if current.decided_at else "?"
        error(out, f"Approval {approval.id} ({printable(approval.tool_name)}) was already decided: "
                   f"{current.decision or current.status} by {printable(current.decided_by or 'nobody')} at {at}. "
                   f"Nothing was recorded; it stays that decision.")  # fmt: skip
        sys.exit(EXIT_USAGE)
    except ApprovalDecisionError as exc:
        error(out, str(exc))
        sys.exit(EXIT_USAGE)
    decided = result.approval
    if decided.status == "pending":  # a vote toward a quorum
        _say_voted(out, decided, by, result.replayed)
        return decided
    verb = "approved" if decided.decision != "reject" else "rejected"
    how = " with edited arguments" if decided.decision == "edit" else ""
    at = decided.decided_at.isoformat(timespec="seconds") if decided.decided_at else "?"
    snapshot = service.snapshot_of(decided.id) or decided.snapshot_id
    named = f"call {printable(decided.tool_call_id)} ({printable(decided.tool_name)})"
    where = f"in snapshot {printable(snapshot)}"
    who = printable(decided.decided_by or "?")
    if result.replayed:
        out.print(f"That decision already existed: {named} {where} was {verb}{how} by {who} at {at}. Nothing was "
                  f"recorded; it stays {who}'s decision.", markup=False)  # fmt: skip
    else:
        out.print(f"{verb.capitalize()} {named}{how} {where}, decided by {who}.", markup=False)
    out.print(f"  approval {decided.id}: {decided.status}, version {decided.version}", markup=False)
    return decided


def _say_voted(out: Any, approval: Any, by: str, replayed: bool) -> None:
    """Say that a vote is recorded (or was already) and how many approvers the call still needs."""
    named = f"call {printable(approval.tool_call_id)} ({printable(approval.tool_name)})"
    names = ", ".join(printable(n) for n in approval.approvers)
    already = "That vote already existed: " if replayed else ""
    out.print(f"{already}{printable(by)} approved {named}: {len(approval.approvers)} of {approval.quorum} "
              f"approvers so far ({names}); it waits for {approval.quorum - len(approval.approvers)} more.",
              markup=False)  # fmt: skip
    out.print(f"  approval {approval.id}: pending, version {approval.version}", markup=False)


def skipped_approvals(warn: Any, service: Any) -> list[dict[str, str]]:
    """Warn on ``warn`` (stderr) of each approval record that cannot be read; ``{"approval_id", "error"}`` each."""
    from rich.text import Text

    if service is None:
        return []
    found = []
    for approval_id, message in service.unreadable():
        found.append({"approval_id": approval_id, "error": message})
        warn.print(Text(printable(f"warning: skipped approval {approval_id}, which cannot be read: {message}"),
                        style="yellow"), soft_wrap=True)  # fmt: skip
    return found


def print_expired(
    out: Any, expired: list[Any], as_json: bool, label: str, unreadable: list[dict[str, str]] | None = None
) -> None:
    """Print what one expiry pass expired (``unreadable``: the records it skipped, warned about already)."""
    if as_json:
        echo_json({"expired": [approval_json(a) for a in expired], "unreadable": unreadable or []})
        return
    if not expired:
        out.print(f"No approval in {label} was due to expire.", markup=False)
    for approval in expired:
        line = call_line(approval.id, approval.tool_name, approval.arguments, limit=120)
        done = "approved" if approval.on_expiry == "approve" else "rejected"
        at = approval.decided_at.isoformat(timespec="seconds") if approval.decided_at else "?"
        line.append(f"  expired at {at}: {done} · snapshot {printable(approval.snapshot_id)}", style="dim")
        out.print(line)
