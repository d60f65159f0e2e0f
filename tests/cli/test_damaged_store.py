"""Every command on a SQLite store whose ``handrail_schema`` row is damaged prints one error line, no traceback.

A version that is not a number used to end every command in ``ValueError: invalid literal for int()``, and a
deleted row in "cannot prepare the schema ... table handrail_snapshots already exists".
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.cli.test_approvals import PAY, agent_yaml, cli, last_json, log

__all__ = ["log"]  # a fixture of test_approvals, used here


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        ("UPDATE handrail_schema SET version = 'x'", "records the schema version 'x' for this store"),
        (
            "DELETE FROM handrail_schema",
            "has no version row for this store, yet its tables exist (handrail_approval_audit, "
            "handrail_approval_labels, handrail_approvals, handrail_events, handrail_runs, handrail_service_meta, "
            "handrail_snapshot_entries, handrail_snapshots, handrail_tokens)",
        ),
    ],
)
def test_every_command_on_a_damaged_schema_row_gives_one_error_line(
    tmp_path: Path, log: Path, damage: str, said: str
) -> None:
    path = tmp_path / "v.db"
    url = f"sqlite:///{path}"
    agent = agent_yaml(tmp_path / "agent.yaml", [PAY])
    paused = cli("run", "--json", "--pause-for-approval", url, agent, "Pay the rent.")
    assert paused.exit_code == 4, paused.output
    sid = last_json(paused)["snapshot_id"]
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(damage)
    conn.close()
    for args in (
        ("approvals", "list", "--store", url),
        ("approvals", "show", sid, "--store", url),
        ("approvals", "approve", sid, "--store", url, "--by", "ann"),
        ("resume", sid, "--store", url),
    ):
        result = cli(*args)
        assert result.exit_code == 2 and isinstance(result.exception, SystemExit), (args, result.output)
        assert result.output.count("\n") == 1 and result.output.startswith("error: SQLiteSnapshotStore: "), args
        assert f"{path} is damaged: handrail_schema {said}" in result.output, result.output
