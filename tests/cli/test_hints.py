"""Every command the CLI prints as a hint runs as printed.

Each test makes the CLI print a hint (after a pause, a decision, in ``approvals list`` and ``show``, for an
interrupted run), takes the ``handrail ...`` command out of the text and runs it. The one placeholder a hint may
hold is ``AGENT.yaml``, for a snapshot that records no agent file (paused from Python): the hint says what to put
there, and the test puts exactly that (an agent file defining the same agent), or runs the Python line it gives.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.snapshot import load_snapshot, write_snapshot
from handrail.specs import build_agent, load_agent_spec
from handrail.stores import open_snapshot_store
from tests.cli.test_approvals import (
    DONE,
    PAY,
    PAY_TWICE,
    agent_yaml,
    cli,
    died_during_the_transfer,
    last_json,
    log,
    transfers,
)

__all__ = ["log"]  # a fixture of test_approvals, used here

_VALUE = r"(?:'[^']*'|[^\s'()]+)"
_COMMAND = re.compile(rf"handrail (?:resume|approvals \w+) {_VALUE}(?: --[\w-]+(?: (?!--){_VALUE})?)*")


def printed_commands(text: str) -> list[str]:
    """The ``handrail ...`` command lines in ``text``, in order (a trailing full stop is not part of one)."""
    return [m.group().removesuffix(".") for m in _COMMAND.finditer(text)]


def run_printed(command: str, agent_file: Path | None = None) -> Result:
    """Run a printed command line; ``AGENT.yaml`` becomes ``agent_file`` (the hint says to replace it)."""
    args = shlex.split(command)
    assert args[0] == "handrail", command
    if agent_file is not None:
        args = [str(agent_file) if a == "AGENT.yaml" else a for a in args]
    assert "AGENT.yaml" not in args, f"a placeholder is left in {command!r}"
    return cli(*args[1:])


def paused_from_python(tmp_path: Path, replies: list[Any]) -> tuple[Path, Path, str]:
    """Pause a run of ``agent.yaml`` built in Python (no agent file recorded); ``(agent file, folder, id)``."""
    agent_file = agent_yaml(tmp_path / "agent.yaml", replies)
    folder = tmp_path / "approvals"
    agent = build_agent(load_agent_spec(agent_file), base_dir=tmp_path, approve="pause", snapshot_dir=folder)
    agent.warm_up()
    from handrail.dataclasses import ChatMessage

    with pytest.raises(HITLBreakpointException) as caught:
        agent.run([ChatMessage.from_user("Pay the rent.")])
    assert caught.value.snapshot is not None
    snapshot_id = caught.value.snapshot.snapshot_id
    assert snapshot_id is not None and "agent_file" not in caught.value.snapshot.metadata
    return agent_file, folder, snapshot_id


def test_the_resume_hint_after_deciding_a_python_paused_run_runs(tmp_path: Path, log: Path) -> None:
    agent_file, folder, sid = paused_from_python(tmp_path, [PAY])
    approved = cli("approvals", "approve", sid, "--dir", folder, "--by", "ann")
    assert approved.exit_code == 0, approved.output
    (command,) = printed_commands(approved.output)
    agent_yaml(agent_file, [DONE])  # the same agent; its scripted model has the rest of the run
    resumed = run_printed(command, agent_file)
    assert resumed.exit_code == 0, resumed.output
    assert "The rent is paid." in resumed.output and transfers(log) == ["5"]
    assert command == f"handrail resume {sid} --dir {folder} --agent AGENT.yaml"
    assert "the snapshot records no agent file (the run was paused from Python)" in approved.output


def printed_python(text: str) -> list[str]:
    """The Python statements in ``text`` that resume a run (``import handrail; handrail.resume(...)``), in order."""
    return re.findall(r"^\s*((?:from handrail\.stores import \w+; )?import handrail; handrail\.resume\(.*\))$", text,
                      re.MULTILINE)  # fmt: skip


def run_python(statement: str, agent: Any) -> None:
    """Run a printed Python statement as printed, the Agent being ``agent`` (what the hint says it stands for)."""
    exec(statement, {"agent": agent})


def test_the_python_line_of_the_hint_resumes_the_run(tmp_path: Path, log: Path) -> None:
    agent_file, folder, sid = paused_from_python(tmp_path, [PAY])
    approved = cli("approvals", "approve", sid, "--dir", folder, "--by", "ann")
    (statement,) = printed_python(approved.output)
    assert "Or resume it in Python, with that agent as `agent`:" in approved.output
    agent_yaml(agent_file, [DONE])
    agent = build_agent(load_agent_spec(agent_file), base_dir=tmp_path, approve="pause", snapshot_dir=folder)
    run_python(statement, agent)
    assert transfers(log) == ["5"] and open_snapshot_store(folder).load(sid).status == "done"


@pytest.mark.parametrize("outcome", ["retry", "fail"])
def test_the_python_lines_for_an_interrupted_python_paused_run_run(tmp_path: Path, log: Path, outcome: str) -> None:
    agent_file, folder, sid = paused_from_python(tmp_path, [PAY])
    assert cli("approvals", "approve", sid, "--dir", folder).exit_code == 0
    died_during_the_transfer(folder, sid)
    listed = cli("approvals", "list", "--dir", folder)
    shown = cli("approvals", "show", sid, "--dir", folder)
    refused = cli("approvals", "reject", sid, "--dir", folder, "--feedback", "no")
    retry, fail = printed_python(listed.output)
    assert printed_python(shown.output) == [retry, fail] == printed_python(refused.output)
    assert retry.endswith("unknown_outcome='retry')") and fail.endswith("unknown_outcome='fail')")
    agent_yaml(agent_file, [DONE])
    agent = build_agent(load_agent_spec(agent_file), base_dir=tmp_path, approve="pause", snapshot_dir=folder)
    run_python(retry if outcome == "retry" else fail, agent)
    assert transfers(log) == (["5"] if outcome == "retry" else [])
    assert open_snapshot_store(folder).load(sid).status == "done"


def test_the_python_line_opens_the_store_with_the_trusted_modules(tmp_path: Path, log: Path) -> None:
    agent_file = agent_yaml(tmp_path / "agent.yaml", [PAY])
    url = f"sqlite:///{tmp_path / 'approvals.db'}"
    agent = build_agent(load_agent_spec(agent_file), base_dir=tmp_path, approve="pause",
                        snapshot_store=open_snapshot_store(url))  # fmt: skip
    from handrail.dataclasses import ChatMessage

    with pytest.raises(HITLBreakpointException) as caught:
        agent.run([ChatMessage.from_user("Pay the rent.")])
    sid = caught.value.snapshot.snapshot_id  # type: ignore[union-attr]
    approved = cli("approvals", "approve", sid, "--store", url, "--allow-module", "tests.cli")
    (statement,) = printed_python(approved.output)
    assert "allowed_modules=['tests.cli']" in statement
    agent_yaml(agent_file, [DONE])
    again = build_agent(load_agent_spec(agent_file), base_dir=tmp_path, approve="pause",
                        snapshot_store=open_snapshot_store(url))  # fmt: skip
    run_python(statement, again)
    assert transfers(log) == ["5"] and open_snapshot_store(url).load(sid).status == "done"


def test_every_command_printed_at_a_pause_and_after_the_decisions_runs(tmp_path: Path, log: Path) -> None:
    agent_file = agent_yaml(tmp_path / "agent.yaml", [PAY_TWICE])
    folder = tmp_path / "approvals"
    paused = cli("run", "--pause-for-approval", folder, "--allow-module", "tests.cli", agent_file, "Pay.")
    assert paused.exit_code == 4, paused.output
    approve, reject, resume = printed_commands(paused.output)
    assert "--allow-module tests.cli" in resume  # what the run trusted, the resume needs too
    decided = run_printed(approve)
    assert decided.exit_code == 0, decided.output
    assert printed_commands(decided.output) == []  # c2 still waits: no resume hint yet
    rejected = run_printed(reject.replace("--call c1", "--call c2"))
    assert rejected.exit_code == 0, rejected.output
    (again,) = printed_commands(rejected.output)
    assert again == resume
    listed = cli("approvals", "list", "--dir", folder, "--allow-module", "tests.cli")
    (ready,) = printed_commands(listed.output)
    assert ready == resume  # "nothing to decide: handrail resume ..."
    agent_yaml(agent_file, [DONE])
    resumed = run_printed(resume)
    assert resumed.exit_code == 0, resumed.output
    assert transfers(log) == ["5"]


def test_the_resume_hint_of_a_decided_step_without_call_runs(tmp_path: Path, log: Path) -> None:
    agent_file = agent_yaml(tmp_path / "agent.yaml", [PAY_TWICE])
    folder = tmp_path / "approvals"
    sid = last_json(cli("run", "--json", "--pause-for-approval", folder, agent_file, "Pay."))["snapshot_id"]
    for call in ("c1", "c2"):
        assert cli("approvals", "approve", sid, "--dir", folder, "--call", call).exit_code == 0
    refused = cli("approvals", "approve", sid, "--dir", folder)  # which call? the error says how to go on
    assert refused.exit_code == 2
    (command,) = printed_commands(refused.output)
    agent_yaml(agent_file, [DONE])
    resumed = run_printed(command)
    assert resumed.exit_code == 0, resumed.output
    assert transfers(log) == ["5", "7"]


@pytest.mark.parametrize("outcome", ["retry", "fail"])
def test_both_commands_for_an_interrupted_run_run(tmp_path: Path, log: Path, outcome: str) -> None:
    agent_file = agent_yaml(tmp_path / "agent.yaml", [PAY])
    folder = tmp_path / "approvals"
    sid = last_json(cli("run", "--json", "--pause-for-approval", folder, agent_file, "Pay."))["snapshot_id"]
    assert cli("approvals", "approve", sid, "--dir", folder).exit_code == 0
    died_during_the_transfer(folder, sid)
    listed = cli("approvals", "list", "--dir", folder)
    shown = cli("approvals", "show", sid, "--dir", folder)
    refused = cli("approvals", "approve", sid, "--dir", folder)
    retry, fail = printed_commands(listed.output)
    assert printed_commands(shown.output) == [retry, fail] == printed_commands(refused.output)
    assert retry.endswith("--unknown-outcome retry") and fail.endswith("--unknown-outcome fail")
    agent_yaml(agent_file, [DONE])
    resumed = run_printed(retry if outcome == "retry" else fail)
    assert resumed.exit_code == 0, resumed.output
    assert transfers(log) == (["5"] if outcome == "retry" else [])


def test_an_interrupted_python_paused_run_names_the_agent_placeholder(tmp_path: Path, log: Path) -> None:
    agent_file, folder, sid = paused_from_python(tmp_path, [PAY])
    path = folder / f"{sid}.json"
    write_snapshot(dataclasses.replace(load_snapshot(path), status="running"), path)
    listed = cli("approvals", "list", "--dir", folder)
    assert "Replace AGENT.yaml with an agent file that defines the same agent" in listed.output
    (command,) = printed_commands(listed.output)
    agent_yaml(agent_file, [PAY, DONE])  # resumed at the pause: c1 has no decision and pauses again
    resumed = run_printed(command, agent_file)
    assert resumed.exit_code == 4, resumed.output
    assert transfers(log) == []
