"""One id finds a run chain's records across a pause: the paused run's pause and end say its durable id, and the
runs resuming it log under that id (the chain's first snapshot id)."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from handrail import Agent
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function


def refund(amount: int) -> str:
    """Refund an amount."""
    return f"refunded {amount}"


def test_grepping_the_durable_id_finds_the_pause_and_every_resumed_record(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="handrail.run")
    asks = [ChatMessage.from_assistant(tool_calls=[ToolCall("refund", {"amount": n}, id=f"r{n}")]) for n in (1, 2)]
    agent = Agent(chat_generator=ScriptedChatGenerator([*asks, ChatMessage.from_assistant("done")]),
                  tools=[create_tool_from_function(refund)],
                  confirmation_strategies={"refund": BreakpointConfirmationStrategy(str(tmp_path))})  # fmt: skip
    with pytest.raises(HITLBreakpointException) as first:
        agent.run([ChatMessage.from_user("go")])
    s1 = first.value.snapshot
    assert s1 is not None and s1.run_id is not None
    durable = s1.run_id
    fresh = [r for r in caplog.records if r.name.startswith("handrail.run")]
    caplog.clear()
    with pytest.raises(HITLBreakpointException) as second:
        agent.run(
            [], snapshot=dataclasses.replace(s1, tool_execution_decisions=[ToolExecutionDecision("refund", True, "r1")])
        )
    s2 = second.value.snapshot
    assert s2 is not None and s2.snapshot_id != s1.snapshot_id and s2.run_id == durable
    agent.run(
        [], snapshot=dataclasses.replace(s2, tool_execution_decisions=[ToolExecutionDecision("refund", True, "r2")])
    )
    resumed = [r for r in caplog.records if r.name.startswith("handrail.run")]

    by_event = {r.event: r for r in fresh}
    for event in ("pause", "run_ended"):  # what the fresh run says once its first snapshot is written
        record = by_event[event]
        assert record.durable_run_id == durable
        assert f"durable_run_id={durable}" in record.getMessage(), record.getMessage()
    assert by_event["run_started"].run_id != durable  # not known when it started: its own id
    assert {r.run_id for r in fresh} == {by_event["run_started"].run_id}  # one id on every record of one run
    assert resumed and {r.run_id for r in resumed} == {durable}  # both resumed runs: the chain's id, not s2's
    assert all(durable in r.getMessage() for r in resumed if r.event in ("run_started", "run_ended"))
