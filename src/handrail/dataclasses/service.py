"""The approval service's records: principals, tokens, events and runs.

Who calls the service (:class:`Principal`, :class:`TokenInfo`), what happened (:class:`ServiceEvent`) and the
runs it started (:class:`RunRecord`).

They are kept in a snapshot store next to the approvals (:class:`~handrail.stores.service.ServiceStore`), so
every ``handrail serve`` / ``handrail worker`` process sharing the store sees the same tokens, events and runs.

Examples:
    >>> alice = Principal("alice", "approver", tools=("read_*",))
    >>> alice.may_decide("read_file"), alice.may_decide("delete_file"), alice.may_read
    (True, False, True)
    >>> Principal("bob", "viewer").may_decide("read_file")
    False
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, get_args

from handrail.errors import ConfigurationError, ConfigurationTypeError

__all__ = [
    "EVENT_KINDS",
    "ROLES",
    "RUN_STATUSES",
    "EventKind",
    "Principal",
    "Role",
    "RunRecord",
    "RunStatus",
    "ServiceEvent",
    "TokenInfo",
]

Role = Literal["viewer", "approver", "admin"]
"""What a principal may do: ``viewer`` reads; ``approver`` reads and decides (the tools its patterns match);
``admin`` does everything (decides any tool, exports the audit log, manages tokens)."""
ROLES: tuple[Role, ...] = get_args(Role)

EventKind = Literal[
    "approval.created", "approval.voted", "approval.decided", "approval.expired", "approval.cancelled", "run.started",
    "run.paused", "run.resumed", "run.finished", "run.failed",
]  # fmt: skip
"""The kinds of :class:`ServiceEvent` (``approval.voted``: a vote short of the approval's quorum; it stays pending)."""
EVENT_KINDS: tuple[EventKind, ...] = get_args(EventKind)

RunStatus = Literal["queued", "running", "paused", "finished", "failed"]
"""A service run: ``queued`` (recorded, not started) → ``running`` ⇄ ``paused`` (waiting for approvals) →
``finished`` | ``failed`` (terminal)."""
RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)


def _text(owner: str, name: str, value: object, *, limit: int = 200) -> str:
    if not isinstance(value, str):
        raise ConfigurationTypeError(f"{owner}: {name} must be a str, got {type(value).__name__}.")
    if not value.strip() or len(value) > limit or not value.isprintable():
        raise ConfigurationError(
            f"{owner}: {name} must be 1 to {limit} printable characters, not blank, got {value!r:.80}."
        )
    return value


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller of the service: the decider recorded is always its ``name``.

    Raises:
        ConfigurationError / ConfigurationTypeError: A blank name, an unknown role, a pattern that is not text.
    """

    name: str
    """Who it is (a token's name; recorded as ``decided_by``)."""
    role: Role
    """What it may do (:data:`Role`)."""
    tools: tuple[str, ...] = ("*",)
    """For an approver: the tool names it may decide, as shell patterns (``fnmatch``, case-sensitive)."""
    token_id: str | None = None
    """The token it authenticated with (None: a local principal, e.g. the CLI's ``--by``)."""

    def __post_init__(self) -> None:
        _text("Principal", "name", self.name)
        if self.role not in ROLES:
            raise ConfigurationError(f"Principal: role must be one of {', '.join(ROLES)}, got {self.role!r:.40}.")
        if not isinstance(self.tools, tuple) or not self.tools:
            raise ConfigurationTypeError("Principal: tools must be a non-empty tuple of name patterns.")
        for pattern in self.tools:
            _text("Principal", "tools", pattern)

    @property
    def may_read(self) -> bool:
        """Every role may read approvals, runs and events."""
        return True

    @property
    def is_admin(self) -> bool:
        """Whether it may export the audit log and manage tokens."""
        return self.role == "admin"

    def may_decide(self, tool_name: str) -> bool:
        """Whether it may decide a call of ``tool_name``: an admin always, an approver when a pattern matches."""
        if self.role == "admin":
            return True
        if self.role != "approver":
            return False
        return any(fnmatch.fnmatchcase(tool_name, pattern) for pattern in self.tools)


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """A bearer token as the store keeps it: never the token itself, only its SHA-256 (the hash is not shown)."""

    token_id: str
    """``tk_`` and 16 hex digits; the token text starts with it, so a store finds the row without scanning."""
    name: str
    """The principal's name (unique among the tokens not revoked)."""
    role: Role
    """The principal's role."""
    tools: tuple[str, ...]
    """The tool-name patterns of an approver (``("*",)`` for every tool)."""
    created_at: datetime
    """When it was added (UTC)."""
    revoked_at: datetime | None = None
    """When it was revoked (None: valid)."""

    def principal(self) -> Principal:
        """The principal this token authenticates."""
        return Principal(self.name, self.role, tools=self.tools, token_id=self.token_id)


@dataclass(frozen=True, slots=True)
class ServiceEvent:
    """One entry of the store's event log, which the event stream (SSE) sends and replays."""

    id: int
    """Increasing across every process sharing the store (the SSE event id)."""
    kind: EventKind
    """What happened."""
    at: datetime
    """When (UTC)."""
    data: dict[str, Any] = field(default_factory=dict)
    """JSON data: for approvals ``approval_id``, ``run_id``, ``tool_name``, ``agent_name``, ``status``,
    ``version`` and, once decided, ``decided_by`` / ``decision``; for runs ``run_id`` and ``status``."""


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A run the service started (``POST /api/v1/runs``) or resumed, as the store keeps it."""

    run_id: str
    """The run's id (the one its snapshots and approvals carry)."""
    agent_name: str
    """The agent it runs (a name of the service's registry or agents directory)."""
    status: RunStatus
    """Where it is (:data:`RunStatus`)."""
    created_at: datetime
    """When it was recorded (UTC)."""
    updated_at: datetime
    """When the record last changed (UTC)."""
    version: int = 1
    """Increases with every change (updates are a compare-and-set on it)."""
    initiator: str | None = None
    """The principal who started it (None: started from Python or the CLI)."""
    input: dict[str, Any] = field(default_factory=dict)
    """What it was started with, as JSON: ``messages`` (ChatMessage dicts) and ``state`` (state inputs)."""
    snapshot_id: str | None = None
    """The snapshot holding it now (while it is paused: the one to resume)."""
    result: dict[str, Any] | None = None
    """When finished: ``last_message`` (a ChatMessage dict), ``exit_reason`` and ``step_count``."""
    error: str | None = None
    """When failed: why (an error's type and message; never a traceback)."""
