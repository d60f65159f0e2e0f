"""The asynchronous approval flow on the command line: run --pause-for-approval, approvals, resume.

Two groups of tests:

* ``approvals list|show|approve|reject`` against snapshot files written directly (no Agent run);
* end to end (marked ``AGENT PAUSE/RESUME`` below): ``handrail run --pause-for-approval`` pauses a real
  Agent run, decisions are recorded, and ``handrail resume`` continues it. These need the Agent's
  pause/resume (``run(messages=[], snapshot=...)`` and strategies with ``pauses_run``).

The agent files script the model with ScriptedChatGenerator. Its script restarts in every process,
so before resuming the tests rewrite the agent file with the replies still to come (the agent's
fingerprint does not cover the generator, so this is not drift).
"""

from __future__ import annotations

import dataclasses
import getpass
import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from handrail.cli import main
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.snapshot import load_snapshot, write_snapshot
from tests.human_in_the_loop.test_snapshots import paused_snapshot
from tests.specs.test_agent_spec import scripted_generator_yaml

LOG_ENV = "HANDRAIL_TEST_TRANSFER_LOG"


def transfer(amount: int) -> str:
    """Move money to the landlord.

    Args:
        amount: How much, in euros.
    """
    with open(os.environ[LOG_ENV], "a", encoding="utf-8") as log:
        log.write(f"{amount}\n")
    return f"sent {amount}"


def cli(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def no_traceback(result: Result) -> None:
    assert "Traceback" not in result.output, result.output


def last_json(result: Result) -> Any:
    return json.loads(result.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- approvals on snapshot files


@pytest.fixture
def snapdir(tmp_path: Path) -> Path:
    folder = tmp_path / "approvals"
    write_snapshot(paused_snapshot(), folder / "s1.json")
    return folder


def test_help_documents_the_commands_and_exit_codes() -> None:
    top = cli("--help")
    assert top.exit_code == 0
    for word in ("approvals", "resume", "4 paused for approval", "2 bad usage"):
        assert word in top.output
    assert "--pause-for-approval" in cli("run", "--help").output
    group = cli("approvals", "--help")
    assert all(name in group.output for name in ("list", "show", "approve", "reject"))
    resume = cli("resume", "--help").output
    assert all(o in resume for o in ("--dir", "--agent", "--allow-module", "--unknown-outcome", "--allow-drift"))


def test_list_shows_each_waiting_call(snapdir: Path) -> None:
    write_snapshot(paused_snapshot(status="done", outcome={"exit_reason": "text"}), snapdir / "finished.json")
    result = cli("approvals", "list", "--dir", snapdir)
    assert result.exit_code == 0, result.output
    assert "s1  paused" in result.output and " ago" in result.output
    assert 'c1  transfer({"amount": 5})' in result.output and 'c2  transfer({"amount": 7})' in result.output
    assert "c3" not in result.output  # it ran before the pause
    assert "finished" not in result.output


def test_list_as_json(snapdir: Path) -> None:
    result = cli("approvals", "list", "--dir", snapdir, "--json")
    assert result.exit_code == 0, result.output
    data = last_json(result)
    assert [(p["snapshot_id"], p["tool_call_id"], p["tool_name"]) for p in data["pending"]] == [
        ("s1", "c1", "transfer"), ("s1", "c2", "transfer")
    ]  # fmt: skip
    assert data["pending"][0]["arguments"] == {"amount": 5}
    assert data["pending"][0]["path"] == str(snapdir / "s1.json")
    assert data["ready_to_resume"] == []


def test_list_reports_a_corrupt_file_and_goes_on(snapdir: Path) -> None:
    (snapdir / "broken.json").write_text('{"schema_version": 1, "mess', encoding="utf-8")
    result = cli("approvals", "list", "--dir", snapdir)
    assert result.exit_code == 0, result.output
    assert "warning: skipped broken.json" in result.stderr
    assert "c1  transfer" in result.stdout


def test_list_an_empty_or_missing_directory(tmp_path: Path) -> None:
    empty = cli("approvals", "list", "--dir", tmp_path)
    assert empty.exit_code == 0 and "No paused runs" in empty.output
    missing = cli("approvals", "list", "--dir", tmp_path / "nope")
    assert missing.exit_code == 2
    assert "error: --dir" in missing.output and "no such directory" in missing.output
    no_traceback(missing)


def test_show_lists_every_call_of_the_step_with_its_status(snapdir: Path) -> None:
    result = cli("approvals", "show", "s1", "--dir", snapdir)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Snapshot s1" in out and "status: paused" in out and "question: Pay the rent twice." in out
    assert "agent file: /abs/agent.yaml" in out
    assert "c1  transfer" in out and "pending · awaiting a decision" in out
    assert "c3  lookup" in out and "done · result: found" in out
    assert "Move money." in out  # the tool's description, from the fingerprint
    data = last_json(cli("approvals", "show", "s1.json", "--dir", snapdir, "--json"))
    assert [(c["id"], c["status"]) for c in data["calls"]] == [("c1", "pending"), ("c2", "pending"), ("c3", "done")]
    assert data["descriptions"]["transfer"] == "Move money."


@pytest.mark.parametrize("command", ["show", "approve", "reject"])
def test_an_unknown_snapshot_id_lists_the_ids_present(snapdir: Path, command: str) -> None:
    write_snapshot(paused_snapshot(), snapdir / "s2.json")
    extra = ["--feedback", "x"] if command == "reject" else []
    result = cli("approvals", command, "nope", "--dir", snapdir, *extra)
    assert result.exit_code == 2
    assert f"No snapshot 'nope' in {snapdir}. Snapshots there: s1, s2." in result.output
    no_traceback(result)


def test_a_path_is_not_a_snapshot_id(snapdir: Path) -> None:
    result = cli("approvals", "show", "../s1", "--dir", snapdir)
    assert result.exit_code == 2 and "not a path" in result.output


def test_approve_without_call_needs_one_when_several_wait(snapdir: Path) -> None:
    result = cli("approvals", "approve", "s1", "--dir", snapdir)
    assert result.exit_code == 2
    assert "2 calls awaiting a decision: c1 (transfer), c2 (transfer); choose one with --call" in result.output


def test_approve_and_reject_record_who_decided(snapdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(getpass, "getuser", lambda: "osuser")
    first = cli("approvals", "approve", "s1", "--dir", snapdir, "--call", "c1")
    assert first.exit_code == 0, first.output
    assert "Approved call c1 (transfer) in snapshot s1, decided by osuser." in first.output
    assert "Still awaiting a decision: c2 (transfer)" in first.output
    second = cli("approvals", "reject", "s1", "--dir", snapdir, "--feedback", "Only once.", "--by", "dana")
    assert second.exit_code == 0, second.output  # the only call left: no --call needed
    assert "Rejected call c2" in second.output and "decided by dana" in second.output
    assert "handrail resume s1 --dir" in second.output
    snapshot = load_snapshot(snapdir / "s1.json")
    assert [(d.tool_call_id, d.execute, d.decided_by) for d in snapshot.tool_execution_decisions] == [
        ("c1", True, "osuser"), ("c2", False, "dana")
    ]  # fmt: skip
    assert snapshot.ledger["c2"].decision is not None and snapshot.ledger["c2"].decision.feedback == "Only once."
    nothing = cli("approvals", "approve", "s1", "--dir", snapdir)
    assert nothing.exit_code == 2 and "No call of snapshot s1 awaits a decision" in nothing.output
    listed = cli("approvals", "list", "--dir", snapdir)
    assert "nothing to decide: handrail resume s1" in listed.output


def test_approve_with_an_edit(snapdir: Path) -> None:
    result = cli("approvals", "approve", "s1", "--dir", snapdir, "--call", "c2", "--edit", '{"amount": 6}')
    assert result.exit_code == 0, result.output
    assert "with edited arguments" in result.output
    entry = load_snapshot(snapdir / "s1.json").ledger["c2"]
    assert (entry.status, entry.arguments) == ("approved", {"amount": 6})


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        ("{amount: 6}", "--edit is not valid JSON"),
        ("[6]", "--edit must be a JSON object"),
        ('"six"', "--edit must be a JSON object"),
        ('{"amount": "six"}', "refused by schema validation: 'six' is not of type 'integer'"),
        ('{"amount": 6, "to": "me"}', "refused by schema validation: Additional properties"),
    ],
)
def test_a_bad_edit_is_refused_and_nothing_is_written(snapdir: Path, edit: str, fragment: str) -> None:
    before = (snapdir / "s1.json").read_bytes()
    result = cli("approvals", "approve", "s1", "--dir", snapdir, "--call", "c1", "--edit", edit)
    assert result.exit_code == 2
    assert fragment in result.output
    assert (snapdir / "s1.json").read_bytes() == before
    no_traceback(result)


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        ("c3", "Call 'c3' to 'lookup' in snapshot s1 is not pending (status 'done'); calls awaiting a decision"),
        ("c9", "Call 'c9' is not a call of snapshot s1; calls awaiting a decision: c1 (transfer), c2 (transfer)."),
    ],
)
def test_a_decision_for_a_call_that_is_not_pending(snapdir: Path, call: str, fragment: str) -> None:
    result = cli("approvals", "approve", "s1", "--dir", snapdir, "--call", call)
    assert result.exit_code == 2
    assert fragment in result.output
    no_traceback(result)


def test_two_different_decisions_for_one_call_conflict(snapdir: Path) -> None:
    assert cli("approvals", "approve", "s1", "--dir", snapdir, "--call", "c1", "--by", "ann").exit_code == 0
    again = cli("approvals", "approve", "s1", "--dir", snapdir, "--call", "c1", "--by", "bo")
    assert again.exit_code == 0 and "already recorded" in again.output
    conflict = cli("approvals", "reject", "s1", "--dir", snapdir, "--call", "c1", "--feedback", "no")
    assert conflict.exit_code == 2
    assert "Call 'c1' to 'transfer' in snapshot s1 was already decided (approve, by ann)" in conflict.output
    no_traceback(conflict)


def test_a_finished_snapshot_takes_no_decision(snapdir: Path) -> None:
    write_snapshot(paused_snapshot(status="done", outcome={"exit_reason": "text"}), snapdir / "old.json")
    result = cli("approvals", "approve", "old", "--dir", snapdir, "--call", "c1")
    assert result.exit_code == 2
    assert "Snapshot old belongs to a finished run (exit reason: text)." in result.output


def test_reject_needs_feedback(snapdir: Path) -> None:
    assert cli("approvals", "reject", "s1", "--dir", snapdir, "--call", "c1").exit_code == 2
    blank = cli("approvals", "reject", "s1", "--dir", snapdir, "--call", "c1", "--feedback", "  ")
    assert blank.exit_code == 2 and "--feedback is empty" in blank.output


def test_resume_needs_an_agent_file_when_none_is_recorded(snapdir: Path) -> None:
    write_snapshot(paused_snapshot(metadata={}), snapdir / "bare.json")
    result = cli("resume", "bare", "--dir", snapdir)
    assert result.exit_code == 2
    assert "Snapshot bare does not record its agent file; pass --agent AGENT.yaml." in result.output
    gone = cli("resume", "s1", "--dir", snapdir)  # records /abs/agent.yaml, which does not exist
    assert gone.exit_code == 2 and "is gone (/abs/agent.yaml); pass --agent" in gone.output
    missing = cli("resume", "s1", "--dir", snapdir.parent / "nope")
    assert missing.exit_code == 2 and "no such directory" in missing.output


def test_resume_refuses_a_finished_snapshot(snapdir: Path) -> None:
    write_snapshot(paused_snapshot(status="resumed", continued_in="s9.json"), snapdir / "old.json")
    result = cli("resume", "old", "--dir", snapdir)
    assert result.exit_code == 2
    assert "Snapshot old was already resumed; it continued in s9.json." in result.output


# ----------------------------------------------------------------------------- end to end
# AGENT PAUSE/RESUME: every test below needs the Agent to pause on a strategy with ``pauses_run``
# and to resume with ``run(messages=[], snapshot=...)`` (components/agents).

PAY = ChatMessage.from_assistant(tool_calls=[ToolCall("transfer", {"amount": 5}, "c1")])
PAY_TWICE = ChatMessage.from_assistant(
    tool_calls=[ToolCall("transfer", {"amount": 5}, "c1"), ToolCall("transfer", {"amount": 7}, "c2")]
)
DONE = ChatMessage.from_assistant("The rent is paid.")


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "transfers.log"
    path.touch()
    monkeypatch.setenv(LOG_ENV, str(path))
    return path


def agent_yaml(path: Path, replies: list[ChatMessage]) -> Path:
    path.write_text(
        scripted_generator_yaml(replies) + "\ntools: [tests.cli.test_approvals.transfer, calculator]\n"
        "allowed_modules: [tests.cli]\nconfirmation:\n  transfer: always\n  calculator: never\n",
        encoding="utf-8",
    )
    return path


def pause(tmp_path: Path, replies: list[ChatMessage]) -> tuple[Path, Path, dict[str, Any]]:
    """Run until the pause; return (agent file, snapshot dir, the run's JSON)."""
    agent = agent_yaml(tmp_path / "agent.yaml", replies)
    folder = tmp_path / "approvals"
    result = cli("run", "--json", "--pause-for-approval", folder, agent, "Pay the rent.")
    assert result.exit_code == 4, result.output
    return agent, folder, last_json(result)


def transfers(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8").split()


def test_pause_approve_resume(tmp_path: Path, log: Path) -> None:
    agent, folder, paused = pause(tmp_path, [PAY])
    assert paused["exit_reason"] == "paused_for_approval"
    assert [c["id"] for c in paused["pending_tool_calls"]] == ["c1"]
    snapshot_id = paused["snapshot_id"]
    assert paused["snapshot_file"] == str(folder / f"{snapshot_id}.json")
    assert transfers(log) == []  # nothing ran
    assert load_snapshot(folder / f"{snapshot_id}.json").metadata["agent_file"] == str(agent.resolve())
    listed = cli("approvals", "list", "--dir", folder)
    assert snapshot_id in listed.output and 'transfer({"amount": 5})' in listed.output

    assert cli("approvals", "approve", snapshot_id, "--dir", folder, "--by", "alice").exit_code == 0
    agent_yaml(agent, [DONE])
    resumed = cli("resume", snapshot_id, "--dir", folder)
    assert resumed.exit_code == 0, resumed.output
    assert "The rent is paid." in resumed.output and "sent 5" in resumed.output
    assert transfers(log) == ["5"]
    assert "No paused runs" in cli("approvals", "list", "--dir", folder).output
    again = cli("resume", snapshot_id, "--dir", folder)
    assert again.exit_code == 2 and snapshot_id in again.output
    assert transfers(log) == ["5"]  # never twice


def test_text_output_of_a_pause_names_the_snapshot_and_the_commands(tmp_path: Path, log: Path) -> None:
    agent = agent_yaml(tmp_path / "agent.yaml", [PAY])
    result = cli("run", "--pause-for-approval", tmp_path / "d", agent, "Pay the rent.")
    assert result.exit_code == 4, result.output
    (file,) = (tmp_path / "d").glob("*.json")
    assert f"Paused for approval: snapshot {file.stem}" in result.output
    assert 'c1  transfer({"amount": 5})' in result.output
    assert f"handrail approvals approve {file.stem} --dir" in result.output
    assert f"handrail resume {file.stem} --dir" in result.output


def test_an_edit_runs_with_the_new_arguments(tmp_path: Path, log: Path) -> None:
    agent, folder, paused = pause(tmp_path, [PAY])
    sid = paused["snapshot_id"]
    assert cli("approvals", "approve", sid, "--dir", folder, "--edit", '{"amount": 6}').exit_code == 0
    agent_yaml(agent, [DONE])
    resumed = cli("resume", "--json", sid, "--dir", folder)
    assert resumed.exit_code == 0, resumed.output
    assert transfers(log) == ["6"]
    assert last_json(resumed)["answer"] == "The rent is paid."


def test_a_rejection_reaches_the_model_and_nothing_runs(tmp_path: Path, log: Path) -> None:
    agent, folder, paused = pause(tmp_path, [PAY])
    sid = paused["snapshot_id"]
    assert cli("approvals", "reject", sid, "--dir", folder, "--feedback", "Too early.").exit_code == 0
    agent_yaml(agent, [ChatMessage.from_assistant("I did not pay.")])
    resumed = cli("resume", "--json", sid, "--dir", folder)
    assert resumed.exit_code == 0, resumed.output
    assert transfers(log) == []
    tool_results = [m for m in last_json(resumed)["messages"] if m["role"] == "tool"]
    assert any("Too early." in json.dumps(m) for m in tool_results)


def test_two_paused_calls_decided_differently(tmp_path: Path, log: Path) -> None:
    agent, folder, paused = pause(tmp_path, [PAY_TWICE])
    sid = paused["snapshot_id"]
    assert [c["id"] for c in paused["pending_tool_calls"]] == ["c1", "c2"]
    assert cli("approvals", "approve", sid, "--dir", folder).exit_code == 2  # which one?
    assert cli("approvals", "reject", sid, "--dir", folder, "--call", "c1", "--feedback", "Once.").exit_code == 0
    assert cli("approvals", "approve", sid, "--dir", folder, "--call", "c2").exit_code == 0
    agent_yaml(agent, [DONE])
    resumed = cli("resume", sid, "--dir", folder)
    assert resumed.exit_code == 0, resumed.output
    assert transfers(log) == ["7"]


def test_resuming_without_decisions_pauses_again(tmp_path: Path, log: Path) -> None:
    agent, folder, paused = pause(tmp_path, [PAY_TWICE])
    sid = paused["snapshot_id"]
    assert cli("approvals", "approve", sid, "--dir", folder, "--call", "c1").exit_code == 0
    agent_yaml(agent, [DONE])
    again = cli("resume", "--json", sid, "--dir", folder)
    assert again.exit_code == 4, again.output
    new_id = last_json(again)["snapshot_id"]
    assert new_id != sid
    assert [c["id"] for c in last_json(again)["pending_tool_calls"]] == ["c2"]
    assert transfers(log) == ["5"]  # the approved call ran; c2 waits
    listed = last_json(cli("approvals", "list", "--dir", folder, "--json"))
    assert [(p["snapshot_id"], p["tool_call_id"]) for p in listed["pending"]] == [(new_id, "c2")]
    old = cli("resume", sid, "--dir", folder)
    assert old.exit_code == 2 and f"it continued in {new_id}" in old.output


def test_pause_needs_no_terminal_and_excludes_approve(tmp_path: Path, log: Path) -> None:
    agent = agent_yaml(tmp_path / "agent.yaml", [PAY])
    both = cli("run", "--approve", "all", "--pause-for-approval", tmp_path / "d", agent, "q")
    assert both.exit_code == 2 and "pass only one" in both.output
    (tmp_path / "file").write_text("", encoding="utf-8")
    not_dir = cli("run", "--pause-for-approval", tmp_path / "file", agent, "q")
    assert not_dir.exit_code == 2 and "not a directory" in not_dir.output


def test_a_run_that_needs_no_approval_does_not_pause(tmp_path: Path, log: Path) -> None:
    calc = ChatMessage.from_assistant(tool_calls=[ToolCall("calculator", {"expression": "2 + 3"}, "k1")])
    agent = agent_yaml(tmp_path / "agent.yaml", [calc, DONE])
    result = cli("run", "--pause-for-approval", tmp_path / "d", agent, "q")
    assert result.exit_code == 0, result.output
    assert "The rent is paid." in result.output
    # A durable run records its calls in DIR; a finished run's file is marked done and never listed.
    assert all(load_snapshot(f).status == "done" for f in (tmp_path / "d").glob("*.json"))
    assert "No paused runs" in cli("approvals", "list", "--dir", tmp_path / "d").output


def test_resume_with_another_agent_file(tmp_path: Path, log: Path) -> None:
    _, folder, paused = pause(tmp_path, [PAY])
    sid = paused["snapshot_id"]
    assert cli("approvals", "approve", sid, "--dir", folder).exit_code == 0
    other = agent_yaml(tmp_path / "other.yaml", [DONE])
    resumed = cli("resume", sid, "--dir", folder, "--agent", other)
    assert resumed.exit_code == 0, resumed.output
    assert transfers(log) == ["5"]


def test_resume_uses_the_model_the_paused_run_was_given(tmp_path: Path, log: Path) -> None:
    _, folder, paused = pause(tmp_path, [PAY])
    path = folder / f"{paused['snapshot_id']}.json"
    snapshot = load_snapshot(path)
    url = "http://127.0.0.1:9/v1"  # as if the run had been started with --openai-base-url (nothing listens)
    write_snapshot(dataclasses.replace(snapshot, metadata={**snapshot.metadata, "generator": {"openai_base_url": url}}),
                   path)  # fmt: skip
    assert cli("approvals", "approve", paused["snapshot_id"], "--dir", folder).exit_code == 0
    resumed = cli("resume", paused["snapshot_id"], "--dir", folder)
    assert resumed.exit_code == 1, resumed.output
    assert transfers(log) == ["5"]  # the approved call ran, then the recorded model was asked
    errors = [line for line in resumed.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "127.0.0.1:9" in errors[0]
    no_traceback(resumed)
