"""A pause ends the run's span; the resumed run's span links to it, in the same trace (TR-T6, TR-8)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import StatusCode

from handrail.components.agents import Agent
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import load_snapshot
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.stores import open_snapshot_store
from handrail.testing import ScriptedChatGenerator, call, reply, user
from tests.tracing._span_helpers import WEATHER, Traced, assert_tree

STEP = reply(call("get_weather", id="c1", city="Paris"), call("get_weather", id="c2", city="Oslo"))


def _agent(replies: list[Any], store: Any, provider: Any) -> Agent:
    strategy = BreakpointConfirmationStrategy(snapshot_store=store)
    return Agent(chat_generator=ScriptedChatGenerator(replies), tools=[WEATHER], tracer_provider=provider,
                 confirmation_strategies={"get_weather": strategy})  # fmt: skip


def _pause(store: Any) -> tuple[Traced, HITLBreakpointException]:
    first = Traced()
    with pytest.raises(HITLBreakpointException) as info:
        _agent([STEP], store, first.provider).run([user("weather in Paris and Oslo?")])
    return first, info.value


def _check_paused(first: Traced, paused: HITLBreakpointException) -> Any:
    agent = first.agent()
    attributes = agent.attributes or {}
    assert attributes["handrail.run.status"] == "paused"
    assert agent.status.status_code is StatusCode.UNSET
    assert attributes["handrail.snapshot.id"] == paused.snapshot.snapshot_id
    assert attributes["handrail.pending.call_ids"] == ("c1", "c2")
    pause = first.one("handrail.pause")
    assert pause.status.status_code is StatusCode.UNSET  # a pause is not an error
    assert_tree(first)
    first.assert_all_ended()
    return agent


def _check_resumed(first_agent: Any, second: Traced, snapshot_id: str) -> None:
    resumed = second.agent()
    assert [link.context.span_id for link in resumed.links] == [first_agent.context.span_id]
    assert resumed.context.trace_id == first_agent.context.trace_id  # no active span: the same trace
    assert resumed.parent is not None and resumed.parent.span_id == first_agent.context.span_id
    attributes = resumed.attributes or {}
    assert attributes["handrail.run.resumed_from"] == snapshot_id
    assert attributes["handrail.run.status"] == "done"
    tools = {(s.attributes or {})["gen_ai.tool.call.id"]: s.attributes or {} for s in second.named(
        "execute_tool get_weather")}  # fmt: skip
    assert {k: (a["handrail.approval.decision"], a["handrail.tool.executed"]) for k, a in tools.items()} == {
        "c1": ("approved", True), "c2": ("rejected", False)}  # fmt: skip
    assert tools["c1"]["handrail.approval.decided_by"] == "ana"
    assert_tree(second)
    second.assert_all_ended()


DECISIONS = [ToolExecutionDecision("get_weather", True, "c1", decided_by="ana"),
             ToolExecutionDecision("get_weather", False, "c2", feedback="not Oslo", decided_by="ana")]  # fmt: skip


def test_pause_to_a_file_then_resume_in_a_fresh_provider(tmp_path: Path) -> None:
    first, paused = _pause(str(tmp_path))
    first_agent = _check_paused(first, paused)
    snapshot = load_snapshot(paused.snapshot_file_path)
    carried = snapshot.metadata["observers"]["trace"]
    assert carried["traceparent"].split("-")[1] == f"{first_agent.context.trace_id:032x}"
    assert set(carried) == {"traceparent", "tracestate"}  # only the trace context: never an exporter's settings
    second = Traced()
    decided = dataclasses.replace(snapshot, tool_execution_decisions=DECISIONS)
    result = _agent([reply("Sunny in Paris.")], str(tmp_path), second.provider).run([], snapshot=decided)
    assert result["exit_reason"] == "text"
    assert snapshot.snapshot_id is not None
    _check_resumed(first_agent, second, snapshot.snapshot_id)


def test_pause_into_sqlite_decided_in_the_store_then_resumed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/approvals.db"
    first, paused = _pause(url)
    first_agent = _check_paused(first, paused)
    approver = open_snapshot_store(url)
    try:
        snapshot_id = paused.snapshot.snapshot_id
        assert snapshot_id is not None
        for decision in DECISIONS:
            approver.record_decision(snapshot_id, decision, decided_by="ana")
        snapshot = approver.load(snapshot_id)
    finally:
        approver.close()
    second = Traced()
    _agent([reply("Sunny in Paris.")], url, second.provider).run([], snapshot=snapshot)
    _check_resumed(first_agent, second, snapshot_id)


def test_a_resumed_run_under_an_active_span_is_its_child_and_still_links(tmp_path: Path) -> None:
    first, paused = _pause(str(tmp_path))
    first_agent = first.agent()
    second = Traced()
    snapshot = dataclasses.replace(load_snapshot(paused.snapshot_file_path), tool_execution_decisions=DECISIONS)
    caller = second.provider.get_tracer("caller").start_span("request")
    with trace.use_span(caller, end_on_exit=True):
        _agent([reply("ok")], str(tmp_path), second.provider).run([], snapshot=snapshot)
    resumed = second.agent()
    assert resumed.parent is not None and resumed.parent.span_id == caller.get_span_context().span_id
    assert [link.context.span_id for link in resumed.links] == [first_agent.context.span_id]
    second.assert_all_ended()


def test_a_run_paused_twice_links_each_part_to_the_one_before(tmp_path: Path) -> None:
    first, paused = _pause(str(tmp_path))
    snapshot = load_snapshot(paused.snapshot_file_path)
    second = Traced()
    only_c1 = dataclasses.replace(snapshot, tool_execution_decisions=DECISIONS[:1])
    with pytest.raises(HITLBreakpointException) as again:
        _agent([reply("ok")], str(tmp_path), second.provider).run([], snapshot=only_c1)
    middle = second.agent()
    assert (middle.attributes or {})["handrail.pending.call_ids"] == ("c2",)
    third = Traced()
    last = dataclasses.replace(load_snapshot(again.value.snapshot_file_path), tool_execution_decisions=DECISIONS[1:])
    _agent([reply("ok")], str(tmp_path), third.provider).run([], snapshot=last)
    end = third.agent()
    assert [link.context.span_id for link in end.links] == [middle.context.span_id]
    assert end.context.trace_id == middle.context.trace_id == first.agent().context.trace_id
