"""handrail's own spans on Temporal: ``chat`` and ``execute_tool`` under the activities' spans, in the run's trace.

The activities tell a :class:`handrail.tracing.TracingObserver` in its effect-only mode about the model call or the
tool call they run, so the spans carry the attributes an in-process run gives them (compared here with one).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from handrail import temporal as ht
from handrail.tracing import _conventions as c
from handrail.tracing import observer_for
from tests.temporal._harness import Effects, Harness, transfer_agent
from tests.temporal.test_tracing import WORKFLOW, _one, _parent_chain, traced


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    made = TracerProvider()
    made.add_span_processor(SimpleSpanProcessor(exporter))
    yield made
    made.shutdown()


def _ours(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    return [s for s in spans if s.instrumentation_scope is not None and s.instrumentation_scope.name == c.SCOPE]


def _parent(span: ReadableSpan, spans: list[ReadableSpan]) -> str | None:
    chain = _parent_chain(span, spans)
    return chain[0] if chain else None


def _in_process(effects: Effects) -> list[ReadableSpan]:
    """The spans of the same agent run in this process (its policy lets the call through without asking)."""
    from handrail.dataclasses.chat_message import ChatMessage
    from handrail.human_in_the_loop.policies import NeverAskPolicy
    from tests.temporal._harness import asking

    exporter = InMemorySpanExporter()
    local = TracerProvider()
    local.add_span_processor(SimpleSpanProcessor(exporter))
    agent = transfer_agent(effects, strategy=asking(NeverAskPolicy()))()
    assert agent.run([ChatMessage.from_user("send 5")], observers=[observer_for(local)])["last_message"].text == "done"
    local.shutdown()
    return _ours(list(exporter.get_finished_spans()))


def _by_operation(spans: list[ReadableSpan], operation: str) -> list[ReadableSpan]:
    found = [s for s in spans if (s.attributes or {}).get(c.GEN_AI_OPERATION_NAME) == operation]
    return sorted(found, key=lambda s: (s.attributes or {}).get(c.HANDRAIL_STEP, 0))


_APPROVAL = {c.HANDRAIL_APPROVAL_REQUIRED, c.HANDRAIL_APPROVAL_DECISION, c.HANDRAIL_APPROVAL_DECIDED_BY,
             c.HANDRAIL_APPROVAL_WAIT_MS}  # fmt: skip


async def test_a_traced_run_has_chat_and_execute_tool_spans_under_its_activities(
    dev_server: Any, ledger_url: str, task_queue: str, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    effects = Effects()
    async with traced(dev_server.address, ledger_url, task_queue, {"demo": transfer_agent(effects)}, provider) as h:
        with provider.get_tracer("tests").start_as_current_span("the caller"):
            run_id = await h.start()
        await h.waiting(run_id)
        assert (await h.decide(run_id, "c1"))["status"] == "decided"
        result = await h.result(run_id)
    assert result["answer"] == "done" and effects.done == [("transfer", 5)]

    spans = list(exporter.get_finished_spans())
    run_trace = _one(spans, f"StartWorkflow:{WORKFLOW}").context.trace_id  # type: ignore[union-attr]
    ours = _ours(spans)
    assert ours and all(s.context is not None and s.context.trace_id == run_trace for s in ours)
    chats = _by_operation(ours, c.OP_CHAT)
    assert len(chats) == 2  # before the approval and after the tool ran
    for chat in chats:
        assert _parent(chat, spans) == "RunActivity:handrail.call_model"
    assert [(s.attributes or {})[c.HANDRAIL_STEP] for s in chats] == [1, 2]
    (tool,) = _by_operation(ours, c.OP_EXECUTE_TOOL)
    assert tool.name == "execute_tool transfer"
    assert _parent(tool, spans) == "RunActivity:handrail.run_tool"
    attributes = dict(tool.attributes or {})
    assert attributes[c.GEN_AI_TOOL_NAME] == "transfer" and attributes[c.GEN_AI_TOOL_CALL_ID] == "c1"
    assert attributes[c.HANDRAIL_TOOL_EXECUTED] is True
    assert c.GEN_AI_TOOL_CALL_ARGUMENTS not in attributes  # no content unless asked for
    # The approval happened in the workflow: the tool's span does not claim the call was never asked.
    assert not _APPROVAL & set(attributes)

    # The same attributes as the same agent's spans in process (made by the same code).
    local = _in_process(Effects())
    local_chats = _by_operation(local, c.OP_CHAT)
    assert [s.name for s in chats] == [s.name for s in local_chats]
    assert [dict(s.attributes or {}) for s in chats] == [dict(s.attributes or {}) for s in local_chats]
    (local_tool,) = _by_operation(local, c.OP_EXECUTE_TOOL)
    assert local_tool.name == tool.name
    assert attributes == {k: v for k, v in (local_tool.attributes or {}).items() if k not in _APPROVAL}

    # The run's own span: made by the workflow when it ended, in the run's trace.
    (run,) = [s for s in spans if (s.attributes or {}).get(c.GEN_AI_OPERATION_NAME) == c.OP_INVOKE_AGENT]
    assert run.name == "invoke_agent demo"
    assert run.context is not None and run.context.trace_id == run_trace
    assert f"StartWorkflow:{WORKFLOW}" in _parent_chain(run, spans)
    got = dict(run.attributes or {})
    assert got[c.GEN_AI_AGENT_NAME] == "demo" and got[c.HANDRAIL_RUN_ID] == run_id == got[c.GEN_AI_CONVERSATION_ID]
    ended = (got[c.HANDRAIL_RUN_STATUS], got[c.HANDRAIL_RUN_STEPS], got[c.HANDRAIL_RUN_EXIT_REASON])
    assert ended == ("done", 2, "text")
    (local_run,) = _by_operation(local, c.OP_INVOKE_AGENT)
    same = {c.GEN_AI_OPERATION_NAME, c.GEN_AI_PROVIDER_NAME, c.GEN_AI_REQUEST_MODEL}
    assert {k: v for k, v in got.items() if k in same} == {k: v for k, v in (local_run.attributes or {}).items()
                                                           if k in same}  # fmt: skip


async def test_a_worker_on_a_traced_client_traces_to_the_clients_provider(
    dev_server: Any, ledger_url: str, task_queue: str, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    effects = Effects()
    store = ht.open_temporal_store(ledger_url)
    client = await ht.connect(dev_server.address, store, tracer_provider=provider)
    try:
        async with ht.create_worker(client, task_queue, {"demo": transfer_agent(effects)}, store):  # no tracing=
            h = Harness(client, task_queue, store)
            run_id = await h.start()
            await h.waiting(run_id)
            await h.decide(run_id, "c1")
            await h.result(run_id)
    finally:
        store.close()
    ours = _ours(list(exporter.get_finished_spans()))
    assert [s.name for s in _by_operation(ours, c.OP_EXECUTE_TOOL)] == ["execute_tool transfer"]
    assert len(_by_operation(ours, c.OP_CHAT)) == 2


async def test_hook_points_have_their_spans_and_a_failed_run_its_invoke_agent_span(
    dev_server: Any, ledger_url: str, task_queue: str, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    from temporalio.client import WorkflowFailureError

    from handrail.dataclasses.state import State
    from handrail.hooks import hook

    calls: list[int] = []

    @hook
    def second_fails(state: State) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("the second model call is refused")

    effects = Effects()
    agents = {"demo": transfer_agent(effects, hooks={"before_llm": [second_fails]})}
    async with traced(dev_server.address, ledger_url, task_queue, agents, provider) as h:
        run_id = await h.start()
        await h.waiting(run_id)
        await h.decide(run_id, "c1")
        with pytest.raises(WorkflowFailureError):
            await h.result(run_id)
    assert effects.done == [("transfer", 5)]

    spans = list(exporter.get_finished_spans())
    hooks = [s for s in _ours(spans) if s.name == f"{c.SPAN_HOOK} before_llm"]
    assert len(hooks) == 2
    assert all((s.attributes or {})[c.HANDRAIL_HOOK_POINT] == "before_llm" for s in hooks)
    assert all(_parent(s, spans) == "RunActivity:handrail.run_hooks" for s in hooks)
    assert sorted(s.status.status_code.name for s in hooks) == ["ERROR", "UNSET"]
    (run,) = [s for s in spans if s.name == "invoke_agent demo"]
    assert (run.attributes or {})[c.HANDRAIL_RUN_STATUS] == "failed"
    assert (run.attributes or {})[c.ERROR_TYPE] == "ApplicationError"
    assert (run.attributes or {})[c.HANDRAIL_RUN_STEPS] == 1
