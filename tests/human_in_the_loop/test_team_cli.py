"""``handrail approvals`` on a quorum: a vote says how many approvers are left, the initiator is refused, ``show``
lists the quorum and the trail of votes."""

from __future__ import annotations

from pathlib import Path

from handrail import resume
from handrail.stores import SQLiteSnapshotStore
from tests.cases._helpers import asst
from tests.cli.test_approvals import cli, no_traceback
from tests.human_in_the_loop.test_team_policies import PAID, _agent, _pause


def test_votes_from_the_command_line(tmp_path: Path) -> None:
    store = SQLiteSnapshotStore(tmp_path / "a.db")
    where = ["--store", f"sqlite:///{tmp_path / 'a.db'}"]
    PAID.clear()
    snapshot_id, approval = _pause(store, {"amount": 5000}, initiator_may_approve=False, metadata={"initiator": "ann"})
    refused = cli("approvals", "approve", approval.id, *where, "--by", "ann")
    assert refused.exit_code != 0 and "ann started this run" in refused.output
    no_traceback(refused)
    first = cli("approvals", "approve", approval.id, *where, "--by", "bob")
    assert first.exit_code == 0, first.output
    assert "bob approved call c1 (pay): 1 of 2 approvers so far (bob); it waits for 1 more." in first.output
    assert "pending, version 2" in first.output
    again = cli("approvals", "approve", approval.id, *where, "--by", "bob")
    assert again.exit_code == 0 and "That vote already existed" in again.output
    shown = cli("approvals", "show", approval.id, *where)
    assert "quorum: 2 approvers needed; approving these arguments: bob" in shown.output
    assert "initiator: ann (may not approve)" in shown.output and "voted approve by bob" in shown.output
    done = cli("approvals", "approve", approval.id, *where, "--by", "cy")
    assert done.exit_code == 0 and "decided by cy" in done.output
    resume(snapshot_id, store=store, agent=_agent([asst("paid")], store))
    assert PAID == [(5000, None)]
    store.close()
