"""What every route of one app shares: the store, the approval service, the clock, sessions and the event hub."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fastapi import Request

from handrail.human_in_the_loop.service import ApprovalService
from handrail.server._auth import Sessions

__all__ = ["ServiceContext", "Waker", "approval_json", "context_of", "iso"]

_LOG = logging.getLogger("handrail.server")
_IDLE = 5.0
"""Seconds the waker's thread outlives its last round."""


class Waker:
    """After a decision made through this app: hand its event to the open streams and wake the resumer, at once.

    One thread does it, coalescing: the decisions that land while it works are served by its next round, so a
    burst of decisions costs a few rounds, not one each, and no request waits for it.

    Args:
        actions: What a round calls, in order (the event hub's ``poke``, the resumer's ``wake``).
    """

    def __init__(self, *actions: Callable[[], object]) -> None:
        self.actions = actions
        self._wanted = threading.Event()
        self._closed = False
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def __call__(self) -> None:
        """Ask for a round (never blocks)."""
        with self._lock:
            if self._closed:
                return
            self._wanted.set()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="handrail-waker", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            if not self._wanted.wait(timeout=_IDLE):
                with self._lock:  # idle: the thread ends (the next decision starts another)
                    if not self._wanted.is_set():
                        self._thread = None
                        return
                continue
            self._wanted.clear()
            if self._closed:
                return
            for action in self.actions:
                try:
                    action()
                except Exception as exc:  # a failed round is logged; the resumer's own loop catches up
                    _LOG.warning("waking after a decision failed: %s", type(exc).__name__)

    def close(self) -> None:
        """Stop the thread (a round under way ends first)."""
        with self._lock:
            self._closed = True
            thread = self._thread
        self._wanted.set()
        if thread is not None:
            thread.join(timeout=30)


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
    """The resumer (:class:`~handrail.server.Resumer`) of this app's process (None: none)."""
    wake: Callable[[], None] = lambda: None
    """Called after each decision made through the app (a :class:`Waker`)."""
    context_messages: int = 6
    """How many conversation messages an approval's detail shows by default."""
    previews: Any = None
    """Computes the tools' previews (:class:`~handrail.server._previews.Previewer`)."""
    tracing: Any = None
    """The service's tracing (:class:`~handrail.server._tracing.ServiceTracing`; None: off)."""


def context_of(request: Request) -> ServiceContext:
    """The app's context."""
    context: ServiceContext = request.app.state.handrail
    return context


def iso(moment: datetime | None) -> str | None:
    """An ISO 8601 time (None stays None)."""
    return None if moment is None else moment.isoformat()


def approval_json(approval: Any) -> dict[str, Any]:
    """An approval as the API shows it: its record's fields, and ``approvers``.

    ``approvers`` are the distinct principals whose votes approve its current arguments (toward ``quorum``).
    Idempotency keys stay with their deciders: neither the record's nor a vote's is shown.
    """
    data: dict[str, Any] = approval.to_dict()
    data.pop("schema_version", None)
    data.pop("idempotency_key", None)
    data["votes"] = [{k: v for k, v in vote.items() if k != "idempotency_key"} for vote in data.get("votes", ())]
    data["approvers"] = list(approval.approvers)
    return data
