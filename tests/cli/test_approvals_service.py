"""``handrail approvals`` through the approval service, on a directory and an SQLite store (issue 17, item 9)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from handrail import resume
from handrail.stores import FileSnapshotStore, SQLiteSnapshotStore
from tests.cases._helpers import asst, result_for
from tests.cli.test_approvals import cli, last_json, no_traceback
from tests.common_tools import SENT
from tests.human_in_the_loop.test_approval_service import _agent, _pause


@pytest.fixture(params=["directory", "sqlite"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, list[str]]]:
    """A store and the CLI options that name it."""
    if request.param == "directory":
        folder = tmp_path / "snaps"
        yield FileSnapshotStore(folder), ["--dir", str(folder)]
    else:
        store = SQLiteSnapshotStore(tmp_path / "a.db")
        yield store, ["--store", f"sqlite:///{tmp_path / 'a.db'}"]
        store.close()


def _iso(minutes: float) -> str:
    return (datetime.now(UTC) + timedelta(minutes=minutes)).isoformat()


def test_list_shows_counts_and_each_pending_approval(place: tuple[Any, list[str]]) -> None:
    store, where = place
    _pause(store, [("c1", "transfer", {"amount": 5})], expires_after=timedelta(hours=2))
    listed = cli("approvals", "list", *where)
    assert listed.exit_code == 0, listed.output
    (approval,) = store.list_approvals().items
    assert "Approvals: pending 1" in listed.output
    assert f'{approval.id}  transfer({{"amount": 5}})  0s old · expires in 1h' in listed.output
    assert 'c1  transfer({"amount": 5})' in listed.output  # the snapshot rows as before
    data = last_json(cli("approvals", "list", *where, "--json"))
    assert data["counts"]["pending"] == 1 and [a["id"] for a in data["approvals"]] == [approval.id]
    assert data["approvals"][0]["expires_at"] is not None and len(data["pending"]) == 1


def test_show_takes_an_approval_id(place: tuple[Any, list[str]]) -> None:
    store, where = place
    _pause(store, [("c1", "transfer", {"amount": 5})], description="Pay **5**?")
    (approval,) = store.list_approvals().items
    shown = cli("approvals", "show", approval.id, *where)
    assert shown.exit_code == 0, shown.output
    assert f"Approval {approval.id}" in shown.output and "status: pending" in shown.output
    assert "policy: Pay **5**?" in shown.output and "1. " in shown.output and "created" in shown.output
    data = last_json(cli("approvals", "show", approval.id, *where, "--json"))
    assert data["id"] == approval.id and [e["kind"] for e in data["audit"]] == ["created"]
    missing = cli("approvals", "show", "ap_" + "0" * 32, *where)
    assert missing.exit_code == 2 and "No approval" in missing.output
    no_traceback(missing)


def test_approve_by_approval_id_then_a_repeat_and_a_different_decision(place: tuple[Any, list[str]]) -> None:
    store, where = place
    snapshot_id = _pause(store, [("c1", "transfer", {"amount": 5})])
    (approval,) = store.list_approvals().items
    approved = cli("approvals", "approve", approval.id, *where, "--by", "ann")
    assert approved.exit_code == 0, approved.output
    assert f"Approved call c1 (transfer) in snapshot {snapshot_id}, decided by ann." in approved.output
    assert "Every call is decided." in approved.output
    again = cli("approvals", "approve", approval.id, *where, "--by", "ann")
    assert again.exit_code == 0 and "That decision already existed" in again.output and "by ann at " in again.output
    other = cli("approvals", "reject", snapshot_id, *where, "--by", "bob", "--feedback", "no")
    assert other.exit_code == 2, other.output
    assert f"Approval {approval.id} (transfer) was already decided: approve by ann at " in other.output
    no_traceback(other)
    trail = [e.kind for e in store.audit_trail(approval.id)]
    assert trail == ["created", "decided"]
    resume(snapshot_id, store=store, agent=_agent([asst("paid")], store))
    assert SENT == [5]


def test_a_snapshot_id_decides_through_the_service_with_the_os_user(place: tuple[Any, list[str]]) -> None:
    store, where = place
    snapshot_id = _pause(store, [("c1", "transfer", {"amount": 5})])
    edited = cli("approvals", "approve", snapshot_id, *where, "--edit", '{"amount": 3}')
    assert edited.exit_code == 0, edited.output
    (approval,) = store.list_approvals().items
    assert approval.status == "edited" and approval.arguments == {"amount": 3} and approval.decided_by
    refused = cli("approvals", "approve", snapshot_id, *where, "--call", "c1", "--edit", '{"amount": "x"}')
    assert refused.exit_code == 2 and "already decided" in refused.output


def test_a_bad_edit_is_refused_naming_the_field(place: tuple[Any, list[str]]) -> None:
    store, where = place
    _pause(store, [("c1", "transfer", {"amount": 5})])
    (approval,) = store.list_approvals().items
    refused = cli("approvals", "approve", approval.id, *where, "--edit", '{"amount": "five"}')
    assert refused.exit_code == 2 and "/amount" in refused.output
    assert store.get_approval(approval.id).status == "pending"


def test_expire_then_deciding_says_it_expired(place: tuple[Any, list[str]]) -> None:
    store, where = place
    snapshot_id = _pause(store, [("c1", "transfer", {"amount": 5})], expires_after=timedelta(minutes=5))
    (approval,) = store.list_approvals().items
    early = cli("approvals", "expire", *where, "--now", _iso(1))
    assert early.exit_code == 0 and "was due to expire" in early.output
    swept = cli("approvals", "expire", *where, "--now", _iso(6))
    assert swept.exit_code == 0, swept.output
    assert approval.id in swept.output and ": rejected · snapshot" in swept.output and "expired at " in swept.output
    assert last_json(cli("approvals", "expire", *where, "--json"))["expired"] == []
    late = cli("approvals", "approve", approval.id, *where, "--by", "ann")
    assert late.exit_code == 2 and "expired at" in late.output
    by_snapshot = cli("approvals", "approve", snapshot_id, *where, "--by", "ann")
    assert by_snapshot.exit_code == 2 and "expired at" in by_snapshot.output
    done = resume(snapshot_id, store=store, agent=_agent([asst("ok")], store))
    text = result_for(done["messages"], "c1").result
    assert SENT == [] and "the approval request expired" in text and "rejected by the user" not in text


def test_expire_refuses_a_bad_time(place: tuple[Any, list[str]]) -> None:
    _, where = place
    bad = cli("approvals", "expire", *where, "--now", "tomorrow")
    assert bad.exit_code == 2 and "ISO 8601" in bad.output


def test_one_damaged_approval_is_named_and_the_others_listed_and_expired(place: tuple[Any, list[str]]) -> None:
    from tests.human_in_the_loop.test_approval_damage import damage

    store, where = place
    _pause(store, [("c1", "transfer", {"amount": 5}), ("c2", "transfer", {"amount": 7})],
           expires_after=timedelta(minutes=5))  # fmt: skip
    by_call = {a.tool_call_id: a for a in store.list_approvals().items}
    good, bad = by_call["c1"], by_call["c2"]
    damage(store, bad.id)
    listed = cli("approvals", "list", *where)
    assert listed.exit_code == 0, listed.output
    no_traceback(listed)
    assert good.id in listed.stdout and bad.id not in listed.stdout
    (warning,) = [line for line in listed.stderr.splitlines() if bad.id in line]
    assert warning.startswith(f"warning: skipped approval {bad.id}, which cannot be read")
    data = last_json(cli("approvals", "list", *where, "--json"))
    assert [a["id"] for a in data["approvals"]] == [good.id]
    assert [u["approval_id"] for u in data["unreadable"]] == [bad.id] and bad.id in data["unreadable"][0]["error"]

    swept = cli("approvals", "expire", *where, "--now", _iso(60))
    assert swept.exit_code == 0, swept.output
    assert good.id in swept.stdout and f"warning: skipped approval {bad.id}" in swept.stderr
    assert f"expired at {good.expires_at.isoformat(timespec='seconds')}" in swept.stdout
    data = last_json(cli("approvals", "expire", *where, "--now", _iso(60), "--json"))
    assert data["expired"] == [] and [u["approval_id"] for u in data["unreadable"]] == [bad.id]
    shown = cli("approvals", "show", bad.id, *where)
    assert shown.exit_code == 2 and bad.id in shown.output
    no_traceback(shown)


def test_a_malformed_approval_id_is_named_as_such_not_looked_up_as_a_snapshot(place: tuple[Any, list[str]]) -> None:
    store, where = place
    _pause(store, [("c1", "transfer", {"amount": 5})])
    for command in (("show",), ("approve", "--by", "ann"), ("reject", "--by", "ann", "--feedback", "no")):
        shown = cli("approvals", command[0], "ap_123", *where, *command[1:])
        assert shown.exit_code == 2, shown.output
        assert "'ap_123' is neither a snapshot" in shown.output and "ap_ and 32 lowercase hex digits" in shown.output
        no_traceback(shown)
    assert store.list_approvals().items[0].status == "pending"


def test_a_decision_printed_to_a_closed_pipe_is_recorded_and_exits_0(tmp_path: Path) -> None:
    import subprocess
    import sys

    store = SQLiteSnapshotStore(tmp_path / "a.db")
    _pause(store, [("c1", "transfer", {"amount": 5})])
    (approval,) = store.list_approvals().items
    command = [sys.executable, "-m", "handrail.cli", "approvals", "approve", approval.id,
               "--store", f"sqlite:///{tmp_path / 'a.db'}", "--by", "ann"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before anything is printed (`... | head -0`)
    errors = process.stderr.read().decode()
    process.stderr.close()
    assert process.wait(60) == 0, errors
    assert errors == ""
    assert store.get_approval(approval.id).status == "approved"
    store.close()
