"""Metrics across a pause: held calls pending until the resumed run decides them; the wait; outcomes unknown."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from handrail.components.agents import Agent
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import AgentSnapshot, load_snapshot
from handrail.errors import ConfigurationError, UnknownOutcomeError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.testing import ScriptedChatGenerator, call, reply, user
from handrail.tools import create_tool_from_function
from handrail.tracing import _conventions as c
from handrail.tracing._metrics import CARRY_METRICS, MetricsObserver
from tests.tracing._metric_points import Reader


def transfer(amount: int) -> str:
    """Send money.

    Args:
        amount: How much.
    """
    return f"sent {amount}"


def lookup(name: str) -> str:
    """Look a name up.

    Args:
        name: The name.
    """
    return f"{name} found"


STEP = reply(call("transfer", id="c1", amount=10), call("lookup", id="c2", name="bob"),
             call("transfer", id="c3", amount=99))  # fmt: skip


@pytest.fixture
def reader() -> Iterator[Reader]:
    memory = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[memory])
    yield Reader(memory, provider)
    provider.shutdown()


def _agent(replies: list[Any], directory: Path, observer: MetricsObserver) -> Agent:
    return Agent(
        chat_generator=ScriptedChatGenerator(replies),
        tools=[create_tool_from_function(transfer), create_tool_from_function(lookup)],
        confirmation_strategies={"transfer": BreakpointConfirmationStrategy(str(directory))},
        observers=[observer],
    )


def _paused_file(tmp_path: Path, observer: MetricsObserver) -> Path:
    with pytest.raises(HITLBreakpointException) as paused:
        _agent([STEP], tmp_path, observer).run([user("pay")])
    return Path(paused.value.snapshot_file_path)


def _pause(tmp_path: Path, observer: MetricsObserver) -> AgentSnapshot:
    return load_snapshot(_paused_file(tmp_path, observer))


def _decisions(reader: Reader) -> dict[str, int]:
    return {dict(k)[c.HANDRAIL_APPROVAL_DECISION]: n for k, n in reader.counts(c.METRIC_APPROVAL_DECISIONS).items()}


def _outcomes(reader: Reader) -> dict[tuple[str, str], int]:
    return {(dict(k)[c.GEN_AI_TOOL_NAME], dict(k)[c.HANDRAIL_TOOL_OUTCOME]): n
            for k, n in reader.counts(c.METRIC_TOOL_EXECUTIONS).items()}  # fmt: skip


def test_held_calls_are_pending_across_the_pause_and_decided_on_resume(tmp_path: Path, reader: Reader) -> None:
    observer = MetricsObserver(reader.provider)
    snap = _pause(tmp_path, observer)
    assert reader.total(c.METRIC_APPROVALS_PENDING) == 2
    carried = snap.metadata["observers"][CARRY_METRICS]
    assert sorted(carried["held"]) == ["c1", "c3"]
    [paused_run] = reader.points(c.METRIC_INVOKE_AGENT_DURATION)
    assert paused_run.attributes[c.HANDRAIL_RUN_STATUS] == "paused" and c.ERROR_TYPE not in paused_run.attributes
    assert _outcomes(reader) == {("lookup", "ok"): 1}

    decisions = [ToolExecutionDecision("transfer", True, "c1"),
                 ToolExecutionDecision("transfer", False, "c3", feedback="too much")]  # fmt: skip
    resumed = dataclasses.replace(snap, tool_execution_decisions=decisions)
    _agent([reply("Paid 10.")], tmp_path, MetricsObserver(reader.provider)).run([], snapshot=resumed)

    assert reader.total(c.METRIC_APPROVALS_PENDING) == 0
    assert _decisions(reader) == {"approved": 1, "rejected": 1}
    waits = reader.points(c.METRIC_APPROVAL_WAIT)
    assert sum(p.count for p in waits) == 2 and all(p.sum > 0 for p in waits)
    assert _outcomes(reader) == {("lookup", "ok"): 1, ("transfer", "ok"): 1, ("transfer", "refused"): 1}
    statuses = sorted(p.attributes[c.HANDRAIL_RUN_STATUS] for p in reader.points(c.METRIC_INVOKE_AGENT_DURATION))
    assert statuses == ["done", "paused"]


def test_an_edit_given_on_resume_counts_as_edited(tmp_path: Path, reader: Reader) -> None:
    observer = MetricsObserver(reader.provider)
    snap = _pause(tmp_path, observer)
    decisions = [ToolExecutionDecision("transfer", True, "c1", final_tool_params={"amount": 5}),
                 ToolExecutionDecision("transfer", True, "c3", final_tool_params={"amount": 99})]  # fmt: skip
    _agent([reply("ok")], tmp_path, observer).run(
        [], snapshot=dataclasses.replace(snap, tool_execution_decisions=decisions)
    )
    assert _decisions(reader) == {"edited": 1, "approved": 1}  # c3's params are the proposed ones: approved
    assert reader.total(c.METRIC_APPROVALS_PENDING) == 0


def test_a_call_held_again_stays_pending_and_keeps_when_it_was_first_held(tmp_path: Path, reader: Reader) -> None:
    observer = MetricsObserver(reader.provider)
    snap = _pause(tmp_path, observer)
    first_held = snap.metadata["observers"][CARRY_METRICS]["held"]["c3"]
    only_c1 = dataclasses.replace(snap, tool_execution_decisions=[ToolExecutionDecision("transfer", True, "c1")])
    with pytest.raises(HITLBreakpointException) as again:
        _agent([reply("x")], tmp_path, observer).run([], snapshot=only_c1)
    assert reader.total(c.METRIC_APPROVALS_PENDING) == 1
    assert _decisions(reader) == {"approved": 1}
    second = load_snapshot(again.value.snapshot_file_path)
    assert second.metadata["observers"][CARRY_METRICS]["held"] == {"c3": first_held}

    decided = dataclasses.replace(second, tool_execution_decisions=[ToolExecutionDecision("transfer", True, "c3")])
    _agent([reply("done")], tmp_path, observer).run([], snapshot=decided)
    assert reader.total(c.METRIC_APPROVALS_PENDING) == 0
    assert _decisions(reader) == {"approved": 2}


def test_a_resume_refused_before_deciding_leaves_the_calls_pending(tmp_path: Path, reader: Reader) -> None:
    observer = MetricsObserver(reader.provider)
    snap = _pause(tmp_path, observer)
    bad_edit = [ToolExecutionDecision("transfer", True, "c1", final_tool_params={"amount": "lots"}),
                ToolExecutionDecision("transfer", True, "c3")]  # fmt: skip
    with pytest.raises(ConfigurationError, match="refused"):
        _agent([reply("x")], tmp_path, observer).run(
            [], snapshot=dataclasses.replace(snap, tool_execution_decisions=bad_edit)
        )
    assert reader.total(c.METRIC_APPROVALS_PENDING) == 2
    assert _decisions(reader) == {}


def _crashed_in_c1(tmp_path: Path, observer: MetricsObserver) -> AgentSnapshot:
    """A paused run's snapshot as if its process died while running c1 (found ``running`` on resume)."""
    path = _paused_file(tmp_path, observer)
    data = json.loads(path.read_text())
    data["ledger"]["c1"]["status"] = "running"
    path.write_text(json.dumps(data))
    return dataclasses.replace(load_snapshot(path),
                               tool_execution_decisions=[ToolExecutionDecision("transfer", False, "c3")])  # fmt: skip


def test_a_call_found_running_counts_as_unknown_once_the_run_settles_it(tmp_path: Path, reader: Reader) -> None:
    observer = MetricsObserver(reader.provider)
    snap = _crashed_in_c1(tmp_path, observer)
    with pytest.raises(UnknownOutcomeError):
        _agent([reply("x")], tmp_path, observer).run([], snapshot=snap)
    assert ("transfer", "unknown") not in _outcomes(reader)  # not settled: the same snapshot is resumed again
    [failed] = [p for p in reader.points(c.METRIC_INVOKE_AGENT_DURATION)
                if p.attributes[c.HANDRAIL_RUN_STATUS] == "failed"]  # fmt: skip
    assert failed.attributes[c.ERROR_TYPE] == "UnknownOutcomeError"

    _agent([reply("x")], tmp_path, observer).run([], snapshot=snap, unknown_outcome="fail")
    assert _outcomes(reader) == {("lookup", "ok"): 1, ("transfer", "unknown"): 1, ("transfer", "refused"): 1}


def test_a_retried_unknown_call_counts_unknown_then_its_new_outcome(tmp_path: Path, reader: Reader) -> None:
    observer = MetricsObserver(reader.provider)
    snap = _crashed_in_c1(tmp_path, observer)
    _agent([reply("x")], tmp_path, observer).run([], snapshot=snap, unknown_outcome="retry")
    assert _outcomes(reader) == {("lookup", "ok"): 1, ("transfer", "unknown"): 1, ("transfer", "ok"): 1,
                                 ("transfer", "refused"): 1}  # fmt: skip


def test_a_decision_recorded_in_a_store_waited_until_it_was_recorded(tmp_path: Path, reader: Reader) -> None:
    from handrail.dataclasses._approval_fields import EXPIRED_FEEDBACK
    from handrail.stores.snapshot_file import FileSnapshotStore

    observer = MetricsObserver(reader.provider)
    path = _paused_file(tmp_path, observer)
    store = FileSnapshotStore(tmp_path)
    edit = ToolExecutionDecision("transfer", True, "c1", final_tool_params={"amount": 5})
    store.record_decision(path.stem, edit, decided_by="ana")
    expired = ToolExecutionDecision("transfer", False, "c3", feedback=EXPIRED_FEEDBACK)
    store.record_decision(path.stem, expired, decided_by="expiry")
    data = json.loads(path.read_text())
    decided_at = datetime.fromisoformat(data["ledger"]["c1"]["decided_at"]).timestamp()
    held = data["metadata"]["observers"][CARRY_METRICS]["held"]
    data["metadata"]["observers"][CARRY_METRICS]["held"] = dict.fromkeys(held, decided_at - 100.0)  # held 100 s
    path.write_text(json.dumps(data))

    _agent([reply("ok")], tmp_path, observer).run([], snapshot=load_snapshot(path))
    assert _decisions(reader) == {"edited": 1, "expired": 1}
    waits = {p.attributes[c.HANDRAIL_APPROVAL_DECISION]: p for p in reader.points(c.METRIC_APPROVAL_WAIT)}
    assert waits["edited"].sum == pytest.approx(100.0, abs=1e-3)  # until the store recorded it, not the resume
    assert waits["expired"].sum >= waits["edited"].sum  # recorded after the edit
    assert _outcomes(reader) == {("lookup", "ok"): 1, ("transfer", "ok"): 1, ("transfer", "refused"): 1}
    assert reader.total(c.METRIC_APPROVALS_PENDING) == 0
