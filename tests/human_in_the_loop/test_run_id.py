"""Every durable run has a run id: the id of the first snapshot of its chain, carried into every continuation."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, load_snapshot
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.stores import FileSnapshotStore
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.cases._helpers import asst, user
from tests.common_tools import transfer

FIXTURE = Path(__file__).parents[1] / "fixtures" / "snapshots" / "v1_tool_pause.json"


def _agent(replies: list[ChatMessage], store: Any, metadata: dict[str, Any] | None = None) -> Agent:
    strategy = BreakpointConfirmationStrategy(snapshot_store=store, metadata=metadata)
    return Agent(chat_generator=ScriptedChatGenerator(replies), tools=[create_tool_from_function(transfer)],
                 confirmation_strategies={"transfer": strategy})  # fmt: skip


def test_a_run_keeps_the_id_of_its_first_snapshot_through_every_pause(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path)
    with pytest.raises(HITLBreakpointException) as first:
        _agent([asst(calls=[("c1", "transfer", {"amount": 1})])], store).run([user("pay")])
    first_id = first.value.snapshot.snapshot_id
    assert first_id is not None and first.value.snapshot.run_id == first_id
    assert "run_id" not in store.load(first_id).metadata  # the first of its chain is its own run
    store.record_decision(first_id, ToolExecutionDecision("transfer", True, "c1"), decided_by="ana")
    with pytest.raises(HITLBreakpointException) as second:
        _agent([asst(calls=[("c2", "transfer", {"amount": 2})])], store).run([], snapshot=store.load(first_id))
    second_id = second.value.snapshot.snapshot_id
    assert second_id != first_id and store.load(second_id).run_id == first_id
    assert store.load(first_id).continued_in == second_id and store.load(first_id).run_id == first_id
    store.record_decision(second_id, ToolExecutionDecision("transfer", True, "c2"), decided_by="ana")
    with pytest.raises(HITLBreakpointException) as third:
        _agent([asst(calls=[("c3", "transfer", {"amount": 3})])], store).run([], snapshot=store.load(second_id))
    assert store.load(third.value.snapshot.snapshot_id or "").run_id == first_id


def test_a_strategy_cannot_set_the_run_id(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path)
    with pytest.raises(HITLBreakpointException) as info:
        _agent([asst(calls=[("c1", "transfer", {"amount": 1})])], store, {"run_id": "mine", "ticket": 7}).run(
            [user("pay")]
        )
    snapshot = store.load(info.value.snapshot.snapshot_id or "")
    assert snapshot.metadata == {"ticket": 7} and snapshot.run_id == snapshot.snapshot_id


def test_an_old_snapshot_without_a_run_id_is_its_own_run(tmp_path: Path) -> None:
    path = tmp_path / "v1_tool_pause.json"
    shutil.copy(FIXTURE, path)
    snapshot = load_snapshot(path)
    assert snapshot.run_id == "v1_tool_pause" == snapshot.snapshot_id
