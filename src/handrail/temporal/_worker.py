"""A Temporal worker that runs handrail agents: the workflow, the activities, the ledger."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from handrail.temporal import _registry
from handrail.temporal._activities import Activities
from handrail.temporal._catalog import AgentCatalog
from handrail.temporal._workflow import AgentRunWorkflow

if TYPE_CHECKING:
    from temporalio.client import Client

    from handrail.components.agents.agent import Agent
    from handrail.temporal._store import TemporalStore

__all__ = ["PASSTHROUGH", "create_worker", "workflow_runner"]

PASSTHROUGH = ("handrail", "jsonschema", "referencing", "rpds", "pydantic", "pydantic_core", "yaml", "jinja2",
               "markupsafe", "rich", "click", "annotated_types", "typing_extensions", "attrs", "attr")  # fmt: skip
"""Modules the workflow sandbox shares with the worker instead of re-importing them for every run: handrail's
deterministic step machine and what it imports."""


def workflow_runner() -> SandboxedWorkflowRunner:
    """The sandbox handrail's workflow runs in (Temporal's defaults, handrail's modules passed through)."""
    return SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH))


def create_worker(
    client: Client,
    task_queue: str,
    agents: Mapping[str, Agent | Callable[[], Agent]] | AgentCatalog,
    store: TemporalStore,
    *,
    max_concurrent_activities: int = 16,
    sticky_timeout: float = 1.0,
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
        max_concurrent_activities: Tool calls (and, unless ``max_concurrent_local_activities`` is given, model
            calls) run at once in this worker.
        sticky_timeout: Seconds a workflow task waits for this worker before another worker takes the run
            (Temporal's default is 10 s: the time a run stalls after its worker is killed).
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
    activities = Activities(catalog, store, executor)
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[AgentRunWorkflow],
        activities=activities.all(),
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
