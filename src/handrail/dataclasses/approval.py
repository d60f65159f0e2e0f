"""Approval records: one per tool call a policy sends to a person, kept in a snapshot store.

An :class:`Approval` is immutable; every change (a decision, an expiry, a cancellation) is a new record with
``version`` one higher, made by :meth:`Approval.decided`, :meth:`Approval.expired` or :meth:`Approval.cancelled`
and stored by a compare-and-set on the version (:class:`~handrail.stores.approvals.ApprovalStore`). The status
goes ``pending`` → ``approved`` | ``edited`` | ``rejected`` | ``expired`` | ``cancelled``; a terminal status
never changes.

Two derived values bind a record to what it is about:

* the id, :func:`approval_id`: ``"ap_"`` and the first 32 hex digits of the SHA-256 of the canonical JSON
  ``[run_id, tool_call_id]`` (the same call of the same run always has the same id, and it is safe as a file
  name);
* the digest, :func:`args_digest`: ``"sha256:"`` and the SHA-256 of the canonical JSON
  ``{"arguments": ..., "snapshot_id": ..., "tool_name": ...}`` (sorted keys, no spaces, UTF-8, no NaN). An edit
  replaces ``arguments`` and so the digest; a runner compares it with the call it is about to execute.

Both are checked whenever a record is built or read: a record whose id or digest does not match its fields is
refused, naming the field.

Examples:
    >>> from datetime import UTC, datetime
    >>> created = Approval.new(run_id="run-1", tool_call_id="c1", snapshot_id="snap-1", agent_name="payer",
    ...     step=1, tool_name="transfer", tool_description="Move money.", arguments={"amount": 5},
    ...     arguments_schema={"type": "object"}, description="Pay **5**?",
    ...     created_at=datetime(2025, 1, 2, tzinfo=UTC))
    >>> created.id == approval_id("run-1", "c1"), created.status, created.version
    (True, 'pending', 1)
    >>> done = created.decided("approve", principal="ann", at=datetime(2025, 1, 2, 0, 5, tzinfo=UTC))
    >>> done.status, done.version, done.decided_by, Approval.from_dict(done.to_dict()) == done
    ('approved', 2, 'ann', True)
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, get_args

from handrail.dataclasses._approval_checks import Checker, canonical_json, iso, sha256_of
from handrail.dataclasses.decisions import decided_by_problem
from handrail.errors import ConfigurationError, SerializationError

__all__ = [
    "APPROVAL_SCHEMA_VERSION",
    "DECISIONS",
    "STATUSES",
    "TERMINAL_STATUSES",
    "Approval",
    "ApprovalStatus",
    "Decision",
    "ExpiryAction",
    "approval_id",
    "args_digest",
    "check_principal",
]

ApprovalStatus = Literal["pending", "approved", "edited", "rejected", "expired", "cancelled"]
Decision = Literal["approve", "edit", "reject"]
ExpiryAction = Literal["reject", "approve"]

STATUSES: tuple[ApprovalStatus, ...] = get_args(ApprovalStatus)
"""Every status, ``pending`` first."""
TERMINAL_STATUSES: frozenset[str] = frozenset(STATUSES[1:])
"""The statuses that never change."""
DECISIONS: tuple[Decision, ...] = get_args(Decision)
"""What a person may decide, in this order."""
_EXPIRY_ACTIONS: tuple[ExpiryAction, ...] = get_args(ExpiryAction)
_STATUS_OF: dict[str, ApprovalStatus] = {"approve": "approved", "edit": "edited", "reject": "rejected"}

APPROVAL_SCHEMA_VERSION = 1
"""The ``schema_version`` of :meth:`Approval.to_dict`."""
EXPIRED_FEEDBACK = "Approval request expired"
_MAX_LABELS, _MAX_LABEL_CHARS, _MAX_ID_CHARS = 32, 100, 500


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


def check_principal(value: object, field: str = "principal") -> str:
    """A decider's name (:func:`~handrail.dataclasses.decisions.decided_by_problem`), or ConfigurationError."""
    Checker("Approval", reading=False).text(field, value)
    assert isinstance(value, str)
    problem = decided_by_problem(value)
    if problem is not None:
        raise ConfigurationError(f"{field} {problem}.")
    return value


@dataclass(frozen=True, slots=True)
class Approval:
    """One tool call waiting for (or past) a person's decision. Build a new one with :meth:`new`.

    Raises:
        ConfigurationError / ConfigurationTypeError: A field is invalid (named): the id or digest does not match,
            a decision outside ``allowed_decisions``, decision fields that do not fit the status, ...
    """

    id: str
    """:func:`approval_id` of ``run_id`` and ``tool_call_id``."""
    run_id: str
    """The run the call belongs to."""
    tool_call_id: str
    """The call's id (decisions name it)."""
    snapshot_id: str
    """The paused snapshot holding the call."""
    agent_name: str
    """The agent (its name, or the component name inside a pipeline)."""
    step: int
    """The run's step (0-based) whose model reply made the call; calls of one step are grouped by it."""
    tool_name: str
    """The tool called (an edit never changes it)."""
    tool_description: str
    """The tool's description."""
    arguments: dict[str, Any]
    """The effective arguments (after hooks and State injection), JSON data; an edit's arguments once edited."""
    args_digest: str
    """:func:`args_digest` of ``tool_name``, ``arguments`` and ``snapshot_id``."""
    arguments_schema: dict[str, Any]
    """The tool's argument JSON Schema (edits are validated against it)."""
    description: str
    """The policy's text for the person (markdown; untrusted: render it sanitized)."""
    created_at: datetime
    """When the approval was created (UTC)."""
    allowed_decisions: tuple[Decision, ...] = DECISIONS
    """What may be decided: a non-empty subset of approve / edit / reject, in that order."""
    expires_at: datetime | None = None
    """When it expires (UTC); None: never."""
    on_expiry: ExpiryAction = "reject"
    """What an expiry means for the call: ``reject`` (fail closed) or ``approve`` (explicit opt-in)."""
    status: ApprovalStatus = "pending"
    """``pending``, or the terminal status."""
    version: int = 1
    """1 when created; one more on every change."""
    labels: tuple[str, ...] = ()
    """Free tags for filtering (distinct, non-empty)."""
    decision: Decision | None = None
    """The decision taken (an expiry: ``on_expiry``); None while pending and for a cancellation."""
    decided_by: str | None = None
    """The principal who decided (None for an expiry; optional for a cancellation)."""
    decided_at: datetime | None = None
    """When the status became terminal (UTC)."""
    feedback: str | None = None
    """The person's text for the model (a rejection's reason); ``"Approval request expired"`` for an expiry."""
    idempotency_key: str | None = None
    """The ``Idempotency-Key`` the decision was sent with, if any."""
    extra: dict[str, Any] = field(default_factory=dict)
    """JSON data for what later features keep on the record (e.g. a quorum's votes); empty by default."""

    def __post_init__(self) -> None:
        _check(self, Checker("Approval", reading=False))

    @classmethod
    def new(
        cls,
        *,
        run_id: str,
        tool_call_id: str,
        snapshot_id: str,
        agent_name: str,
        step: int,
        tool_name: str,
        tool_description: str,
        arguments: dict[str, Any],
        arguments_schema: dict[str, Any],
        description: str,
        created_at: datetime,
        allowed_decisions: tuple[Decision, ...] = DECISIONS,
        expires_at: datetime | None = None,
        on_expiry: ExpiryAction = "reject",
        labels: tuple[str, ...] = (),
    ) -> Approval:
        """A pending approval (version 1), its id and digest computed from the fields.

        Raises:
            ConfigurationError / ConfigurationTypeError: A field is invalid (named).
        """
        checker = Checker("Approval", reading=False)
        checker.text("run_id", run_id, limit=_MAX_ID_CHARS)
        checker.text("tool_call_id", tool_call_id, limit=_MAX_ID_CHARS)
        checker.text("snapshot_id", snapshot_id, limit=_MAX_ID_CHARS)
        checker.text("tool_name", tool_name)
        copied = checker.json_data("arguments", arguments)
        return cls(
            id=approval_id(run_id, tool_call_id),
            run_id=run_id,
            tool_call_id=tool_call_id,
            snapshot_id=snapshot_id,
            agent_name=agent_name,
            step=step,
            tool_name=tool_name,
            tool_description=tool_description,
            arguments=copied,
            args_digest=args_digest(tool_name, copied, snapshot_id),
            arguments_schema=arguments_schema,
            description=description,
            created_at=created_at,
            allowed_decisions=tuple(allowed_decisions),
            expires_at=expires_at,
            on_expiry=on_expiry,
            labels=tuple(labels),
        )

    @property
    def terminal(self) -> bool:
        """Whether the status is terminal (it never changes again)."""
        return self.status in TERMINAL_STATUSES

    def due(self, now: datetime) -> bool:
        """Whether it is pending and its expiry time has come (``expires_at <= now``)."""
        return self.status == "pending" and self.expires_at is not None and self.expires_at <= now

    def decided(
        self,
        decision: Decision,
        *,
        principal: str,
        at: datetime,
        feedback: str | None = None,
        arguments: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Approval:
        """The record after a person's decision: terminal, ``version + 1``.

        Args:
            decision: ``approve``, ``edit`` or ``reject``; one of ``allowed_decisions``.
            principal: Who decided (an authenticated name).
            at: When (timezone-aware).
            feedback: Text for the model.
            arguments: The new arguments, for (and only for) an edit; they replace the old ones (and the digest).
            idempotency_key: Kept on the record, so a retry with the same key can be recognised.

        Raises:
            ConfigurationError: It is not pending, the decision is not allowed, arguments given without an edit
                (or missing for one), or a field is invalid.
        """
        if self.terminal:
            raise ConfigurationError(f"Approval {self.id} is {self.status} already; it takes no decision.")
        Checker("Approval", reading=False).choice("decision", decision, DECISIONS)
        if decision not in self.allowed_decisions:
            allowed = ", ".join(self.allowed_decisions)
            raise ConfigurationError(f"Approval {self.id} allows {allowed}; {decision!r} is not one of them.")
        if (arguments is not None) != (decision == "edit"):
            raise ConfigurationError(
                f"Approval {self.id}: arguments are given with an edit, and only with one (decision {decision!r})."
            )
        changes: dict[str, Any] = {}
        if arguments is not None:
            edited = Checker("Approval", reading=False).json_data("arguments", arguments)
            changes = {"arguments": edited, "args_digest": args_digest(self.tool_name, edited, self.snapshot_id)}
        return dataclasses.replace(
            self,
            **changes,
            status=_STATUS_OF[decision],
            version=self.version + 1,
            decision=decision,
            decided_by=check_principal(principal),
            decided_at=at,
            feedback=feedback,
            idempotency_key=idempotency_key,
        )

    def expired(self, at: datetime) -> Approval:
        """The record after its expiry: status ``expired``, decision ``on_expiry``, ``version + 1``.

        Raises:
            ConfigurationError: It is not pending.
        """
        if self.terminal:
            raise ConfigurationError(f"Approval {self.id} is {self.status} already; it does not expire.")
        feedback = EXPIRED_FEEDBACK if self.on_expiry == "reject" else None
        return dataclasses.replace(
            self, status="expired", version=self.version + 1, decision=self.on_expiry, decided_at=at, feedback=feedback
        )

    def cancelled(self, at: datetime, *, principal: str | None = None, reason: str | None = None) -> Approval:
        """The record after a cancellation (the run ended otherwise): status ``cancelled``, ``version + 1``.

        Raises:
            ConfigurationError: It is not pending.
        """
        if self.terminal:
            raise ConfigurationError(f"Approval {self.id} is {self.status} already; it cannot be cancelled.")
        by = None if principal is None else check_principal(principal)
        return dataclasses.replace(
            self, status="cancelled", version=self.version + 1, decided_by=by, decided_at=at, feedback=reason
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON data: every field (times in ISO 8601, UTC), with ``schema_version``."""
        data: dict[str, Any] = {"schema_version": APPROVAL_SCHEMA_VERSION}
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if isinstance(value, datetime):
                value = iso(value)
            elif isinstance(value, tuple):
                value = list(value)
            data[item.name] = value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Approval:
        """Read :meth:`to_dict` output.

        Raises:
            SerializationError: Not such a dict, an unknown ``schema_version``, a missing or unknown key, or an
                invalid field (``path`` names it).
        """
        checker = Checker("Approval", reading=True)
        if not isinstance(data, dict):
            raise SerializationError(f"An Approval is read from a dict, got {type(data).__name__}.")
        if data.get("schema_version") != APPROVAL_SCHEMA_VERSION:
            checker.fail("schema_version", f"must be {APPROVAL_SCHEMA_VERSION}, got {data.get('schema_version')!r}")
        names = [item.name for item in dataclasses.fields(cls)]
        unknown = sorted(set(data) - {*names, "schema_version"})
        if unknown:
            raise SerializationError(f"Cannot read the Approval: unknown keys {unknown}.", path=(unknown[0],))
        values: dict[str, Any] = {}
        for item in dataclasses.fields(cls):
            if item.name not in data:
                if item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING:
                    checker.fail(item.name, "is missing")
                continue
            values[item.name] = data[item.name]
        for name in ("created_at", "expires_at", "decided_at"):
            if name in values:
                values[name] = checker.moment(name, values[name], optional=name != "created_at")
        for name in ("allowed_decisions", "labels"):
            if isinstance(values.get(name), list):
                values[name] = tuple(values[name])
        _check_fields(values, checker)
        return cls(**values)


def _check(approval: Approval, checker: Checker) -> None:
    values = {item.name: getattr(approval, item.name) for item in dataclasses.fields(approval)}
    normalized = _check_fields(values, checker)
    for name, value in normalized.items():
        object.__setattr__(approval, name, value)


def _check_fields(values: dict[str, Any], checker: Checker) -> dict[str, Any]:
    """Check every field (named on failure); returns the normalized ones (JSON copies, UTC times, tuples)."""
    out: dict[str, Any] = {}
    for name in ("id", "run_id", "tool_call_id", "snapshot_id"):
        checker.text(name, values[name], limit=_MAX_ID_CHARS)
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
    out["labels"] = checker.strings("labels", values.get("labels", ()), limit=_MAX_LABELS, each=_MAX_LABEL_CHARS)
    for name in ("created_at", "expires_at", "decided_at"):
        if name in values:
            out[name] = checker.moment(name, values[name], optional=name != "created_at")
    if out.get("expires_at") is not None and out["expires_at"] < out["created_at"]:
        checker.fail("expires_at", "is before created_at")
    checker.choice("on_expiry", values.get("on_expiry", "reject"), _EXPIRY_ACTIONS)
    checker.choice("status", values.get("status", "pending"), STATUSES)
    checker.choice("decision", values.get("decision"), DECISIONS, optional=True)
    checker.text("decided_by", values.get("decided_by"), optional=True, limit=200)
    checker.text("feedback", values.get("feedback"), optional=True, empty=True)
    checker.text("idempotency_key", values.get("idempotency_key"), optional=True, limit=_MAX_ID_CHARS)
    _check_status(values, out, checker)
    return out


def _check_status(values: dict[str, Any], out: dict[str, Any], checker: Checker) -> None:
    """The decision fields must fit the status."""
    status = values.get("status", "pending")
    decision, by, at = values.get("decision"), values.get("decided_by"), out.get("decided_at")
    if status == "pending":
        if decision is not None or by is not None or at is not None:
            checker.fail("status", "is pending, yet decision, decided_by or decided_at is set")
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
        if decision is None or _STATUS_OF[decision] != status or by is None:
            checker.fail("decision", f"must be the one that gives status {status}, with decided_by set")
        if decision not in out["allowed_decisions"]:
            checker.fail("decision", f"{decision!r} is not in allowed_decisions")
