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
from handrail.cli._common import printable
from handrail.core._files import FileLock, lock_path_for
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.snapshot import LedgerEntry, load_snapshot, write_snapshot
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
    words = ("approvals", "resume", "4 paused for approval", "2 bad usage", "5 the snapshot is held by a running",
             "(--unknown-outcome)", "(--allow-drift)", "permission denied")  # fmt: skip
    for word in words:
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
    assert data["interrupted"] == []


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
    assert "model calls so far: 1" in out and "steps:" not in out
    data = last_json(cli("approvals", "show", "s1.json", "--dir", snapdir, "--json"))
    assert [(c["id"], c["status"]) for c in data["calls"]] == [("c1", "pending"), ("c2", "pending"), ("c3", "done")]
    assert data["descriptions"]["transfer"] == "Move money."
    assert (data["status"], data["file_status"], data["model_calls"], data["hint"]) == ("paused", "paused", 1, None)


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
    assert "Still awaiting a decision: c2 (transfer). Resuming now would pause the run again at it." in first.output
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
    assert (
        "s1  paused" in listed.output
        and "· nothing to decide\n  Continue it with: handrail resume s1 " in listed.output
    )


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
        ('{"amount": NaN}', "--edit is not valid JSON (NaN is not a JSON number: JSON numbers are finite)"),
        ('{"amount": 1, "note": "\\ud800"}', "--edit is not valid JSON (at ['note']: the text holds a lone surrogate"),
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
    assert again.exit_code == 0, again.output
    assert "That decision already existed: call c1 (transfer) in snapshot s1 was approved by ann at " in again.output
    assert "Nothing was recorded; it stays ann's decision." in again.output and "bo" not in again.output
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


@pytest.mark.parametrize(
    ("by", "problem"),
    [("", "--by is empty"), ("  ", "--by is blank"), ("\u200b", "--by is blank"), ("\u3164", "--by is blank"),
     ("\u2800", "--by is blank"), ("a\u202eb", "U+202E"), ("\x1b[2J", "U+001B"), ("a\nb", "U+000A"),
     ("x" * 201, "--by has 201 characters (at most 200)")],
)  # fmt: skip
def test_a_by_naming_nobody_readable_is_refused(snapdir: Path, by: str, problem: str) -> None:
    """--by follows the stores' decided_by rule: no empty, invisible, control-holding or overlong name."""
    before = (snapdir / "s1.json").read_bytes()
    result = cli("approvals", "approve", "s1", "--dir", snapdir, "--call", "c1", "--by", by)
    assert result.exit_code == 2, result.output
    assert problem in result.output and "Traceback" not in result.output
    assert (snapdir / "s1.json").read_bytes() == before


def test_a_snapshot_that_cannot_be_read_is_a_usage_error(snapdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from handrail.stores import FileSnapshotStore

    def denied(store: FileSnapshotStore, handle: Any, snapshot_id: str) -> Any:  # as for another user's file (0600)
        raise PermissionError(13, "Permission denied", str(store.path_of(snapshot_id)))  # chmod does not bind root

    monkeypatch.setattr(FileSnapshotStore, "_read", denied)
    result = cli("approvals", "show", "s1", "--dir", snapdir)
    assert result.exit_code == 2, result.output
    assert "error: Permission denied: " in result.output and "s1.json" in result.output
    no_traceback(result)


# ----------------------------------------------------------------------------- interrupted and busy snapshots


def running_snapshot(folder: Path, name: str, *, crashed_call: bool) -> Path:
    """A snapshot whose file says 'running' (a resume took it); with ``crashed_call``, c1 was running too."""
    ledger = dict(paused_snapshot().ledger)
    if crashed_call:
        ledger["c1"] = LedgerEntry("c1", "transfer", "running", {"amount": 5})
    path = folder / f"{name}.json"
    write_snapshot(paused_snapshot(status="running", ledger=ledger), path)
    return path


@pytest.fixture
def held(snapdir: Path) -> Any:
    """A snapshot 'busy' whose lock this test holds, as a resume in another process would."""
    path = running_snapshot(snapdir, "busy", crashed_call=False)
    lock = FileLock(lock_path_for(path), timeout=0)
    assert lock.acquire()
    yield path
    lock.release()


def test_list_shows_interrupted_runs_with_the_resume_command(snapdir: Path, held: Path) -> None:
    running_snapshot(snapdir, "crashed", crashed_call=True)
    running_snapshot(snapdir, "failed", crashed_call=False)
    result = cli("approvals", "list", "--dir", snapdir)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "s1  paused" in out
    assert "Interrupted (status 'running' in the file, but no process is running them" in out
    assert "crashed  interrupted · last saved" in out
    assert 'c1  transfer({"amount": 5})  running when it stopped: outcome unknown' in out
    crashed_hint = f"handrail resume crashed --dir {snapdir} --agent AGENT.yaml --unknown-outcome retry\n"
    assert crashed_hint in out  # the snapshot's agent file (/abs/agent.yaml) is not there
    assert f"handrail resume crashed --dir {snapdir} --agent AGENT.yaml --unknown-outcome fail\n" in out
    assert "failed  interrupted" in out
    assert f"Continue it with: handrail resume failed --dir {snapdir} --agent AGENT.yaml\n  Replace AGENT.yaml" in out
    # Held by a process right now: listed as running, neither paused nor interrupted.
    assert "Running now (a process holds them: a run or resume in progress" in out
    assert "busy  running · last saved" in out
    assert out.index("busy  running") < out.index("Interrupted (")
    data = last_json(cli("approvals", "list", "--dir", snapdir, "--json"))
    assert [p["snapshot_id"] for p in data["pending"]] == ["s1", "s1"]
    assert [(r["snapshot_id"], r["status"], r["running_calls"]) for r in data["running"]] == [("busy", "running", [])]
    crashed, failed = data["interrupted"]
    assert (crashed["snapshot_id"], crashed["status"], crashed["file_status"]) == ("crashed", "interrupted", "running")
    assert crashed["running_calls"] == [{"tool_call_id": "c1", "tool_name": "transfer", "arguments": {"amount": 5}}]
    assert "--unknown-outcome retry\n" in crashed["hint"] and "--unknown-outcome fail\n" in crashed["hint"]
    assert crashed["path"] == str(snapdir / "crashed.json")
    assert failed["running_calls"] == [] and "--unknown-outcome" not in failed["hint"]


def test_only_interrupted_runs(tmp_path: Path) -> None:
    running_snapshot(tmp_path, "crashed", crashed_call=True)
    result = cli("approvals", "list", "--dir", tmp_path)
    assert result.exit_code == 0, result.output
    assert "No paused runs" in result.output and "crashed  interrupted" in result.output


def test_show_says_interrupted_or_being_resumed(snapdir: Path, held: Path) -> None:
    running_snapshot(snapdir, "crashed", crashed_call=True)
    shown = cli("approvals", "show", "crashed", "--dir", snapdir)
    assert shown.exit_code == 0, shown.output
    assert "status: interrupted (the file says 'running', but no process holds it)" in shown.output
    assert "status: running" not in shown.output
    assert "c1  transfer" in shown.output and "running · its process stopped mid-call: outcome unknown" in shown.output
    assert "--unknown-outcome retry\n" in shown.output and "--unknown-outcome fail\n" in shown.output
    assert "(runs it again with the same call id)" in shown.output
    data = last_json(cli("approvals", "show", "crashed", "--dir", snapdir, "--json"))
    assert (data["status"], data["file_status"]) == ("interrupted", "running")
    assert "--unknown-outcome" in data["hint"]
    busy = cli("approvals", "show", "busy", "--dir", snapdir)
    assert busy.exit_code == 0, busy.output
    assert "status: running (a process holds it now: a run or resume in progress" in busy.output


def test_a_decision_on_an_interrupted_snapshot_says_what_is_the_case(snapdir: Path) -> None:
    path = running_snapshot(snapdir, "crashed", crashed_call=False)
    before = path.read_bytes()
    result = cli("approvals", "approve", "crashed", "--dir", snapdir, "--call", "c2")
    assert result.exit_code == 2, result.output
    assert "Snapshot crashed was interrupted: its file says 'running' but no process holds it" in result.output
    assert f"Continue it with: handrail resume crashed --dir {snapdir}" in result.output
    assert "is being resumed" not in result.output
    assert path.read_bytes() == before
    no_traceback(result)


def test_a_snapshot_being_resumed_exits_with_code_5(snapdir: Path, held: Path) -> None:
    for args in (["approvals", "approve", "busy", "--call", "c1"], ["approvals", "reject", "busy", "--feedback", "x"],
                 ["resume", "busy"]):  # fmt: skip
        result = cli(*args, "--dir", snapdir)
        assert result.exit_code == 5, result.output
        assert "Snapshot busy is held by a running process right now" in result.output
        no_traceback(result)


def test_a_paused_snapshot_claimed_while_deciding_exits_with_code_5(
    snapdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from handrail.cli import _stores

    monkeypatch.setattr(_stores, "LOCK_TIMEOUT", 0.05)  # how long a decision waits for a claim held elsewhere
    lock = FileLock(lock_path_for(snapdir / "s1.json"), timeout=0)
    assert lock.acquire()  # a resume has claimed s1 and not yet marked it running
    try:
        result = cli("approvals", "approve", "s1", "--dir", snapdir, "--call", "c1")
    finally:
        lock.release()
    assert result.exit_code == 5, result.output
    assert "s1 is being resumed" in result.output
    no_traceback(result)


# ----------------------------------------------------------------------------- control characters


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain text, spaces kept", "plain text, spaces kept"),
        ("für", "für"),
        ("c1\x1b[31m", "c1\\x1b[31m"),
        ("a\rb\x07c", "a\\rb\\x07c"),
        ("two\nlines\tand tab", "two\\nlines\\tand tab"),
        ("c1\x9b31m\x7f", "c1\\x9b31m\\x7f"),
        ("abc\u202edcba\u2028", "abc\\u202edcba\\u2028"),
        ("\x00", "\\x00"),
    ],
)
def test_printable_escapes_control_characters(text: str, shown: str) -> None:
    assert printable(text) == shown


def test_printable_can_keep_lines() -> None:
    assert printable("one\n\ttwo\x1b[2J\r", keep_newlines=True) == "one\n\ttwo\\x1b[2J\\r"


EVIL_ID = "c1\\x1b[31m"  # backslash text: an id holding a real ESC is replaced (call_1) before anything shows it
EVIL_ARGS = {"note": "hi\x9b2J\rthere"}


def evil_snapshot(folder: Path) -> Path:
    calls = [ToolCall("transfer", EVIL_ARGS, EVIL_ID), ToolCall("transfer", {"amount": 7}, "c2")]
    base = paused_snapshot()
    messages = [*base.messages[:-1], ChatMessage.from_assistant(tool_calls=calls)]
    ledger = {c.id: LedgerEntry(c.id, "transfer", "pending", c.arguments) for c in calls if c.id}
    path = folder / "evil.json"
    write_snapshot(dataclasses.replace(base, messages=messages, ledger=ledger), path)
    return path


def no_controls(text: str) -> None:
    assert not any(ch in text for ch in "\x1b\x9b\x07\r"), repr(text)


def test_model_chosen_strings_are_escaped_in_list_show_and_errors(tmp_path: Path) -> None:
    evil_snapshot(tmp_path)
    listed = cli("approvals", "list", "--dir", tmp_path)
    assert listed.exit_code == 0, listed.output
    no_controls(listed.output)
    assert "c1\\x1b[31m  transfer" in listed.output and "hi\\x9b2J\\rthere" in listed.output
    shown = cli("approvals", "show", "evil", "--dir", tmp_path)
    assert shown.exit_code == 0, shown.output
    no_controls(shown.output)
    assert "c1\\x1b[31m  transfer" in shown.output and "c2  transfer" in shown.output
    which = cli("approvals", "approve", "evil", "--dir", tmp_path)  # two wait: names both in the error
    assert which.exit_code == 2
    no_controls(which.output)
    assert "c1\\x1b[31m (transfer), c2 (transfer)" in which.output
    unknown = cli("approvals", "approve", "evil", "--dir", tmp_path, "--call", "x\x1b]0;pwned\x07")
    assert unknown.exit_code == 2
    no_controls(unknown.output)
    assert "Call 'x\\x1b]0;pwned\\x07' is not a call" in unknown.output
    data = cli("approvals", "list", "--dir", tmp_path, "--json")
    assert "\x9b" not in data.stdout and "\\u009b" in data.stdout  # still valid JSON, same data
    assert last_json(data)["pending"][0]["arguments"] == EVIL_ARGS
    refused = cli("approvals", "reject", "evil", "--dir", tmp_path, "--call", EVIL_ID, "--by", "eve\x1b[0m")
    assert refused.exit_code == 2 and "--by holds the control or invisible character U+001B" in refused.output
    no_controls(refused.output)
    decided = cli("approvals", "reject", "evil", "--dir", tmp_path, "--call", EVIL_ID, "--feedback", "no\x1b[2J",
                  "--by", "eve")  # fmt: skip
    assert decided.exit_code == 0, decided.output
    no_controls(decided.output)
    assert "Rejected call c1\\x1b[31m (transfer)" in decided.output and "decided by eve." in decided.output
    after = cli("approvals", "show", "evil", "--dir", tmp_path)
    no_controls(after.output)
    assert "feedback: no\\x1b[2J" in after.output


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


def test_show_of_a_resumed_snapshot_lists_the_call_it_paused_for(tmp_path: Path, log: Path) -> None:
    """The resumed run went on in the old record, whose last message became the next step's call: show listed
    only that one (undecided) and not the approved call this snapshot paused for, which ran."""
    pay_more = ChatMessage.from_assistant(tool_calls=[ToolCall("transfer", {"amount": 9}, "c7")])
    agent, folder, paused = pause(tmp_path, [PAY])
    sid = paused["snapshot_id"]
    assert cli("approvals", "approve", sid, "--dir", folder, "--call", "c1", "--by", "alice").exit_code == 0
    agent_yaml(agent, [pay_more, DONE])
    again = cli("resume", "--json", sid, "--dir", folder)
    assert again.exit_code == 4, again.output
    shown = last_json(cli("approvals", "show", sid, "--dir", folder, "--json"))
    by_id = {c["id"]: c for c in shown["calls"]}
    assert list(by_id) == ["c1", "c7"]
    assert by_id["c1"]["status"] == "done" and "by alice" in by_id["c1"]["details"]
    assert by_id["c7"]["status"] == "undecided"
    text = cli("approvals", "show", sid, "--dir", folder).output
    assert "c1" in text and "by alice" in text


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


def test_a_resume_that_failed_is_listed_as_interrupted_and_resumes(tmp_path: Path, log: Path) -> None:
    agent, folder, paused = pause(tmp_path, [PAY])
    sid = paused["snapshot_id"]
    assert cli("approvals", "approve", sid, "--dir", folder).exit_code == 0
    agent_yaml(agent, [])  # the model call after the transfer fails: the script is exhausted
    failed = cli("resume", sid, "--dir", folder)
    assert failed.exit_code == 1, failed.output
    assert transfers(log) == ["5"]
    assert load_snapshot(folder / f"{sid}.json").status == "running"  # as a crash or an error leaves it
    listed = cli("approvals", "list", "--dir", folder)
    assert listed.exit_code == 0, listed.output
    assert f"{sid}  interrupted" in listed.output
    assert f"Continue it with: handrail resume {sid} --dir {folder}" in listed.output
    assert "--unknown-outcome" not in listed.output  # the transfer finished and is recorded
    refused = cli("approvals", "approve", sid, "--dir", folder)
    assert refused.exit_code == 2 and f"Snapshot {sid} was interrupted" in refused.output
    agent_yaml(agent, [DONE])
    resumed = cli("resume", sid, "--dir", folder)
    assert resumed.exit_code == 0, resumed.output
    note = f"Snapshot {sid} was interrupted (its run stopped without pausing or finishing); continuing it."
    assert note in resumed.output
    assert "The rent is paid." in resumed.output
    assert transfers(log) == ["5"]  # recorded: not run again
    data = last_json(cli("approvals", "list", "--dir", folder, "--json"))
    assert data.pop("approvals") == [] and data.pop("counts")["approved"] == 1  # the store keeps approval records
    assert data == {"pending": [], "ready_to_resume": [], "running": [], "interrupted": [], "unreadable": []}


def died_during_the_transfer(folder: Path, sid: str) -> None:
    """Mark snapshot ``sid`` and its call c1 running, as if the process died during the transfer."""
    path = folder / f"{sid}.json"
    snapshot = load_snapshot(path)
    entry = dataclasses.replace(snapshot.ledger["c1"], status="running")
    write_snapshot(dataclasses.replace(snapshot, status="running", ledger={"c1": entry}), path)


def test_a_call_found_running_is_named_with_cli_flags(tmp_path: Path, log: Path) -> None:
    agent, folder, paused = pause(tmp_path, [PAY])
    sid = paused["snapshot_id"]
    assert cli("approvals", "approve", sid, "--dir", folder).exit_code == 0
    died_during_the_transfer(folder, sid)
    listed = cli("approvals", "list", "--dir", folder)
    assert f"handrail resume {sid} --dir {folder} --unknown-outcome retry\n" in listed.output
    assert f"handrail resume {sid} --dir {folder} --unknown-outcome fail\n" in listed.output
    agent_yaml(agent, [DONE])
    refused = cli("resume", sid, "--dir", folder)
    assert refused.exit_code == 2, refused.output
    errors = [line for line in refused.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, refused.output
    assert "Call 'c1' to tool 'transfer' was running when its process stopped" in errors[0]
    assert "--unknown-outcome retry" in errors[0] and "--unknown-outcome fail" in errors[0]
    assert "unknown_outcome=" not in refused.output and "ToolCallId" not in refused.output
    no_traceback(refused)
    assert transfers(log) == []
    resumed = cli("resume", sid, "--dir", folder, "--unknown-outcome", "fail")
    assert resumed.exit_code == 0, resumed.output
    assert transfers(log) == []  # recorded as failed, not run


def test_drift_is_reported_with_the_cli_flag_and_a_readable_diff(tmp_path: Path, log: Path) -> None:
    agent, folder, paused = pause(tmp_path, [PAY])
    sid = paused["snapshot_id"]
    assert cli("approvals", "approve", sid, "--dir", folder).exit_code == 0
    agent_yaml(agent, [DONE])
    agent.write_text(agent.read_text(encoding="utf-8") + "system_prompt: Zahle die Miete für Jörg.\n", encoding="utf-8")
    refused = cli("resume", sid, "--dir", folder)
    assert refused.exit_code == 2, refused.output
    out = refused.output
    assert "error: The agent changed since snapshot" in out and "Resume with --allow-drift" in out
    assert "allow_drift" not in out and "Pass --allow-drift" not in out
    assert '+  "system_prompt": "Zahle die Miete für Jörg.",' in out and "\\u00fc" not in out
    assert '-  "system_prompt": null,' in out
    no_traceback(refused)
    assert transfers(log) == []
    resumed = cli("resume", sid, "--dir", folder, "--allow-drift")
    assert resumed.exit_code == 0, resumed.output
    assert transfers(log) == ["5"]


def test_run_output_escapes_what_the_model_chose(tmp_path: Path, log: Path) -> None:
    evil = ChatMessage.from_assistant(tool_calls=[ToolCall("transfer", {"amount": 5}, EVIL_ID)])
    agent = agent_yaml(tmp_path / "agent.yaml", [evil])
    folder = tmp_path / "d"
    result = cli("run", "--pause-for-approval", folder, agent, "Pay the rent.")
    assert result.exit_code == 4, result.output
    no_controls(result.output)
    assert 'c1\\x1b[31m  transfer({"amount": 5})' in result.output
    (file,) = folder.glob("*.json")
    assert cli("approvals", "approve", file.stem, "--dir", folder).exit_code == 0
    agent_yaml(agent, [ChatMessage.from_assistant("Paid.\x1b]0;owned\x07\nBye\x9b2J")])
    resumed = cli("resume", file.stem, "--dir", folder)
    assert resumed.exit_code == 0, resumed.output
    no_controls(resumed.output)
    assert "Paid.\\x1b]0;owned\\x07\nBye\\x9b2J" in resumed.output  # the answer keeps its lines
    assert transfers(log) == ["5"]


def test_deciding_again_without_call_repeats_or_conflicts_on_the_steps_only_call(tmp_path: Path) -> None:
    folder = tmp_path / "one"
    two = paused_snapshot()
    *head, asking = two.messages
    kept = [c for c in asking.tool_calls if c.id != "c2"]  # c1 waits for a decision, c3 ran
    one = dataclasses.replace(
        two,
        messages=[*head, ChatMessage.from_assistant(tool_calls=kept)],
        ledger={k: v for k, v in two.ledger.items() if k != "c2"},
    )
    write_snapshot(one, folder / "one.json")
    assert cli("approvals", "approve", "one", "--dir", folder, "--by", "ann").exit_code == 0
    again = cli("approvals", "approve", "one", "--dir", folder, "--by", "bo")
    assert again.exit_code == 0 and "That decision already existed" in again.output, again.output
    assert "was approved by ann at " in again.output and "it stays ann's decision" in again.output
    conflict = cli("approvals", "reject", "one", "--dir", folder, "--feedback", "no")
    assert conflict.exit_code == 2
    assert "Call 'c1' to 'transfer' in snapshot one was already decided (approve, by ann)" in conflict.output
    no_traceback(conflict)


def test_deciding_again_without_call_when_several_calls_were_decided_asks_for_one(snapdir: Path) -> None:
    for call in ("c1", "c2"):
        assert cli("approvals", "approve", "s1", "--dir", snapdir, "--call", call).exit_code == 0
    result = cli("approvals", "approve", "s1", "--dir", snapdir)
    assert result.exit_code == 2
    assert "No call of snapshot s1 awaits a decision (decided: c1 (transfer), c2 (transfer); name one with --call" in (
        result.output
    )
    no_traceback(result)


def test_a_paused_snapshot_whose_claim_is_held_is_listed_as_running(snapdir: Path) -> None:
    """A resume has claimed it but not yet marked it 'running' (e.g. while its model loads)."""
    lock = FileLock(lock_path_for(snapdir / "s1.json"), timeout=0)
    assert lock.acquire()
    try:
        out = cli("approvals", "list", "--dir", snapdir).output
        assert "s1  running · last saved" in out and "s1  paused" not in out
        data = last_json(cli("approvals", "list", "--dir", snapdir, "--json"))
        assert data["pending"] == [] and [r["snapshot_id"] for r in data["running"]] == ["s1"]
    finally:
        lock.release()
    assert "s1  paused" in cli("approvals", "list", "--dir", snapdir).output


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"status": "resumed", "continued_in": "s9"}, "undecided · no longer decided here: the run continued in s9"),
        ({"status": "done", "outcome": {"exit_reason": "text"}}, "undecided · the run finished"),
    ],
)
def test_show_does_not_offer_an_ended_snapshots_calls_for_a_decision(
    snapdir: Path, changes: dict[str, Any], fragment: str
) -> None:
    write_snapshot(paused_snapshot(**changes), snapdir / "old.json")
    out = cli("approvals", "show", "old", "--dir", snapdir).output
    assert fragment in out and "awaiting a decision" not in out
