"""The service store protocol: the tokens, event log and runs of ``handrail serve``, kept in a snapshot store.

Every built-in snapshot store kind (directory, SQLite, PostgreSQL) implements :class:`ServiceStore` next to its
approvals, so every server and worker process sharing the store knows the same tokens, sees the same events
and resumes the same runs.

The rules every backend follows (the conformance suite :class:`~handrail.testing.store_suites.ServiceStoreSuite`
checks them):

* Tokens are stored hashed (SHA-256 of the token text; the text is returned once, by :meth:`add_token`). A
  token's text is ``<token_id>.<secret>``; :meth:`authenticate` compares hashes in constant time and gives None
  for an unknown, malformed or revoked token. Names are unique among tokens not revoked.
* Events have increasing ids across every process; the store writes ``approval.created`` / ``decided`` /
  ``expired`` / ``cancelled`` in the same transaction (or under the same lock) as the approval change, so an
  event is never lost nor sent for a change that did not happen. The log is bounded: the oldest events beyond
  :data:`EVENTS_KEPT` are dropped, and :meth:`events_after` says so (``gap``) when a reader asks for older ones.
* :meth:`wait_for_events` returns as soon as an event newer than ``after_id`` exists, or at ``timeout``:
  PostgreSQL by ``LISTEN`` / ``NOTIFY``; SQLite and directories by a short poll (:data:`POLL_INTERVAL`).
* Run records change by a compare-and-set on their version. :meth:`claim_run` takes the run's claim without
  waiting (None when another holds it); the claim is released by the lease or when the holding process dies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from handrail.dataclasses.service import EventKind, Role, RunRecord, RunStatus, ServiceEvent, TokenInfo
from handrail.stores.types import Lease

__all__ = ["EVENTS_KEPT", "POLL_INTERVAL", "EventPage", "ServiceStore"]

EVENTS_KEPT = 10_000
"""The event log keeps at least the newest this many events (older ones may be dropped)."""
POLL_INTERVAL = 0.05
"""Seconds between polls of :meth:`ServiceStore.wait_for_events` on stores without notifications."""


@dataclass(frozen=True, slots=True)
class EventPage:
    """What :meth:`ServiceStore.events_after` found."""

    events: tuple[ServiceEvent, ...]
    """The events after the id asked for, oldest first."""
    gap: bool
    """True when events after the id asked for were dropped already: the reader must re-list (SSE ``reset``)."""
    last_id: int
    """The newest event id in the log (0 when it is empty)."""


@runtime_checkable
class ServiceStore(Protocol):
    """Keeps the service's tokens, event log and runs (see the module docstring for the rules)."""

    def add_token(
        self, name: str, role: Role, *, tools: tuple[str, ...] = ("*",), at: datetime
    ) -> tuple[TokenInfo, str]:
        """Add a token; returns its record and its text (shown once, never stored)."""
        ...

    def list_tokens(self, *, include_revoked: bool = False) -> list[TokenInfo]:
        """The tokens, oldest first."""
        ...

    def revoke_token(self, name_or_id: str, *, at: datetime) -> TokenInfo:
        """Revoke the valid token with this name or id (ConfigurationError: none such); returns it revoked."""
        ...

    def authenticate(self, token: str) -> TokenInfo | None:
        """The valid token whose text is ``token``, or None."""
        ...

    def session_key(self, token_id: str) -> tuple[TokenInfo, bytes] | None:
        """The valid token with this id and a key derived from its stored hash (signs session cookies), or None."""
        ...

    def append_event(self, kind: EventKind, data: Mapping[str, Any], *, at: datetime) -> ServiceEvent:
        """Append an event (for runs; approval events are written by the approval changes themselves)."""
        ...

    def events_after(self, after_id: int, *, limit: int = 1000) -> EventPage:
        """The events with ids greater than ``after_id``, oldest first, at most ``limit``."""
        ...

    def wait_for_events(self, after_id: int, *, timeout: float) -> bool:
        """Block until an event newer than ``after_id`` exists (True) or ``timeout`` seconds pass (False)."""
        ...

    def create_run(self, record: RunRecord) -> RunRecord:
        """Store a new run record (ConfigurationError when its id exists)."""
        ...

    def get_run(self, run_id: str) -> RunRecord:
        """The run record (RunNotFoundError for an unknown id)."""
        ...

    def update_run(self, run_id: str, *, expected_version: int, at: datetime, **changes: Any) -> RunRecord:
        """Change fields of a run record (status, snapshot_id, result, error) as a compare-and-set on its version."""
        ...

    def list_runs(
        self, *, status: RunStatus | None = None, limit: int = 100, before: tuple[datetime, str] | None = None
    ) -> list[RunRecord]:
        """Run records, newest first; with ``before``, those after the run of that ``(created_at, run_id)`` key."""
        ...

    def claim_run(self, run_id: str) -> Lease | None:
        """The run's claim, without waiting; None when another holder has it."""
        ...
