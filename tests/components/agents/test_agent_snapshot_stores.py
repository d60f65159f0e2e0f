"""Pausing into a shared snapshot store (SQLite, PostgreSQL) and resuming from it, as another process would."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.errors import SnapshotUnavailableError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.stores import open_snapshot_store
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.cases._helpers import asst, result_for, user
from tests.common_tools import SENT, transfer
from tests.stores.conftest import postgres_database, postgres_dsn, postgres_server_dsn  # noqa: F401 - fixtures


def _agent(replies: list[ChatMessage], store: Any) -> Agent:
    return Agent(
        chat_generator=ScriptedChatGenerator(replies), tools=[create_tool_from_function(transfer)],
        confirmation_strategies={"transfer": BreakpointConfirmationStrategy(snapshot_store=store)},
    )  # fmt: skip


def _pause_decide_resume(url: str) -> None:
    SENT.clear()
    with pytest.raises(HITLBreakpointException) as info:
        _agent([asst(calls=[("c1", "transfer", {"amount": 10})])], url).run([user("pay")])
    approver = open_snapshot_store(url)  # another process would open the store the same way
    pending = approver.list_pending()
    assert [(p.tool_name, p.tool_call_id, p.arguments) for p in pending] == [("transfer", "c1", {"amount": 10})]
    assert pending[0].snapshot_id == info.value.snapshot.snapshot_id
    approver.record_decision(pending[0].snapshot_id, ToolExecutionDecision("transfer", True, "c1"), decided_by="ana")
    snapshot = approver.load(pending[0].snapshot_id)
    result = _agent([asst("Transfer done")], url).run([], snapshot=snapshot)
    assert result["last_message"].text == "Transfer done"
    assert result_for(result["messages"], "c1").result == "sent 10"
    assert SENT == [10]
    assert approver.list_pending() == []
    done = approver.load(pending[0].snapshot_id)
    assert done.status == "done" and done.ledger["c1"].decided_by == "ana"
    with pytest.raises(SnapshotUnavailableError, match=pending[0].snapshot_id):
        _agent([asst("again")], url).run([], snapshot=snapshot)
    assert SENT == [10]
    approver.close()


def test_pause_into_sqlite_and_resume_from_it(tmp_path: Path) -> None:
    _pause_decide_resume(f"sqlite:///{tmp_path}/approvals.db")


def test_pause_into_a_store_object_and_resume(tmp_path: Path) -> None:
    from handrail.stores import SQLiteSnapshotStore

    store = SQLiteSnapshotStore(tmp_path / "a.db")
    SENT.clear()
    with pytest.raises(HITLBreakpointException) as info:
        _agent([asst(calls=[("c1", "transfer", {"amount": 4})])], store).run([user("pay")])
    snap = dataclasses.replace(
        store.load(info.value.snapshot.snapshot_id),
        tool_execution_decisions=[ToolExecutionDecision("transfer", False, "c1", feedback="no")],
    )
    result = _agent([asst("ok")], store).run([], snapshot=snap)
    assert "no" in result_for(result["messages"], "c1").result and SENT == []


@pytest.mark.postgres
def test_pause_into_postgres_and_resume_from_it(postgres_dsn: str) -> None:  # noqa: F811 - the fixture
    from psycopg.conninfo import conninfo_to_dict

    parts = conninfo_to_dict(postgres_dsn)
    url = f"postgresql://{parts.get('user', 'postgres')}@{parts['host']}:{parts.get('port', 5432)}/{parts['dbname']}"
    _pause_decide_resume(url)
    assert not any("dbname" in p.name for p in Path.cwd().iterdir())  # the URL named the server, not a folder
