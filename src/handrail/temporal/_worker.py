"""A Temporal worker that runs handrail agents: the workflow, the activities, the ledger."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from handrail.temporal import _records, _registry
from handrail.temporal._activities import Activities
from handrail.temporal._catalog import AgentCatalog
from handrail.temporal._records import Recorder
from handrail.temporal._workflow import AgentRunWorkflow

if TYPE_CHECKING:
    from temporalio.client import Client

    from handrail.components.agents.agent import Agent
    from handrail.temporal._store import TemporalStore

__all__ = ["create_worker", "workflow_runner"]


def workflow_runner() -> SandboxedWorkflowRunner:
    """The sandbox handrail's workflow runs in: Temporal's restrictions, with every module passed through.

    The workflow module is the only code the sandbox loads per run. What the workflow runs of handrail (the step
    machine, schema validation, rule evaluation, templates) is deterministic by design and never calls a tool, a
    hook or a model (activities do), so re-importing it for every run would only cost time, and a lazy import of
    a library module during a run would be refused by the sandbox's import check.
    """
    return SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_all_modules())


def create_worker(
    client: Client,
    task_queue: str,
    agents: Mapping[str, Agent | Callable[[], Agent]] | AgentCatalog,
    store: TemporalStore,
    *,
    approvals: Any = None,
    max_concurrent_activities: int = 16,
    sticky_timeout: float = 1.0,
    tracing: bool = False,
    tracer_provider: Any = None,
    **worker_options: Any,
) -> Worker:
    """A worker for ``task_queue`` running ``agents`` (``{name: Agent or factory}``) with ``store`` as its ledger.

    Every agent is built and checked now (a bad one raises before the worker takes any work). Run it with
    ``async with worker: ...`` or ``await worker.run()``; the client must come from :func:`handrail.temporal.connect`
    with the same store (its claim check).

    Args:
        client: The Temporal client.
        task_queue: The queue this worker serves (clients start runs on it).
        agents: The agents by name, or an :class:`AgentCatalog`.
        store: The ledger (and blob) store every worker of the deployment shares.
        approvals: The approval service's store (a snapshot store object, or its URL): the runs' held calls are
            recorded there, so ``handrail serve`` on that store lists them and decides them by Update
            (:mod:`handrail.temporal._records`). None (the default): no records. Every worker of ``task_queue``
            must be given the same.
        max_concurrent_activities: Tool calls (and, unless ``max_concurrent_local_activities`` is given, model
            calls) run at once in this worker.
        sticky_timeout: Seconds a workflow task waits for this worker before another worker takes the run
            (Temporal's default is 10 s: the time a run stalls after its worker is killed).
        tracing: Trace the workflows and activities with OpenTelemetry (temporalio's ``TracingInterceptor``, to the
            global tracer provider), unless the client has that interceptor already (:func:`~handrail.temporal.
            connect` with ``tracing``: its workers inherit it). The approval records get the recording activity's
            trace context (docs/temporal.md, "Tracing").
        tracer_provider: Trace to this ``TracerProvider`` instead; implies ``tracing``.
        **worker_options: More ``temporalio.worker.Worker`` options.
    """
    catalog = agents if isinstance(agents, AgentCatalog) else AgentCatalog(agents)
    catalog.check_all()
    _registry.register(task_queue, catalog)
    # The activities are async and run their blocking parts (model, tool, ledger) in this pool: one thread per
    # model or tool call the worker takes at once (asyncio's default pool has only cpus + 4 threads).
    local = worker_options.pop("max_concurrent_local_activities", None) or max_concurrent_activities
    executor = worker_options.pop("activity_executor", None) or concurrent.futures.ThreadPoolExecutor(
        max_workers=max_concurrent_activities + local, thread_name_prefix="handrail-activity"
    )
    traced = tracing or tracer_provider is not None or _client_traced(client)
    if tracing or tracer_provider is not None:
        from handrail.temporal._tracing import has_tracing, interceptor

        if not has_tracing(client.config().get("interceptors")):
            given = interceptor(tracing, tracer_provider)
            worker_options["interceptors"] = [*worker_options.get("interceptors", ()), given]
    if traced and tracer_provider is None:  # the client's interceptor's provider, for handrail's spans in activities
        from handrail.temporal._tracing import provider_of

        tracer_provider = provider_of(client.config().get("interceptors"))
    activities = Activities(catalog, store, executor, tracing=traced, tracer_provider=tracer_provider).all()
    _registry.set_traced(task_queue, traced)
    if approvals is not None:
        activities.append(Recorder(catalog, _approval_store(approvals), tracing=traced).record_approvals)
        _records.enable(task_queue)
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[AgentRunWorkflow],
        activities=activities,
        activity_executor=executor,
        max_concurrent_activities=max_concurrent_activities,
        max_concurrent_local_activities=local,
        workflow_runner=worker_options.pop("workflow_runner", None) or workflow_runner(),
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=sticky_timeout),
        # The SDK sends a heartbeat at most every 0.8 x the heartbeat timeout unless this caps it: let the
        # activities' own cadence (a quarter of the timeout) through, or a 1 s timeout has 0.2 s of slack.
        max_heartbeat_throttle_interval=worker_options.pop("max_heartbeat_throttle_interval", timedelta(seconds=0.25)),
        **worker_options,
    )  # fmt: skip


def _client_traced(client: Any) -> bool:
    """Whether the client traces (a ``TracingInterceptor`` among its interceptors), without importing OpenTelemetry."""
    interceptors = client.config().get("interceptors") or ()
    if not any(type(i).__name__ == "TracingInterceptor" for i in interceptors):
        return False
    from handrail.temporal._tracing import has_tracing

    return has_tracing(interceptors)


def _approval_store(approvals: Any) -> Any:
    """The approval service's store: the one given, or the one its URL opens (it must keep approvals)."""
    from handrail.errors import ConfigurationTypeError
    from handrail.stores.approvals import ApprovalStore

    if isinstance(approvals, str):
        from handrail.stores import open_snapshot_store

        approvals = open_snapshot_store(approvals)
    if not isinstance(approvals, ApprovalStore):
        raise ConfigurationTypeError(
            f"approvals must be the approval service's store (a FileSnapshotStore, SQLiteSnapshotStore or "
            f"PostgresSnapshotStore, or its URL), got {type(approvals).__name__}."
        )
    import os
    from pathlib import Path

    from handrail.errors import ConfigurationError

    found = getattr(approvals, "path", None)  # a SQLite file: its reads succeed on a file that is not there
    path = Path(found) if isinstance(found, str | Path) and str(found) != ":memory:" else None
    if path is not None and not path.exists() and not (path.parent.is_dir() and os.access(path.parent, os.W_OK)):
        raise ConfigurationError(f"The approvals store {approvals!r} cannot be used: {path.parent} is not a "
                                 "writable directory.")  # fmt: skip
    try:  # now, not when the first record is due: a store that cannot be used would hold every run that asks
        approvals.count_approvals()
    except Exception as exc:
        raise ConfigurationError(f"The approvals store {approvals!r} cannot be used: {exc}") from exc
    return approvals
