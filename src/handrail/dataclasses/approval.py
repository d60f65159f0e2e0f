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
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from handrail.dataclasses._approval_checks import Checker, iso
from handrail.dataclasses._approval_fields import (
    EXPIRED_FEEDBACK,
    MAX_ID_CHARS,
    STATUS_OF,
    STATUSES,
    TERMINAL_STATUSES,
    ApprovalStatus,
    ExpiryAction,
    approval_id,
    args_digest,
    check_fields,
    check_record,
)
from handrail.dataclasses.approval_quorum import DECISIONS, Decision, Vote, approvers_of
from handrail.dataclasses.decisions import decided_by_problem
from handrail.errors import ConfigurationError, PermissionDeniedError, SerializationError

BACKEND_KEY = "backend"
"""``Approval.extra`` key: what drives the call's run when it is not a local snapshot (``temporal``)."""

APPROVAL_SCHEMA_VERSION = 2
"""The ``schema_version`` of :meth:`Approval.to_dict`: 2 added ``quorum``, ``votes``, ``initiator`` and
``initiator_may_approve`` (a version 1 record, which has none of them, is read with their defaults)."""
_READABLE_VERSIONS = (1, APPROVAL_SCHEMA_VERSION)
_V2_KEYS = frozenset({"quorum", "votes", "initiator", "initiator_may_approve"})

__all__ = [
    "APPROVAL_SCHEMA_VERSION",
    "BACKEND_KEY",
    "DECISIONS",
    "STATUSES",
    "TERMINAL_STATUSES",
    "Approval",
    "ApprovalStatus",
    "Decision",
    "ExpiryAction",
    "Vote",
    "approval_id",
    "args_digest",
    "check_principal",
]


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
    quorum: int = 1
    """How many distinct principals must approve the current arguments (an edit counts as its editor's approval);
    1: the first decision decides. A reject always decides at once."""
    votes: tuple[Vote, ...] = ()
    """Every decision given, oldest first: while pending, the approvals so far (those of arguments since edited no
    longer count); once decided, the last one is the deciding vote."""
    initiator: str | None = None
    """Who started the run (its snapshot's ``metadata["initiator"]``), if it was recorded."""
    initiator_may_approve: bool = True
    """False: the initiator may not approve or edit this call (separation of duties); rejecting stays allowed."""
    extra: dict[str, Any] = field(default_factory=dict)
    """JSON data for what later features keep on the record (e.g. a quorum's votes); empty by default."""

    def __post_init__(self) -> None:
        check_record(self, Checker("Approval", reading=False))

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
        quorum: int = 1,
        initiator: str | None = None,
        initiator_may_approve: bool = True,
        extra: dict[str, Any] | None = None,
    ) -> Approval:
        """A pending approval (version 1), its id and digest computed from the fields.

        Raises:
            ConfigurationError / ConfigurationTypeError: A field is invalid (named).
        """
        checker = Checker("Approval", reading=False)
        checker.text("run_id", run_id, limit=MAX_ID_CHARS)
        checker.text("tool_call_id", tool_call_id, limit=MAX_ID_CHARS)
        checker.text("snapshot_id", snapshot_id, limit=MAX_ID_CHARS)
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
            quorum=quorum,
            initiator=initiator,
            initiator_may_approve=initiator_may_approve,
            extra=dict(extra or {}),
        )

    @property
    def terminal(self) -> bool:
        """Whether the status is terminal (it never changes again)."""
        return self.status in TERMINAL_STATUSES

    @property
    def backend(self) -> str:
        """What drives the call's run: ``local`` (a snapshot this store holds; the default), or another.

        Another is the ``extra["backend"]`` the record names: ``temporal``, a Temporal workflow, whose decisions
        go to it as Updates (docs/approval-service.md, "Temporal runs").
        """
        value = self.extra.get(BACKEND_KEY)
        return value if isinstance(value, str) and value else "local"

    def due(self, now: datetime) -> bool:
        """Whether it is pending and its expiry time has come (``expires_at <= now``).

        Never for a record of another :attr:`backend`: its run's own durable timer expires the call and the run
        records the expiry, so no sweep and no late decider expires it by another clock.
        """
        return (
            self.status == "pending" and self.expires_at is not None and self.expires_at <= now
            and self.backend == "local"
        )  # fmt: skip

    def decided(
        self,
        decision: Decision,
        *,
        principal: str,
        at: datetime,
        feedback: str | None = None,
        arguments: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
        quorum: int | None = None,
    ) -> Approval:
        """The record after one person's decision (a vote), ``version + 1``.

        A reject decides (status ``rejected``). An approve or an edit is a vote for the arguments (an edit's: the
        new ones, replacing the old and the digest); the record is decided (``approved``, or ``edited`` when an
        edit is among the votes) once :attr:`quorum` distinct principals approve its current arguments, and stays
        ``pending`` with the vote added until then.

        Args:
            decision: ``approve``, ``edit`` or ``reject``; one of ``allowed_decisions``.
            principal: Who decided (an authenticated name).
            at: When (timezone-aware).
            feedback: Text for the model.
            arguments: The new arguments, for (and only for) an edit; they replace the old ones (and the digest).
            idempotency_key: Kept on the vote (and the record once decided), so a retry with it can be recognised.
            quorum: The quorum the policy asks for the edited arguments (None: unchanged).

        Raises:
            ConfigurationError: It is not pending, the decision is not allowed, arguments given without an edit
                (or missing for one), the principal approves arguments it approved already, or a field is
                invalid.
            PermissionDeniedError: The principal is the run's initiator, who may not approve it.
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
        name = check_principal(principal)
        initiator_problem = self.initiator_refusal(decision, name)
        if initiator_problem is not None:
            raise PermissionDeniedError(initiator_problem, principal=name)
        changes: dict[str, Any] = {}
        digest = self.args_digest
        if arguments is not None:
            edited = Checker("Approval", reading=False).json_data("arguments", arguments)
            digest = args_digest(self.tool_name, edited, self.snapshot_id)
            changes = {"arguments": edited, "args_digest": digest}
        elif decision == "approve" and name in approvers_of(self.votes, digest):
            raise ConfigurationError(
                f"Approval {self.id}: {name} approved these arguments already; a principal counts once toward the "
                f"quorum of {self.quorum}."
            )
        if quorum is not None:
            Checker("Approval", reading=False).integer("quorum", quorum, minimum=1)
            changes["quorum"] = quorum
        needed = changes.get("quorum", self.quorum)
        votes = (*self.votes, Vote(name, decision, at, digest, feedback, idempotency_key))
        version = self.version + 1
        if decision != "reject" and len(approvers_of(votes, digest)) < needed:
            return dataclasses.replace(self, **changes, votes=votes, version=version)
        final: Decision = decision
        if decision == "approve" and any(v.decision == "edit" for v in votes):
            final = "edit"  # the call runs with arguments a person edited
        return dataclasses.replace(
            self, **changes, votes=votes, status=STATUS_OF[final], version=version, decision=final,
            decided_by=name, decided_at=at, feedback=feedback, idempotency_key=idempotency_key,
        )  # fmt: skip

    def initiator_refusal(self, decision: str, principal: str) -> str | None:
        """Why ``principal`` may not give ``decision`` as the run's initiator, or None when it may."""
        if decision == "reject" or self.initiator_may_approve or self.initiator is None:
            return None
        if principal != self.initiator:
            return None
        return (
            f"{principal} started this run and may not {'edit' if decision == 'edit' else 'approve'} its call "
            f"{self.tool_call_id} ({self.tool_name}): its policy says the initiator may not approve it; somebody "
            f"else must (rejecting stays allowed). Approval {self.id} is unchanged."
        )

    @property
    def approvers(self) -> tuple[str, ...]:
        """The distinct principals whose votes approve the current arguments (toward :attr:`quorum`)."""
        return approvers_of(self.votes, self.args_digest)

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
            elif item.name == "votes":
                value = [vote.to_dict() for vote in value]
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
        version = data.get("schema_version")
        if version not in _READABLE_VERSIONS:
            checker.fail("schema_version", f"must be 1 or {APPROVAL_SCHEMA_VERSION}, got {version!r}")
        names = {item.name for item in dataclasses.fields(cls)} - (_V2_KEYS if version == 1 else set())
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
        for name in ("allowed_decisions", "labels", "votes"):
            if isinstance(values.get(name), list):
                values[name] = tuple(values[name])
        values.update(check_fields(values, checker))
        return cls(**values)
