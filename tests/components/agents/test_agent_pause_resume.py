"""Asynchronous approval: a pausing strategy stops the run, decisions resume it, no call ever runs twice."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import load_snapshot
from handrail.errors import ConfigurationError, SerializationError, SnapshotUnavailableError, UnknownOutcomeError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy, get_tool_calls_and_descriptions_from_snapshot
from handrail.stores.snapshot_file import FileSnapshotStore
from handrail.testing import ScriptedChatGenerator
from handrail.tools import ToolCallId, create_tool_from_function
from tests.cases._helpers import asst, result_for, user

LOG: list[tuple[str, Any]] = []


def transfer(amount: int, key: ToolCallId) -> str:
    """Send money.

    Args:
        amount: How much.
    """
    LOG.append(("transfer", amount, key))
    return f"sent {amount}"


def lookup(name: str) -> str:
    """Look a name up.

    Args:
        name: The name.
    """
    LOG.append(("lookup", name))
    return f"{name} found"


@pytest.fixture(autouse=True)
def _clear() -> None:
    LOG.clear()


def _agent(replies: list[ChatMessage], directory: Path, **kwargs: Any) -> Agent:
    tools = [create_tool_from_function(transfer), create_tool_from_function(lookup)]
    strategy = BreakpointConfirmationStrategy(str(directory))
    return Agent(
        chat_generator=ScriptedChatGenerator(replies), tools=tools,
        confirmation_strategies={"transfer": strategy}, **kwargs,
    )  # fmt: skip


STEP = asst(calls=[("c1", "transfer", {"amount": 10}), ("c2", "lookup", {"name": "bob"}),
                   ("c3", "transfer", {"amount": 99})])  # fmt: skip


def _pause(tmp_path: Path) -> HITLBreakpointException:
    with pytest.raises(HITLBreakpointException) as info:
        _agent([STEP], tmp_path).run([user("pay")])
    return info.value


def test_pause_keeps_the_sibling_result_and_names_every_pending_call(tmp_path: Path) -> None:
    exc = _pause(tmp_path)
    assert (exc.tool_name, exc.tool_call_id, exc.tool_call_ids) == ("transfer", "c1", ["c1", "c3"])
    assert LOG == [("lookup", "bob")]
    path = Path(exc.snapshot_file_path)
    assert path.parent == tmp_path and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    snap = load_snapshot(path)
    assert snap.status == "paused"
    assert {k: e.status for k, e in snap.ledger.items()} == {"c1": "pending", "c2": "done", "c3": "pending"}
    calls, descriptions = get_tool_calls_and_descriptions_from_snapshot(snap)
    assert [c["id"] for c in calls] == ["c1", "c3"]
    assert descriptions["transfer"].startswith("Send money")


def test_two_paused_calls_decided_differently_by_id(tmp_path: Path) -> None:
    exc = _pause(tmp_path)
    snap = load_snapshot(exc.snapshot_file_path)
    decisions = [
        ToolExecutionDecision("transfer", False, "c3", feedback="too much"),
        ToolExecutionDecision("transfer", True, "c1"),
    ]
    agent = _agent([asst("Paid 10.")], tmp_path)
    result = agent.run([], snapshot=dataclasses.replace(snap, tool_execution_decisions=decisions))
    assert LOG == [("lookup", "bob"), ("transfer", 10, "c1")]  # the sibling did not run again
    assert result_for(result["messages"], "c1").result == "sent 10"
    assert result_for(result["messages"], "c2").result == "bob found"
    rejected = result_for(result["messages"], "c3")
    assert rejected.error and "too much" in rejected.result
    assert result["tool_call_counts"] == {"transfer": 1, "lookup": 1}
    assert json.loads(Path(exc.snapshot_file_path).read_text())["status"] == "done"


def test_calls_without_a_decision_pause_again_in_a_new_file(tmp_path: Path) -> None:
    exc = _pause(tmp_path)
    snap = load_snapshot(exc.snapshot_file_path)
    with pytest.raises(HITLBreakpointException) as again:
        _agent([asst("done")], tmp_path).run(
            [],
            snapshot=dataclasses.replace(
                snap, tool_execution_decisions=[ToolExecutionDecision("transfer", True, "c1")]
            ),
        )
    assert again.value.tool_call_ids == ["c3"]
    assert again.value.snapshot_file_path != exc.snapshot_file_path
    old = json.loads(Path(exc.snapshot_file_path).read_text())
    assert old["status"] == "resumed" and old["continued_in"] == Path(again.value.snapshot_file_path).stem
    assert LOG == [("lookup", "bob"), ("transfer", 10, "c1")]
    final = _agent([asst("done")], tmp_path).run(
        [], snapshot=dataclasses.replace(load_snapshot(again.value.snapshot_file_path),
                                         tool_execution_decisions=[ToolExecutionDecision("transfer", True, "c3")])
    )  # fmt: skip
    assert LOG == [("lookup", "bob"), ("transfer", 10, "c1"), ("transfer", 99, "c3")]
    assert final["last_message"].text == "done"
    with pytest.raises(SnapshotUnavailableError, match=Path(exc.snapshot_file_path).stem):
        _agent([asst("done")], tmp_path).run([], snapshot=snap)


def test_a_decision_for_a_call_that_is_not_pending_is_refused_before_anything_runs(tmp_path: Path) -> None:
    snap = load_snapshot(_pause(tmp_path).snapshot_file_path)
    bad = dataclasses.replace(snap, tool_execution_decisions=[ToolExecutionDecision("transfer", True, "zz")])
    with pytest.raises(ConfigurationError, match="'zz'"):
        _agent([asst("x")], tmp_path).run([], snapshot=bad)
    assert LOG == [("lookup", "bob")]


def test_an_edit_that_fails_the_schema_is_refused_before_anything_runs(tmp_path: Path) -> None:
    snap = load_snapshot(_pause(tmp_path).snapshot_file_path)
    decisions = [ToolExecutionDecision("transfer", True, "c1", final_tool_params={"amount": "lots"}),
                 ToolExecutionDecision("transfer", True, "c3")]  # fmt: skip
    with pytest.raises(ConfigurationError, match="refused"):
        _agent([asst("x")], tmp_path).run([], snapshot=dataclasses.replace(snap, tool_execution_decisions=decisions))
    assert LOG == [("lookup", "bob")]


def test_a_call_found_running_is_not_run_again_silently(tmp_path: Path) -> None:
    exc = _pause(tmp_path)
    path = Path(exc.snapshot_file_path)
    data = json.loads(path.read_text())
    data["ledger"]["c1"]["status"] = "running"  # as if the process died while c1 ran
    path.write_text(json.dumps(data))
    snap = load_snapshot(path)
    with_c3 = dataclasses.replace(snap, tool_execution_decisions=[ToolExecutionDecision("transfer", False, "c3")])
    with pytest.raises(UnknownOutcomeError, match="'c1'") as info:
        _agent([asst("x")], tmp_path).run([], snapshot=with_c3)
    assert info.value.tool_call_id == "c1"
    result = _agent([asst("x")], tmp_path).run([], snapshot=with_c3, unknown_outcome="fail")
    assert "Outcome unknown" in result_for(result["messages"], "c1").result
    assert LOG == [("lookup", "bob")]


def test_unknown_outcome_retry_runs_the_call_again_with_the_same_idempotency_key(tmp_path: Path) -> None:
    exc = _pause(tmp_path)
    path = Path(exc.snapshot_file_path)
    data = json.loads(path.read_text())
    data["ledger"]["c1"]["status"] = "running"
    path.write_text(json.dumps(data))
    snap = dataclasses.replace(load_snapshot(path),
                               tool_execution_decisions=[ToolExecutionDecision("transfer", False, "c3")])  # fmt: skip
    _agent([asst("x")], tmp_path).run([], snapshot=snap, unknown_outcome="retry")
    assert LOG == [("lookup", "bob"), ("transfer", 10, "c1")]


def test_unknown_outcome_value_is_checked() -> None:
    agent = Agent(chat_generator=ScriptedChatGenerator([asst("x")]))
    with pytest.raises(ConfigurationError, match="unknown_outcome"):
        agent.run([user("x")], unknown_outcome="maybe")


def test_an_unserializable_state_value_is_named_before_anything_runs_or_is_written(tmp_path: Path) -> None:
    import threading

    agent = _agent([STEP], tmp_path, state_schema={"guard": {"type": object}})
    with pytest.raises(SerializationError, match="guard"):
        agent.run([user("pay")], guard=threading.Lock())
    assert LOG == []
    assert [p for p in tmp_path.iterdir() if not p.name.startswith(".")] == []


def test_a_durable_run_that_finishes_marks_its_file_done(tmp_path: Path) -> None:
    agent = _agent([asst(calls=[("c2", "lookup", {"name": "ann"})]), asst("ok")], tmp_path)
    result = agent.run([user("who")])
    assert result["last_message"].text == "ok"
    files = [p for p in tmp_path.iterdir() if p.suffix == ".json"]
    assert len(files) == 1
    data = json.loads(files[0].read_text())
    assert data["status"] == "done" and data["ledger"]["c2"]["status"] == "done"
    assert data["outcome"]["exit_reason"] == "text"


async def test_async_pause_and_resume(tmp_path: Path) -> None:
    with pytest.raises(HITLBreakpointException) as info:
        await _agent([STEP], tmp_path).run_async([user("pay")])
    snap = load_snapshot(info.value.snapshot_file_path)
    decisions = [ToolExecutionDecision("transfer", True, "c1", final_tool_params={"amount": 5}),
                 ToolExecutionDecision("transfer", True, "c3")]  # fmt: skip
    result = await _agent([asst("ok")], tmp_path).run_async(
        [], snapshot=dataclasses.replace(snap, tool_execution_decisions=decisions)
    )
    assert LOG == [("lookup", "bob"), ("transfer", 5, "c1"), ("transfer", 99, "c3")]
    explained = [m.text for m in result["messages"] if m.role.value == "user"]
    assert any("updated by the user" in (t or "") for t in explained)


async def test_cancelling_a_run_async_leaves_the_ledger_consistent(tmp_path: Path) -> None:
    started = asyncio.Event()

    async def slow(name: str) -> str:
        """Slow lookup.

        Args:
            name: The name.
        """
        started.set()
        await asyncio.sleep(30)
        return name

    tool = create_tool_from_function(slow)
    strategy = BreakpointConfirmationStrategy(str(tmp_path))
    agent = Agent(
        chat_generator=ScriptedChatGenerator([asst(calls=[("s1", "slow", {"name": "a"})]), asst("x")]),
        tools=[tool, create_tool_from_function(transfer)], confirmation_strategies={"transfer": strategy},
    )  # fmt: skip
    task = asyncio.create_task(agent.run_async([user("go")]))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    files = [p for p in tmp_path.iterdir() if p.suffix == ".json"]
    data = json.loads(files[0].read_text())
    assert data["ledger"]["s1"]["status"] == "running"
    assert data["status"] == "running"


async def test_a_cancelled_run_keeps_its_claim_until_its_sync_tool_thread_recorded_the_result(tmp_path: Path) -> None:
    """In a long-lived event loop a resume cannot start while the cancelled run's tool still runs in its thread
    (it would run the call again, or be overwritten by the thread's late write); afterwards it replays the result.
    """
    import threading

    release = threading.Event()
    started = threading.Event()
    runs: list[str] = []

    def pay(name: str) -> str:
        """Pay someone.

        Args:
            name: The name.
        """
        runs.append(name)
        started.set()
        release.wait(10)
        return f"{name} paid"

    def agent(replies: list[ChatMessage]) -> Agent:
        return Agent(
            chat_generator=ScriptedChatGenerator(replies),
            tools=[create_tool_from_function(pay), create_tool_from_function(transfer)],
            confirmation_strategies={"transfer": BreakpointConfirmationStrategy(str(tmp_path))},
        )

    task = asyncio.create_task(agent([asst(calls=[("p1", "pay", {"name": "ann"})]), asst("x")]).run_async([user("go")]))
    await asyncio.to_thread(started.wait, 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [file] = [p for p in tmp_path.iterdir() if p.suffix == ".json"]
    for unknown_outcome in (None, "retry", "fail"):
        with pytest.raises(SnapshotUnavailableError, match="in use by another run"):
            await agent([asst("done")]).run_async([], snapshot=load_snapshot(file), unknown_outcome=unknown_outcome)
    release.set()
    for _ in range(200):  # the thread records the result, then lets the claim go
        try:
            result = await agent([asst("done")]).run_async([], snapshot=load_snapshot(file))
            break
        except SnapshotUnavailableError:
            await asyncio.sleep(0.05)
    else:
        pytest.fail("the claim was never released")
    assert runs == ["ann"]
    assert result_for(result["messages"], "p1").result == "ann paid"
    assert result["last_message"].text == "done"
    assert json.loads(file.read_text())["status"] == "done"


class Level(enum.IntEnum):
    LOW = 1


def test_a_state_value_of_an_int_enum_from_user_code_resumes(tmp_path: Path) -> None:
    agent = _agent([STEP], tmp_path, state_schema={"level": {"type": Level}})
    with pytest.raises(HITLBreakpointException) as info:
        agent.run([user("pay")], level=Level.LOW)
    decided = dataclasses.replace(
        info.value.snapshot,
        tool_execution_decisions=[ToolExecutionDecision("transfer", False, "c1"),
                                  ToolExecutionDecision("transfer", False, "c3")],
    )  # fmt: skip
    result = _agent([asst("ok")], tmp_path, state_schema={"level": {"type": Level}}).run([], snapshot=decided)
    assert result["level"] is Level.LOW


def test_an_edit_naming_an_unknown_parameter_is_refused(tmp_path: Path) -> None:
    snap = load_snapshot(_pause(tmp_path).snapshot_file_path)
    decisions = [ToolExecutionDecision("transfer", True, "c1", final_tool_params={"amount": 5, "evil": True}),
                 ToolExecutionDecision("transfer", True, "c3")]  # fmt: skip
    with pytest.raises(ConfigurationError, match="evil"):
        _agent([asst("x")], tmp_path).run([], snapshot=dataclasses.replace(snap, tool_execution_decisions=decisions))
    assert LOG == [("lookup", "bob")]


def test_a_decision_for_a_call_that_already_ran_is_refused(tmp_path: Path) -> None:
    snap = load_snapshot(_pause(tmp_path).snapshot_file_path)
    bad = dataclasses.replace(snap, tool_execution_decisions=[ToolExecutionDecision("lookup", False, "c2")])
    with pytest.raises(ConfigurationError, match=r"'c2'.*already ran"):
        _agent([asst("x")], tmp_path).run([], snapshot=bad)


def test_decisions_of_the_wrong_type_are_named(tmp_path: Path) -> None:
    snap = load_snapshot(_pause(tmp_path).snapshot_file_path)
    bad = dataclasses.replace(snap, tool_execution_decisions=[{"tool_name": "transfer", "execute": True}])
    with pytest.raises(TypeError, match="tool_execution_decisions"):
        _agent([asst("x")], tmp_path).run([], snapshot=bad)


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d.update(messages=[]),
        lambda d: d["state"].update(step_count="many"),
        lambda d: d["messages"].pop(),
        lambda d: d["ledger"]["c1"].update(tool_name="lookup"),  # the message says transfer
        lambda d: d["ledger"]["c1"].update(arguments={"amount": 1}),  # what a person would be shown
        lambda d: d["ledger"]["c1"].update(status="approved"),  # approved, with no decision recorded
        lambda d: d["ledger"]["c1"].update(
            status="rejected", decision={"tool_name": "transfer", "execute": True, "tool_call_id": "c1"}
        ),  # rejected, while the decision recorded says run it
    ],
)
def test_a_hand_edited_snapshot_that_contradicts_itself_is_refused(tmp_path: Path, edit: Any) -> None:
    from handrail.errors import SnapshotError

    path = Path(_pause(tmp_path).snapshot_file_path)
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    with pytest.raises(SnapshotError):
        _agent([asst("x")], tmp_path).run([], snapshot=load_snapshot(path))
    assert LOG == [("lookup", "bob")]


def test_a_snapshot_directory_that_is_a_file_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigurationError, match=rf"'{blocker}' is an existing file: it must be a directory"):
        _agent([STEP], blocker).run([user("pay")])  # refused when the strategy is built, before the run


async def test_a_sync_tool_still_running_when_run_async_is_cancelled_records_its_result(tmp_path: Path) -> None:
    import threading

    release = threading.Event()
    started = threading.Event()

    def blocking(name: str) -> str:
        """Block until released.

        Args:
            name: The name.
        """
        started.set()
        release.wait(10)
        return f"{name} done"

    strategy = BreakpointConfirmationStrategy(str(tmp_path))
    agent = Agent(
        chat_generator=ScriptedChatGenerator([asst(calls=[("b1", "blocking", {"name": "a"})]), asst("x")]),
        tools=[create_tool_from_function(blocking), create_tool_from_function(transfer)],
        confirmation_strategies={"transfer": strategy},
    )  # fmt: skip
    task = asyncio.create_task(agent.run_async([user("go")]))
    await asyncio.to_thread(started.wait, 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    files = [p for p in tmp_path.iterdir() if p.suffix == ".json"]
    store = FileSnapshotStore(tmp_path)  # the file and its journal: the result may be a journal line
    for _ in range(200):  # the worker thread finishes on its own after the cancellation
        if store.load(files[0].stem).ledger["b1"].status == "done":
            break
        await asyncio.sleep(0.05)
    entry = store.load(files[0].stem).ledger["b1"]
    assert entry.status == "done" and entry.result is not None and entry.result["text"] == "a done"
