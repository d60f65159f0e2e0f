"""A second decider who gives the verdict already recorded is told that it existed, and whose it is.

Only the first decision is stored (with its decider); the second command records nothing and must not say
"Approved ..." as if it had, whether it saw the call waiting when it started (two people at the same moment) or
not (the decision was there already).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import handrail.cli._approvals as approvals_cli
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import write_snapshot
from handrail.stores import FileSnapshotStore
from tests.cli.test_approvals import cli
from tests.human_in_the_loop.test_snapshots import paused_snapshot


@pytest.fixture
def snapdir(tmp_path: Path) -> Path:
    folder = tmp_path / "approvals"
    write_snapshot(paused_snapshot(), folder / "s1.json")
    return folder


def test_a_decision_made_while_the_command_ran_is_reported_as_the_first_deciders(
    snapdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ann decides c1 after bo's command read the snapshot (c1 waiting) and before it records bo's decision."""
    choose = approvals_cli._choose_call

    def then_ann_decides(out: Any, snapshot: Any, call_id: str | None, where: Any) -> Any:
        call = choose(out, snapshot, call_id, where)
        ann = ToolExecutionDecision("transfer", execute=True, tool_call_id="c1")
        FileSnapshotStore(snapdir).record_decision("s1", ann, decided_by="ann")
        return call

    monkeypatch.setattr(approvals_cli, "_choose_call", then_ann_decides)
    result = cli("approvals", "approve", "s1", "--dir", snapdir, "--call", "c1", "--by", "bo")
    assert result.exit_code == 0, result.output
    assert "That decision already existed: call c1 (transfer) in snapshot s1 was approved by ann at " in result.output
    assert "Nothing was recorded; it stays ann's decision." in result.output
    assert "Approved call" not in result.output and "bo" not in result.output
    entry = FileSnapshotStore(snapdir).load("s1").ledger["c1"]
    assert entry.decided_by == "ann"


def test_a_rejection_given_again_names_the_first_rejecter(snapdir: Path) -> None:
    assert (
        cli("approvals", "reject", "s1", "--dir", snapdir, "--call", "c2", "--feedback", "no", "--by", "ann").exit_code
        == 0
    )
    again = cli("approvals", "reject", "s1", "--dir", snapdir, "--call", "c2", "--feedback", "no", "--by", "bo")
    assert again.exit_code == 0, again.output
    assert "That decision already existed: call c2 (transfer) in snapshot s1 was rejected by ann at " in again.output
