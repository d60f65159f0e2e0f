"""What a resumer looks at again when no event will tell it: approvals it knows pending, runs held elsewhere.

A resumer learns of decisions from the store's event log. On a directory store an approval's file and its event
are two writes: a process killed between them (``kill -9`` of a server while it decides) leaves an approval
decided with no ``approval.decided`` event, and a run no event will ever name. :class:`WaitingApprovals` keeps the
pending approvals the resumer knows (listed when it starts and after missed events, then each new one from its
``approval.created`` event; forgotten at their ``approval.decided`` / ``expired`` / ``cancelled`` event);
:meth:`WaitingApprovals.recheck` reads each of them again and names the runs of those that left ``pending``
without their event. It costs one read per pending approval known, every ``recheck_interval`` seconds (see
:class:`~handrail.server.Resumer`).

A decided run another process holds when the resumer looks (its claim taken: ``busy``) is that process's to
continue; if it dies before it recorded anything (``kill -9`` right after it claimed the run), no event follows
either. :class:`HeldRuns` remembers such runs until the resumer's next takeover look, which looks at them again.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from concurrent.futures import Future
from typing import Any

from handrail.dataclasses.approval import Approval
from handrail.errors import ApprovalNotFoundError, CorruptRecordError

__all__ = ["ENDED_KINDS", "HeldRuns", "WaitingApprovals"]

ENDED_KINDS = ("approval.decided", "approval.expired", "approval.cancelled")
"""The events after which an approval is no longer pending (``approval.voted`` leaves it pending)."""


class WaitingApprovals:
    """Approval id → run id of the pending approvals known (see the module docstring)."""

    def __init__(self) -> None:
        self._runs: dict[str, str] = {}
        self._lock = threading.Lock()

    def rebuild(self, pending: Iterable[Approval]) -> None:
        """Know exactly ``pending`` (every pending approval of the store, just listed)."""
        found = {approval.id: approval.run_id for approval in pending}
        with self._lock:
            self._runs = found

    def note(self, approval_id: str, run_id: str) -> None:
        """A new pending approval (its ``approval.created`` event)."""
        with self._lock:
            self._runs[approval_id] = run_id

    def forget(self, approval_id: str) -> None:
        """An approval that is no longer pending (one of :data:`ENDED_KINDS`)."""
        with self._lock:
            self._runs.pop(approval_id, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._runs)

    def recheck(self, store: Any) -> dict[str, str | None]:
        """Read each known approval again: ``{run id: snapshot id}`` of those decided or expired meanwhile.

        Those that left ``pending`` are forgotten (their event, if it comes, finds nothing left to forget).
        """
        with self._lock:
            known = list(self._runs.items())
        found: dict[str, str | None] = {}
        for approval_id, run_id in known:
            try:
                approval: Approval = store.get_approval(approval_id)
            except ApprovalNotFoundError:
                self.forget(approval_id)
                continue
            except CorruptRecordError:
                continue  # a damaged record: the sweep and the person deciding it are told of it, not this
            if approval.status == "pending":
                continue
            self.forget(approval_id)
            if approval.decision is not None and approval.status != "cancelled":
                found[run_id] = approval.snapshot_id
        return found


class HeldRuns:
    """The runs a pass sent that came back ``busy`` or ``held`` (another process had them), until taken."""

    def __init__(self) -> None:
        self._runs: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def watch(self, run_id: str, snapshot_id: str | None, future: Future[str]) -> None:
        """Remember ``run_id`` (and where it paused) if ``future`` ends ``busy`` or ``held``."""

        def ended(done: Future[str]) -> None:
            if done.cancelled() or done.exception() is not None or done.result() not in ("busy", "held"):
                return
            with self._lock:
                self._runs[run_id] = snapshot_id

        future.add_done_callback(ended)

    def take(self) -> dict[str, str | None]:
        """The runs remembered, forgotten here (one held again is remembered again when it is sent again)."""
        with self._lock:
            found, self._runs = self._runs, {}
        return found
