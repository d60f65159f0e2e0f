"""Driving one service run under its claim: continue it from the snapshot holding it, keep its record current.

:func:`drive` is what a worker thread of the service does with a run id. It takes the run's claim (one process
drives a run at a time; the claim dies with its process), reads where the run stands
(:func:`~handrail.server._ready.next_step`) and

* resumes it with the library :func:`handrail.resume` (a decided pause, a service run's first snapshot, or a
  run whose process died: the call found ``running`` follows ``unknown_outcome``), through the service's store;
  a run that pauses again whose held calls are all decided already goes on at once;
* waits a moment for decisions that are recorded in their approvals but not yet in the snapshot, and writes
  them itself if their decider died in between;
* records the outcome: ``running``, ``paused`` (with the snapshot to resume), ``finished`` (with the result) or
  ``failed`` (a one-line reason), each with its event and report; a failure is logged, without secrets.

A snapshot held by a process that is not the service (``handrail resume`` by hand) is left to it: the record
stays ``running`` and is looked at again by the takeover scan, which then records how that run ended. A run
whose agent this process does not know is left as it is (another process may know it). A store that fails
(unreachable) leaves the record as it is too: the takeover scan tries again.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from handrail.dataclasses.breakpoints import BreakpointException
from handrail.dataclasses.service import RunRecord
from handrail.dataclasses.snapshot import AgentSnapshot
from handrail.errors import (
    CorruptRecordError,
    SnapshotFinishedError,
    SnapshotResumedError,
    SnapshotUnavailableError,
    StoreError,
)
from handrail.server._ready import Found, next_step, snapshot_now
from handrail.server._registry import AgentRegistry, UnknownAgentError
from handrail.server._runbook import RunBook, one_line

__all__ = ["Driver"]

_LOG = logging.getLogger("handrail.server")
_TURNS = 1000
_FIRST_DELAY, _MAX_DELAY = 0.005, 0.1


@dataclass
class Driver:
    """Drives runs of one store (see the module docstring); shared by the threads of a process."""

    store: Any
    """The service's store."""
    registry: AgentRegistry
    """The agents."""
    book: RunBook
    """Writes the run records and their events."""
    unknown_outcome: str
    """For a call found ``running``: ``fail`` or ``retry`` (``handrail.resume``'s parameter)."""
    sync_grace: float = 2.0
    """Seconds a decision recorded in its approval may take to reach the snapshot before the driver writes it."""
    tracing: Any = None
    """The service's tracing (:class:`~handrail.server._tracing.ServiceTracing`), None: off."""
    stopping: threading.Event = field(default_factory=threading.Event)
    """Set when the service stops: a driver waiting for a decision gives up (the run is taken over later)."""
    _unknown_logged: set[str] = field(default_factory=set)

    def drive(self, run_id: str, snapshot_id: str | None = None, lease: Any = None) -> str:
        """Continue run ``run_id`` as far as it goes now; returns what happened (``finished``, ``paused``, ...).

        Args:
            run_id: The run.
            snapshot_id: Where the run is, for a run the service has no record of yet (its paused snapshot).
            lease: The run's claim, when the caller took it; else it is taken here (``busy`` when held).
        """
        if lease is None:
            lease = self.store.claim_run(run_id)
            if lease is None:
                return "busy"
        try:
            return self._turns(run_id, snapshot_id)
        finally:
            lease.release()

    def _turns(self, run_id: str, snapshot_id: str | None) -> str:
        outcome = "ended"
        for _ in range(_TURNS):
            record = self.book.get(run_id)
            if record is not None and record.status in ("finished", "failed"):
                return "ended"
            found = next_step(self.store, snapshot_now(self.store, record.snapshot_id if record else snapshot_id))
            if found.step == "sync":
                found = self._synced(found)
            outcome = self._turn(run_id, record, found)
            if outcome not in ("paused", "moved"):
                return outcome
        return outcome  # pragma: no cover - a thousand pauses in a row, each decided before it was written

    def _turn(self, run_id: str, record: RunRecord | None, found: Found) -> str:
        snapshot = found.snapshot
        if record is None:
            if snapshot is None or not (found.approval_pause and found.step == "resume"):
                return "ended"  # not a service run, and not a decided pause: nothing for the service to do
            record = self._adopted(run_id, snapshot)
            if record is None:
                return "unknown agent"
        if found.step == "resume":
            assert snapshot is not None
            return self._resume(record, snapshot)
        if found.step in ("wait", "sync"):
            self.book.settled(record, snapshot)  # paused at the snapshot that waits
            return "waiting"
        if found.step == "held":
            return "held"
        if found.step == "done":
            self.book.settled(record, snapshot)  # finished, its result read from the snapshot
            return "finished"
        reason = f"the snapshot holding run {run_id} ({record.snapshot_id}) is gone from the store"
        self._failed(record, reason)
        return "failed"

    def _adopted(self, run_id: str, snapshot: AgentSnapshot) -> RunRecord | None:
        """The record of a decided run the service did not start, once its agent is known here (else None)."""
        try:
            _, name = self.registry.resolve(snapshot)
        except UnknownAgentError as exc:
            self._unknown(run_id, exc)
            return None
        return self.book.adopt(run_id, snapshot, name)

    def _unknown(self, run_id: str, exc: Exception) -> None:
        if run_id not in self._unknown_logged:
            self._unknown_logged.add(run_id)
            _LOG.info("run %s is left to another process: %s", run_id, one_line(exc))

    def _synced(self, found: Found) -> Found:
        """Wait (a short backoff) for decided approvals to reach the snapshot; past the grace, write them here."""
        from handrail.stores._approval_decide import sync_snapshot

        assert found.snapshot is not None and found.snapshot.snapshot_id is not None
        snapshot_id = found.snapshot.snapshot_id
        deadline = time.monotonic() + self.sync_grace
        delay = _FIRST_DELAY
        while found.step == "sync" and time.monotonic() < deadline and not self.stopping.is_set():
            time.sleep(delay)
            delay = min(delay * 2, _MAX_DELAY)
            found = next_step(self.store, snapshot_now(self.store, snapshot_id))
        if found.step == "sync" and not self.stopping.is_set():  # the deciders died between approval and snapshot
            for approval in found.decided:
                with contextlib.suppress(SnapshotUnavailableError):
                    sync_snapshot(self.store, approval)
            found = next_step(self.store, snapshot_now(self.store, snapshot_id))
        return found

    def _resume(self, record: RunRecord, snapshot: AgentSnapshot) -> str:
        from handrail.specs._resume import resume

        assert snapshot.snapshot_id is not None
        try:
            agent = self.registry.agent_for(snapshot)
        except UnknownAgentError as exc:
            self._unknown(record.run_id, exc)
            return "unknown agent"
        except Exception as exc:  # a file that cannot be built, an agent that does not pause into the store
            self._failed(record, one_line(exc))
            return "failed"
        record = self.book.resuming(record, snapshot.snapshot_id)
        if record.status != "running":
            return "ended"  # it ended meanwhile (another process recorded it)
        try:
            if self.tracing is None:
                result = resume(snapshot.snapshot_id, store=self.store, agent=agent,
                                unknown_outcome=self.unknown_outcome)  # fmt: skip
            else:
                result = self._resume_traced(agent, snapshot)
        except BreakpointException as pause:  # paused again (HITLBreakpointException): a new snapshot to wait on
            self.book.paused_at(record, pause.snapshot.snapshot_id if pause.snapshot is not None else None)
            return "paused"
        except (SnapshotFinishedError, SnapshotResumedError):
            return "moved"  # it went on elsewhere since it was read: read where it is now
        except SnapshotUnavailableError:
            return "held"  # resumed by hand right now: the takeover scan looks again later
        except CorruptRecordError as exc:
            self._failed(record, one_line(exc))
            return "failed"
        except StoreError as exc:  # the store failed, not the run: it is taken over again later
            _LOG.warning("run %s: the store failed, it is tried again later: %s", record.run_id, one_line(exc))
            return "store error"
        except Exception as exc:  # the run failed (model, tool, drift...): recorded, and the service goes on
            self._failed(record, one_line(exc))
            return "failed"
        self.book.finished(record, result)
        return "finished"

    def _resume_traced(self, agent: Any, snapshot: AgentSnapshot) -> Any:
        """``handrail.resume`` of a traced service: the run traced, under the decision span that released it."""
        from handrail.server._tracing import resuming
        from handrail.specs._resume import resume

        assert snapshot.snapshot_id is not None
        with resuming(self.tracing, self.store, snapshot):
            return resume(snapshot.snapshot_id, store=self.store, agent=self.tracing.traced(agent),
                          unknown_outcome=self.unknown_outcome)  # fmt: skip

    def _failed(self, record: RunRecord, reason: str) -> None:
        _LOG.warning("run %s failed: %s", record.run_id, reason)
        self.book.change(record, "failed", "run.failed", error=reason)
