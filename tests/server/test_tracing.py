"""Tracing in the approval service: a run paused in the service, decided over HTTP, resumed: one trace.

The spans go to a private TracerProvider with an in-memory exporter (``create_app(tracer_provider=...)``); with
tracing off the service never imports ``handrail.tracing`` (nor, without FastAPI, OpenTelemetry).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from handrail.server import create_app
from handrail.tracing import _conventions as c
from tests.server import _agents
from tests.server.conftest import bearer, client_for


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    made = InMemorySpanExporter()
    yield made
    made.clear()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    made = TracerProvider()
    made.add_span_processor(SimpleSpanProcessor(exporter))
    yield made
    made.shutdown()


@pytest.fixture
def app(store: Any, provider: TracerProvider) -> Any:
    _agents.SENT.clear()
    return create_app(store, agents={"payer": _agents.payer}, tracer_provider=provider)


@pytest.fixture
async def client(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(app) as made:
        yield made


def _handrail(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [
        s for s in exporter.get_finished_spans() if s.instrumentation_scope and s.instrumentation_scope.name == c.SCOPE
    ]


def _agent_spans(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(c.OP_INVOKE_AGENT)]


async def _run_status(app: Any, client: httpx.AsyncClient, token: str, run_id: str, *wanted: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        assert app.state.handrail.runs.wait(60), "the run did not settle"
        body: dict[str, Any] = (await client.get(f"/api/v1/runs/{run_id}", headers=bearer(token))).json()
        if body["run"]["status"] in wanted:
            return body
        assert time.monotonic() < deadline, body
        await asyncio.sleep(0.01)  # the decision's wake sends the run from another thread


async def _paused_run(app: Any, client: httpx.AsyncClient, tokens: dict[str, str], text: str) -> dict[str, Any]:
    started = await client.post("/api/v1/runs", json={"agent_name": "payer", "messages": [text]},
                                headers=bearer(tokens["approver"]))  # fmt: skip
    assert started.status_code == 201, started.text
    return await _run_status(app, client, tokens["viewer"], started.json()["run"]["run_id"], "paused")


async def test_a_decision_over_http_and_the_resume_read_as_one_trace(
    app: Any, client: httpx.AsyncClient, tokens: dict[str, str], exporter: InMemorySpanExporter, store: Any
) -> None:
    paused = await _paused_run(app, client, tokens, "pay 5")
    run_id = paused["run"]["run_id"]
    (approval,) = paused["pending"]
    before = _agent_spans(_handrail(exporter))
    assert before and before[-1].attributes is not None
    paused_span = before[-1]  # the run up to its approval pause (its span ended at the pause)
    assert paused_span.attributes is not None and paused_span.attributes[c.HANDRAIL_RUN_STATUS] == "paused"
    assert paused_span.context is not None
    carried = store.load(approval["snapshot_id"]).metadata["observers"][c.CARRY_TRACE]
    assert carried["traceparent"].split("-")[2] == f"{paused_span.context.span_id:016x}"

    decided = await client.post(f"/api/v1/approvals/{approval['id']}/decision", json={"decision": "approve"},
                                headers=bearer(tokens["other"]))  # fmt: skip
    assert decided.status_code == 200, decided.text
    finished = await _run_status(app, client, tokens["viewer"], run_id, "finished", "failed")
    assert finished["run"]["status"] == "finished" and _agents.SENT == [5]

    spans = _handrail(exporter)
    (decide,) = [s for s in spans if s.name == c.SPAN_APPROVAL_DECIDE]
    attributes = dict(decide.attributes or {})
    assert attributes[c.HANDRAIL_APPROVAL_DECIDED_BY] == "bob"  # the token's principal
    assert attributes[c.HANDRAIL_APPROVAL_DECISION] == "approved"
    assert attributes[c.HANDRAIL_APPROVAL_STATUS] == "approved"
    assert attributes[c.GEN_AI_TOOL_NAME] == "transfer"
    assert attributes[c.GEN_AI_TOOL_CALL_ID] == approval["tool_call_id"]
    assert attributes[c.HANDRAIL_RUN_ID] == run_id and attributes[c.HANDRAIL_SNAPSHOT_ID] == approval["snapshot_id"]
    assert attributes[c.HANDRAIL_APPROVAL_ID] == approval["id"]
    assert isinstance(attributes[c.HANDRAIL_APPROVAL_WAIT_MS], int) and attributes[c.HANDRAIL_APPROVAL_WAIT_MS] >= 0
    assert not any(tokens["other"] in str(v) for v in attributes.values())
    assert decide.context is not None and decide.parent is not None
    assert decide.parent.span_id == paused_span.context.span_id  # no span was active: a child of the paused one
    # linked to the paused span, and to FastAPI's span of the request (its trace: no traceparent came with it)
    assert decide.links[0].context.span_id == paused_span.context.span_id
    (request,) = [s for s in exporter.get_finished_spans() if s.name.startswith("POST /api/v1/approvals/")]
    assert request.context is not None and request.context.trace_id != paused_span.context.trace_id
    assert request.context.trace_id in [link.context.trace_id for link in decide.links]

    (resumed,) = [s for s in _agent_spans(spans) if s not in before]
    assert resumed.context is not None and resumed.parent is not None
    assert resumed.parent.span_id == decide.context.span_id  # resumed under the decision that released it
    assert paused_span.context.span_id in [link.context.span_id for link in resumed.links]
    assert len({s.context.trace_id for s in spans if s.context is not None}) == 1  # one story

    trail = (await client.get(f"/api/v1/approvals/{approval['id']}/audit", headers=bearer(tokens["admin"]))).json()
    (entry,) = [e for e in trail["entries"] if e["kind"] == "decided"]
    assert entry["details"]["trace"]["traceparent"].split("-")[2] == f"{decide.context.span_id:016x}"


async def test_a_refused_decision_is_an_error_span_in_the_trace_and_nothing_resumes(
    app: Any, client: httpx.AsyncClient, tokens: dict[str, str], exporter: InMemorySpanExporter
) -> None:
    paused = await _paused_run(app, client, tokens, "pay 7")
    (approval,) = paused["pending"]
    refused = await client.post(
        f"/api/v1/approvals/{approval['id']}/decision", json={"decision": "approve"}, headers=bearer(tokens["reader"])
    )  # fmt: skip (rita may decide read_* tools only)
    assert refused.status_code == 403
    (decide,) = [s for s in _handrail(exporter) if s.name == c.SPAN_APPROVAL_DECIDE]
    assert decide.status.status_code.name == "ERROR"
    assert (decide.attributes or {})[c.ERROR_TYPE] == "PermissionDeniedError"
    assert (decide.attributes or {})[c.HANDRAIL_APPROVAL_DECIDED_BY] == "rita"
    assert _agents.SENT == []


async def test_without_service_tracing_a_traced_agent_gets_no_decision_span(
    store: Any, tokens: dict[str, str], provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    def traced_payer(store: Any) -> Any:
        agent = _agents.payer(store)
        agent.tracer_provider = provider  # the agent's own tracing: the service adds nothing to it
        return agent

    app = create_app(store, agents={"payer": traced_payer})
    assert app.state.handrail.tracing is None
    async with client_for(app) as client:
        paused = await _paused_run(app, client, tokens, "pay 3")
        (approval,) = paused["pending"]
        decided = await client.post(f"/api/v1/approvals/{approval['id']}/decision", json={"decision": "approve"},
                                    headers=bearer(tokens["other"]))  # fmt: skip
        assert decided.status_code == 200
        await _run_status(app, client, tokens["viewer"], paused["run"]["run_id"], "finished")
        trail = (await client.get(f"/api/v1/approvals/{approval['id']}/audit", headers=bearer(tokens["admin"]))).json()
    assert all("trace" not in e["details"] for e in trail["entries"])
    spans = _handrail(exporter)
    assert len(_agent_spans(spans)) == 3  # to the first snapshot, to the approval pause, after the decision
    assert not [s for s in spans if s.name == c.SPAN_APPROVAL_DECIDE]


def test_with_tracing_off_the_service_never_imports_handrails_tracing_nor_the_resumer_opentelemetry(
    tmp_path: Any,
) -> None:
    """A run paused, decided and resumed by a Resumer (``handrail worker``), then by the HTTP app, tracing off.

    The resumer's process never imports OpenTelemetry; the HTTP app's imports it only through FastAPI (which has
    telemetry of its own), never ``handrail.tracing``.
    """
    script = textwrap.dedent(f"""
        import asyncio, sys
        from datetime import UTC, datetime
        from handrail.human_in_the_loop.service import ApprovalService
        from handrail.server import Resumer
        from handrail.stores import SQLiteSnapshotStore
        from handrail.stores.approvals import ApprovalFilter
        from tests.server import _agents

        def loaded(prefix):
            return sorted(m for m in sys.modules if m.startswith(prefix))

        store = SQLiteSnapshotStore({str(tmp_path / "s.db")!r})
        with Resumer(store, agents={{"payer": _agents.payer}}) as resumer:
            run = resumer.launcher.start_run("payer", ["pay 2"])
            assert resumer.launcher.wait(60)
            (approval,) = store.list_approvals(ApprovalFilter(run_id=run.run_id)).items
            ApprovalService(store).decide(approval.id, "approve", principal="ann")
            for _ in range(6000):
                if store.get_run(run.run_id).status == "finished":
                    break
                resumer.wake()
                assert resumer.launcher.wait(60)
        assert store.get_run(run.run_id).status == "finished"
        assert loaded("opentelemetry") == [] and loaded("handrail.tracing") == [], loaded("opentelemetry")

        import httpx
        from handrail.server import create_app

        token = store.add_token("bob", "approver", at=datetime.now(UTC))[1]
        app = create_app(store, agents={{"payer": _agents.payer}})

        async def main():
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
                auth = {{"Authorization": "Bearer " + token}}
                run = (await client.post("/api/v1/runs", json={{"agent_name": "payer", "messages": ["pay 2"]}},
                                         headers=auth)).json()["run"]
                assert app.state.handrail.runs.wait(60)
                (approval,) = (await client.get("/api/v1/runs/" + run["run_id"], headers=auth)).json()["pending"]
                decided = await client.post("/api/v1/approvals/" + approval["id"] + "/decision",
                                            json={{"decision": "approve"}}, headers=auth)
                assert decided.status_code == 200
                for _ in range(6000):
                    assert app.state.handrail.runs.wait(60)
                    body = (await client.get("/api/v1/runs/" + run["run_id"], headers=auth)).json()
                    if body["run"]["status"] == "finished":
                        break
                    await asyncio.sleep(0.01)
                assert body["run"]["status"] == "finished", body

        asyncio.run(main())
        app.state.handrail.runs.close()
        print(loaded("handrail.tracing"))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "[]"


def test_tracing_on_with_the_global_provider_enables_handrail_tracing_for_the_process(tmp_path: Any) -> None:
    """``create_app(tracing=True)`` (``handrail serve --tracing``): the global provider gets the same story."""
    script = textwrap.dedent(f"""
        import asyncio
        from datetime import UTC, datetime
        import httpx
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        import handrail.tracing
        from handrail.server import create_app
        from handrail.stores import SQLiteSnapshotStore
        from tests.server import _agents

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        store = SQLiteSnapshotStore({str(tmp_path / "s.db")!r})
        token = store.add_token("bob", "approver", at=datetime.now(UTC))[1]
        app = create_app(store, agents={{"payer": _agents.payer}}, tracing=True)
        assert handrail.tracing.is_enabled()

        async def main():
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
                auth = {{"Authorization": "Bearer " + token}}
                run = (await client.post("/api/v1/runs", json={{"agent_name": "payer", "messages": ["pay 2"]}},
                                         headers=auth)).json()["run"]
                assert app.state.handrail.runs.wait(60)
                (approval,) = (await client.get("/api/v1/runs/" + run["run_id"], headers=auth)).json()["pending"]
                decided = await client.post("/api/v1/approvals/" + approval["id"] + "/decision",
                                            json={{"decision": "approve"}}, headers=auth)
                assert decided.status_code == 200
                for _ in range(6000):
                    assert app.state.handrail.runs.wait(60)
                    body = (await client.get("/api/v1/runs/" + run["run_id"], headers=auth)).json()
                    if body["run"]["status"] == "finished":
                        break
                    await asyncio.sleep(0.01)
                assert body["run"]["status"] == "finished", body

        asyncio.run(main())
        app.state.handrail.runs.close()
        spans = [s for s in exporter.get_finished_spans() if s.instrumentation_scope.name == "handrail"]
        (decide,) = [s for s in spans if s.name == "handrail.approval.decide"]
        assert decide.attributes["handrail.approval.decided_by"] == "bob"
        (request,) = [s for s in exporter.get_finished_spans() if s.name.startswith("POST /api/v1/approvals/")]
        assert request.parent is None  # FastAPI's span of the request (no traceparent came): linked, not the parent
        assert request.context.trace_id in [link.context.trace_id for link in decide.links]  # the request's trace
        agents = [s for s in spans if s.name.startswith("invoke_agent")]
        assert len(agents) == 3, [s.name for s in spans]  # to the first snapshot, to the pause, after the decision
        assert agents[-1].parent.span_id == decide.context.span_id
        print(len({{s.context.trace_id for s in spans}}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "1"  # one trace
