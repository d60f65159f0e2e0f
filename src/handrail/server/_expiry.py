"""When the next approval expires: the sweeper wakes at that time, not on a timer.

An :class:`ExpiryWatch` keeps the expiry times of the pending approvals it knows (a heap): all of them, read once
when the resumer starts (and again after it missed events), then each new one from its ``approval.created``
event. :meth:`ExpiryWatch.sweep` runs the approval service's sweep (:meth:`~handrail.human_in_the_loop.service.
ApprovalService.expire_due`, a compare-and-set per approval, so several processes sweeping at once expire each
approval once) only when a known expiry time has come. A time of an approval decided meanwhile, or expired by
another process, is dropped when it comes: that sweep finds nothing to do. An approval of another backend (a
Temporal run) is never watched: its run's durable timer expires it (``Approval.due`` is False for it).
"""

from __future__ import annotations

import heapq
import threading
from datetime import UTC, datetime
from typing import Any

from handrail.dataclasses.approval import Approval
from handrail.errors import ApprovalNotFoundError, CorruptRecordError
from handrail.stores.approvals import ApprovalFilter

__all__ = ["ExpiryWatch"]

_FAR = datetime(9999, 1, 1, tzinfo=UTC)


class ExpiryWatch:
    """The pending approvals' expiry times, soonest first, and the sweep when one is due.

    Args:
        service: The :class:`~handrail.human_in_the_loop.service.ApprovalService` over the store.
    """

    def __init__(self, service: Any) -> None:
        self.service = service
        self._heap: list[tuple[datetime, str]] = []
        self._lock = threading.Lock()

    def rebuild(self) -> None:
        """Read the expiry time of every pending approval that has one (after a start, or missed events)."""
        due = self.service.every(ApprovalFilter(status="pending", expires_before=_FAR))
        found = [(a.expires_at, a.id) for a in due if a.expires_at is not None and a.backend == "local"]
        heapq.heapify(found)
        with self._lock:
            self._heap = found

    def note(self, approval_id: str) -> None:
        """Learn the expiry time of a new approval (from its ``approval.created`` event)."""
        try:
            approval: Approval = self.service.store.get_approval(approval_id)
        except (ApprovalNotFoundError, CorruptRecordError):
            return
        if approval.status == "pending" and approval.expires_at is not None and approval.backend == "local":
            with self._lock:
                heapq.heappush(self._heap, (approval.expires_at, approval.id))

    def next_due(self) -> datetime | None:
        """The soonest expiry time known (None: no pending approval expires)."""
        with self._lock:
            return self._heap[0][0] if self._heap else None

    def sweep(self, now: datetime) -> list[Approval]:
        """Expire what is due at ``now`` when a known time has come; the approvals this sweep expired."""
        with self._lock:
            if not self._heap or self._heap[0][0] > now:
                return []
            while self._heap and self._heap[0][0] <= now:
                heapq.heappop(self._heap)
        expired: list[Approval] = self.service.expire_due(now)
        return expired
