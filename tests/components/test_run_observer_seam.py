"""The run observer seam: run_started / run_ended with a RunInfo, values carried across a pause, factories.

What tracing and logging build on (handrail.components.drivers, AgentRun): each outcome of a run (done, paused by a
breakpoint or for approval, failed, closed early), sync and async, is told once, after run_started and every effect.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from pathlib import Path
from typing import Any

import pytest

from handrail import Agent
from handrail.components.drivers import (
    Ended,
    RunInfo,
    add_observer_factory,
    execute_sync,
    remove_observer_factory,
)
from handrail.components.effects import Effect, ToolInvocation
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.breakpoints import AgentBreakpoint, Breakpoint, BreakpointException, HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import load_snapshot
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.stores import InMemoryChatMessageStore
from handrail.testing import FunctionChatGenerator, ScriptedChatGenerator
from handrail.tools import create_tool_from_function


def charge(amount: int) -> str:
    """Charge an amount of money."""
    return f"charged {amount}"


def echo(text: str) -> str:
    """Echo the text."""
    return text


def calls(*items: tuple[str, dict[str, Any], str]) -> ChatMessage:
    return ChatMessage.from_assistant(tool_calls=[ToolCall(tool_name=n, arguments=a, id=i) for n, a, i in items])


class RunWatcher:
    """An observer that keeps what it is told, in order, with the thread it was told in."""

    def __init__(self, carry: dict[str, Any] | None = None) -> None:
        self.lock = threading.Lock()
        self.log: list[str] = []
        self.infos: list[RunInfo] = []
        self.ends: list[tuple[str, Ended]] = []
        self.threads: dict[str, int] = {}
        self.seen: dict[str, Any] = {}
        self.to_carry = carry or {}

    def run_started(self, info: RunInfo) -> None:
        self.log.append("run_started")
        self.infos.append(info)
        self.threads["run_started"] = threading.get_ident()
        self.seen["durable_id_at_start"] = info.durable_id
        self.seen["carried_in"] = dict(info.carried_in)
        for key, value in self.to_carry.items():
            info.carry(key, value)

    def started(self, event: Effect | ToolInvocation) -> None:
        with self.lock:
            self.log.append(f"started {type(event).__name__}")

    def ended(self, event: Effect | ToolInvocation, ended: Ended) -> None:
        with self.lock:
            self.log.append(f"ended {type(event).__name__}")

    def run_ended(self, info: RunInfo, ended: Ended) -> None:
        self.log.append("run_ended")
        self.ends.append((info.outcome, ended))
        self.threads["run_ended"] = threading.get_ident()
        self.seen["durable_id_at_end"] = info.durable_id
        self.seen["run_id_at_end"] = info.run_id
        self.seen["messages_at_end"] = len(info.messages)

    @property
    def outcome(self) -> str:
        assert len(self.ends) == 1, self.ends
        return self.ends[0][0]


def _go() -> list[ChatMessage]:
    return [ChatMessage.from_user("go")]


def _run(agent: Agent, mode: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
    if mode == "sync":
        return agent.run(*args, **kwargs)
    return asyncio.run(agent.run_async(*args, **kwargs))


MODES = pytest.mark.parametrize("mode", ["sync", "async"])


@MODES
def test_a_done_run_is_told_once_first_and_last_with_its_result(mode: str) -> None:
    watcher = RunWatcher()
    agent = Agent(
        chat_generator=ScriptedChatGenerator([calls(("echo", {"text": "a"}, "e1")), ChatMessage.from_assistant("ok")]),
        tools=[create_tool_from_function(echo)],
        observers=[watcher],
    )
    result = _run(agent, mode, _go())
    assert watcher.log[0] == "run_started" and watcher.log[-1] == "run_ended"
    assert watcher.log.count("run_started") == watcher.log.count("run_ended") == 1
    assert "ended CallModel" in watcher.log and "ended ToolInvocation" in watcher.log
    assert watcher.outcome == "done"
    ended = watcher.ends[0][1]
    assert ended.error is None and ended.result["last_message"].text == "ok"
    assert ended.duration > 0  # the run's own time, from run_started to run_ended
    assert ended.result["messages"] == result["messages"]
    assert watcher.threads["run_started"] == watcher.threads["run_ended"] == threading.get_ident()
    info = watcher.infos[0]
    assert info.agent_name == "" and info.resumed_from is None and info.conversation_id is None
    assert info.durable_id is None and info.run_id == info.local_id and len(info.local_id) == 32
    assert not info.can_carry
    info.carry("ignored", 1)  # a run that writes no snapshot keeps nothing, and says nothing
    assert info.generator is agent.chat_generator
    assert info.describe_tool("echo") == "Echo the text." and info.describe_tool("nope") is None
    assert watcher.seen["messages_at_end"] == len(result["messages"])


@MODES
def test_a_failing_model_ends_the_run_failed_with_its_error(mode: str) -> None:
    def broken(messages: list[ChatMessage], tools: Any) -> ChatMessage:
        raise ConnectionError("the model is down")

    watcher = RunWatcher()
    agent = Agent(chat_generator=FunctionChatGenerator(broken), observers=[watcher])
    with pytest.raises(ConnectionError, match="the model is down"):
        _run(agent, mode, _go())
    assert watcher.outcome == "failed"
    assert isinstance(watcher.ends[0][1].error, ConnectionError) and watcher.ends[0][1].result is None
    assert watcher.log[-2:] == ["ended CallModel", "run_ended"]


@MODES
def test_a_breakpoint_pauses_the_run(mode: str, tmp_path: Path) -> None:
    watcher = RunWatcher()
    agent = Agent(chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant("never")]), observers=[watcher])
    bp = AgentBreakpoint("planner", Breakpoint("chat_generator", 0, str(tmp_path)))
    with pytest.raises(BreakpointException) as raised:
        _run(agent, mode, _go(), break_point=bp)
    assert watcher.outcome == "paused"
    assert watcher.ends[0][1].error is raised.value
    assert watcher.infos[0].agent_name == "planner"
    assert watcher.log[-2:] == ["ended Pause", "run_ended"]


def _approval_agent(folder: Path, replies: list[ChatMessage], *observers: Any) -> Agent:
    return Agent(
        chat_generator=ScriptedChatGenerator(replies),
        tools=[create_tool_from_function(charge)],
        confirmation_strategies={"charge": BreakpointConfirmationStrategy(str(folder))},
        observers=list(observers),
    )


@MODES
def test_an_approval_pause_carries_values_to_the_resumed_run(mode: str, tmp_path: Path) -> None:
    first = RunWatcher(carry={"trace": {"traceparent": "00-abc-def-01"}, "mine": [1, 2]})
    agent = _approval_agent(tmp_path, [calls(("charge", {"amount": 5}, "c1"))], first)
    with pytest.raises(HITLBreakpointException) as paused:
        _run(agent, mode, _go())
    assert first.outcome == "paused" and isinstance(first.ends[0][1].error, HITLBreakpointException)
    assert first.infos[0].can_carry
    # the durable id is known once the first record is written: none at the start, the first snapshot's id after
    snapshot = load_snapshot(str(paused.value.snapshot_file_path))
    assert first.seen["durable_id_at_start"] is None
    assert first.seen["durable_id_at_end"] == first.seen["run_id_at_end"] == snapshot.run_id is not None
    assert snapshot.metadata["observers"] == {"trace": {"traceparent": "00-abc-def-01"}, "mine": [1, 2]}

    second = RunWatcher(carry={"mine": [3]})
    resumed_agent = _approval_agent(tmp_path, [ChatMessage.from_assistant("paid")], second)
    decided = dataclasses.replace(snapshot, tool_execution_decisions=[ToolExecutionDecision("charge", True, "c1")])
    given_metadata = {k: dict(v) if isinstance(v, dict) else v for k, v in decided.metadata.items()}
    result = _run(resumed_agent, mode, [], snapshot=decided)
    assert result["last_message"].text == "paid"
    assert second.outcome == "done"
    info = second.infos[0]
    assert info.resumed_from == snapshot.snapshot_id
    assert second.seen["carried_in"] == {"trace": {"traceparent": "00-abc-def-01"}, "mine": [1, 2]}
    assert info.run_id == snapshot.run_id == second.seen["durable_id_at_start"]  # a resumed run inherits its id
    assert decided.metadata == given_metadata  # the caller's snapshot is not written to by carry


def test_a_value_carried_by_the_resumed_run_lands_in_its_own_pause(tmp_path: Path) -> None:
    first = RunWatcher(carry={"trace": "first"})
    agent = _approval_agent(tmp_path, [calls(("charge", {"amount": 5}, "c1"))], first)
    with pytest.raises(HITLBreakpointException) as paused:
        agent.run(_go())
    snapshot = load_snapshot(str(paused.value.snapshot_file_path))
    second = RunWatcher(carry={"trace": "second"})
    again = _approval_agent(tmp_path, [calls(("charge", {"amount": 6}, "c2"))], second)
    decided = dataclasses.replace(snapshot, tool_execution_decisions=[ToolExecutionDecision("charge", True, "c1")])
    with pytest.raises(HITLBreakpointException) as paused_again:
        again.run([], snapshot=decided)
    assert second.seen["carried_in"] == {"trace": "first"}
    assert load_snapshot(str(paused_again.value.snapshot_file_path)).metadata["observers"] == {"trace": "second"}
    assert snapshot.metadata["observers"] == {"trace": "first"}


@MODES
def test_a_run_with_a_chat_store_names_its_conversation(mode: str) -> None:
    watcher = RunWatcher()
    agent = Agent(chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant("hi")]),
                  chat_message_store=InMemoryChatMessageStore(), observers=[watcher])  # fmt: skip
    _run(agent, mode, _go(), chat_message_store_kwargs={"chat_history_id": "conv-7"})
    assert watcher.infos[0].conversation_id == "conv-7"
    assert watcher.outcome == "done"


def test_a_hand_driven_run_closed_early_ends_closed() -> None:
    watcher = RunWatcher()
    agent = Agent(chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant("never")]), observers=[watcher])
    run = agent.start(_go())
    assert watcher.log == ["run_started"]
    effect = run.send(None)
    assert effect is not None
    execute_sync(run.context, effect)
    run.close()
    run.close()  # idempotent: told once
    assert watcher.outcome == "closed"
    assert watcher.ends[0][1].error is None and watcher.ends[0][1].result is None


def test_a_hand_driven_run_left_by_an_error_in_its_with_block_ends_failed() -> None:
    watcher = RunWatcher()
    agent = Agent(chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant("never")]), observers=[watcher])
    with pytest.raises(KeyError), agent.start(_go()) as run:
        run.send(None)
        raise KeyError("the driver broke")
    assert watcher.outcome == "failed" and isinstance(watcher.ends[0][1].error, KeyError)


def test_an_async_hand_driven_run_closed_early_ends_closed() -> None:
    watcher = RunWatcher()
    agent = Agent(chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant("never")]), observers=[watcher])

    async def drive() -> None:
        async with agent.start(_go(), sync=False) as run:
            assert run.send(None) is not None

    asyncio.run(drive())
    assert watcher.outcome == "closed"


def test_an_async_durable_run_is_told_its_end_in_the_task_that_started_it(tmp_path: Path) -> None:
    """The claim is released in a worker thread; run_ended is still told on the event loop's thread."""
    watcher = RunWatcher()
    agent = _approval_agent(tmp_path, [calls(("charge", {"amount": 5}, "c1"))], watcher)
    with pytest.raises(HITLBreakpointException):
        asyncio.run(agent.run_async(_go()))
    assert watcher.outcome == "paused"
    assert watcher.threads["run_ended"] == watcher.threads["run_started"]


class Failing:
    """An observer whose run_started and run_ended raise."""

    def __init__(self) -> None:
        self.effects = 0

    def started(self, event: Any) -> None:
        self.effects += 1

    def ended(self, event: Any, ended: Ended) -> None:
        pass

    def run_started(self, info: RunInfo) -> None:
        raise ValueError("start bug")

    def run_ended(self, info: RunInfo, ended: Ended) -> None:
        raise ValueError("end bug")


def test_an_observer_raising_in_run_started_or_run_ended_is_warned_about_and_the_run_goes_on() -> None:
    watcher, failing = RunWatcher(), Failing()
    agent = Agent(chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant("ok")]),
                  observers=[failing, watcher])  # fmt: skip
    with pytest.warns(RuntimeWarning) as warned:
        result = agent.run(_go())
    assert result["last_message"].text == "ok"
    messages = [str(w.message) for w in warned]
    assert any("Failing.run_started raised ValueError: start bug; the run goes on." in m for m in messages)
    assert any("Failing.run_ended raised ValueError: end bug; the run goes on." in m for m in messages)
    assert failing.effects > 0 and watcher.outcome == "done"  # the observers after it are still told


def test_an_observer_without_run_methods_is_enough() -> None:
    class EffectsOnly:
        def __init__(self) -> None:
            self.count = 0

        def started(self, event: Any) -> None:
            self.count += 1

        def ended(self, event: Any, ended: Ended) -> None:
            pass

    plain = EffectsOnly()
    Agent(chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant("ok")]), observers=[plain]).run(_go())
    assert plain.count > 0


def test_factories_make_an_observer_for_every_run_until_removed() -> None:
    made: list[RunWatcher] = []

    def factory() -> RunWatcher:
        made.append(RunWatcher())
        return made[-1]

    def nothing() -> None:
        return None

    agent = Agent(chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant("ok")] * 3))
    add_observer_factory(factory)
    add_observer_factory(factory)  # added once
    add_observer_factory(nothing)
    try:
        agent.run(_go())
        asyncio.run(agent.run_async(_go()))
    finally:
        remove_observer_factory(factory)
        remove_observer_factory(nothing)
    remove_observer_factory(factory)  # not there any more: nothing happens
    agent.run(_go())
    assert len(made) == 2
    assert [w.outcome for w in made] == ["done", "done"]
    assert made[0].infos[0].local_id != made[1].infos[0].local_id


def test_a_raising_factory_is_warned_about_and_the_others_still_observe() -> None:
    watcher = RunWatcher()

    def broken() -> RunWatcher:
        raise RuntimeError("factory bug")

    def good() -> RunWatcher:
        return watcher

    add_observer_factory(broken)
    add_observer_factory(good)
    try:
        with pytest.warns(RuntimeWarning, match=r"broken\.factory raised RuntimeError: factory bug"):
            result = Agent(chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant("ok")])).run(_go())
    finally:
        remove_observer_factory(broken)
        remove_observer_factory(good)
    assert result["last_message"].text == "ok" and watcher.outcome == "done"


def test_a_tracer_provider_given_to_the_agent_asks_handrail_tracing_for_its_observer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import handrail.tracing

    providers: list[object] = []
    watchers: list[RunWatcher] = []

    def observer_for(provider: object) -> RunWatcher:
        providers.append(provider)
        watchers.append(RunWatcher())
        return watchers[-1]

    monkeypatch.setattr(handrail.tracing, "observer_for", observer_for, raising=False)

    class Provider:  # what the Agent checks a provider has
        def get_tracer(self, *args: object) -> None:
            raise AssertionError("observer_for is replaced: not called")

    provider = Provider()
    agent = Agent(chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant("ok")] * 2),
                  tracer_provider=provider)  # fmt: skip
    agent.run(_go())
    agent.run(_go())
    assert providers == [provider, provider]  # once per run
    assert [w.outcome for w in watchers] == ["done", "done"]
    assert "tracer_provider" not in agent.to_dict()["init_parameters"]  # a runtime object, not serialized
