"""What every route of one app shares: the store, the approval service, the clock, sessions and the event hub."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fastapi import Request

from handrail.human_in_the_loop.service import ApprovalService
from handrail.server._auth import Sessions

__all__ = ["ServiceContext", "approval_json", "context_of", "iso"]


@dataclass
class ServiceContext:
    """The state of one app (``app.state.handrail``)."""

    store: Any
    """The store (approvals, tokens, events, runs)."""
    service: ApprovalService
    """The one service layer every decision goes through."""
    clock: Callable[[], datetime]
    """Returns now (timezone-aware)."""
    sessions: Sessions
    """Session cookies."""
    hosts: frozenset[str]
    """The Host names the app answers to."""
    events: Any
    """The event hub (:class:`~handrail.server._events_stream.EventHub`)."""
    runs: Any = None
    """The run launcher (:class:`~handrail.server.RunLauncher`): starts and reads runs (None: no run routes)."""
    resumer: Any = None
    """The resumer (:class:`~handrail.server.Resumer`) a decision wakes (None: none)."""
    context_messages: int = 6
    """How many conversation messages an approval's detail shows by default."""


def context_of(request: Request) -> ServiceContext:
    """The app's context."""
    context: ServiceContext = request.app.state.handrail
    return context


def iso(moment: datetime | None) -> str | None:
    """An ISO 8601 time (None stays None)."""
    return None if moment is None else moment.isoformat()


def approval_json(approval: Any) -> dict[str, Any]:
    """An approval as the API shows it: its record's fields (the idempotency key stays with the decider)."""
    data: dict[str, Any] = approval.to_dict()
    data.pop("schema_version", None)
    data.pop("idempotency_key", None)
    return data
