"""The approval commands on a shared snapshot store: ``--store sqlite:///...`` and ``--store postgresql://...``.

The same flow as ``test_approvals.py`` (pause, list, decide, resume) through a database instead of a directory,
``--dir`` / ``--store`` usage, and two processes deciding one call at the same moment: one decision wins, the
other is refused with a conflict error.

PostgreSQL tests carry the ``postgres`` marker and take the ``postgres_dsn`` fixture (tests/stores/conftest.py:
a fresh database on the server named by ``HANDRAIL_TEST_POSTGRES_DSN``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest

from handrail.stores import open_snapshot_store
from tests.cli.cli_worker import run_together
from tests.cli.test_approvals import DONE, PAY, PAY_TWICE, agent_yaml, cli, last_json, log, no_traceback, transfers
from tests.human_in_the_loop.test_snapshots import paused_snapshot
from tests.stores.conftest import postgres_database, postgres_dsn, postgres_server_dsn  # noqa: F401 - fixtures

__all__ = ["log"]  # a fixture of test_approvals, used here


def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'approvals.db'}"  # tmp_path is absolute: sqlite:////...


def postgres_url(dsn: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The ``postgresql://`` URL of a libpq key=value DSN; a password goes to PGPASSWORD, never into the URL."""
    from psycopg.conninfo import conninfo_to_dict

    params = {k: str(v) for k, v in conninfo_to_dict(dsn).items()}
    password = params.pop("password", None)
    if password:
        monkeypatch.setenv("PGPASSWORD", password)
    user, host, port, dbname = (params.pop(k, "") for k in ("user", "host", "port", "dbname"))
    if host.startswith("/"):  # a Unix socket directory
        params["host"], host = host, ""
    netloc = (f"{quote(user, safe='')}@" if user else "") + host + (f":{port}" if port else "")
    query = f"?{urlencode(params)}" if params else ""
    return f"postgresql://{netloc}/{quote(dbname, safe='')}{query}"


@pytest.fixture
def pg_url(postgres_dsn: str, monkeypatch: pytest.MonkeyPatch) -> str:  # noqa: F811 - the imported fixture
    return postgres_url(postgres_dsn, monkeypatch)


# ----------------------------------------------------------------------------- the whole flow through a store


def full_flow(tmp_path: Path, log: Path, url: str) -> None:
    """run pauses into the store → list → approve → resume → done; the tool ran once."""
    agent = agent_yaml(tmp_path / "agent.yaml", [PAY])
    paused = cli("run", "--json", "--pause-for-approval", url, agent, "Pay the rent.")
    assert paused.exit_code == 4, paused.output
    data = last_json(paused)
    sid = data["snapshot_id"]
    assert data["exit_reason"] == "paused_for_approval" and [c["id"] for c in data["pending_tool_calls"]] == ["c1"]
    assert data["snapshot_file"] is None and data["location"].endswith(f"#{sid}")
    assert transfers(log) == []

    listed = cli("approvals", "list", "--store", url)
    assert listed.exit_code == 0, listed.output
    assert f"{sid}  paused" in listed.output and 'c1  transfer({"amount": 5})' in listed.output
    pending = last_json(cli("approvals", "list", "--store", url, "--json"))["pending"]
    assert [(p["snapshot_id"], p["tool_call_id"], p["arguments"]) for p in pending] == [(sid, "c1", {"amount": 5})]
    shown = cli("approvals", "show", sid, "--store", url)
    assert shown.exit_code == 0, shown.output
    assert "status: paused" in shown.output and "pending · awaiting a decision" in shown.output

    approved = cli("approvals", "approve", sid, "--store", url, "--by", "alice")
    assert approved.exit_code == 0, approved.output
    assert f"Approved call c1 (transfer) in snapshot {sid}, decided by alice." in approved.output
    assert f"handrail resume {sid} --store " in approved.output
    agent_yaml(agent, [DONE])
    resumed = cli("resume", sid, "--store", url)
    assert resumed.exit_code == 0, resumed.output
    assert "The rent is paid." in resumed.output and "sent 5" in resumed.output
    assert transfers(log) == ["5"]

    assert "No paused runs in " in cli("approvals", "list", "--store", url).output
    assert last_json(cli("approvals", "show", sid, "--store", url, "--json"))["status"] == "done"
    again = cli("resume", sid, "--store", url)
    assert again.exit_code == 2 and sid in again.output
    no_traceback(again)
    assert transfers(log) == ["5"]  # never twice


def test_the_whole_flow_through_sqlite(tmp_path: Path, log: Path) -> None:
    full_flow(tmp_path, log, sqlite_url(tmp_path))


@pytest.mark.postgres
def test_the_whole_flow_through_postgres(tmp_path: Path, log: Path, pg_url: str) -> None:
    full_flow(tmp_path, log, pg_url)


def test_text_output_of_a_pause_names_the_store_in_every_command(tmp_path: Path, log: Path) -> None:
    url = sqlite_url(tmp_path)
    agent = agent_yaml(tmp_path / "agent.yaml", [PAY])
    result = cli("run", "--pause-for-approval", url, agent, "Pay the rent.")
    assert result.exit_code == 4, result.output
    (pending,) = open_snapshot_store(url).list_pending()
    sid = pending.snapshot_id
    assert f"Paused for approval: snapshot {sid} in {url}" in result.output
    assert f"handrail approvals approve {sid} --store {url}" in result.output
    assert f"handrail resume {sid} --store {url}" in result.output


def test_a_resume_without_every_decision_pauses_again_into_the_same_store(tmp_path: Path, log: Path) -> None:
    url = sqlite_url(tmp_path)
    agent = agent_yaml(tmp_path / "agent.yaml", [PAY_TWICE])
    sid = last_json(cli("run", "--json", "--pause-for-approval", url, agent, "Pay."))["snapshot_id"]
    assert cli("approvals", "approve", sid, "--store", url, "--call", "c1").exit_code == 0
    agent_yaml(agent, [DONE])
    again = cli("resume", "--json", sid, "--store", url)
    assert again.exit_code == 4, again.output
    new_id = last_json(again)["snapshot_id"]
    assert new_id != sid and last_json(again)["store"] == url
    assert transfers(log) == ["5"]
    listed = last_json(cli("approvals", "list", "--store", url, "--json"))
    assert [(p["snapshot_id"], p["tool_call_id"]) for p in listed["pending"]] == [(new_id, "c2")]
    old = cli("resume", sid, "--store", url)
    assert old.exit_code == 2 and f"it continued in {new_id}" in old.output
    assert cli("approvals", "reject", new_id, "--store", url, "--feedback", "Once is enough.").exit_code == 0
    assert cli("resume", new_id, "--store", url).exit_code == 0
    assert transfers(log) == ["5"]


def test_an_interrupted_resume_is_listed_with_the_store_and_resumes(tmp_path: Path, log: Path) -> None:
    url = sqlite_url(tmp_path)
    agent = agent_yaml(tmp_path / "agent.yaml", [PAY])
    sid = last_json(cli("run", "--json", "--pause-for-approval", url, agent, "Pay."))["snapshot_id"]
    assert cli("approvals", "approve", sid, "--store", url).exit_code == 0
    agent_yaml(agent, [])  # the model call after the transfer fails: the script is exhausted
    assert cli("resume", sid, "--store", url).exit_code == 1
    assert open_snapshot_store(url).load(sid).status == "running"
    listed = cli("approvals", "list", "--store", url)
    assert listed.exit_code == 0, listed.output
    assert "Interrupted (status 'running' in the record" in listed.output and f"{sid}  interrupted" in listed.output
    assert f"Continue it with: handrail resume {sid} --store {url}" in listed.output
    shown = cli("approvals", "show", sid, "--store", url)
    assert "status: interrupted (the record says 'running', but no process holds it)" in shown.output
    refused = cli("approvals", "reject", sid, "--store", url, "--feedback", "no")
    assert refused.exit_code == 2 and f"Snapshot {sid} was interrupted" in refused.output
    agent_yaml(agent, [DONE])
    resumed = cli("resume", sid, "--store", url)
    assert resumed.exit_code == 0, resumed.output
    assert transfers(log) == ["5"]


def test_a_snapshot_claimed_by_a_resume_exits_with_code_5(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from handrail.cli import _stores

    monkeypatch.setattr(_stores, "LOCK_TIMEOUT", 0.05)  # how long a decision waits for the claim
    url = sqlite_url(tmp_path)
    store = open_snapshot_store(url)
    claimed = store.save(paused_snapshot())  # a resume has claimed it and not yet marked it running
    running = store.save(paused_snapshot(status="running"))  # a resume is running it
    with store.claim(claimed), store.claim(running):  # as a resume in another process would
        for args in (["approvals", "approve", claimed, "--call", "c1"], ["approvals", "approve", running],
                     ["resume", running]):  # fmt: skip
            result = cli(*args, "--store", url)
            assert result.exit_code == 5, result.output
            name = args[-1] if args[0] == "resume" else args[2]
            said = (f"{name} is being resumed", f"{name} is held by a running process")
            assert any(words in result.output for words in said), result.output
            no_traceback(result)
    store.close()


# ----------------------------------------------------------------------------- --dir or --store


@pytest.mark.parametrize(
    "command", [["approvals", "list"], ["approvals", "show", "s1"], ["approvals", "approve", "s1"],
                ["approvals", "reject", "s1", "--feedback", "x"], ["resume", "s1"]],
)  # fmt: skip
def test_exactly_one_of_dir_and_store(tmp_path: Path, command: list[str]) -> None:
    neither = cli(*command)
    both = cli(*command, "--dir", tmp_path, "--store", sqlite_url(tmp_path))
    for result in (neither, both):
        assert result.exit_code == 2, result.output
        assert "exactly one of --dir DIR" in result.output and "--store URL" in result.output
        no_traceback(result)


def test_a_store_that_is_not_there_is_a_usage_error(tmp_path: Path) -> None:
    missing = cli("approvals", "list", "--store", f"sqlite:///{tmp_path / 'nope.db'}")
    assert missing.exit_code == 2 and "no such database file" in missing.output
    assert not (tmp_path / "nope.db").exists()  # a typo does not create an empty store
    unknown = cli("approvals", "list", "--store", "mysql://db/x")
    assert unknown.exit_code == 2 and "Unknown snapshot store" in unknown.output
    no_path = cli("approvals", "list", "--store", "sqlite://")
    assert no_path.exit_code == 2 and "sqlite:///<path>" in no_path.output
    no_dir = cli("approvals", "list", "--store", tmp_path / "nope")
    assert no_dir.exit_code == 2 and "--store" in no_dir.output and "no such directory" in no_dir.output
    for result in (missing, unknown, no_path, no_dir):
        no_traceback(result)


def test_a_directory_given_to_store_is_the_same_as_dir(tmp_path: Path) -> None:
    folder = tmp_path / "approvals"
    store = open_snapshot_store(folder)
    sid = store.save(paused_snapshot())
    listed = cli("approvals", "list", "--store", folder)
    assert listed.exit_code == 0, listed.output
    assert f"{sid}  paused" in listed.output
    decided = cli("approvals", "approve", sid, "--store", folder, "--call", "c1")
    assert decided.exit_code == 0, decided.output
    assert store.load(sid).ledger["c1"].status == "approved"
    assert store.load(sid).location == str(folder / f"{sid}.json")


def test_an_unknown_id_in_a_database_names_some_ids(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    store = open_snapshot_store(url)
    sid = store.save(paused_snapshot())
    result = cli("approvals", "show", "nope", "--store", url)
    assert result.exit_code == 2, result.output
    assert f"No snapshot 'nope' in {url}. Recently changed snapshots there: {sid}." in result.output
    no_traceback(result)


# ----------------------------------------------------------------------------- two deciders at once


def decide_at_once(url: str, gate: Path, rounds: int = 3) -> None:
    """Two processes approve and reject call c1 of one snapshot at the same moment: exactly one decision wins.

    The loser exits with code 2 and a conflict error naming the decision that won; the store keeps the winner's.
    """
    store = open_snapshot_store(url)
    try:
        for number in range(rounds):
            sid = store.save(paused_snapshot())
            where = ["--store", url, "--call", "c1"]
            results = run_together(gate / str(number), {
                "approve": ["approvals", "approve", sid, *where, "--by", "ann"],
                "reject": ["approvals", "reject", sid, *where, "--feedback", "no", "--by", "bo"],
            })  # fmt: skip
            codes = {name: r.returncode for name, r in results.items()}
            assert sorted(codes.values()) == [0, 2], results
            winner = next(name for name, code in codes.items() if code == 0)
            loser = results["reject" if winner == "approve" else "approve"]
            assert "error: Conflict: Call 'c1' to 'transfer'" in loser.stdout, results
            assert "was already decided" in loser.stdout and "This decision was not recorded." in loser.stdout
            assert "Traceback" not in loser.stdout + loser.stderr
            assert ("Approved" if winner == "approve" else "Rejected") + " call c1" in results[winner].stdout
            entry = store.load(sid).ledger["c1"]
            expected: dict[str, Any] = {"approve": ("approved", "ann"), "reject": ("rejected", "bo")}
            assert (entry.status, entry.decided_by) == expected[winner]
    finally:
        store.close()


def test_two_processes_deciding_one_call_through_sqlite(tmp_path: Path) -> None:
    decide_at_once(sqlite_url(tmp_path), tmp_path / "gate")


@pytest.mark.postgres
def test_two_processes_deciding_one_call_through_postgres(tmp_path: Path, pg_url: str) -> None:
    decide_at_once(pg_url, tmp_path / "gate")


def test_pause_for_approval_into_a_store_that_cannot_be_one(tmp_path: Path, log: Path) -> None:
    agent = agent_yaml(tmp_path / "agent.yaml", [PAY])
    (tmp_path / "db").mkdir()
    result = cli("run", "--pause-for-approval", f"sqlite:///{tmp_path / 'db'}", agent, "q")
    assert result.exit_code == 2 and "is a directory, not a database file" in result.output
    no_traceback(result)


@pytest.mark.parametrize("command", ["show", "approve", "resume"])
def test_a_corrupt_record_in_a_database_store_is_bad_input_like_a_corrupt_file(
    tmp_path: Path, log: Path, command: str
) -> None:
    import sqlite3

    url = sqlite_url(tmp_path)
    agent = agent_yaml(tmp_path / "agent.yaml", [PAY])
    sid = last_json(cli("run", "--json", "--pause-for-approval", url, agent, "Pay."))["snapshot_id"]
    with sqlite3.connect(tmp_path / "approvals.db") as db:
        db.execute("UPDATE handrail_snapshots SET data = ? WHERE snapshot_id = ?", (b"{not json", sid))
    args = ["resume", sid] if command == "resume" else ["approvals", command, sid]
    result = cli(*args, "--store", url)
    assert result.exit_code == 2, result.output
    assert f"the record of snapshot {sid} is truncated or not valid JSON" in result.output
    no_traceback(result)
    assert transfers(log) == []
