"""The execution ledger entry: what happened to one tool call of a durable run (re-exported by ``snapshot``)."""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from handrail.core._typed_json import check_json
from handrail.dataclasses.decisions import ToolExecutionDecision, check_decided_by
from handrail.errors import ConfigurationError

__all__ = ["LEDGER_STATUSES", "LedgerEntry", "LedgerStatus", "parse_datetime", "utc_now"]

LedgerStatus = Literal["pending", "approved", "rejected", "running", "done", "failed"]
"""pending: waits for a decision or its turn; approved / rejected: decided; running: started, outcome not
recorded yet; done: ran and its result is recorded; failed: ran and raised (or its outcome is unknown)."""
LEDGER_STATUSES: tuple[str, ...] = get_args(LedgerStatus)
_KEYS = (
    "tool_call_id",
    "tool_name",
    "status",
    "arguments",
    "result",
    "decision",
    "decided_by",
    "decided_at",
    "updated_at",
)
_REQUIRED = ("tool_call_id", "tool_name", "status", "arguments")


def utc_now() -> dt.datetime:
    """Return the current time, timezone-aware in UTC."""
    return dt.datetime.now(dt.UTC)


def parse_datetime(value: Any, name: str) -> dt.datetime:
    """Read an ISO 8601 datetime written by ``datetime.isoformat()``.

    Raises:
        ConfigurationError: Naming ``name`` when ``value`` is not such a string.
    """
    if isinstance(value, str):
        try:
            return dt.datetime.fromisoformat(value)
        except ValueError:
            pass
    raise ConfigurationError(f"{name} must be an ISO 8601 datetime string, got {value!r:.80}.")


def _check_optional(value: Any, kind: type, name: str) -> None:
    if value is not None and not isinstance(value, kind):
        raise ConfigurationError(f"{name} must be a {kind.__name__} or None, got {value!r:.80}.")


@dataclass
class LedgerEntry:
    """What happened to one tool call of a durable run, keyed by its ``tool_call_id``.

    Raises:
        ConfigurationError: For an unknown status, non-str id or name, arguments that are not a dict, a result
            that is not a dict, or values of the wrong type.
        SerializationError: When ``arguments`` or ``result`` is not JSON data.

    Examples:
        >>> entry = LedgerEntry("c1", "transfer", "done", {"amount": 5}, result={"text": "ok", "error": False})
        >>> LedgerEntry.from_dict(entry.to_dict()) == entry
        True
    """

    tool_call_id: str
    """The call's id."""
    tool_name: str
    """The tool the call is for."""
    status: LedgerStatus
    """pending, approved, rejected, running, done or failed (see :data:`LedgerStatus`)."""
    arguments: dict[str, Any]
    """The arguments the call runs (or ran) with: the proposed ones, or the decision's edited ones (JSON data)."""
    result: dict[str, Any] | None = None
    """Written by the agent once the call ended: ``{"text": str | None, "error": bool, "value": typed JSON
    (optional)}``; opaque JSON data here. None before the call ended."""
    decision: ToolExecutionDecision | None = None
    """The decision taken for the call, when one was needed."""
    decided_by: str | None = None
    """Who decided (a user name, "policy", a UI name)."""
    decided_at: dt.datetime | None = None
    """When the decision was recorded (timezone-aware UTC when handrail recorded it)."""
    updated_at: dt.datetime = field(default_factory=utc_now)
    """When this entry last changed."""

    def __post_init__(self) -> None:
        if not isinstance(self.tool_call_id, str) or not isinstance(self.tool_name, str):
            raise ConfigurationError(
                f"LedgerEntry needs str tool_call_id and tool_name, got {self.tool_call_id!r} and {self.tool_name!r}."
            )
        if self.status not in LEDGER_STATUSES:
            raise ConfigurationError(f"LedgerEntry.status must be one of {list(LEDGER_STATUSES)}, got {self.status!r}.")
        if not isinstance(self.arguments, dict):
            raise ConfigurationError(f"LedgerEntry.arguments must be a dict, got {type(self.arguments).__name__}.")
        check_json(self.arguments, f"ledger[{self.tool_call_id!r}].arguments")
        _check_optional(self.result, dict, "LedgerEntry.result")
        check_json(self.result, f"ledger[{self.tool_call_id!r}].result")
        _check_optional(self.decision, ToolExecutionDecision, "LedgerEntry.decision")
        _check_optional(self.decided_by, str, "LedgerEntry.decided_by")
        check_decided_by(self.decided_by, "LedgerEntry.decided_by")
        _check_optional(self.decided_at, dt.datetime, "LedgerEntry.decided_at")
        if not isinstance(self.updated_at, dt.datetime):
            raise ConfigurationError(f"LedgerEntry.updated_at must be a datetime, got {self.updated_at!r:.80}.")

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as JSON-compatible data (datetimes as ISO 8601 strings, the decision as a dict)."""
        return {
            "tool_call_id": self.tool_call_id,
            "tool_name": self.tool_name,
            "status": self.status,
            "arguments": self.arguments,
            "result": self.result,
            "decision": None if self.decision is None else self.decision.to_dict(),
            "decided_by": self.decided_by,
            "decided_at": None if self.decided_at is None else self.decided_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LedgerEntry:
        """Rebuild an entry from :meth:`to_dict` output (``data`` is neither modified nor shared).

        Raises:
            ConfigurationError: For missing or unknown keys and invalid values.
        """
        if not isinstance(data, dict):
            raise ConfigurationError(f"A ledger entry must be a dict, got {type(data).__name__}.")
        missing = [k for k in _REQUIRED if k not in data]
        unknown = sorted(set(data) - set(_KEYS))
        if missing or unknown:
            raise ConfigurationError(f"Ledger entry data has missing keys {missing} / unknown keys {unknown}.")
        decision = data.get("decision")
        if decision is not None:
            if not isinstance(decision, dict):
                raise ConfigurationError(f"A ledger entry's decision must be a dict, got {decision!r:.80}.")
            try:
                decision = ToolExecutionDecision.from_dict(copy.deepcopy(decision))
            except TypeError as exc:
                raise ConfigurationError(f"Invalid decision in a ledger entry: {exc}") from None
        decided_at = data.get("decided_at")
        extra = {"updated_at": parse_datetime(data["updated_at"], "updated_at")} if "updated_at" in data else {}
        return cls(
            tool_call_id=data["tool_call_id"],
            tool_name=data["tool_name"],
            status=data["status"],
            arguments=copy.deepcopy(data["arguments"]),
            result=copy.deepcopy(data.get("result")),
            decision=decision,
            decided_by=data.get("decided_by"),
            decided_at=None if decided_at is None else parse_datetime(decided_at, "decided_at"),
            **extra,
        )
