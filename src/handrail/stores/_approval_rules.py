"""The checks and refusals the approval store base applies, kept apart so the base holds the protocol alone."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from handrail.dataclasses._approval_checks import Checker, iso
from handrail.dataclasses.approval import Approval
from handrail.errors import ApprovalClosedError, ApprovalConflictError, ConfigurationError, ConfigurationTypeError
from handrail.stores._events import EventItem
from handrail.stores._service_records import approval_event

__all__ = ["check_details", "check_moment", "check_new", "event_of", "refusal"]


def check_moment(name: str, value: object) -> datetime:
    moment = Checker("approval store", reading=False).moment(name, value)
    assert moment is not None
    return moment


def check_details(value: Mapping[str, Any] | None) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigurationTypeError(f"details must be a mapping of JSON data, got {type(value).__name__}.")
    data: dict[str, Any] = Checker("audit entry", reading=False).json_data("details", dict(value))
    return data


def refusal(current: Approval, expected: int | None) -> ApprovalConflictError:
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


def check_new(approval: object) -> None:
    if not isinstance(approval, Approval):
        raise ConfigurationTypeError(f"Expected an Approval, got {type(approval).__name__}.")
    if approval.status != "pending" or approval.version != 1:
        raise ConfigurationError(f"A new approval is pending at version 1; {approval.id} is {approval.status}.")


def event_of(kind: str, approval: Approval, at: datetime) -> EventItem:
    """The event of an approval change (``kind``: the audit entry's kind: created, decided, expired, cancelled)."""
    event_kind, data = approval_event(kind, approval)
    return event_kind, at, data
