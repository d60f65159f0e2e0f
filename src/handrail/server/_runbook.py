"""The service's run records kept current, each change with its event (``run.*``) in the store's event log.

A :class:`RunBook` is the one writer of :class:`~handrail.dataclasses.service.RunRecord` changes: for the
launcher, the resumer's driver and a resume of a service run by hand (``handrail resume``:
:mod:`~handrail.server._by_hand`). What a resume does to the record is written here once: :meth:`RunBook.resuming`
before it, then :meth:`RunBook.paused_at`, :meth:`RunBook.finished` or :meth:`RunBook.settled` (the record made
to say where the run's snapshot stands). The process that drives a run holds its claim (``claim_run``), so a
compare-and-set refused on the version means someone else wrote the record meanwhile (a takeover of a run this
process thought dead): the change is applied to the record as it is now, and a record that ended is left as it is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from handrail.core._terminal import printable
from handrail.dataclasses.chat_message import ChatMessage
from handrail.dataclasses.service import EventKind, RunRecord, RunStatus
from handrail.dataclasses.snapshot import AgentSnapshot
from handrail.errors import ConfigurationError, RunConflictError, RunNotFoundError

__all__ = ["INITIATOR_KEY", "RunBook", "Report", "one_line", "result_of"]

INITIATOR_KEY = "initiator"
"""Snapshot ``metadata`` key: the name of the principal who started a service run (None: not the service)."""

Report = Callable[[str, RunRecord], None]
"""Told of each change the service made to a run: ``(what, record)``; what is ``started``, ``resumed``,
``paused``, ``finished`` or ``failed`` (``handrail worker`` prints a line for it)."""

_LOG = logging.getLogger("handrail.server")
_ERROR_CHARS = 500
_TRIES = 3


def one_line(exc: BaseException) -> str:
    """``"<Type>: <first line of the message>"``, printable (known secrets masked), at most 500 characters."""
    text = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    shown = printable(line)
    return shown if len(shown) <= _ERROR_CHARS else shown[: _ERROR_CHARS - 1] + "…"


def result_of(result: dict[str, Any]) -> dict[str, Any]:
    """A finished run's record result: ``last_message`` (a ChatMessage dict), ``exit_reason``, ``step_count``."""
    last = result.get("last_message")
    return {
        "last_message": last.to_dict() if isinstance(last, ChatMessage) else None,
        "exit_reason": result.get("exit_reason"),
        "step_count": result.get("step_count"),
    }


def _result_of_snapshot(snapshot: AgentSnapshot) -> dict[str, Any]:
    """The result of a run that finished while the service did not watch (its snapshot is ``done``)."""
    outcome = snapshot.outcome or {}
    last = outcome.get("last_message")
    if not isinstance(last, dict):
        last = snapshot.messages[-1].to_dict() if snapshot.messages else None
    return {"last_message": last, "exit_reason": outcome.get("exit_reason"), "step_count": snapshot.step_count}


class RunBook:
    """Reads and writes the service's run records in ``store``, appending an event with each change.

    Args:
        store: The service's store (a :class:`~handrail.stores.service.ServiceStore`).
        clock: Returns now (timezone-aware).
        report: Told of each change (see :data:`Report`); its errors are logged, never raised.
    """

    def __init__(self, store: Any, clock: Callable[[], datetime], report: Report | None = None) -> None:
        self.store = store
        self.clock = clock
        self.report = report

    def get(self, run_id: str) -> RunRecord | None:
        """The run's record, or None when the service has none."""
        try:
            record: RunRecord = self.store.get_run(run_id)
        except RunNotFoundError:
            return None
        return record

    def create(self, record: RunRecord, what: str = "started") -> RunRecord:
        """Store a new record and append ``run.started`` (``what`` is reported)."""
        created: RunRecord = self.store.create_run(record)
        self._event("run.started", created)
        self._tell(what, created)
        return created

    def adopt(self, run_id: str, snapshot: AgentSnapshot, agent_name: str) -> RunRecord:
        """The record of a run the service did not start (``handrail run``, Python), made ``paused`` if it has none."""
        found = self.get(run_id)
        if found is not None:
            return found
        now = self.clock()
        initiator = snapshot.metadata.get(INITIATOR_KEY) if isinstance(snapshot.metadata, dict) else None
        record = RunRecord(
            run_id=run_id, agent_name=agent_name or "agent", status="paused", created_at=now, updated_at=now,
            initiator=initiator if isinstance(initiator, str) else None, snapshot_id=snapshot.snapshot_id,
        )  # fmt: skip
        try:
            created: RunRecord = self.store.create_run(record)
        except ConfigurationError:  # another process adopted it just now
            again = self.get(run_id)
            if again is None:
                raise
            return again
        return created

    def resuming(self, record: RunRecord, snapshot_id: str) -> RunRecord:
        """``running`` from ``snapshot_id``, with ``run.resumed`` (none for a queued run: ``run.started`` said it).

        The record as written; one that ended meanwhile is returned as it is (check its status).
        """
        event: EventKind | None = None if record.status == "queued" else "run.resumed"
        return self.change(record, "running", event, snapshot_id=snapshot_id)

    def paused_at(self, record: RunRecord, snapshot_id: str | None) -> RunRecord:
        """``paused`` at ``snapshot_id`` (the snapshot to resume when its calls are decided), with ``run.paused``."""
        return self.change(record, "paused", "run.paused", snapshot_id=snapshot_id)

    def finished(self, record: RunRecord, result: dict[str, Any]) -> RunRecord:
        """``finished`` with the run's ``result`` (what ``Agent.run`` returned), with ``run.finished``."""
        return self.change(record, "finished", "run.finished", result=result_of(result))

    def settled(self, record: RunRecord, snapshot: AgentSnapshot | None) -> RunRecord:
        """The record made to say where the run's snapshot (the last of its chain) stands now.

        ``done``: finished, its result read from the snapshot; ``paused``: paused at that snapshot (unchanged when
        the record says so already); ``running`` or gone: left as it is (a claimed snapshot is under way; an
        unclaimed one is taken over by a resumer, following ``unknown_outcome``).
        """
        if snapshot is None or snapshot.snapshot_id is None:
            return record
        if snapshot.status == "done":
            return self.change(record, "finished", "run.finished", result=_result_of_snapshot(snapshot))
        if snapshot.status == "paused" and (record.status != "paused" or record.snapshot_id != snapshot.snapshot_id):
            return self.paused_at(record, snapshot.snapshot_id)
        return record

    def change(self, record: RunRecord, status: RunStatus, event: EventKind | None, **changes: Any) -> RunRecord:
        """Set ``status`` (and ``changes``) on the run, append ``event`` (if any); the record as written.

        A record that ended meanwhile (finished or failed, written by another process) is returned as it is.
        """
        current = record
        for _ in range(_TRIES):
            if current.status in ("finished", "failed"):
                return current
            try:
                updated: RunRecord = self.store.update_run(
                    current.run_id, expected_version=current.version, at=self.clock(), status=status, **changes
                )
            except RunConflictError as exc:
                if not isinstance(exc.current, RunRecord):  # pragma: no cover - the store always sets it
                    raise
                current = exc.current
                continue
            if event is not None:
                self._event(event, updated)
            self._tell(event.removeprefix("run.") if event else status, updated)
            return updated
        return current  # pragma: no cover - three writers in a row while this process holds the claim

    def _event(self, kind: EventKind, record: RunRecord) -> None:
        data: dict[str, Any] = {"run_id": record.run_id, "status": record.status, "agent_name": record.agent_name}
        if record.snapshot_id is not None:
            data["snapshot_id"] = record.snapshot_id
        if record.error is not None:
            data["error"] = record.error
        if record.result is not None:
            data["exit_reason"] = record.result.get("exit_reason")
        self.store.append_event(kind, data, at=self.clock())

    def _tell(self, what: str, record: RunRecord) -> None:
        if self.report is None:
            return
        try:
            self.report(what, record)
        except Exception as exc:  # a reporter's bug must not stop a run's bookkeeping
            _LOG.warning("the run reporter failed on run %s: %s", record.run_id, one_line(exc))
