"""Approval records of Temporal runs: what the approval service (``handrail serve``) lists and decides.

A worker created with an approvals store (``create_worker(..., approvals=store_or_url)``) records every call a
run holds for a person as an :class:`~handrail.dataclasses.approval.Approval` in that store, the service's own:

* when the run begins to wait (:func:`open_records`), the ``handrail.record_approvals`` activity creates one
  pending record per held call. Its id is :func:`~handrail.dataclasses.approval.approval_id` of the run id and the
  call id, so a retried activity (or a replayed workflow) finds it there and creates nothing twice. The record
  says whose it is: ``extra["backend"] = "temporal"`` and ``extra["temporal"]`` (namespace, task queue, workflow
  id, the call id decisions name, the kind); its ``snapshot_id`` is ``temporal:<run id>``, no snapshot of the
  store: nothing resumes it, and no sweep expires it (:attr:`Approval.due` is False for another backend);
* when the wait ends (:func:`close_records`), the same activity brings each record to what the run decided: the
  votes it counted that the record lacks (a ``decide`` Update sent without the service, e.g. by
  ``handrail.temporal.decide``), or the expiry the run's durable timer decided. A decision sent through the
  service is on the record already (the service writes it once the Update is accepted); one the activity writes
  first is recognised by the service as the same vote.

Recording never fails a run: a store that stays unreachable for ``_GIVE_UP`` is logged and the run goes on (its
records stay behind until a decision through the service, which the run accepts again as a duplicate).

The workflow calls the activity only on task queues whose worker in this process has an approvals store, and only
in runs started by a handrail that records (``workflow.patched``), so histories written before replay unchanged.
Every worker of a task queue must be created alike (all with the approvals store, or none), as they share its
agents.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

if TYPE_CHECKING:
    from handrail.dataclasses.approval import Approval
    from handrail.temporal._asking import Waiting
    from handrail.temporal._catalog import AgentCatalog
    from handrail.temporal._types import RunInput

__all__ = ["ACTIVITY", "BACKEND", "CallRecord", "Closing", "RecordInput", "Recorder", "Recording", "Vote",
           "close_records", "enable", "open_records", "snapshot_id_of"]  # fmt: skip

BACKEND = "temporal"
"""``Approval.extra["backend"]`` of the records of Temporal runs."""
ACTIVITY = "handrail.record_approvals"
PATCH = "handrail.approval-records"
_GIVE_UP = timedelta(minutes=5)
_LOG = logging.getLogger("handrail.temporal")
_RECORDING: set[str] = set()


def enable(task_queue: str) -> None:
    """Record the approvals of the runs of ``task_queue`` (its worker in this process has an approvals store)."""
    _RECORDING.add(task_queue)


def snapshot_id_of(run_id: str) -> str:
    """The ``snapshot_id`` of a Temporal run's records: no snapshot of the store (nothing resumes it)."""
    return f"temporal:{run_id}"


@dataclass
class CallRecord:
    """One held call as its record shows it."""

    call_id: str
    """The run's call id (decisions name it)."""
    record_call_id: str
    """The record's ``tool_call_id``: the call id, or for a second question on the call (its worker died while it
    ran: run it again?) the call id and ``#again-N``."""
    tool_name: str
    arguments: dict[str, Any]
    """The effective arguments (the model's, and State-injected values as typed JSON)."""
    injected: list[str]
    allowed: list[str]
    quorum: int
    initiator_may_approve: bool
    created_at: str
    expires_at: str | None
    on_expiry: str
    description: str
    kind: str = "approval"
    asked: int = 0
    """The question's number in the run (decisions name it, so a late repeat never answers a later question)."""


@dataclass
class Vote:
    decided_by: str
    decision: str
    arguments: dict[str, Any] | None = None
    feedback: str | None = None


@dataclass
class Closing:
    """What the run decided on one call."""

    record_call_id: str
    votes: list[Vote] = field(default_factory=list)
    """The decisions it counted, oldest first (the last one decided, unless it expired)."""
    expired: bool = False


@dataclass
class RecordInput:
    """The ``handrail.record_approvals`` activity's input: records to create, and (once decided) to close."""

    run_id: str
    agent: str
    task_queue: str
    namespace: str
    initiator: str | None
    step: int
    at: str
    """The workflow's time now (ISO 8601): a closing's time."""
    calls: list[CallRecord]
    closed: list[Closing] = field(default_factory=list)


# -- in the workflow -----------------------------------------------------------------------------------------


@dataclass
class Recording:
    """The records of one wait: their input, and the activity creating them."""

    inp: RecordInput
    opening: Any


def _call_record(w: Waiting, asked: int) -> CallRecord:
    from handrail.core._typed_json import encode_value

    injected = sorted(w.injected)
    arguments = {k: encode_value(v, f"arguments[{k!r}]") if k in w.injected else v for k, v in w.arguments.items()}
    record_call_id = w.call_id if w.kind == "approval" else f"{w.call_id}#again-{asked}"
    return CallRecord(
        w.call_id, record_call_id, w.tool_name, arguments, injected, list(w.allowed), w.quorum,
        w.initiator_may_approve, w.created_at.isoformat(), w.expires_at.isoformat() if w.expires_at else None,
        w.on_expiry, w.description, w.kind, w.asked,
    )  # fmt: skip


def _run(inp: RecordInput) -> Any:
    retry = RetryPolicy(initial_interval=timedelta(milliseconds=200), backoff_coefficient=2.0,
                        maximum_interval=timedelta(seconds=10))  # fmt: skip
    return workflow.start_activity(ACTIVITY, inp, start_to_close_timeout=timedelta(seconds=30),
                                   schedule_to_close_timeout=_GIVE_UP, retry_policy=retry)  # fmt: skip


def open_records(inp: RunInput, held: list[Waiting], step: int, asked: int) -> Recording | None:
    """Start creating the records of the calls ``held`` (None: this queue records none). The wait goes on meanwhile."""
    info = workflow.info()
    if info.task_queue not in _RECORDING or not workflow.patched(PATCH):
        return None
    data = RecordInput(info.workflow_id, inp.agent, info.task_queue, info.namespace, inp.initiator, step,
                       workflow.now().isoformat(), [_call_record(w, asked) for w in held])  # fmt: skip
    return Recording(data, _run(data))


def _closing(w: Waiting, record_call_id: str) -> Closing:
    assert w.final is not None
    votes = [Vote(d.decided_by, d.decision, d.arguments, d.feedback) for d in w.votes.values()]
    expired = w.votes.get(w.final.decided_by) is not w.final
    return Closing(record_call_id, [] if expired else votes, expired)


async def close_records(recording: Recording | None, held: list[Waiting]) -> None:
    """Bring the records to what the run decided (after the opening activity ended)."""
    if recording is None:
        return
    try:
        await recording.opening
    except ActivityError as exc:
        workflow.logger.warning("The approval records of run %s were not created: %s", recording.inp.run_id,
                                exc.cause or exc)  # fmt: skip
    ids = {c.call_id: c.record_call_id for c in recording.inp.calls}
    data = recording.inp
    data.at = workflow.now().isoformat()
    data.closed = [_closing(w, ids[w.call_id]) for w in held]
    try:
        await _run(data)
    except ActivityError as exc:
        workflow.logger.warning("The approval records of run %s were not closed: %s", data.run_id, exc.cause or exc)


# -- in the worker -------------------------------------------------------------------------------------------


class Recorder:
    """The ``handrail.record_approvals`` activity of a worker: its agents (the tools' schemas) and the store."""

    def __init__(self, catalog: AgentCatalog, approvals: Any, *, tracing: bool = False) -> None:
        self.catalog = catalog
        self.store = approvals
        self.tracing = tracing
        """Keep the activity's trace context in each record's ``extra["trace"]`` (the decision span joins it)."""

    @activity.defn(name=ACTIVITY)
    async def record_approvals(self, inp: RecordInput) -> None:
        """Create the records of ``inp.calls`` (each once), then apply ``inp.closed`` to them."""
        from handrail.errors import HandrailError, StoreError

        try:
            await asyncio.to_thread(self._write, inp)
        except StoreError:
            raise  # the store is unreachable: tried again
        except HandrailError as exc:  # a record that cannot be built: trying again builds the same
            raise ApplicationError(f"{type(exc).__name__}: {exc}", type=type(exc).__name__,
                                   non_retryable=True) from exc  # fmt: skip

    def _write(self, inp: RecordInput) -> None:
        from handrail.dataclasses.approval import approval_id

        created = self.store.create_approvals([self._new(inp, call) for call in inp.calls])
        at = datetime.fromisoformat(inp.at)
        by_call = {a.tool_call_id: a for a in created}
        for closing in inp.closed:
            found = by_call.get(closing.record_call_id)
            if found is not None:
                _close(self.store, approval_id(inp.run_id, closing.record_call_id), closing, at)

    def _new(self, inp: RecordInput, call: CallRecord) -> Approval:
        from handrail.dataclasses.approval import Approval
        from handrail.dataclasses.decisions import decided_by_problem
        from handrail.stores._approval_decide import INJECTED_KEY

        tool = self.catalog.tool(inp.agent, call.tool_name)
        extra: dict[str, Any] = {
            "backend": BACKEND,
            BACKEND: {"namespace": inp.namespace, "task_queue": inp.task_queue, "workflow_id": inp.run_id,
                      "call_id": call.call_id, "kind": call.kind, "asked": call.asked},
        }  # fmt: skip
        if call.injected:
            extra[INJECTED_KEY] = list(call.injected)
        if self.tracing:
            from handrail.temporal._tracing import record_extra

            record_extra(extra)
        initiator = inp.initiator
        if initiator is not None and (decided_by_problem(initiator) is not None or len(initiator) > 200):
            initiator = None
        return Approval.new(
            run_id=inp.run_id, tool_call_id=call.record_call_id, snapshot_id=snapshot_id_of(inp.run_id),
            agent_name=inp.agent, step=inp.step, tool_name=call.tool_name, tool_description=tool.description or "",
            arguments=call.arguments, arguments_schema=dict(tool.parameters or {"type": "object"}),
            description=call.description, created_at=datetime.fromisoformat(call.created_at),
            allowed_decisions=tuple(call.allowed),  # type: ignore[arg-type]
            expires_at=datetime.fromisoformat(call.expires_at) if call.expires_at else None,
            on_expiry=call.on_expiry,  # type: ignore[arg-type]
            quorum=call.quorum, initiator=initiator, initiator_may_approve=call.initiator_may_approve, extra=extra,
        )  # fmt: skip


def _on_record(current: Approval, vote: Vote) -> bool:
    return any(v.principal == vote.decided_by and v.decision == vote.decision for v in current.votes)


def _close(store: Any, key: str, closing: Closing, at: datetime) -> None:
    """Write what the run decided on one call into its record, unless the record shows it (or ended) already."""
    from handrail.errors import ApprovalClosedError, ApprovalConflictError, HandrailError
    from handrail.stores._approval_request import injected_values

    for _ in range(len(closing.votes) + 5):  # a vote at a time; a compare-and-set lost to the service: read again
        try:
            current: Approval = store.get_approval(key)
            if current.terminal:
                return
            if closing.expired:
                store.expire_approval(key, expected_version=current.version, at=at, details={"via": BACKEND})
                return
            vote = next((v for v in closing.votes if not _on_record(current, v)), None)
            if vote is None:
                return
            edited = None
            if vote.decision == "edit" and vote.arguments is not None:
                edited = {**vote.arguments, **injected_values(current)}
            store.decide_approval(
                key, vote.decision, expected_version=current.version, principal=vote.decided_by, at=at,
                feedback=vote.feedback, arguments=edited, details={"via": BACKEND},
            )  # fmt: skip
        except ApprovalClosedError:
            return
        except ApprovalConflictError:
            continue
        except HandrailError as exc:  # the run decided; its record cannot say so: logged, the run goes on
            _LOG.warning("approval %s could not record what its run decided: %s", key, exc)
            return
