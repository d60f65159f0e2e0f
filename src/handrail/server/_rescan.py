"""The resumer's look at everything: what to continue, read from the store instead of from events.

It looks so when it starts, after it missed events (the log is bounded) and every ``rescan_interval`` seconds
when that is set (see :class:`~handrail.server.Resumer`).
"""

from __future__ import annotations

import logging
from typing import Any

from handrail.dataclasses.approval import Approval
from handrail.server._runbook import one_line
from handrail.server._waiting import WaitingApprovals
from handrail.stores.approvals import ApprovalFilter

__all__ = ["active_runs", "rescan"]

_LOG = logging.getLogger("handrail.server")
_RUNS = 1000


def active_runs(store: Any) -> set[str]:
    """The runs recorded queued or running (the takeover's runs, until events say more)."""
    return {r.run_id for s in ("queued", "running") for r in store.list_runs(status=s, limit=_RUNS)}


def rescan(store: Any, service: Any, waiting: WaitingApprovals) -> dict[str, str | None]:
    """``{run id: snapshot id}`` of the runs to look at; ``waiting`` learns every pending approval.

    They are the runs of the paused snapshots at a tool step with no pending approval (each paused snapshot is
    read once: a directory store reads every snapshot file), and every run recorded ``paused`` at a snapshot that
    is not paused any more (resumed from Python, without the service): its driver makes the record say where the
    run went.
    """
    listed: list[Approval] = [a for a in service.every(ApprovalFilter(status="pending")) if a.backend == "local"]
    waiting.rebuild(listed)
    pending = {a.snapshot_id for a in listed}
    found: dict[str, str | None] = {}
    paused: set[str | None] = set()
    for snapshot in store.list_snapshots(("paused",), on_error=_skipped):
        paused.add(snapshot.snapshot_id)
        if snapshot.snapshot_id in pending or not snapshot.pending_tool_calls or snapshot.run_id is None:
            continue
        found[snapshot.run_id] = snapshot.snapshot_id
    for record in store.list_runs(status="paused", limit=_RUNS):
        if record.snapshot_id not in paused:
            found.setdefault(record.run_id, record.snapshot_id)
    return found


def _skipped(snapshot_id: str, exc: Exception) -> None:
    _LOG.warning("skipping unreadable snapshot %s: %s", snapshot_id, one_line(exc))
