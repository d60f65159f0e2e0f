"""One unreadable snapshot never hides the others, and every command on it is refused in one line (exit 2).

Each store kind (a directory, SQLite, PostgreSQL) holds two paused runs, one of them damaged as a hand edit or a
bad disk would (``messages[0].meta`` a list, a call id an object, a count a string, not JSON).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from handrail.stores import open_snapshot_store
from handrail.testing.store_suites._corrupt_snapshots import CORRUPTIONS
from tests.cli.test_approvals import PAY, agent_yaml, cli, last_json, log, no_traceback, transfers
from tests.cli.test_approvals_stores import pg_url, sqlite_url
from tests.stores.conftest import postgres_database, postgres_dsn, postgres_server_dsn  # noqa: F401 - fixtures

__all__ = ["log", "pg_url"]  # fixtures used here

DAMAGES = ["meta is a list", "a call id is an object", "a tool call count is a string", "not JSON"]


def _two_paused_runs_one_damaged(tmp_path: Path, url: str, how: str) -> tuple[str, str, Path]:
    agent = agent_yaml(tmp_path / "agent.yaml", [PAY])
    good, bad = (last_json(cli("run", "--json", "--pause-for-approval", url, agent, "Pay."))["snapshot_id"]
                 for _ in range(2))  # fmt: skip
    store = open_snapshot_store(url)
    try:
        snapshot = store.load(bad)
        with store._scope(bad) as handle:
            assert store._update(handle, bad, snapshot, CORRUPTIONS[how](snapshot))
    finally:
        store.close()
    return good, bad, agent


def _check_store(tmp_path: Path, log: Path, url: str, how: str) -> None:
    good, bad, agent = _two_paused_runs_one_damaged(tmp_path, url, how)
    flag = "--dir" if "://" not in url else "--store"

    listed = cli("approvals", "list", flag, url)
    assert listed.exit_code == 0, listed.output
    no_traceback(listed)
    assert f"{good}  paused" in listed.stdout and bad not in listed.stdout
    warning = [line for line in listed.stderr.splitlines() if bad in line]
    assert len(warning) == 1 and warning[0].startswith("warning: skipped") and "cannot be read" in warning[0]

    as_json = cli("approvals", "list", flag, url, "--json")
    assert as_json.exit_code == 0, as_json.output
    data = last_json(as_json)
    assert {p["snapshot_id"] for p in data["pending"]} == {good}
    assert [u["snapshot_id"] for u in data["unreadable"]] == [bad] and bad in data["unreadable"][0]["error"]

    commands = [
        ["approvals", "show", bad],
        ["approvals", "show", bad, "--json"],
        ["approvals", "approve", bad, "--call", "c1"],
        ["approvals", "reject", bad, "--call", "c1", "--feedback", "no"],
        ["resume", bad, "--agent", str(agent)],
    ]
    for command in commands:
        result = cli(*command, flag, url)
        assert result.exit_code == 2, (command, result.output)
        no_traceback(result)
        errors = [line for line in result.output.splitlines() if line.strip()]
        assert len(errors) == 1 and errors[0].startswith("error: ") and bad in errors[0], (command, result.output)
    assert transfers(log) == []
    assert cli("approvals", "approve", good, flag, url).exit_code == 0  # the good one is untouched and decidable


@pytest.mark.parametrize("how", DAMAGES)
def test_a_directory_store(tmp_path: Path, log: Path, how: str) -> None:
    _check_store(tmp_path, log, str(tmp_path / "approvals"), how)


@pytest.mark.parametrize("how", DAMAGES)
def test_a_sqlite_store(tmp_path: Path, log: Path, how: str) -> None:
    _check_store(tmp_path, log, sqlite_url(tmp_path), how)


@pytest.mark.postgres
@pytest.mark.parametrize("how", ["meta is a list", "not JSON"])
def test_a_postgres_store(tmp_path: Path, log: Path, pg_url: str, how: str) -> None:
    _check_store(tmp_path, log, pg_url, how)
