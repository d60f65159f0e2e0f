"""handrail on Temporal: agent runs as durable workflows, approvals as Updates, tools exactly once.

Install with ``pip install 'handrail[temporal]'``. A worker runs the agents it knows by name::

    store = open_temporal_store("sqlite:///ledger.db")
    client = await connect("127.0.0.1:7233", store)
    async with create_worker(client, "agents", {"demo": agent}, store):
        run_id = await start_run(client, "demo", "What is 2+2?", task_queue="agents")
        print((await get_result(client, run_id))["answer"])

See docs/temporal.md. Nothing here is imported by ``import handrail``.
"""

import typing as _typing

__all__ = [
    "AgentCatalog",
    "AgentRunWorkflow",
    "DecisionRefused",
    "RunEndedError",
    "RunExistsError",
    "RunInput",
    "RunNotFoundError",
    "RunOptions",
    "TemporalUnavailableError",
    "connect",
    "create_worker",
    "decide",
    "describe",
    "get_result",
    "open_temporal_store",
    "start_run",
]

_WHERE = {
    "AgentCatalog": "_catalog", "AgentRunWorkflow": "_workflow", "DecisionRefused": "_client",
    "RunEndedError": "_client", "RunExistsError": "_client", "RunNotFoundError": "_client",
    "TemporalUnavailableError": "_client",
    "RunInput": "_types", "RunOptions": "_types", "connect": "_client",
    "create_worker": "_worker", "decide": "_client", "describe": "_client", "get_result": "_client",
    "open_temporal_store": "_store", "start_run": "_client",
}  # fmt: skip

if _typing.TYPE_CHECKING:
    from handrail.temporal._catalog import AgentCatalog
    from handrail.temporal._client import (
        DecisionRefused,
        RunEndedError,
        RunExistsError,
        RunNotFoundError,
        TemporalUnavailableError,
        connect,
        decide,
        describe,
        get_result,
        start_run,
    )
    from handrail.temporal._store import open_temporal_store
    from handrail.temporal._types import RunInput, RunOptions
    from handrail.temporal._worker import create_worker
    from handrail.temporal._workflow import AgentRunWorkflow


def __getattr__(name: str) -> object:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'handrail.temporal' has no attribute {name!r}")
    try:
        import temporalio  # noqa: F401
    except ImportError as exc:
        raise ImportError("handrail.temporal needs the temporal extra: pip install 'handrail[temporal]'.") from exc
    import importlib

    return getattr(importlib.import_module(f"handrail.temporal.{module}"), name)


def __dir__() -> list[str]:
    return sorted(__all__)
