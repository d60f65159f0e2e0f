"""Saved histories of golden runs replay on today's workflow: a change that would break running workflows fails here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from handrail.temporal import _registry
from handrail.temporal._catalog import AgentCatalog
from handrail.temporal._worker import workflow_runner
from handrail.temporal._workflow import AgentRunWorkflow
from tests.temporal import _golden

HISTORIES = Path(__file__).parent / "histories"


def _histories() -> list[tuple[str, int, dict[str, Any]]]:
    out = []
    for path in sorted(HISTORIES.glob("*.json")):
        for n, history in enumerate(json.loads(path.read_text())):
            out.append((path.stem, n, history))
    return out


def test_every_golden_scenario_has_a_saved_history() -> None:
    assert {name for name, _, _ in _histories()} == set(_golden.SCENARIOS)
    assert len([1 for name, _, _ in _histories() if name == "long"]) >= 2  # it continued as new at least once


@pytest.mark.parametrize(("name", "n", "history"), _histories(), ids=lambda v: v if isinstance(v, str | int) else "")
async def test_a_saved_history_replays_without_nondeterminism(name: str, n: int, history: dict[str, Any]) -> None:
    catalog = AgentCatalog(_golden.agents())
    catalog.check_all()  # as create_worker does: agents are built outside any workflow
    _registry.register(_registry.REPLAY, catalog)
    try:
        replayer = Replayer(workflows=[AgentRunWorkflow], workflow_runner=workflow_runner())
        result = await replayer.replay_workflow(WorkflowHistory.from_json(f"golden-{name}", history),
                                                raise_on_replay_failure=False)  # fmt: skip
    finally:
        _registry.unregister(_registry.REPLAY, catalog)
    assert result.replay_failure is None, f"{name}[{n}] no longer replays: {result.replay_failure}"
