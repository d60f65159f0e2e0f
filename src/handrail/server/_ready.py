"""Where a run stands, read from its snapshot and its approvals: what a resumer does with it next.

:func:`next_step` looks at the snapshot holding a run now (the last of its ``continued_in`` chain) and, for the
calls it holds, at their approval records:

* ``resume``: paused, and no held call waits any more (every one has its decision in the snapshot, an expiry
  included), or paused before a model call (a service run's first snapshot), or ``running`` while no process
  holds its claim (the process that ran it died: the resume follows ``unknown_outcome``);
* ``sync``: every waiting call's approval is decided or expired, but a decision is not in the snapshot yet (the
  decider writes it just after the approval; :func:`~handrail.stores._approval_decide.sync_snapshot` repairs it
  when the decider died in between);
* ``wait``: a held call's approval is still pending (or the call has no approval record: a person decides it with
  ``handrail approvals``, which writes the snapshot);
* ``held``: ``running`` and claimed: a process is resuming it now;
* ``done``: the run finished; ``gone``: no snapshot to continue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from handrail.dataclasses.approval import Approval
from handrail.dataclasses.snapshot import AgentSnapshot
from handrail.errors import SnapshotError
from handrail.stores._approval_decide import approval_of_call, current_snapshot
from handrail.stores._snapshot_common import awaiting_decision

__all__ = ["Found", "Step", "next_step", "snapshot_now"]

Step = Literal["resume", "sync", "wait", "held", "done", "gone"]


@dataclass(frozen=True, slots=True)
class Found:
    """What :func:`next_step` found."""

    step: Step
    """What to do next (see the module docstring)."""
    snapshot: AgentSnapshot | None
    """The snapshot holding the run now (None: ``gone``)."""
    decided: tuple[Approval, ...] = ()
    """For ``sync``: the decided approvals whose decision the snapshot does not hold yet."""

    @property
    def approval_pause(self) -> bool:
        """True for a paused tool step (calls held for a person), as opposed to a pause before a model call."""
        snapshot = self.snapshot
        return snapshot is not None and snapshot.status == "paused" and bool(snapshot.pending_tool_calls)


def snapshot_now(store: Any, snapshot_id: str | None) -> AgentSnapshot | None:
    """The snapshot a run is at now: ``snapshot_id``, or the last one its run continued in (None: unknown)."""
    if not snapshot_id:
        return None
    try:
        return current_snapshot(store, snapshot_id)
    except SnapshotError:  # pragma: no cover - current_snapshot answers None for an unknown id already
        return None


def next_step(store: Any, snapshot: AgentSnapshot | None) -> Found:
    """What to do with the run whose snapshot is ``snapshot`` now (see the module docstring)."""
    if snapshot is None or snapshot.snapshot_id is None or snapshot.status == "resumed":
        return Found("gone", snapshot)
    if snapshot.status == "done":
        return Found("done", snapshot)
    if snapshot.status == "running":
        return Found("held" if store.claimed(snapshot.snapshot_id) else "resume", snapshot)
    waiting = awaiting_decision(snapshot)
    if not waiting:
        return Found("resume", snapshot)
    approvals = [approval_of_call(store, snapshot, call.id or "") for call in waiting]
    decided = tuple(a for a in approvals if a is not None and a.terminal and a.decision is not None)
    if len(decided) == len(waiting):
        return Found("sync", snapshot, decided)
    return Found("wait", snapshot)
