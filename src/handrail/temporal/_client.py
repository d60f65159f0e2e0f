"""The Python client of handrail runs on Temporal: connect, start a run, wait for it, decide its calls, show it."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from temporalio.client import Client, WithStartWorkflowOperation, WorkflowUpdateFailedError
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.converter import DataConverter
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from handrail.dataclasses.chat_message import ChatMessage
from handrail.errors import (
    ConfigurationError,
    DecisionRefused,
    RunEndedError,
    RunExistsError,
    RunNotFoundError,
    TemporalUnavailableError,
)
from handrail.temporal._types import WORKFLOW_NAME, DecisionInput, RunInput, RunOptions

if TYPE_CHECKING:
    from handrail.temporal._store import TemporalStore

__all__ = ["DecisionRefused", "RunEndedError", "RunExistsError", "RunNotFoundError", "TemporalUnavailableError",
           "check_options", "connect", "decide", "describe", "get_result", "start_run"]  # fmt: skip

del WithStartWorkflowOperation, WorkflowIDConflictPolicy  # imported to check the SDK offers them (1.35 or later)


@contextlib.contextmanager
def _known_run(run_id: str) -> Iterator[None]:
    try:
        yield
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND and "completed" in exc.message:
            raise RunEndedError(f"Run {run_id!r:.300} has ended: no call of it waits for a decision.") from exc
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise RunNotFoundError(f"No run {run_id!r:.300} in this namespace: {exc.message}") from exc
        if exc.status in (RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED):
            raise TemporalUnavailableError(f"The Temporal server did not answer: {exc.message}") from exc
        raise


async def connect(address: str, store: TemporalStore, *, namespace: str = "default", tls: Any = None,
                  connect_timeout: float = 10.0, tracing: bool = False, tracer_provider: Any = None,
                  **options: Any) -> Client:  # fmt: skip
    """A Temporal client whose payloads over 128 KB go to ``store`` (the claim check workers read them back from).

    Args:
        address: ``HOST:PORT`` of the Temporal frontend (the dev server, a cluster, or Temporal Cloud).
        store: The store every worker of the deployment uses (:func:`handrail.temporal.open_temporal_store`).
        namespace: The Temporal namespace.
        tls: ``True`` or a ``temporalio.service.TLSConfig`` for a cluster or Temporal Cloud; None for plain text.
        connect_timeout: Seconds to wait for the server before :class:`TemporalUnavailableError`.
        tracing: Trace with OpenTelemetry (temporalio's ``TracingInterceptor``, to the global tracer provider): runs
            started and decided with this client, and the workers built on it, share one trace per run
            (docs/temporal.md, "Tracing"). Needs ``opentelemetry-api``.
        tracer_provider: Trace to this ``TracerProvider`` instead; implies ``tracing``.
        **options: More ``Client.connect`` options (``api_key`` for Temporal Cloud, ...).
    """
    from handrail.temporal._codec import ClaimCheckCodec

    if store is None or not callable(getattr(store, "get_blob", None)):
        raise ConfigurationError("connect needs the deployment's store (open_temporal_store(url)), got "
                                 f"{type(store).__name__}.")  # fmt: skip
    if not isinstance(address, str) or address.count(":") != 1 or not address.rsplit(":", 1)[1].isdigit():
        raise ConfigurationError(f"The Temporal address must be HOST:PORT (e.g. 127.0.0.1:7233), got {address!r:.100}.")
    converter = dataclasses.replace(DataConverter.default, payload_codec=ClaimCheckCodec(store))
    if tracing or tracer_provider is not None:
        from handrail.temporal._tracing import interceptor

        options["interceptors"] = [*options.get("interceptors", ()), interceptor(tracing, tracer_provider)]
    try:
        return await asyncio.wait_for(
            Client.connect(address, namespace=namespace, tls=tls or False, data_converter=converter, **options),
            timeout=connect_timeout,
        )
    except (TimeoutError, RuntimeError, RPCError) as exc:  # RuntimeError: the SDK's "Failed client connect"
        raise TemporalUnavailableError(
            f"Cannot reach the Temporal server at {address} (namespace {namespace!r}): {str(exc)[:300] or 'no answer'}"
            f"{f' in {connect_timeout:g} s' if isinstance(exc, TimeoutError) else ''}."
        ) from exc


def _messages(question: str | Sequence[ChatMessage]) -> list[dict[str, Any]]:
    if not isinstance(question, str | list | tuple):
        raise ConfigurationError(f"question must be a str or a list of ChatMessage, got {type(question).__name__}.")
    if isinstance(question, str):
        if not question.strip():
            raise ConfigurationError("The question is empty.")
        question = [ChatMessage.from_user(question)]
    if not question or not all(isinstance(m, ChatMessage) for m in question):
        raise ConfigurationError("messages must be a question (str) or a non-empty list of ChatMessage.")
    out = [m.to_dict() for m in question]
    try:
        json.dumps(out, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ConfigurationError("The question holds text that is not Unicode (a lone surrogate).") from exc
    return out


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

    check_options(options)
    if run_id is not None and (not isinstance(run_id, str) or not run_id.strip() or len(run_id) > 255
                               or not run_id.isprintable()):  # fmt: skip
        raise ConfigurationError(f"run_id must be 1 to 255 printable characters, got {run_id!r:.80}.")
    if not isinstance(agent, str) or not agent:
        raise ConfigurationError(f"agent must be the name of an agent the workers serve, got {agent!r:.80}.")
    run_id = run_id or f"run_{uuid.uuid4().hex}"
    inp = RunInput(agent, _messages(question), {k: encode_value(v, k) for k, v in state.items()}, initiator,
                   options or RunOptions())  # fmt: skip
    try:
        with _known_run(run_id):
            await client.start_workflow(WORKFLOW_NAME, inp, id=run_id, task_queue=task_queue,
                                        id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE)  # fmt: skip
    except WorkflowAlreadyStartedError as exc:
        raise RunExistsError(f"Run {run_id!r} was started before; a run id is used once.") from exc
    return run_id


def check_options(options: RunOptions | None) -> None:
    """Refuse run options a run could not follow, naming the field.

    Raises:
        ConfigurationError: An unknown ``unknown_outcome``, a timeout that is not a positive number, fewer than one
            model attempt, or a ``continue_after_events`` under 100 or over Temporal's 51,200.
    """
    if options is None:
        return
    if not isinstance(options, RunOptions):
        raise ConfigurationError(f"options must be a RunOptions, got {type(options).__name__}.")
    if options.unknown_outcome not in ("ask", "fail", "retry"):
        raise ConfigurationError(f"unknown_outcome must be ask, fail or retry, got {options.unknown_outcome!r:.40}.")
    for name in ("tool_timeout_seconds", "heartbeat_seconds", "model_timeout_seconds"):
        value = getattr(options, name)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
            raise ConfigurationError(f"{name} must be a positive number of seconds, got {value!r:.40}.")
    if type(options.model_attempts) is not int or options.model_attempts < 1:
        raise ConfigurationError(f"model_attempts must be an int of at least 1, got {options.model_attempts!r:.40}.")
    events = options.continue_after_events
    if type(events) is not int or not 100 <= events <= 51_200:
        raise ConfigurationError(f"continue_after_events must be an int from 100 to 51200, got {events!r:.40}.")
    if type(options.local_model_calls) is not bool:
        raise ConfigurationError(f"local_model_calls must be True or False, got {options.local_model_calls!r:.40}.")


async def get_result(client: Client, run_id: str) -> dict[str, Any]:
    """Wait for the run to end; returns its result.

    ``answer``, ``exit_reason``, ``messages`` (as dicts), ``state`` and ``token_usage`` (Python values), ``usage``.

    Raises:
        temporalio.client.WorkflowFailureError: The run failed (its cause names why).
    """
    from handrail.core._typed_json import decode_value

    with _known_run(run_id):
        result: dict[str, Any] = await client.get_workflow_handle(run_id).result()
    for key in ("state", "token_usage"):  # typed JSON in the workflow's result: Python values again
        if key == "state" and isinstance(result.get("state"), dict):
            result["state"] = {k: decode_value(v, f"state[{k!r}]") for k, v in result["state"].items()}
        elif key in result:
            result[key] = decode_value(result[key], key)
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
    asked: int | None = None,
    proposal: int | None = None,
) -> dict[str, Any]:
    """Decide a held call of a run (an Update: answered once the run accepted it).

    The decision names the question it answers (``asked`` of the call in :func:`describe`'s ``waiting``; looked up
    when not given), so a late repeat of a first answer never answers the same call asked again after an unknown
    outcome. With no worker alive the decision waits for one (a caller that gives up may still see it applied).
    ``proposal`` (from the same view) binds an approval to the arguments the person saw: under a quorum another
    approver's edit makes a new proposal, and an approval of the old one is refused.

    Returns:
        ``{"status": "decided" | "voted" | "duplicate", ...}``.

    Raises:
        DecisionRefused: The run refused it, with the reason (nothing entered the run's history).
    """
    handle = client.get_workflow_handle(run_id)
    if asked is None:
        asked = await _question_of(handle, run_id, call_id)
    d = DecisionInput(call_id, decision, decided_by, arguments, feedback, tool_name, asked, proposal)
    try:
        with _known_run(run_id):
            answer: dict[str, Any] = await handle.execute_update("decide", d)
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        if "closing workflow" in str(getattr(cause, "message", cause)):
            raise RunEndedError(f"Run {run_id!r:.300} ended while the decision on {call_id!r:.80} was sent.") from exc
        raise DecisionRefused(
            f"Run {run_id!r} refused the decision on {call_id!r}: {getattr(cause, 'message', cause)}"
        ) from exc
    return answer


async def _question_of(handle: Any, run_id: str, call_id: str) -> int | None:
    """The number of the question on ``call_id`` that waits now (None when none waits or no worker answers)."""
    try:
        with _known_run(run_id):
            status = await asyncio.wait_for(handle.query("status"), 3.0)
    except RunNotFoundError:
        raise
    except Exception:  # no worker answers queries now: the decision goes without a number (it waits for one)
        return None
    for waiting in status.get("waiting") or []:
        if waiting.get("call_id") == call_id and type(waiting.get("asked")) is int:
            return int(waiting["asked"])
    return None


async def describe(client: Client, run_id: str, *, query_timeout: float = 5.0) -> dict[str, Any]:
    """The run's status: Temporal's view (running, completed, failed...) and handrail's (waiting calls, usage)."""
    handle = client.get_workflow_handle(run_id)
    with _known_run(run_id):
        info = await handle.describe()
    out: dict[str, Any] = {"run_id": run_id, "workflow_status": info.status.name if info.status else None,
                           "started": info.start_time.isoformat(), "history_length": info.history_length}  # fmt: skip
    try:
        out.update(await asyncio.wait_for(handle.query("status"), query_timeout))
    except TimeoutError:
        out["status_error"] = f"no worker answered within {query_timeout:g} s (none may be running)"
    except Exception as exc:  # a closed run whose worker is gone, or a worker that cannot answer now
        out["status_error"] = str(exc)[:300]
    return out
