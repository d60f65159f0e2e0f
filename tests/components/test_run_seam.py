"""The public run seam: a run driven by a driver written here, effects as data, observers in both drivers.

This module imports no private handrail module: what it does, a user (or the Temporal driver) can do.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from handrail import Agent
from handrail.components.drivers import (
    AsyncDriver,
    Ended,
    Run,
    RunDriver,
    RunObserver,
    SyncDriver,
    execute_sync,
)
from handrail.components.effects import (
    AskApproval,
    CallModel,
    Effect,
    Emit,
    Finish,
    Pause,
    Persist,
    RunHooks,
    ToolInvocation,
    ToolOutcome,
    from_json,
    to_json,
)
from handrail.dataclasses import ChatMessage, State, ToolCall
from handrail.dataclasses.breakpoints import AgentBreakpoint, Breakpoint, BreakpointException, HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import load_snapshot
from handrail.hooks import hook
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.stores import InMemoryChatMessageStore
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function

CHARGED: list[int] = []


def echo(text: str) -> str:
    """Echo the text."""
    return text


def charge(amount: int) -> str:
    """Charge an amount."""
    CHARGED.append(amount)
    return f"charged {amount}"


def crash(amount: int) -> str:
    """Stop the process mid-call (the ledger keeps the call 'running')."""
    raise SystemExit(3)


@hook
def note_step(state: State) -> None:
    """A before_llm hook that does nothing."""


def calls(*items: tuple[str, dict[str, Any], str]) -> ChatMessage:
    return ChatMessage.from_assistant(tool_calls=[ToolCall(tool_name=n, arguments=a, id=i) for n, a, i in items])


class NeverAsked:
    """A confirmation strategy the drivers below answer themselves: being asked is a failure."""

    def run(self, **kwargs: Any) -> ToolExecutionDecision:
        raise AssertionError("the driver answers approvals itself")


class Approve:
    """A confirmation strategy that approves every call."""

    def run(self, *, tool_name: str, tool_call_id: str | None = None, **kwargs: Any) -> ToolExecutionDecision:
        return ToolExecutionDecision(tool_name, True, tool_call_id)


class HandDriver:
    """A driver written here: the model's replies are its own, approvals are its own, the rest via the context."""

    def __init__(self, replies: list[ChatMessage]) -> None:
        self.replies = list(replies)
        self.kinds: list[str] = []

    def drive(self, run: Run) -> Any:
        result: Any = None
        while (effect := run.send(result)) is not None:
            self.kinds.append(type(effect).__name__)
            if isinstance(effect, CallModel):
                result = [self.replies.pop(0)]
            elif isinstance(effect, AskApproval):
                result = [ToolExecutionDecision(c.tool_name, True, c.call_id, decided_by="hand") for c in effect.calls]
            else:
                result = execute_sync(run.context, effect)
        return run.result


def test_a_run_driven_by_a_driver_written_in_the_test() -> None:
    agent = Agent(
        chat_generator=ScriptedChatGenerator([]),
        tools=[create_tool_from_function(echo), create_tool_from_function(charge)],
        confirmation_strategies={"charge": NeverAsked()},
    )
    driver = HandDriver([calls(("echo", {"text": "hi"}, "a"), ("charge", {"amount": 5}, "b")),
                         ChatMessage.from_assistant("done")])  # fmt: skip
    assert isinstance(driver, RunDriver)
    CHARGED.clear()
    with agent.start([ChatMessage.from_user("go")]) as run:
        result = driver.drive(run)
    assert result["last_message"].text == "done"
    assert result["tool_call_counts"] == {"echo": 1, "charge": 1}
    assert CHARGED == [5]
    assert driver.kinds == ["CallModel", "AskApproval", "RunTools", "CallModel"]
    tool_texts = [m.tool_call_result.result for m in result["messages"] if m.tool_call_result is not None]
    assert tool_texts == ["hi", "charged 5"]


def test_a_run_sends_nothing_after_a_pause(tmp_path: Path) -> None:
    agent = Agent(
        chat_generator=ScriptedChatGenerator([calls(("charge", {"amount": 1}, "c1"))]),
        tools=[create_tool_from_function(charge)],
        confirmation_strategies={"charge": BreakpointConfirmationStrategy(str(tmp_path))},
    )
    from handrail.errors import RunError

    with agent.start([ChatMessage.from_user("go")]) as run:
        effect = run.send(None)
        while not isinstance(effect, Pause):
            effect = run.send(execute_sync(run.context, effect))
        assert effect.held == ["c1"]
        with pytest.raises(RunError, match="Pause effect ends the run"):
            run.send(None)


class Observer:
    """An observer that keeps every event and how it ended."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started_events: list[Effect | ToolInvocation] = []
        self.ended_events: list[tuple[Effect | ToolInvocation, Ended]] = []

    def started(self, event: Effect | ToolInvocation) -> None:
        with self.lock:
            self.started_events.append(event)

    def ended(self, event: Effect | ToolInvocation, ended: Ended) -> None:
        with self.lock:
            self.ended_events.append((event, ended))

    def kinds(self) -> list[str]:
        return [type(e).__name__ for e, _ in self.ended_events]


def _round_trip(value: Any) -> Any:
    return from_json(json.loads(json.dumps(to_json(value))))


def _check_round_trips(observer: Observer) -> set[str]:
    """Every effect and every item of every result, through JSON and back, is equal to itself; returns the kinds."""
    kinds = set()
    for event, ended in observer.ended_events:
        kinds.add(type(event).__name__)
        if isinstance(event, ToolInvocation):
            continue
        assert _round_trip(event) == event, event
        result = ended.result
        items = result if isinstance(result, list | tuple) else [result]
        for item in items:
            assert _round_trip(item) == item, item
    return kinds


def _durable_agent(folder: Path, replies: list[ChatMessage], observer: Observer, **kwargs: Any) -> Agent:
    return Agent(
        chat_generator=ScriptedChatGenerator(replies),
        tools=[create_tool_from_function(echo), create_tool_from_function(charge), create_tool_from_function(crash)],
        confirmation_strategies={("charge", "crash"): BreakpointConfirmationStrategy(str(folder))},
        hooks={"before_llm": [note_step]},
        observers=[observer],
        **kwargs,
    )


def test_every_effect_and_result_round_trips_through_json(tmp_path: Path) -> None:
    observer = Observer()
    chunks: list[Any] = []
    # a durable run: hooks, streaming, an ungated call and one held for approval (Pause) ...
    first = _durable_agent(tmp_path, [calls(("echo", {"text": "x"}, "e1"), ("charge", {"amount": 2}, "c1"))], observer)
    with pytest.raises(HITLBreakpointException) as paused:
        first.run([ChatMessage.from_user("go")], streaming_callback=chunks.append)
    # ... resumed with the decision: the calls run, the record is marked done (Finish) ...
    snapshot = load_snapshot(str(paused.value.snapshot_file_path))
    decided = dataclasses.replace(snapshot, tool_execution_decisions=[ToolExecutionDecision("charge", True, "c1")])
    second = _durable_agent(tmp_path, [ChatMessage.from_assistant("ok")], observer)
    second.run([], snapshot=decided, streaming_callback=chunks.append)
    # ... a strategy that decides at once (AskApproval) and a debugging breakpoint (Pause) ...
    asking = Agent(
        chat_generator=ScriptedChatGenerator([calls(("echo", {"text": "y"}, "e2")), ChatMessage.from_assistant("ok")]),
        tools=[create_tool_from_function(echo)],
        confirmation_strategies={"echo": Approve()},
        observers=[observer],
    )
    asking.run([ChatMessage.from_user("go")])
    with pytest.raises(BreakpointException):
        asking.run([ChatMessage.from_user("go")],
                   break_point=AgentBreakpoint("a", Breakpoint("chat_generator", 0, str(tmp_path / "bp"))))  # fmt: skip
    # ... and an outcome given up after a crash mid-call (Persist).
    crashed = _durable_agent(tmp_path / "crash", [calls(("crash", {"amount": 1}, "k1"))], observer)
    with pytest.raises(HITLBreakpointException) as held:
        crashed.run([ChatMessage.from_user("go")])
    path = str(held.value.snapshot_file_path)
    approved = dataclasses.replace(
        load_snapshot(path), tool_execution_decisions=[ToolExecutionDecision("crash", True, "k1")]
    )
    with pytest.raises(SystemExit):
        _durable_agent(tmp_path / "crash", [], observer).run([], snapshot=approved)
    running = load_snapshot(path)
    assert running.ledger["k1"].status == "running"
    resumed = _durable_agent(tmp_path / "crash", [ChatMessage.from_assistant("gave up")], observer)
    resumed.run([], snapshot=running, unknown_outcome="fail")

    # ... and a run that loads a chat history (LoadStores) and writes it after (Finish).
    chats = InMemoryChatMessageStore()
    remembering = Agent(chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant("hi")] * 2),
                        chat_message_store=chats, observers=[observer])  # fmt: skip
    for _ in range(2):
        remembering.run([ChatMessage.from_user("hello")], chat_message_store_kwargs={"chat_history_id": "c"})

    kinds = _check_round_trips(observer)
    assert kinds >= {"CallModel", "RunTools", "AskApproval", "RunHooks", "LoadStores", "Persist", "Pause", "Finish",
                     "Emit", "ToolInvocation"}  # fmt: skip
    assert chunks  # the Emit effects reached the callback


def test_a_tool_outcome_keeps_its_exception_only_in_process() -> None:
    error = RuntimeError("nope")
    outcome = ToolOutcome("c", False, None, "RuntimeError: nope", error)
    again = _round_trip(outcome)
    assert again == outcome and again.exception is None and again.error == "RuntimeError: nope"
    assert _round_trip(Persist()) == Persist() and _round_trip(Finish()) == Finish()
    assert _round_trip(RunHooks("after_tool")) == RunHooks("after_tool")
    with pytest.raises(ValueError, match="unknown type"):
        from_json({"type": "launch_missiles"})


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_observers_see_every_effect_and_each_tool_call(mode: str, tmp_path: Path) -> None:
    own, per_run = Observer(), Observer()
    agent = Agent(
        chat_generator=ScriptedChatGenerator(
            [calls(("echo", {"text": "a"}, "e1"), ("charge", {"amount": 3}, "c1")), ChatMessage.from_assistant("ok")]
        ),
        tools=[create_tool_from_function(echo), create_tool_from_function(charge)],
        confirmation_strategies={"charge": Approve()},
        hooks={"before_llm": [note_step]},
        observers=[own],
    )
    messages = [ChatMessage.from_user("go")]
    if mode == "sync":
        agent.run(messages, observers=[per_run])
    else:
        asyncio.run(agent.run_async(messages, observers=[per_run]))
    for observer in (own, per_run):
        assert observer.kinds() == ["RunHooks", "CallModel", "AskApproval", "ToolInvocation", "ToolInvocation",
                                    "RunTools", "RunHooks", "CallModel"]  # fmt: skip
        assert len(observer.started_events) == len(observer.ended_events)
        tool_calls = [e for e, _ in observer.ended_events if isinstance(e, ToolInvocation)]
        assert sorted(c.call_id or "" for c in tool_calls) == ["c1", "e1"]  # the ungated call too
        assert all(ended.duration >= 0 for _, ended in observer.ended_events)
        results = {e.call_id: ended.result for e, ended in observer.ended_events if isinstance(e, ToolInvocation)}
        assert results == {"e1": "a", "c1": "charged 3"}


def test_an_observer_sees_the_pause_as_an_error_and_a_failing_observer_does_not_stop_the_run(tmp_path: Path) -> None:
    class Broken:
        def started(self, event: Any) -> None:
            raise ValueError("observer bug")

        def ended(self, event: Any, ended: Ended) -> None:
            pass

    observer = Observer()
    assert isinstance(observer, RunObserver)
    agent = Agent(
        chat_generator=ScriptedChatGenerator([calls(("charge", {"amount": 1}, "c1"))]),
        tools=[create_tool_from_function(charge)],
        confirmation_strategies={"charge": BreakpointConfirmationStrategy(str(tmp_path))},
        observers=[Broken(), observer],
    )
    with (
        pytest.warns(RuntimeWarning, match=r"Broken.started raised ValueError: observer bug"),
        pytest.raises(HITLBreakpointException),
    ):
        agent.run([ChatMessage.from_user("go")])
    pause, ended = observer.ended_events[-1]
    assert isinstance(pause, Pause) and pause.held == ["c1"]
    assert isinstance(ended.error, HITLBreakpointException)


def test_observers_are_checked_when_given() -> None:
    from handrail.errors import ConfigurationTypeError

    with pytest.raises(ConfigurationTypeError, match=r"observers\[0\] \(int\) is not a RunObserver"):
        Agent(chat_generator=ScriptedChatGenerator([]), observers=[3])  # type: ignore[list-item]
    agent = Agent(chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant("x")]))
    with pytest.raises(ConfigurationTypeError, match="observers must be a list"):
        agent.run([ChatMessage.from_user("go")], observers=Observer())  # type: ignore[arg-type]


def test_the_drivers_are_the_run_methods() -> None:
    def replies() -> ScriptedChatGenerator:
        return ScriptedChatGenerator([calls(("echo", {"text": "a"}, "e1")), ChatMessage.from_assistant("ok")])

    tools = [create_tool_from_function(echo)]
    by_run = Agent(chat_generator=replies(), tools=tools).run([ChatMessage.from_user("go")])
    with Agent(chat_generator=replies(), tools=tools).start([ChatMessage.from_user("go")]) as run:
        by_driver = SyncDriver().drive(run)

    async def drive_async() -> Any:
        async with Agent(chat_generator=replies(), tools=tools).start([ChatMessage.from_user("go")], sync=False) as r:
            return await AsyncDriver().drive(r)

    by_async = asyncio.run(drive_async())
    assert by_run["messages"] == by_driver["messages"] == by_async["messages"]
    assert isinstance(Emit, type)
