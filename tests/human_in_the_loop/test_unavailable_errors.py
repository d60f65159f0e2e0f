"""A finished, resumed or interrupted snapshot raises an error whose exit code and message are the command's.

Before, the library raised a plain SnapshotUnavailableError (exit code 5, "try again later") in all three cases,
where the command exits with 2, and called an interrupted snapshot "being resumed" though nobody resumes it.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import handrail
from handrail.cli import main
from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.errors import (
    SnapshotFinishedError,
    SnapshotInterruptedError,
    SnapshotResumedError,
    SnapshotUnavailableError,
)
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.human_in_the_loop.snapshots import unavailable_reason
from handrail.stores import FileSnapshotStore
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.common_tools import SENT, transfer

APPROVE = ToolExecutionDecision("transfer", True, "c1")


@pytest.fixture(autouse=True)
def _sent() -> None:
    SENT.clear()


def _agent(store: FileSnapshotStore, replies: list[ChatMessage]) -> Agent:
    return Agent(
        chat_generator=ScriptedChatGenerator(replies),
        tools=[create_tool_from_function(transfer)],
        confirmation_strategies={"transfer": BreakpointConfirmationStrategy(snapshot_store=store)},
    )


def _pause(store: FileSnapshotStore, calls: int = 1) -> str:
    pay = ChatMessage.from_assistant(
        tool_calls=[ToolCall("transfer", {"amount": 5 + i}, f"c{i + 1}") for i in range(calls)]
    )
    with pytest.raises(HITLBreakpointException) as paused:
        _agent(store, [pay]).run([ChatMessage.from_user("pay")])
    snapshot_id = paused.value.snapshot.snapshot_id
    assert snapshot_id is not None
    return snapshot_id


def _cli_error(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, " ".join(result.output.split())


def test_resuming_a_finished_run_is_exit_code_2_with_the_commands_words(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path)
    snapshot_id = _pause(store)
    handrail.resume(snapshot_id, store=store, agent=_agent(store, [ChatMessage.from_assistant("ok")]),
                    decisions=[APPROVE])  # fmt: skip
    with pytest.raises(SnapshotFinishedError) as ended:
        handrail.resume(snapshot_id, store=store, agent=_agent(store, [ChatMessage.from_assistant("ok")]))
    assert isinstance(ended.value, SnapshotUnavailableError) and ended.value.exit_code == 2
    assert f"Snapshot {snapshot_id} belongs to a finished run (exit reason: text)." == str(ended.value)
    code, output = _cli_error("resume", snapshot_id, "--dir", str(tmp_path), "--agent", "x.yaml")
    assert (code, output) == (2, f"error: {ended.value}")


def test_resuming_a_resumed_snapshot_is_exit_code_2_with_the_commands_words(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path)
    snapshot_id = _pause(store, calls=2)
    with pytest.raises(HITLBreakpointException) as again:  # c2 is still undecided: the run pauses anew
        handrail.resume(snapshot_id, store=store, agent=_agent(store, []), decisions=[APPROVE])
    with pytest.raises(SnapshotResumedError) as resumed:
        handrail.resume(snapshot_id, store=store, agent=_agent(store, []))
    assert resumed.value.exit_code == 2 and str(again.value.snapshot.snapshot_id) in str(resumed.value)
    code, output = _cli_error("resume", snapshot_id, "--dir", str(tmp_path), "--agent", "x.yaml")
    assert (code, output) == (2, f"error: {resumed.value}")
    with pytest.raises(SnapshotResumedError, match="Decisions can no longer be recorded in it"):
        store.record_decision(snapshot_id, ToolExecutionDecision("transfer", True, "c2"))


def test_a_decision_for_an_interrupted_snapshot_says_interrupted_and_exits_with_2(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path)
    snapshot_id = _pause(store)
    path = tmp_path / f"{snapshot_id}.json"
    data = json.loads(path.read_text())
    data["status"] = "running"  # a resume took it, then its process died: nobody holds the claim
    path.write_text(json.dumps(data))
    before = path.read_bytes()
    with pytest.raises(SnapshotInterruptedError) as interrupted:
        store.record_decision(snapshot_id, APPROVE, decided_by="ana")
    message = str(interrupted.value)
    assert interrupted.value.exit_code == 2 and isinstance(interrupted.value, SnapshotUnavailableError)
    assert f"Snapshot {snapshot_id} was interrupted: its file says 'running' but no process holds it" in message
    assert "being resumed" not in message and path.read_bytes() == before
    code, output = _cli_error("approvals", "approve", snapshot_id, "--dir", str(tmp_path), "--call", "c1")
    assert code == 2 and output.startswith(f"error: {' '.join(message.split())} ")


def test_a_snapshot_held_by_a_run_is_still_try_again_later(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path)
    snapshot_id = _pause(store)
    lease = store.claim(snapshot_id)
    try:
        other = FileSnapshotStore(tmp_path, lock_timeout=0)
        with pytest.raises(SnapshotUnavailableError) as busy:
            other.record_decision(snapshot_id, APPROVE)
        assert type(busy.value) is SnapshotUnavailableError and busy.value.exit_code == 5
        snapshot = dataclasses.replace(store.load(snapshot_id), status="running")
        assert "being resumed" in str(unavailable_reason(snapshot))
    finally:
        lease.release()
