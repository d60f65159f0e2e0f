"""Which store a resume goes through: a missing SQLite file is refused (never created); schemes round-trip."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import handrail
from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.errors import ConfigurationError, SnapshotError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.stores import SQLiteSnapshotStore, open_snapshot_store
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.common_tools import SENT, transfer

APPROVE = ToolExecutionDecision("transfer", execute=True, tool_call_id="c1")


def _agent(replies: list[ChatMessage], store: Any) -> Agent:
    return Agent(
        chat_generator=ScriptedChatGenerator(replies),
        tools=[create_tool_from_function(transfer)],
        confirmation_strategies={"transfer": BreakpointConfirmationStrategy(snapshot_store=store)},
    )


def _pay(amount: int = 5) -> ChatMessage:
    return ChatMessage.from_assistant(tool_calls=[ToolCall("transfer", {"amount": amount}, "c1")])


@pytest.fixture(autouse=True)
def _sent() -> None:
    SENT.clear()


def test_a_missing_sqlite_file_is_refused_by_every_read_and_nothing_is_created(tmp_path: Path) -> None:
    path = tmp_path / "typo" / "approvals.db"
    url = f"sqlite:///{path}"
    store = open_snapshot_store(url)
    assert isinstance(store, SQLiteSnapshotStore)
    agent = _agent([ChatMessage.from_assistant("done")], store)
    attempts: dict[str, Callable[[], object]] = {
        "handrail.resume": lambda: handrail.resume("x1", store=url, agent=agent),
        "resume through the object": lambda: handrail.resume("x1", store=store, agent=agent),
        "load": lambda: store.load("x1"),
        "record_decision": lambda: store.record_decision("x1", APPROVE, decided_by="ana"),
        "claim": lambda: store.claim("x1"),
        "mark_done": lambda: store.mark_done("x1"),
    }
    for name, attempt in attempts.items():
        with pytest.raises(SnapshotError, match=r"No snapshot 'x1' in .*: no such database file") as refused:
            attempt()
        assert str(path) in str(refused.value), name
    assert store.list_pending() == [] and not store.exists("x1")  # listing a missing file, as a missing directory
    assert not (tmp_path / "typo").exists()  # no database, no lock folder, no parent folder
    assert SENT == []


def test_a_run_pausing_into_a_new_sqlite_file_creates_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/new/approvals.db"
    with pytest.raises(HITLBreakpointException) as paused:
        _agent([_pay()], url).run([ChatMessage.from_user("pay")])
    assert (tmp_path / "new" / "approvals.db").is_file()
    assert paused.value.snapshot is not None
    snapshot_id = paused.value.snapshot.snapshot_id
    assert snapshot_id is not None
    result = handrail.resume(snapshot_id, store=url, agent=_agent([ChatMessage.from_assistant("ok")], url),
                             decisions=[APPROVE])  # fmt: skip
    assert result["last_message"].text == "ok" and SENT == [5]


@pytest.mark.parametrize("path", ["", "  "])
def test_an_empty_sqlite_path_is_refused(path: str) -> None:
    with pytest.raises(ConfigurationError, match="needs a database file path"):
        SQLiteSnapshotStore(path)
