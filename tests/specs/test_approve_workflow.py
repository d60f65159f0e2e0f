"""approve="workflow": the strategies a Temporal worker's agents get carry every setting and write nowhere."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from handrail.errors import RunError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.human_in_the_loop._approval_settings import approval_settings
from handrail.specs import SpecError, build_agent, load_agent_spec
from handrail.specs._confirmation import WORKFLOW_DECIDES
from handrail.testing import ScriptedChatGenerator

FILE = """\
tools: [calculator, search]
confirmation:
  calculator:
    quorum: 2
    initiator_may_approve: false
    allowed_decisions: [approve, reject]
    expires_after_seconds: 60
    description: Check the sum.
  search: never
"""


def test_the_team_settings_survive_where_a_console_refuses_them(tmp_path: Path) -> None:
    path = tmp_path / "team.yaml"
    path.write_text(FILE, encoding="utf-8")
    spec = load_agent_spec(path)
    with pytest.raises(SpecError, match="settings of the approval service"):
        build_agent(spec, base_dir=tmp_path, generator=ScriptedChatGenerator([]), approve="ask")
    agent = build_agent(spec, base_dir=tmp_path, generator=ScriptedChatGenerator([]), approve="workflow")
    strategies = agent.confirmation_strategies or {}
    calc = strategies["calculator"]
    assert isinstance(calc, BreakpointConfirmationStrategy) and calc.snapshot_store is WORKFLOW_DECIDES
    settings = approval_settings(calc)
    assert (settings.quorum, settings.initiator_may_approve) == (2, False)
    assert settings.allowed_decisions == ("approve", "reject")
    assert (settings.expires_after, settings.description) == (timedelta(seconds=60), "Check the sum.")
    assert strategies["search"].confirmation_policy.should_ask("search", "", {}) is False  # never: not held
    with pytest.raises(RunError, match="approve='workflow'"):
        WORKFLOW_DECIDES.create()


def test_workflow_takes_no_snapshot_location(tmp_path: Path) -> None:
    path = tmp_path / "team.yaml"
    path.write_text(FILE, encoding="utf-8")
    with pytest.raises(SpecError, match="writes no snapshot"):
        build_agent(load_agent_spec(path), generator=ScriptedChatGenerator([]), approve="workflow",
                    snapshot_dir=str(tmp_path))  # fmt: skip
