"""The Python client of handrail runs on Temporal: connect, start a run, wait for it, decide its calls, show it."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from temporalio.client import Client, WithStartWorkflowOperation, WorkflowUpdateFailedError
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.converter import DataConverter
from temporalio.exceptions import WorkflowAlreadyStartedError

from handrail.dataclasses.chat_message import ChatMessage
from handrail.errors import ConfigurationError, HandrailError
from handrail.temporal._types import WORKFLOW_NAME, DecisionInput, RunInput, RunOptions

if TYPE_CHECKING:
    from handrail.temporal._store import TemporalStore

__all__ = ["DecisionRefused", "RunExistsError", "connect", "decide", "describe", "get_result", "start_run"]

del WithStartWorkflowOperation, WorkflowIDConflictPolicy  # imported to check the SDK offers them (1.35 or later)


class RunExistsError(HandrailError):
    """A run with this id was started before (running or closed): a run id is used once."""


class DecisionRefused(HandrailError, ValueError):
    """The run refused a decision (unknown call, not allowed, invalid edit, conflicting with an earlier one)."""


async def connect(address: str, store: TemporalStore, *, namespace: str = "default", tls: Any = None,
                  **options: Any) -> Client:  # fmt: skip
    """A Temporal client whose payloads over 128 KB go to ``store`` (the claim check workers read them back from).

    Args:
        address: ``HOST:PORT`` of the Temporal frontend (the dev server, a cluster, or Temporal Cloud).
        store: The store every worker of the deployment uses (:func:`handrail.temporal.open_temporal_store`).
        namespace: The Temporal namespace.
        tls: ``True`` or a ``temporalio.service.TLSConfig`` for a cluster or Temporal Cloud; None for plain text.
        **options: More ``Client.connect`` options (``api_key`` for Temporal Cloud, ...).
    """
    from handrail.temporal._codec import ClaimCheckCodec

    converter = dataclasses.replace(DataConverter.default, payload_codec=ClaimCheckCodec(store))
    return await Client.connect(address, namespace=namespace, tls=tls or False, data_converter=converter, **options)


def _messages(question: str | Sequence[ChatMessage]) -> list[dict[str, Any]]:
    if isinstance(question, str):
        if not question.strip():
            raise ConfigurationError("The question is empty.")
        return [ChatMessage.from_user(question).to_dict()]
    if not all(isinstance(m, ChatMessage) for m in question):
        raise ConfigurationError("messages must be a question (str) or a list of ChatMessage.")
    return [m.to_dict() for m in question]


async def start_run(
    client: Client,
    agent: str,
    question: str | Sequence[ChatMessage],
    *,
    task_queue: str,
    run_id: str | None = None,
    initiator: str | None = None,
    options: RunOptions | None = None,
    **state: Any,
) -> str:
    """Start a run of ``agent`` on ``task_queue``; returns its run id (= the workflow id).

    A run id is used once: starting it again, while the run goes on or after it closed, raises
    :class:`RunExistsError` (Temporal's ``REJECT_DUPLICATE``), so a retried "start" never runs the agent twice.
    """
    import uuid

    from handrail.core._typed_json import encode_value

    if options is not None and options.unknown_outcome not in ("ask", "fail", "retry"):
        raise ConfigurationError(f"unknown_outcome must be ask, fail or retry, got {options.unknown_outcome!r}.")
    run_id = run_id or f"run_{uuid.uuid4().hex}"
    inp = RunInput(agent, _messages(question), {k: encode_value(v, k) for k, v in state.items()}, initiator,
                   options or RunOptions())  # fmt: skip
    try:
        await client.start_workflow(WORKFLOW_NAME, inp, id=run_id, task_queue=task_queue,
                                    id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE)  # fmt: skip
    except WorkflowAlreadyStartedError as exc:
        raise RunExistsError(f"Run {run_id!r} was started before; a run id is used once.") from exc
    return run_id


async def get_result(client: Client, run_id: str) -> dict[str, Any]:
    """Wait for the run to end; returns its result (``answer``, ``exit_reason``, ``messages``, ...).

    Raises:
        temporalio.client.WorkflowFailureError: The run failed (its cause names why).
    """
    result: dict[str, Any] = await client.get_workflow_handle(run_id).result()
    return result


async def decide(
    client: Client,
    run_id: str,
    call_id: str,
    decision: str,
    *,
    decided_by: str,
    arguments: dict[str, Any] | None = None,
    feedback: str | None = None,
    tool_name: str | None = None,
) -> dict[str, Any]:
    """Decide a held call of a run (an Update: answered once the run accepted it).

    Returns:
        ``{"status": "decided" | "voted" | "duplicate", ...}``.

    Raises:
        DecisionRefused: The run refused it, with the reason (nothing entered the run's history).
    """
    handle = client.get_workflow_handle(run_id)
    d = DecisionInput(call_id, decision, decided_by, arguments, feedback, tool_name)
    try:
        answer: dict[str, Any] = await handle.execute_update("decide", d)
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        raise DecisionRefused(
            f"Run {run_id!r} refused the decision on {call_id!r}: {getattr(cause, 'message', cause)}"
        ) from exc
    return answer


async def describe(client: Client, run_id: str) -> dict[str, Any]:
    """The run's status: Temporal's view (running, completed, failed...) and handrail's (waiting calls, usage)."""
    handle = client.get_workflow_handle(run_id)
    info = await handle.describe()
    out: dict[str, Any] = {"run_id": run_id, "workflow_status": info.status.name if info.status else None,
                           "started": info.start_time.isoformat(), "history_length": info.history_length}  # fmt: skip
    try:
        out.update(await handle.query("status"))
    except Exception as exc:  # a closed run whose worker is gone, or a worker that cannot answer now
        out["status_error"] = str(exc)[:300]
    return out
