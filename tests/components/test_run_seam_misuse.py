"""The run seam refuses what a driver gets wrong, and a run driven by hand holds nothing it should not.

Public imports only: what a user writing a driver (or the Temporal driver) meets.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import handrail
from handrail import Agent
from handrail.components.drivers import Ended, SyncDriver, execute_sync
from handrail.components.effects import (
    CallModel,
    Effect,
    Pause,
    RunTools,
    ToolInvocation,
    ToolOutcome,
    from_json,
)
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.errors import ConfigurationTypeError, RunError, UnknownOutcomeError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.stores import SQLiteSnapshotStore
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.common_tools import SENT, lookup, transfer


def asking(*calls: tuple[str, str, dict[str, Any]]) -> ChatMessage:
    return ChatMessage.from_assistant(tool_calls=[ToolCall(tool_name=n, arguments=a, id=i) for i, n, a in calls])


def pausing_agent(store: Any, replies: list[ChatMessage], **kwargs: Any) -> Agent:
    return Agent(
        chat_generator=ScriptedChatGenerator(replies),
        tools=[create_tool_from_function(transfer), create_tool_from_function(lookup)],
        confirmation_strategies={"transfer": BreakpointConfirmationStrategy(snapshot_store=store)},
        **kwargs,
    )


def plain_agent(replies: list[ChatMessage], **kwargs: Any) -> Agent:
    tools = [create_tool_from_function(transfer), create_tool_from_function(lookup)]
    return Agent(chat_generator=ScriptedChatGenerator(replies), tools=tools, **kwargs)


@pytest.fixture(autouse=True)
def _sent() -> None:
    SENT.clear()


def paused_in(store: Any) -> str:
    with pytest.raises(HITLBreakpointException) as paused:
        pausing_agent(store, [asking(("t1", "transfer", {"amount": 5}))]).run([ChatMessage.from_user("pay")])
    snapshot_id = paused.value.snapshot.snapshot_id
    assert snapshot_id is not None
    return snapshot_id


def approved(store: Any, snapshot_id: str) -> Any:
    """The stored snapshot with its held call t1 approved."""
    return dataclasses.replace(
        store.load(snapshot_id), tool_execution_decisions=[ToolExecutionDecision("transfer", True, "t1")]
    )


# -- outcomes, replies and calls a driver gets wrong ------------------------------------------------------------


def _to_tools(run: Any, replies: list[ChatMessage]) -> RunTools:
    effect = run.send(None)
    assert isinstance(effect, CallModel)
    effect = run.send(replies)
    assert isinstance(effect, RunTools)
    return effect


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(lambda calls: [ToolOutcome(c.call_id, True, "x") for c in reversed(calls)], id="reversed"),
        pytest.param(lambda calls: [ToolOutcome("zzz", True, "x") for _ in calls], id="another-id"),
        pytest.param(lambda calls: [ToolOutcome(calls[0].call_id, True, "x")], id="too-few"),
        pytest.param(lambda calls: [ToolOutcome(c.call_id, True, "x") for c in calls] * 2, id="too-many"),
        pytest.param(lambda calls: None, id="none"),
        pytest.param(lambda calls: [(True, "x") for _ in calls], id="tuples"),
    ],
)
def test_tool_outcomes_must_answer_the_calls_in_order(answer: Any) -> None:
    with plain_agent([]).start([ChatMessage.from_user("go")]) as run:
        effect = _to_tools(run, [asking(("a", "lookup", {"q": "x"}), ("b", "lookup", {"q": "y"}))])
        with pytest.raises(RunError, match="RunTools effect"):
            run.send(answer(effect.calls))
        assert run.context.state.data["tool_call_counts"] == {"transfer": 0, "lookup": 0}  # no result was used


@pytest.mark.parametrize(
    ("replies", "match"),
    [
        ([], "returned no replies"),
        ([ChatMessage.from_user("me")], "returned a user message"),
        (None, "must return"),
        (["text"], "must return"),
    ],
)
def test_the_model_replies_a_driver_gives_are_checked(replies: Any, match: str) -> None:
    with plain_agent([]).start([ChatMessage.from_user("go")]) as run:
        assert isinstance(run.send(None), CallModel)
        with pytest.raises(RunError, match=match):
            run.send(replies)


def test_a_failed_run_says_so_instead_of_a_result() -> None:
    with plain_agent([]).start([ChatMessage.from_user("go")]) as run:
        run.send(None)
        with pytest.raises(RunError):
            run.send("garbage")
        with pytest.raises(RunError, match="This run failed"):
            run.send([ChatMessage.from_assistant("hi")])
        with pytest.raises(RunError, match="This run failed"):
            _ = run.result
        assert not run.ended


def test_calls_changed_by_a_driver_are_refused() -> None:
    with plain_agent([]).start([ChatMessage.from_user("go")]) as run:
        effect = _to_tools(run, [asking(("t1", "transfer", {"amount": 5}))])
        forged = RunTools([ToolInvocation("t1", "transfer", {"amount": 999}, "t1")], effect.max_workers)
        with pytest.raises(RunError, match="not the ones the run asked to run"):
            run.context.run_tools(forged)
        outcomes = run.context.run_tools(effect)
    assert SENT == [5] and outcomes == [ToolOutcome("t1", True, "sent 5")]


def test_an_effect_sent_through_json_and_back_runs_the_same_calls() -> None:
    from handrail.components.effects import to_json

    with plain_agent([ChatMessage.from_assistant("done")]).start([ChatMessage.from_user("go")]) as run:
        effect = _to_tools(run, [asking(("t1", "transfer", {"amount": 2}))])
        copy = from_json(to_json(effect))
        assert copy == effect and copy is not effect
        run.send(run.context.run_tools(copy))
    assert SENT == [2]


def test_start_checks_sync() -> None:
    with pytest.raises(ConfigurationTypeError, match="sync must be True or False"):
        plain_agent([]).start([ChatMessage.from_user("go")], sync="no")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "data",
    [
        {"type": "tool_outcome", "call_id": "c", "ok": "yes", "value": None, "error": None},
        {"type": "call_model", "messages": [], "tools": "abc"},
        {
            "type": "run_tools",
            "calls": [{"call_id": "c", "tool_name": "t", "arguments": "x", "key": "c"}],
            "max_workers": 1,
        },
        {"type": "run_tools", "calls": [], "max_workers": 0},
        {"type": "pause", "position": {"evil": 1}, "held": "c1"},
        {"type": "emit", "chunk": "x"},
        {"type": "run_hooks", "point": "../../etc"},
        {"type": "call_model"},
        {"type": "launch"},
        [1],
    ],
)
def test_from_json_refuses_what_is_not_an_effect(data: Any) -> None:
    with pytest.raises(ValueError, match="from_json"):
        from_json(data)


# -- observers ----------------------------------------------------------------------------------------------------


class Observer:
    def __init__(self) -> None:
        self.kinds: list[str] = []

    def started(self, event: Effect | ToolInvocation) -> None:
        if isinstance(event, ToolInvocation):
            event.arguments["amount"] = 999_999  # an observer that changes what it sees changes no call

    def ended(self, event: Effect | ToolInvocation, ended: Ended) -> None:
        self.kinds.append(type(event).__name__)


def test_a_driver_using_execute_sync_tells_the_observers(tmp_path: Path) -> None:
    observer = Observer()
    agent = plain_agent([asking(("t1", "transfer", {"amount": 3})), ChatMessage.from_assistant("ok")])
    with agent.start([ChatMessage.from_user("go")], observers=[observer]) as run:
        result: Any = None
        while (effect := run.send(result)) is not None:
            result = execute_sync(run.context, effect)
    assert observer.kinds == ["CallModel", "ToolInvocation", "RunTools", "CallModel"]
    assert SENT == [3]  # the observer changed its copy only


def test_observers_see_the_durable_writes_around_each_call(tmp_path: Path) -> None:
    store = SQLiteSnapshotStore(tmp_path / "s.db")
    snapshot_id = paused_in(store)
    observer = Observer()
    handrail.resume(snapshot_id, store=store, agent=pausing_agent(store, [ChatMessage.from_assistant("ok")]),
                    decisions=[ToolExecutionDecision("transfer", True, "t1")], observers=[observer])  # fmt: skip
    calls = observer.kinds.index("ToolInvocation")
    assert "Persist" in observer.kinds[:calls]  # 'running' is durable before the call starts
    assert "Persist" in observer.kinds[calls:]  # and its result before the step goes on
    assert SENT == [5]


# -- claims: a paused, ended or dropped run holds none ------------------------------------------------------------


def test_a_run_driven_by_hand_that_pauses_lets_go_of_its_new_snapshot(tmp_path: Path) -> None:
    store = SQLiteSnapshotStore(tmp_path / "s.db")
    run = pausing_agent(store, [asking(("t1", "transfer", {"amount": 5}))]).start([ChatMessage.from_user("pay")])
    with pytest.raises(HITLBreakpointException) as paused:
        SyncDriver().drive(run)  # never closed
    snapshot_id = paused.value.snapshot.snapshot_id
    assert snapshot_id is not None
    store.record_decision(snapshot_id, ToolExecutionDecision("transfer", True, "t1"), decided_by="ana")
    assert store.load(snapshot_id).tool_execution_decisions[0].decided_by == "ana"


def test_a_dropped_resumed_run_lets_go_of_its_claim(tmp_path: Path) -> None:
    import gc

    store = SQLiteSnapshotStore(tmp_path / "s.db")
    snapshot_id = paused_in(store)
    decided = approved(store, snapshot_id)
    run = pausing_agent(store, []).start([], snapshot=decided)
    assert isinstance(run.send(None), RunTools)  # claimed, mid-run, then dropped without close()
    del run
    gc.collect()
    agent = pausing_agent(store, [ChatMessage.from_assistant("ok")])
    handrail.resume(snapshot_id, store=store, agent=agent, decisions=[ToolExecutionDecision("transfer", True, "t1")])
    assert SENT == [5]


def test_a_driver_that_runs_calls_itself_records_them_so_none_runs_twice(tmp_path: Path) -> None:
    store = SQLiteSnapshotStore(tmp_path / "s.db")
    snapshot_id = paused_in(store)
    decided = approved(store, snapshot_id)
    with pausing_agent(store, []).start([], snapshot=decided) as run:
        effect = run.send(None)
        assert isinstance(effect, RunTools)
        for call in effect.calls:
            run.context.call_starting(call)
            transfer(**call.arguments)  # run elsewhere; the process "dies" before the outcome is recorded
    assert SENT == [5]
    with pytest.raises(UnknownOutcomeError, match="'t1'"):
        pausing_agent(store, [ChatMessage.from_assistant("ok")]).run([], snapshot=store.load(snapshot_id))
    assert SENT == [5]


class SlowClaims(SQLiteSnapshotStore):
    """A store whose claims take a while, and that says when a claim it gave was let go."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.claiming = threading.Event()
        self.released = threading.Event()

    def claim(self, snapshot_id: str) -> Any:
        self.claiming.set()
        time.sleep(0.3)
        lease = super().claim(snapshot_id)
        release = lease.release

        def let_go() -> None:
            release()
            self.released.set()

        lease.release = let_go  # type: ignore[method-assign]
        return lease


def test_a_resume_cancelled_during_its_claim_lets_go_even_after_the_loop_closed(tmp_path: Path) -> None:
    store = SlowClaims(tmp_path / "s.db")
    snapshot_id = paused_in(store)
    store.claiming.clear()

    async def cancel_while_claiming() -> None:
        agent = pausing_agent(store, [ChatMessage.from_assistant("ok")])
        task = asyncio.create_task(handrail.resume_async(
            snapshot_id, store=store, agent=agent, decisions=[ToolExecutionDecision("transfer", True, "t1")]
        ))  # fmt: skip
        while not store.claiming.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_while_claiming())  # returns at once: the claim is still being taken in its thread
    assert store.released.wait(30), "the abandoned claim was never let go"
    agent = pausing_agent(store, [ChatMessage.from_assistant("ok")])
    handrail.resume(snapshot_id, store=store, agent=agent, decisions=[ToolExecutionDecision("transfer", True, "t1")])
    assert SENT == [5]


def test_pause_effect_names_the_held_calls(tmp_path: Path) -> None:
    store = SQLiteSnapshotStore(tmp_path / "s.db")
    with pausing_agent(store, [asking(("t1", "transfer", {"amount": 5}))]).start([ChatMessage.from_user("x")]) as run:
        effect = run.send(None)
        while not isinstance(effect, Pause):
            effect = run.send(execute_sync(run.context, effect))
    assert effect.held == ["t1"]


# -- what a driver or an observer cannot change (found by the re-probe) ------------------------------------------


def test_a_driver_editing_an_effects_arguments_in_place_runs_the_approved_ones() -> None:
    with plain_agent([ChatMessage.from_assistant("done")]).start([ChatMessage.from_user("go")]) as run:
        effect = _to_tools(run, [asking(("t1", "transfer", {"amount": 5}))])
        effect.calls[0].arguments.update(amount="lots", extra=1)
        run.send(run.context.run_tools(effect))
    assert SENT == [5]


class Overturning:
    """An observer that tries to turn every decision into an approval and every result into a forgery."""

    def __init__(self) -> None:
        self.changed: list[str] = []

    def started(self, event: Effect | ToolInvocation) -> None:
        pass

    def ended(self, event: Effect | ToolInvocation, ended: Ended) -> None:
        result = ended.result
        if isinstance(result, list):
            result[:] = []
            self.changed.append("a result list")
        if not isinstance(result, tuple) or not result:
            return
        first = result[0]
        try:
            if isinstance(first, ToolExecutionDecision):
                first.execute = True  # type: ignore[misc]
                self.changed.append("a decision")
            if isinstance(first, ToolOutcome):
                first.value = "FORGED"  # type: ignore[misc]
                self.changed.append("an outcome")
        except dataclasses.FrozenInstanceError:
            pass


class Rejecting:
    def run(self, *, tool_name: str, tool_call_id: str | None = None, **kwargs: Any) -> ToolExecutionDecision:
        return ToolExecutionDecision(tool_name, False, tool_call_id, "no")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_observer_cannot_overturn_a_decision_or_forge_a_result(mode: str) -> None:
    replies = [
        asking(("t1", "transfer", {"amount": 5}), ("l1", "lookup", {"q": "x"})),
        ChatMessage.from_assistant("ok"),
    ]
    agent = plain_agent(replies, confirmation_strategies={"transfer": Rejecting()}, observers=[Overturning()])
    messages = [ChatMessage.from_user("go")]
    result = agent.run(messages) if mode == "sync" else asyncio.run(agent.run_async(messages))
    assert SENT == []  # the rejection stands
    texts = [m.tool_call_result.result for m in result["messages"] if m.tool_call_result is not None]
    assert "found x" in texts and "FORGED" not in texts


def test_call_ended_takes_the_outcome_of_that_call(tmp_path: Path) -> None:
    store = SQLiteSnapshotStore(tmp_path / "s.db")
    snapshot_id = paused_in(store)
    decided = approved(store, snapshot_id)
    with pausing_agent(store, []).start([], snapshot=decided) as run:
        effect = run.send(None)
        assert isinstance(effect, RunTools)
        call = effect.calls[0]
        run.context.call_starting(call)
        for wrong in (ToolOutcome("not-t1", True, "x"), "sent 5"):
            with pytest.raises(RunError, match="call_ended takes the ToolOutcome of call 't1'"):
                run.context.call_ended(call, wrong)  # type: ignore[arg-type]


def test_a_tool_outcome_is_either_a_value_or_an_error() -> None:
    with pytest.raises(ValueError, match="ok=True with no error"):
        ToolOutcome("c", True, "x", "boom")
