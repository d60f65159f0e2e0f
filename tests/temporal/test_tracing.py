"""Tracing on Temporal: a run's client start, workflow, activities and approval decision read as one trace.

The client and the worker get temporalio's ``TracingInterceptor`` (``connect(tracer_provider=...)``,
``create_worker(tracer_provider=...)``) with a private TracerProvider and an in-memory exporter; the approval
service decides over HTTP (the in-process app) by a ``decide`` Update.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from handrail import temporal as ht
from handrail.stores import SQLiteSnapshotStore
from handrail.tracing import _conventions as c
from tests.temporal._harness import Effects, Harness, transfer_agent

WORKFLOW = "handrail.AgentRun"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    made = TracerProvider()
    made.add_span_processor(SimpleSpanProcessor(exporter))
    yield made
    made.shutdown()


@contextlib.asynccontextmanager
async def traced(address: str, ledger_url: str, task_queue: str, agents: Any, provider: TracerProvider,
                 **worker_options: Any) -> AsyncIterator[Harness]:  # fmt: skip
    store = ht.open_temporal_store(ledger_url)
    client = await ht.connect(address, store, tracer_provider=provider)
    try:
        async with ht.create_worker(client, task_queue, agents, store, tracer_provider=provider, **worker_options):
            yield Harness(client, task_queue, store)
    finally:
        store.close()


def _named(spans: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def _one(spans: list[ReadableSpan], name: str) -> ReadableSpan:
    found = _named(spans, name)
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


def _parent_chain(span: ReadableSpan, spans: list[ReadableSpan]) -> list[str]:
    """The names of ``span``'s ancestors, nearest first."""
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    names: list[str] = []
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        names.append(span.name)
    return names


async def test_a_run_that_waits_for_a_decision_is_one_trace_from_its_start_to_its_end(
    dev_server: Any, ledger_url: str, task_queue: str, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    effects = Effects()
    tracer = provider.get_tracer("tests")
    async with traced(dev_server.address, ledger_url, task_queue, {"demo": transfer_agent(effects)}, provider) as h:
        with tracer.start_as_current_span("the caller"):
            run_id = await h.start()
        await h.waiting(run_id)
        with tracer.start_as_current_span("the decider") as decider:  # another trace: a person, later
            assert (await h.decide(run_id, "c1"))["status"] == "decided"
        result = await h.result(run_id)
    assert result["answer"] == "done" and effects.done == [("transfer", 5)]

    spans = list(exporter.get_finished_spans())
    caller = _one(spans, "the caller")
    assert caller.context is not None
    run_trace = caller.context.trace_id
    start = _one(spans, f"StartWorkflow:{WORKFLOW}")
    assert _parent_chain(start, spans) == ["the caller"]
    model_calls = _named(spans, "RunActivity:handrail.call_model")
    tool_call = _one(spans, "RunActivity:handrail.run_tool")
    assert len(model_calls) == 2  # before the approval and after it
    for span in [_one(spans, f"RunWorkflow:{WORKFLOW}"), *model_calls, tool_call]:
        assert span.context is not None and span.context.trace_id == run_trace, span.name
        assert f"StartWorkflow:{WORKFLOW}" in _parent_chain(span, spans), span.name
    # The decision, sent days later from elsewhere: the workflow's handler is in the run's trace, linked to it.
    handled = _one(spans, "HandleUpdate:decide")
    assert handled.context is not None and handled.context.trace_id == run_trace
    sent = _one(spans, "StartWorkflowUpdate:decide")
    assert _parent_chain(sent, spans) == ["the decider"]
    assert [link.context.span_id for link in handled.links] == [sent.context.span_id if sent.context else None]
    assert decider.get_span_context().trace_id != run_trace


async def test_without_tracing_the_client_and_worker_make_no_span(
    dev_server: Any, ledger_url: str, task_queue: str, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    effects = Effects()
    store = ht.open_temporal_store(ledger_url)
    client = await ht.connect(dev_server.address, store)
    assert not any(type(i).__name__ == "TracingInterceptor" for i in client.config().get("interceptors") or ())
    try:
        async with ht.create_worker(client, task_queue, {"demo": transfer_agent(effects)}, store):
            h = Harness(client, task_queue, store)
            with provider.get_tracer("tests").start_as_current_span("the caller"):
                run_id = await h.start()
            await h.waiting(run_id)
            await h.decide(run_id, "c1")
            await h.result(run_id)
    finally:
        store.close()
    assert [s.name for s in exporter.get_finished_spans()] == ["the caller"]


async def test_a_decision_through_the_service_is_in_the_workflows_trace(
    dev_server: Any, ledger_url: str, task_queue: str, provider: TracerProvider, exporter: InMemorySpanExporter,
    tmp_path: Path,
) -> None:  # fmt: skip
    from handrail.server import create_app

    service = SQLiteSnapshotStore(tmp_path / "service.db")
    token = service.add_token("ann", "approver", at=datetime.now(UTC))[1]
    app = create_app(service, temporal=dev_server.address, tracer_provider=provider, resume=False)
    effects = Effects()
    agents = {"demo": transfer_agent(effects)}
    try:
        async with traced(dev_server.address, ledger_url, task_queue, agents, provider, approvals=service) as h:
            run_id = await h.start()
            await h.waiting(run_id)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as api:
                auth = {"Authorization": f"Bearer {token}"}
                for _ in range(400):
                    items = (await api.get("/api/v1/approvals", params={"run_id": run_id}, headers=auth)).json()
                    if items["items"]:
                        break
                    await asyncio.sleep(0.05)
                (approval,) = items["items"]
                decided = await api.post(f"/api/v1/approvals/{approval['id']}/decision",
                                         json={"decision": "approve"}, headers=auth)  # fmt: skip
                assert decided.status_code == 200, decided.text
            result = await h.result(run_id)
    finally:
        app.state.handrail.service.backends["temporal"].close()
        service.close()
    assert result["answer"] == "done" and effects.done == [("transfer", 5)]

    spans = list(exporter.get_finished_spans())
    start = _one(spans, f"StartWorkflow:{WORKFLOW}")
    assert start.context is not None
    run_trace = start.context.trace_id
    decide = _one(spans, c.SPAN_APPROVAL_DECIDE)
    assert (decide.attributes or {})[c.HANDRAIL_APPROVAL_DECIDED_BY] == "ann"
    assert decide.context is not None and decide.context.trace_id == run_trace
    assert "RunActivity:handrail.record_approvals" in _parent_chain(decide, spans)
    sent = _one(spans, "StartWorkflowUpdate:decide")
    assert _parent_chain(sent, spans)[0] == c.SPAN_APPROVAL_DECIDE
    handled = _one(spans, "HandleUpdate:decide")
    assert sent.context is not None and [link.context.span_id for link in handled.links] == [sent.context.span_id]
    elsewhere = {s.name for s in spans if s.context is not None and s.context.trace_id != run_trace
                 and not (s.instrumentation_scope and s.instrumentation_scope.name.startswith("fastapi"))}  # fmt: skip
    assert elsewhere <= {"QueryWorkflow:status", "HandleQuery:status"}  # one story (the test's polls aside)
    (request,) = _named(spans, "POST /api/v1/approvals/{approval_id}/decision")  # FastAPI's: its own trace, linked
    assert request.context is not None and request.context.trace_id in [link.context.trace_id for link in decide.links]
