"""A service run resumed outside the service (``handrail resume``): its record kept current all the same.

A run the service started has a :class:`~handrail.dataclasses.service.RunRecord`; whoever resumes it, the record
must end up saying how it went (``GET /api/v1/runs/{id}`` reads it, and a resumer looks only at the runs whose
events or records name them). :func:`resume_recorded` does for a resume by hand what the resumer's driver does
(:mod:`~handrail.server._drive`), with the same :class:`~handrail.server._runbook.RunBook` changes: under the run's
claim, ``running`` (``run.resumed``), then ``paused`` at the new snapshot, ``finished`` with the result, or, when
the resume raised, what the run's snapshot says now (``paused`` when nothing happened, ``finished`` when it is
done; a snapshot left ``running`` keeps the record ``running``, so a resumer takes it over).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from handrail.dataclasses.breakpoints import BreakpointException
from handrail.dataclasses.service import RunRecord
from handrail.dataclasses.snapshot import AgentSnapshot
from handrail.errors import SnapshotUnavailableError
from handrail.server._ready import snapshot_now
from handrail.server._runbook import RunBook

__all__ = ["resume_recorded", "run_held"]

_ENDED = ("finished", "failed")


def _utc_now() -> datetime:
    return datetime.now(UTC)


def resume_recorded(
    store: Any,
    snapshot: AgentSnapshot,
    resume: Callable[[], dict[str, Any]],
    *,
    clock: Callable[[], datetime] = _utc_now,
) -> dict[str, Any]:
    """Call ``resume()`` (which resumes ``snapshot``) and keep the service's record of its run current.

    A snapshot whose run the service has no record of (paused by ``handrail run``, or the store keeps no
    service records), or whose record ended, is resumed as it is.

    Args:
        store: The store ``snapshot`` is in.
        snapshot: The snapshot being resumed (as read before the resume).
        resume: Resumes it; returns the run's result or raises (a pause: a ``BreakpointException``).
        clock: Returns now (timezone-aware): the record's times.

    Returns:
        What ``resume()`` returned.

    Raises:
        SnapshotUnavailableError: A resumer of the service is continuing the run right now (its claim is held).
        Exception: What ``resume()`` raised, once the record says where the run stands.
    """
    from handrail.stores.service import ServiceStore

    book = RunBook(store, clock)
    run_id = snapshot.run_id
    record = book.get(run_id) if run_id and isinstance(store, ServiceStore) else None
    if record is None or record.status in _ENDED or snapshot.snapshot_id is None:
        return resume()
    lease = store.claim_run(record.run_id)
    if lease is None:
        raise SnapshotUnavailableError(
            f"Run {record.run_id} is being continued by the service right now (a resumer holds it); it goes on by "
            f"itself: see its record (GET /api/v1/runs/{record.run_id})."
        )
    try:
        running = book.resuming(record, snapshot.snapshot_id)
        if running.status != "running":  # it ended meanwhile (another process recorded it)
            return resume()
        return _recorded(book, running, snapshot.snapshot_id, resume)
    finally:
        lease.release()


def run_held(store: Any, run_id: str | None) -> bool:
    """Whether a process holds the claim of service run ``run_id`` right now (a resumer continuing it)."""
    from handrail.stores.service import ServiceStore

    if not run_id or not isinstance(store, ServiceStore):
        return False
    lease = store.claim_run(run_id)
    if lease is None:
        return True
    lease.release()
    return False


def _recorded(
    book: RunBook, record: RunRecord, snapshot_id: str, resume: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    try:
        result = resume()
    except BreakpointException as pause:
        book.paused_at(record, pause.snapshot.snapshot_id if pause.snapshot is not None else None)
        raise
    except BaseException:  # recorded, and raised on (Ctrl-C included: the snapshot says where the run stopped)
        book.settled(record, snapshot_now(book.store, snapshot_id))
        raise
    book.finished(record, result)
    return result
