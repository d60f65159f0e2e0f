"""Bad input found by the second fresh-user probe is refused with handrail's errors, naming what was wrong.

Before, each case below was accepted silently, or failed later with a raw Python error (AttributeError, a
TypeError from ``dict.update`` or ``await``), or named the wrong argument.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import handrail
from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision as D
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy, list_pending, record_decision
from handrail.human_in_the_loop.snapshots import list_paused
from handrail.stores import SQLiteSnapshotStore
from handrail.testing import ScriptedChatGenerator, call, tool_reply
from handrail.tools import create_tool_from_function
from tests.common_tools import SENT, transfer

C1 = ToolCall("transfer", {"amount": 5}, "c1")


@pytest.fixture(autouse=True)
def _sent() -> None:
    SENT.clear()


def _agent(store: Any, replies: list[ChatMessage], strategy: Any = None) -> Agent:
    return Agent(
        chat_generator=ScriptedChatGenerator(replies),
        tools=[create_tool_from_function(transfer)],
        confirmation_strategies={"transfer": strategy or BreakpointConfirmationStrategy(snapshot_store=store)},
    )


def _pause(store: Any) -> str:
    with pytest.raises(HITLBreakpointException) as paused:
        _agent(store, [ChatMessage.from_assistant(tool_calls=[C1])]).run([ChatMessage.from_user("pay")])
    snapshot_id = paused.value.snapshot.snapshot_id
    assert snapshot_id is not None
    return snapshot_id


def test_resume_names_its_decisions_argument_and_wants_a_bool_allow_drift(tmp_path: Path) -> None:
    snapshot_id = _pause(str(tmp_path))
    agent = _agent(str(tmp_path), [ChatMessage.from_assistant("ok")])
    for bad in ("x", ["x"]):
        with pytest.raises(ConfigurationTypeError, match=r"^decisions must be a list of ToolExecutionDecision"):
            handrail.resume(snapshot_id, store=tmp_path, agent=agent, decisions=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationTypeError, match="allow_drift must be a bool, got str"):
        handrail.resume(snapshot_id, store=tmp_path, agent=agent, decisions=[D("transfer", True, "c1")],
                        allow_drift="yes")  # type: ignore[arg-type]  # fmt: skip
    with pytest.raises(ConfigurationTypeError, match="allow_drift must be a bool"):
        agent.run([ChatMessage.from_user("hi")], allow_drift=1)  # type: ignore[arg-type]
    assert SENT == []


def test_same_as_and_find_refuse_arguments_of_the_wrong_type() -> None:
    decision = D("transfer", True, "c1")
    with pytest.raises(ConfigurationTypeError, match="same_as compares with a ToolExecutionDecision, got str"):
        decision.same_as("x")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationTypeError, match="proposed must be a mapping"):
        decision.same_as(decision, [1])  # type: ignore[arg-type]
    with pytest.raises(ConfigurationTypeError, match="find's given must be a list of ToolExecutionDecision, got str"):
        D.find(C1, recorded=None, given="ab")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationTypeError, match="find's recorded must be a ToolExecutionDecision or None"):
        D.find(C1, recorded="x")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationTypeError, match="find's call must be a ToolCall"):
        D.find("c1", recorded=None)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationTypeError, match="find's step_calls must be a list of ToolCall"):
        D.find(C1, recorded=None, step_calls=["c1"])  # type: ignore[list-item]
    unnamed = D("transfer", True)
    assert D.find(C1, recorded=None, given=iter([unnamed]), step_calls=iter([C1])) is unnamed  # iterables still do


def test_a_decision_needs_a_non_empty_call_id_and_json_arguments() -> None:
    with pytest.raises(ConfigurationError, match="tool_call_id is empty"):
        D("transfer", True, "")
    with pytest.raises(SerializationError, match=r"final_tool_params\['a'\]: an? object is not JSON data"):
        D("transfer", True, "c1", final_tool_params={"a": object()})
    with pytest.raises(SerializationError, match="nan is not allowed"):
        D("transfer", True, "c1", final_tool_params={"a": float("nan")})


class _SyncRunAsync:
    def run(self, messages: list[ChatMessage], tools: Any = None) -> dict[str, Any]:
        return {"replies": [ChatMessage.from_assistant("hi")]}

    def run_async(self, messages: list[ChatMessage], tools: Any = None) -> dict[str, Any]:
        return self.run(messages, tools)


def test_a_generator_whose_run_async_is_a_plain_def_is_refused_when_the_agent_is_built() -> None:
    with pytest.raises(ConfigurationTypeError, match=r"_SyncRunAsync.run_async is not a coroutine function"):
        Agent(chat_generator=_SyncRunAsync()).run([ChatMessage.from_user("hi")])
    with pytest.raises(ConfigurationTypeError, match="run_async must be async def"):
        asyncio.run(Agent(chat_generator=_SyncRunAsync()).run_async([ChatMessage.from_user("hi")]))


def test_testing_builders_refuse_arguments_of_the_wrong_type() -> None:
    with pytest.raises(ConfigurationTypeError, match=r"call\('add'\) takes its arguments as a dict.*got list"):
        call("add", [1, 2])  # type: ignore[arg-type]
    with pytest.raises(ConfigurationTypeError, match="tool_reply's error must be a bool, got str"):
        tool_reply("3", call("add", id="c1", a=1), error="yes")  # type: ignore[arg-type]
    assert call("add", '{"a": 1}').arguments == '{"a": 1}'  # the raw text a model sent is still taken


class _Pausing:
    pauses_run = True

    def __init__(self, store: Any, metadata: Any) -> None:
        self.snapshot_file_path: str | None = None
        self.snapshot_store = store
        self.metadata = metadata

    def run(self, **kwargs: Any) -> D:
        raise AssertionError("a pausing strategy is never asked")


def test_a_pausing_strategy_with_metadata_that_is_not_a_dict_is_refused(tmp_path: Path) -> None:
    agent = _agent(tmp_path, [ChatMessage.from_assistant(tool_calls=[C1])], _Pausing(str(tmp_path), [("a", 1), "xy"]))
    with pytest.raises(ConfigurationTypeError, match=r"strategy for 'transfer' .*metadata of type list"):
        agent.run([ChatMessage.from_user("pay")])
    assert SENT == [] and list(tmp_path.iterdir()) == []


def test_list_pending_and_record_decision_take_a_store_url(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    store = SQLiteSnapshotStore(tmp_path / "c.db")
    snapshot_id = _pause(store)
    store.close()
    pending = list_pending(url)
    assert [(p.snapshot_id, p.tool_call_id) for p in pending] == [(snapshot_id, "c1")]
    assert [s.snapshot_id for s in list_paused(url)] == [snapshot_id]
    seen: list[Any] = []
    assert len(list_pending(url, on_error=lambda path, exc: seen.append(path))) == 1 and seen == []
    with pytest.raises(ConfigurationError, match="names a database but no snapshot"):
        record_decision(url, D("transfer", True, "c1"))
    updated = record_decision(f"{url}#{snapshot_id}", D("transfer", True, "c1"), decided_by="ana")
    assert updated.ledger["c1"].decided_by == "ana" and list_pending(url) == []
