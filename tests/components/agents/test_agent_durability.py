"""Durability across processes: one snapshot never runs a call twice, a crash mid-call is not re-run
silently, and the frozen fixture of each snapshot version still resumes.

Worker processes run ``tests.components.agents.durable_worker``; tools log every call to a file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import signal
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.core.serialization import deserialize_type
from handrail.dataclasses import ChatRole
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import AgentSnapshot, load_snapshot
from handrail.errors import SnapshotUnavailableError, UnknownOutcomeError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.human_in_the_loop.snapshots import list_pending
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool, Toolset
from tests.cases._helpers import asst, result_for, user
from tests.components.agents import durable_worker as worker

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "snapshots"
CONFIRM = {"execute": True}


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The side-effect log of tools run in this process (workers get their own ``--log``)."""
    path = tmp_path / "calls.jsonl"
    monkeypatch.setitem(worker.CONFIG, "log", str(path))
    monkeypatch.setitem(worker.CONFIG, "gate", None)
    monkeypatch.setitem(worker.CONFIG, "marker", None)
    return path


def _snapshot_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*.json") if not p.name.startswith("."))


def _status(path: Path) -> str:
    status: str = json.loads(path.read_text())["status"]
    return status


def _pause_here(directory: Path) -> Path:
    """The C13 first run, in this process: returns the paused snapshot file."""
    with pytest.raises(HITLBreakpointException) as info:
        worker.c13_agent(directory, [worker.C13_CALL]).run([user("Send 10 to Bob")])
    assert info.value.snapshot_file_path is not None
    return Path(info.value.snapshot_file_path)


def _approved(snapshot: AgentSnapshot) -> AgentSnapshot:
    decision = ToolExecutionDecision("transfer", True, "c1")
    return dataclasses.replace(snapshot, tool_execution_decisions=[decision])


# -- one snapshot, resumed twice ------------------------------------------------------------------


def test_a_snapshot_resumed_twice_in_a_row_runs_the_call_once(tmp_path: Path, log: Path) -> None:
    path = _pause_here(tmp_path / "snaps")
    stale = load_snapshot(path)  # held by this process while another one resumes the file

    first = worker.finish(worker.start("resume", dir=path.parent, log=log, snapshot=path, decision=CONFIRM))
    assert first["outcome"] == "ok" and first["answer"] == "Transfer done", first
    second = worker.finish(worker.start("resume", dir=path.parent, log=log, snapshot=path, decision=CONFIRM))
    assert second["outcome"] == "error" and second["type"] == "SnapshotFinishedError", second
    assert "SnapshotUnavailableError" in second["types"]  # except SnapshotUnavailableError still catches it
    assert path.stem in second["message"]
    assert second["model_inputs"] == []

    with pytest.raises(SnapshotUnavailableError, match=path.stem):
        worker.c13_agent(path.parent, [worker.C13_ANSWER]).run([], snapshot=_approved(stale))

    assert [(e["tool"], e["amount"]) for e in worker.read_log(log)] == [("transfer", 10)]
    assert _status(path) == "done"
    assert list_pending(path.parent) == []


def _started(gate: Path) -> list[Path]:
    return sorted(gate.glob("started-*"))


def _poll(condition: Any, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def test_two_processes_resuming_one_snapshot_at_once_run_the_call_once(tmp_path: Path, log: Path) -> None:
    path = _pause_here(tmp_path / "snaps")
    assert [p.snapshot_id for p in list_pending(path.parent)] == [path.stem]
    gate = tmp_path / "gate"
    gate.mkdir()
    processes = [
        worker.start("resume", dir=path.parent, log=log, snapshot=path, decision=CONFIRM, gate=gate) for _ in range(2)
    ]
    try:
        # One process enters the tool and waits there, holding the snapshot, until the gate opens.
        _poll(lambda: _started(gate) or all(p.poll() is not None for p in processes), "a process to start the tool")
        assert _started(gate), [worker.finish(p) for p in processes]
        winner_pid = int(_started(gate)[0].name.removeprefix("started-"))
        winner = next(p for p in processes if p.pid == winner_pid)
        loser = next(p for p in processes if p.pid != winner_pid)
        _poll(lambda: loser.poll() is not None or len(_started(gate)) > 1, "the second process to give up")
        assert len(_started(gate)) == 1, "both processes entered the tool"
        lost = worker.finish(loser)
        assert worker.read_log(log) == []  # the winner is still inside the tool
        (gate / "release").write_text("")
        won = worker.finish(winner)
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
                p.communicate()
    assert won["outcome"] == "ok" and won["answer"] == "Transfer done", won
    assert lost["outcome"] == "error" and lost["type"] == "SnapshotUnavailableError", lost
    assert path.stem in lost["message"] and "being resumed" in lost["message"]
    assert lost["model_inputs"] == []
    assert [(e["tool"], e["amount"]) for e in worker.read_log(log)] == [("transfer", 10)]
    assert _status(path) == "done"
    assert list_pending(path.parent) == []


@pytest.mark.parametrize(
    ("decision", "status"),
    [
        (ToolExecutionDecision("transfer", True, "c1"), "done"),
        (ToolExecutionDecision("transfer", True, "c1", final_tool_params={"amount": 5}), "done"),
        (ToolExecutionDecision("transfer", False, "c1", feedback="too much"), "rejected"),
    ],
    ids=["confirm", "modify", "reject"],
)
def test_a_finished_file_records_the_decision_and_outcome_of_each_call(
    tmp_path: Path, log: Path, decision: ToolExecutionDecision, status: str
) -> None:
    path = _pause_here(tmp_path / "snaps")
    snapshot = dataclasses.replace(load_snapshot(path), tool_execution_decisions=[decision])
    worker.c13_agent(path.parent, [worker.C13_ANSWER]).run([], snapshot=snapshot)
    data = json.loads(path.read_text())
    assert data["status"] == "done"
    entry = data["ledger"]["c1"]
    assert entry["status"] == status, entry
    assert ToolExecutionDecision.from_dict(entry["decision"]) == decision
    assert entry["decided_at"] is not None


# -- a crash in the middle of a call --------------------------------------------------------------


@pytest.fixture
def crashed(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """A durable run killed (SIGKILL) while its ``charge`` call k1 runs; returns its directory and log."""
    run_dir, crash_log, marker = tmp_path / "run", tmp_path / "crash.jsonl", tmp_path / "started"
    process = worker.start("crash", dir=run_dir, log=crash_log, marker=marker)
    try:
        worker.wait_for(marker.exists, process, "the tool started")
        os.kill(process.pid, signal.SIGKILL)
        process.communicate(timeout=60)
        assert process.returncode == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    yield {"dir": run_dir, "log": crash_log}


def _copy(path: Path, directory: Path) -> Path:
    directory.mkdir()
    copy = directory / path.name
    shutil.copy2(path, copy)
    return copy


def test_a_call_killed_mid_run_is_named_and_not_run_again_silently(
    crashed: dict[str, Path], tmp_path: Path, log: Path
) -> None:
    files = _snapshot_files(crashed["dir"])
    assert len(files) == 1, files
    path = files[0]
    data = json.loads(path.read_text())
    assert data["status"] == "running" and data["ledger"]["k1"]["status"] == "running"
    attempt = worker.read_log(crashed["log"])
    assert [(e["tool"], e["key"]) for e in attempt] == [("charge", "k1")]
    retry_copy = _copy(path, tmp_path / "retry")

    agent = worker.crash_agent(path.parent, [worker.CRASH_ANSWER])
    with pytest.raises(UnknownOutcomeError, match="'k1'") as info:
        agent.run([], snapshot=load_snapshot(path))
    assert (info.value.tool_name, info.value.tool_call_id) == ("charge", "k1")
    assert worker.read_log(log) == []
    assert _status(path) == "running"  # refused before anything changed: still resumable

    agent = worker.crash_agent(path.parent, [worker.CRASH_ANSWER])
    result = agent.run([], snapshot=load_snapshot(path), unknown_outcome="fail")
    assert result["last_message"].text == "Charged"
    assert worker.read_log(log) == []
    generator = agent.chat_generator
    assert isinstance(generator, ScriptedChatGenerator) and len(generator.calls) == 1
    seen = result_for(generator.calls[0]["messages"], "k1")
    assert seen.error is True and "Outcome unknown" in seen.result
    assert _status(path) == "done"

    agent = worker.crash_agent(retry_copy.parent, [worker.CRASH_ANSWER])
    result = agent.run([], snapshot=load_snapshot(retry_copy), unknown_outcome="retry")
    assert result["last_message"].text == "Charged"
    again = worker.read_log(log)
    assert [(e["tool"], e["amount"], e["key"]) for e in again] == [("charge", 7, "k1")]
    assert again[0]["key"] == attempt[0]["key"]  # the same idempotency key as the killed attempt
    assert result_for(result["messages"], "k1").result == "charged 7"
    assert json.loads(retry_copy.read_text())["ledger"]["k1"]["status"] == "done"


def test_giving_up_an_unknown_outcome_is_recorded_in_the_ledger(crashed: dict[str, Path], log: Path) -> None:
    [path] = _snapshot_files(crashed["dir"])
    agent = worker.crash_agent(path.parent, [worker.CRASH_ANSWER])
    agent.run([], snapshot=load_snapshot(path), unknown_outcome="fail")
    data = json.loads(path.read_text())
    assert data["status"] == "done"
    entry = data["ledger"]["k1"]  # the file is the source of truth: it must not say the call is still running
    assert entry["status"] == "failed", entry
    assert entry["result"]["error"] is True and "Outcome unknown" in entry["result"]["text"]


def test_a_resumed_run_killed_mid_call_retries_the_edited_call(tmp_path: Path, log: Path) -> None:
    path = _pause_here(tmp_path / "snaps")
    gate = tmp_path / "gate"
    edit = {"execute": True, "final_tool_params": {"amount": 5}}
    process = worker.start("resume", dir=path.parent, log=log, snapshot=path, decision=edit, gate=gate)
    try:
        _poll(lambda: _started(gate) or process.poll() is not None, "the resumed transfer to start")
        assert _started(gate), worker.finish(process)
        os.kill(process.pid, signal.SIGKILL)
        process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert worker.read_log(log) == []
    data = json.loads(path.read_text())
    assert data["status"] == "running"
    assert (data["ledger"]["c1"]["status"], data["ledger"]["c1"]["arguments"]) == ("running", {"amount": 5})
    assert list_pending(path.parent) == []

    with pytest.raises(UnknownOutcomeError, match="'c1'"):
        worker.c13_agent(path.parent, [worker.C13_ANSWER]).run([], snapshot=load_snapshot(path))
    agent = worker.c13_agent(path.parent, [worker.C13_ANSWER])
    result = agent.run([], snapshot=load_snapshot(path), unknown_outcome="retry")
    assert result["last_message"].text == "Transfer done"
    assert [(e["tool"], e["amount"]) for e in worker.read_log(log)] == [("transfer", 5)]  # the edit, not the 10
    generator = agent.chat_generator
    assert isinstance(generator, ScriptedChatGenerator)
    seen = generator.calls[0]["messages"]
    assert result_for(seen, "c1").result == "sent 5"
    assert sum("updated by the user" in (m.text or "") for m in seen if m.role is ChatRole.USER) == 1
    assert _status(path) == "done"


# -- the frozen fixture of schema version 1 -------------------------------------------------------

RAN: list[int] = []


def _fixture_agent(fingerprint: dict[str, Any], replies: list[Any], directory: Path) -> Agent:
    """An agent whose definition matches ``fingerprint`` exactly (tools rebuilt from their schemas)."""

    def transfer(amount: int) -> str:
        RAN.append(amount)
        return f"Transferred {amount} to savings."

    tools: list[Tool | Toolset] = [
        Tool(name=name, description=spec["description"], parameters=spec["parameters"], function=transfer)
        for name, spec in fingerprint["tools"].items()
    ]
    return Agent(
        chat_generator=ScriptedChatGenerator(replies),
        tools=tools,
        system_prompt=fingerprint["system_prompt"],
        user_prompt=fingerprint["user_prompt"],
        exit_conditions=fingerprint["exit_conditions"],
        state_schema={key: {"type": deserialize_type(t)} for key, t in fingerprint["state_schema"].items()},
        confirmation_strategies={"transfer": BreakpointConfirmationStrategy(str(directory))},
    )


def test_the_v1_fixture_loads_and_resumes_to_completion(tmp_path: Path) -> None:
    fixture = FIXTURES / "v1_tool_pause.json"
    digest = hashlib.sha256(fixture.read_bytes()).hexdigest()
    path = _copy(fixture, tmp_path / "snaps")
    snapshot = load_snapshot(path)
    assert snapshot.schema_version == 1 and snapshot.status == "paused"
    assert [c.id for c in snapshot.pending_tool_calls] == ["c1", "c2"]
    assert {k: e.status for k, e in snapshot.ledger.items()} == {"c1": "done", "c2": "pending"}
    assert isinstance(snapshot.state["session_started"], datetime)
    assert snapshot.state["accounts"] == ("checking", "savings")

    RAN.clear()
    agent = _fixture_agent(snapshot.fingerprint, [asst("Paid the plumber; 2500 moved.")], path.parent)
    decision = ToolExecutionDecision("transfer", True, "c2")
    result = agent.run([], snapshot=dataclasses.replace(snapshot, tool_execution_decisions=[decision]),
                       allow_drift=False)  # fmt: skip

    assert RAN == [2500]  # c1 is recorded done in the ledger: it is not run again
    assert result["last_message"].text == "Paid the plumber; 2500 moved."
    assert result_for(result["messages"], "c1").result == "Transferred 40 from checking."
    assert result_for(result["messages"], "c2").result == "Transferred 2500 to savings."
    assert [m.role for m in result["messages"]].count(ChatRole.SYSTEM) == 1
    assert result["messages"][1].text == snapshot.messages[1].text
    # The State is the one recorded as the paused step began; the step's two calls are counted once each.
    assert result["tool_call_counts"]["transfer"] == snapshot.state["tool_call_counts"]["transfer"] + 2
    assert result["step_count"] == snapshot.step_count + 2
    assert result["accounts"] == ("checking", "savings")
    assert result["session_started"] == snapshot.state["session_started"]
    assert _status(path) == "done"
    assert hashlib.sha256(fixture.read_bytes()).hexdigest() == digest  # the frozen file is never written
