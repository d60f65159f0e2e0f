"""The fields of an approval record: statuses, ids, digests, and the checks that refuse a bad record by field.

Shared by :class:`~handrail.dataclasses.approval.Approval` (re-exported there): building a record and reading one
refuse the same things with the same words (:class:`~handrail.dataclasses._approval_checks.Checker`).
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any, Literal, get_args

from handrail.dataclasses._approval_checks import Checker, canonical_json, sha256_of
from handrail.dataclasses.approval_quorum import DECISIONS, MAX_QUORUM, Vote, approvers_of

__all__ = [
    "EXPIRED_FEEDBACK",
    "EXPIRY_ACTIONS",
    "MAX_ID_CHARS",
    "STATUSES",
    "STATUS_OF",
    "TERMINAL_STATUSES",
    "ApprovalStatus",
    "ExpiryAction",
    "approval_id",
    "args_digest",
    "check_fields",
    "check_record",
]

ApprovalStatus = Literal["pending", "approved", "edited", "rejected", "expired", "cancelled"]
ExpiryAction = Literal["reject", "approve"]

STATUSES: tuple[ApprovalStatus, ...] = get_args(ApprovalStatus)
"""Every status, ``pending`` first."""
TERMINAL_STATUSES: frozenset[str] = frozenset(STATUSES[1:])
"""The statuses that never change."""
EXPIRY_ACTIONS: tuple[ExpiryAction, ...] = get_args(ExpiryAction)
STATUS_OF: dict[str, ApprovalStatus] = {"approve": "approved", "edit": "edited", "reject": "rejected"}

EXPIRED_FEEDBACK = "Approval request expired"
"""The feedback an expiry that rejects records (the model reads its own text, see the templates)."""
MAX_LABELS, MAX_LABEL_CHARS, MAX_ID_CHARS = 32, 100, 500


def approval_id(run_id: str, tool_call_id: str) -> str:
    """The stable id of the approval for one call of one run: ``"ap_"`` and 32 hex digits.

    Examples:
        >>> approval_id("run-1", "c1") == approval_id("run-1", "c1") != approval_id("run-1", "c2")
        True
    """
    digest = hashlib.sha256(canonical_json([run_id, tool_call_id])).hexdigest()
    return f"ap_{digest[:32]}"


def args_digest(tool_name: str, arguments: dict[str, Any], snapshot_id: str) -> str:
    """``"sha256:<64 hex>"`` of the canonical JSON of the tool name, the arguments and the snapshot id.

    Raises:
        TypeError / ValueError: ``arguments`` is not JSON data.
    """
    return sha256_of({"arguments": arguments, "snapshot_id": snapshot_id, "tool_name": tool_name})


def check_record(approval: Any, checker: Checker) -> None:
    """Check every field of a built record and store the normalized values on it (named on failure)."""
    values = {item.name: getattr(approval, item.name) for item in dataclasses.fields(approval)}
    normalized = check_fields(values, checker)
    for name, value in normalized.items():
        object.__setattr__(approval, name, value)


def check_fields(values: dict[str, Any], checker: Checker) -> dict[str, Any]:
    """Check every field (named on failure); returns the normalized ones (JSON copies, UTC times, tuples)."""
    out: dict[str, Any] = {}
    for name in ("id", "run_id", "tool_call_id", "snapshot_id"):
        checker.text(name, values[name], limit=MAX_ID_CHARS)
    for name in ("agent_name", "tool_description", "description"):
        checker.text(name, values[name], empty=True)
    checker.text("tool_name", values["tool_name"])
    checker.integer("step", values["step"], minimum=0)
    checker.integer("version", values.get("version", 1), minimum=1)
    out["arguments"] = checker.json_data("arguments", values["arguments"])
    out["arguments_schema"] = checker.json_data("arguments_schema", values["arguments_schema"])
    out["extra"] = checker.json_data("extra", values.get("extra", {}))
    checker.digest("args_digest", values["args_digest"])
    if values["id"] != approval_id(values["run_id"], values["tool_call_id"]):
        checker.fail("id", f"is not the id of run {values['run_id']!r} call {values['tool_call_id']!r}")
    if values["args_digest"] != args_digest(values["tool_name"], out["arguments"], values["snapshot_id"]):
        checker.fail("args_digest", "does not match the tool name, arguments and snapshot id")
    allowed = values.get("allowed_decisions", DECISIONS)
    if not isinstance(allowed, tuple) or not allowed or any(d not in DECISIONS for d in allowed):
        checker.fail("allowed_decisions", f"must be a non-empty list of {', '.join(DECISIONS)}, got {allowed!r:.80}")
    out["allowed_decisions"] = tuple(d for d in DECISIONS if d in allowed)
    out["labels"] = checker.strings("labels", values.get("labels", ()), limit=MAX_LABELS, each=MAX_LABEL_CHARS)
    for name in ("created_at", "expires_at", "decided_at"):
        if name in values:
            out[name] = checker.moment(name, values[name], optional=name != "created_at")
    if out.get("expires_at") is not None and out["expires_at"] < out["created_at"]:
        checker.fail("expires_at", "is before created_at")
    checker.choice("on_expiry", values.get("on_expiry", "reject"), EXPIRY_ACTIONS)
    checker.choice("status", values.get("status", "pending"), STATUSES)
    checker.choice("decision", values.get("decision"), DECISIONS, optional=True)
    checker.text("decided_by", values.get("decided_by"), optional=True, limit=200)
    checker.text("feedback", values.get("feedback"), optional=True, empty=True)
    checker.text("idempotency_key", values.get("idempotency_key"), optional=True, limit=MAX_ID_CHARS)
    _check_team_fields(values, out, checker)
    _check_status(values, out, checker)
    return out


def _check_team_fields(values: dict[str, Any], out: dict[str, Any], checker: Checker) -> None:
    """``quorum``, ``votes``, ``initiator`` and ``initiator_may_approve``."""
    quorum = values.get("quorum", 1)
    checker.integer("quorum", quorum, minimum=1)
    if quorum > MAX_QUORUM:
        checker.fail("quorum", f"must be at most {MAX_QUORUM}, got {quorum}")
    votes = values.get("votes", ())
    if not isinstance(votes, tuple):
        checker.fail("votes", f"must be a list of votes, got {type(votes).__name__}", wrong_type=True)
    out["votes"] = tuple(Vote.checked(vote, checker, index) for index, vote in enumerate(votes))
    checker.text("initiator", values.get("initiator"), optional=True, limit=200)
    if type(values.get("initiator_may_approve", True)) is not bool:
        checker.fail("initiator_may_approve", "must be true or false", wrong_type=True)


def _check_status(values: dict[str, Any], out: dict[str, Any], checker: Checker) -> None:
    """The decision fields must fit the status."""
    status = values.get("status", "pending")
    decision, by, at = values.get("decision"), values.get("decided_by"), out.get("decided_at")
    if status == "pending":
        if decision is not None or by is not None or at is not None:
            checker.fail("status", "is pending, yet decision, decided_by or decided_at is set")
        if any(vote.decision == "reject" for vote in out["votes"]):
            checker.fail("votes", "hold a reject, yet the status is pending (a reject decides)")
        if len(approvers_of(out["votes"], values["args_digest"])) >= values.get("quorum", 1):
            checker.fail("votes", "reach the quorum, yet the status is pending")
        return
    if at is None:
        checker.fail("decided_at", f"must be set for status {status}")
    if status == "expired":
        if decision != values.get("on_expiry", "reject") or by is not None:
            checker.fail("decision", "of an expired approval must be its on_expiry action, with no decided_by")
    elif status == "cancelled":
        if decision is not None:
            checker.fail("decision", "must be None for a cancelled approval")
    else:
        if decision is None or STATUS_OF[decision] != status or by is None:
            checker.fail("decision", f"must be the one that gives status {status}, with decided_by set")
        if decision not in out["allowed_decisions"]:
            checker.fail("decision", f"{decision!r} is not in allowed_decisions")
