"""Resume hints are built from the snapshot's ledger, and each command stands alone on its line.

* A paused snapshot whose ledger has a call ``running`` (outcome unknown) gets the ``--unknown-outcome retry``
  and ``--unknown-outcome fail`` commands wherever a resume hint is printed (``approvals list``, ``approve``):
  the plain ``handrail resume`` it used to get exits 2.
* For a run paused from Python, the hint after the last decision printed the command and the explanation of
  its AGENT.yaml placeholder glued on one line; the command now ends its line, the explanation follows.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest

from handrail.dataclasses.snapshot import load_snapshot, write_snapshot
from tests.cli.test_approvals import DONE, PAY_TWICE, agent_yaml, cli, last_json, log, transfers
from tests.cli.test_hints import paused_from_python, printed_commands, run_printed

__all__ = ["log"]  # a fixture of test_approvals, used here


def _mark_running(url: str, folder: Path, sid: str, call_id: str) -> None:
    """Set the ledger entry of ``call_id`` to ``running`` while the snapshot stays ``paused``."""
    if url.startswith("sqlite:///"):
        path = url.removeprefix("sqlite:///")
        conn = sqlite3.connect(path)
        (data,) = conn.execute("SELECT data FROM handrail_snapshots WHERE snapshot_id = ?", (sid,)).fetchone()
        record = json.loads(bytes(data))
        record["ledger"][call_id]["status"] = "running"
        with conn:
            conn.execute(
                "UPDATE handrail_snapshots SET data = ? WHERE snapshot_id = ?", (json.dumps(record).encode(), sid)
            )
        conn.close()
        return
    path = folder / f"{sid}.json"
    snapshot = load_snapshot(path)
    entry = dataclasses.replace(snapshot.ledger[call_id], status="running")
    write_snapshot(dataclasses.replace(snapshot, ledger={**snapshot.ledger, call_id: entry}), path)


def _alone_on_their_lines(output: str, commands: list[str]) -> None:
    lines = [line.strip() for line in output.splitlines()]
    for command in commands:
        assert command in lines, f"{command!r} is not alone on a line of:\n{output}"


@pytest.mark.parametrize("kind", ["dir", "sqlite"])
@pytest.mark.parametrize("outcome", ["retry", "fail"])
def test_a_paused_snapshot_with_a_running_call_gets_the_unknown_outcome_commands(
    tmp_path: Path, log: Path, kind: str, outcome: str
) -> None:
    folder = tmp_path / "approvals"
    url = str(folder) if kind == "dir" else f"sqlite:///{tmp_path / 'v.db'}"
    agent_file = agent_yaml(tmp_path / "agent.yaml", [PAY_TWICE])
    sid = last_json(cli("run", "--json", "--pause-for-approval", url, agent_file, "Pay."))["snapshot_id"]
    assert cli("approvals", "approve", sid, "--store", url, "--call", "c1").exit_code == 0
    _mark_running(url, folder, sid, "c1")  # as if a process died during c1, its snapshot still 'paused'

    approved = cli("approvals", "approve", sid, "--store", url, "--call", "c2")
    assert approved.exit_code == 0, approved.output
    retry, fail = printed_commands(approved.output)
    assert retry == f"handrail resume {sid} --store {url} --unknown-outcome retry", approved.output
    assert fail == f"handrail resume {sid} --store {url} --unknown-outcome fail", approved.output
    assert "Call c1 (transfer) was running when the run stopped; its outcome is unknown." in approved.output
    _alone_on_their_lines(approved.output, [retry, fail])

    listed = cli("approvals", "list", "--store", url)
    assert printed_commands(listed.output) == [retry, fail], listed.output
    _alone_on_their_lines(listed.output, [retry, fail])
    ready = last_json(cli("approvals", "list", "--store", url, "--json"))["ready_to_resume"]
    assert printed_commands(ready[0]["hint"]) == [retry, fail]
    again = cli("approvals", "approve", sid, "--store", url)  # no call left waiting: the error says how to go on
    assert again.exit_code == 2 and printed_commands(again.output) == [retry, fail], again.output

    agent_yaml(agent_file, [DONE])
    resumed = run_printed(retry if outcome == "retry" else fail)
    assert resumed.exit_code == 0, resumed.output
    assert transfers(log) == (["5", "7"] if outcome == "retry" else ["7"])


@pytest.mark.parametrize("option", ["--dir", "--store"])
def test_the_hint_after_deciding_a_python_paused_run_puts_the_command_on_its_own_line(
    tmp_path: Path, log: Path, option: str
) -> None:
    agent_file, folder, sid = paused_from_python(tmp_path, [PAY_TWICE])
    assert cli("approvals", "approve", sid, option, folder, "--call", "c1").exit_code == 0
    rejected = cli("approvals", "reject", sid, option, folder, "--call", "c2", "--feedback", "once is enough")
    assert rejected.exit_code == 0, rejected.output
    (command,) = printed_commands(rejected.output)
    assert command == f"handrail resume {sid} {option} {folder} --agent AGENT.yaml"
    lines = rejected.output.splitlines()
    assert f"Every call is decided. Continue the run with: {command}" in lines, rejected.output
    note = lines[lines.index(f"Every call is decided. Continue the run with: {command}") + 1]
    assert note.startswith("Replace AGENT.yaml with an agent file that defines the same agent"), rejected.output
    agent_yaml(agent_file, [DONE])
    resumed = run_printed(command, agent_file)
    assert resumed.exit_code == 0, resumed.output
    assert transfers(log) == ["5"]
