"""A Secret inside a tool result never reaches the model, a message, a snapshot, a store row, a log or an error.

Whatever holds it (dataclass, nested dataclass, pydantic model, list, tuple, dict, an object whose ``to_dict``
returns it), the tool result text shows the Secret's redacted ``repr``; a value copied out of a known secret
(``to_dict`` returning ``resolve_value()``) is masked to ``***``.
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
import sqlite3
from pathlib import Path
from typing import Any

import pydantic
import pytest

from handrail.components.agents import Agent
from handrail.components.tools._results import result_to_text
from handrail.core import Secret
from handrail.core._typed_json import encode_value
from handrail.dataclasses import ChatMessage
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.errors import SerializationError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.stores import open_snapshot_store
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool
from tests.cases._helpers import asst, result_for, user
from tests.stores.conftest import postgres_database, postgres_dsn, postgres_server_dsn  # noqa: F401 - fixtures

TOKEN = "sk-result-" + secrets.token_urlsafe(24)
PLACEHOLDER = "Secret.from_token('***')"


@dataclasses.dataclass
class Creds:
    user: str
    key: Secret


@dataclasses.dataclass
class Account:
    name: str
    creds: Creds
    history: list[Creds]


class PydanticCreds(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(arbitrary_types_allowed=True)
    user: str
    key: Secret


class HandsOverTheSecret:
    """``to_dict`` returns the Secret object itself."""

    def to_dict(self) -> dict[str, Any]:
        return {"user": "ann", "key": Secret.from_token(TOKEN)}


class CopiesTheValueOut:
    """``to_dict`` returns the raw value: caught because the secret's value is known to this process."""

    def to_dict(self) -> dict[str, Any]:
        return {"user": "ann", "key": Secret.from_token(TOKEN).resolve_value()}

    def __str__(self) -> str:
        return f"CopiesTheValueOut({TOKEN})"


def _key() -> Secret:
    return Secret.from_token(TOKEN)


HOLDERS: dict[str, Any] = {
    "dataclass": lambda: Creds("ann", _key()),
    "nested dataclass": lambda: Account("a", Creds("ann", _key()), [Creds("bob", _key())]),
    "pydantic model": lambda: PydanticCreds(user="ann", key=_key()),
    "list": lambda: ["ann", _key()],
    "tuple": lambda: ("ann", _key()),
    "dict": lambda: {"user": "ann", "key": _key()},
    "set": lambda: {_key()},
    "dict of dataclasses": lambda: {"creds": [Creds("ann", _key())]},
    "to_dict returning the Secret": HandsOverTheSecret,
    "to_dict returning its value": CopiesTheValueOut,
    "bare Secret": _key,
}


@pytest.mark.parametrize("kind", list(HOLDERS))
@pytest.mark.parametrize("json_strings", [False, True])
def test_the_result_text_never_holds_the_value(kind: str, json_strings: bool) -> None:
    text = result_to_text(HOLDERS[kind](), json_strings)
    assert TOKEN not in text
    assert PLACEHOLDER in text or "***" in text


def test_a_dataclass_result_keeps_its_fields_and_shows_the_placeholder() -> None:
    assert result_to_text(Account("a", Creds("ann", _key()), [])) == (
        '{"name": "a", "creds": {"user": "ann", "key": "Secret.from_token(\'***\')"}, "history": []}'
    )
    env = Secret.from_env_var("HR_TEST_RESULT_KEY", strict=False)
    assert result_to_text({"key": env}) == '{"key": "Secret.from_env_var(\'HR_TEST_RESULT_KEY\', strict=False)"}'


def test_a_snapshot_never_writes_a_secret_or_its_value() -> None:
    with pytest.raises(SerializationError, match=r"state\['creds'\]\.key: .*token secret is never written") as info:
        encode_value(Creds("ann", _key()), "state['creds']")
    assert TOKEN not in str(info.value)
    with pytest.raises(SerializationError, match=r"holds the value of a secret") as info:
        encode_value({"copied": [TOKEN]}, "state['x']")
    assert TOKEN not in str(info.value)
    env = Secret.from_env_var("HR_TEST_RESULT_KEY", strict=False)
    assert encode_value(env)["data"] == env.to_dict()  # an env-var secret is written as its variable's name


# -- end to end: every artefact of a run that pauses, is approved and resumes --------------------------------------


def _tool(name: str, make: Any) -> Tool:
    return Tool(name=name, description=name, parameters={"type": "object", "properties": {}},
                function=lambda: make())  # fmt: skip


def _raises() -> None:
    raise RuntimeError(f"the server said: Incorrect API key provided: {TOKEN}")


def _tools() -> list[Tool]:
    tools = [_tool(f"t{i}", make) for i, make in enumerate(HOLDERS.values())]
    tools.append(_tool("fails", _raises))
    tools.append(_tool("transfer", lambda: Creds("ann", _key())))  # the approved call: its result goes in the ledger
    return tools


def _agent(replies: list[ChatMessage], store: Any) -> tuple[Agent, ScriptedChatGenerator]:
    generator = ScriptedChatGenerator(replies)
    strategies = {"transfer": BreakpointConfirmationStrategy(snapshot_store=store)}
    return Agent(chat_generator=generator, tools=_tools(), confirmation_strategies=strategies), generator


def _run_pause_approve_resume(url: str, caplog: pytest.LogCaptureFixture) -> list[str]:
    """Every text the run produced: what the model was sent, the result, the records, logs and warnings."""
    caplog.set_level(logging.DEBUG)
    calls = [(f"c{i}", f"t{i}", {}) for i in range(len(HOLDERS))] + [("cf", "fails", {})]
    first, gen1 = _agent([asst(calls=calls), asst(calls=[("ct", "transfer", {})])], url)
    with pytest.raises(HITLBreakpointException) as info:
        first.run([user("go")])
    snapshot_id = info.value.snapshot.snapshot_id
    store = open_snapshot_store(url)
    store.record_decision(snapshot_id, ToolExecutionDecision("transfer", True, "ct"), decided_by="ana")
    second, gen2 = _agent([asst("done")], url)
    result = second.run([], snapshot=store.load(snapshot_id))
    assert result["last_message"].text == "done"
    assert PLACEHOLDER in result_for(result["messages"], "ct").result
    assert "***" in result_for(result["messages"], "cf").result
    done = store.load(snapshot_id)
    assert done.ledger["ct"].result is not None and PLACEHOLDER in done.ledger["ct"].result["text"]
    store.close()
    return [repr(gen1.calls), repr(gen2.calls), repr(result), repr(info.value), repr(done), caplog.text,
            *(m.to_dict().__repr__() for m in result["messages"])]  # fmt: skip


def _files_bytes(root: Path) -> list[bytes]:
    return [p.read_bytes() for p in root.rglob("*") if p.is_file()]


@pytest.mark.parametrize("kind", ["directory", "sqlite"])
def test_no_artefact_of_a_run_holds_the_value(kind: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    url = str(tmp_path / "snaps") if kind == "directory" else f"sqlite:///{tmp_path}/approvals.db"
    texts = _run_pause_approve_resume(url, caplog)
    assert all(TOKEN not in text for text in texts)
    stored = _files_bytes(tmp_path)
    assert stored and all(TOKEN.encode() not in data for data in stored)
    if kind == "sqlite":
        with sqlite3.connect(tmp_path / "approvals.db") as conn:
            rows = conn.execute("SELECT * FROM sqlite_master").fetchall()
            tables = [r[1] for r in rows if r[0] == "table"]
            dumped = "\n".join(conn.iterdump())
        assert tables and TOKEN not in dumped


@pytest.mark.postgres
def test_no_postgres_row_holds_the_value(postgres_dsn: str, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    import psycopg

    texts = _run_pause_approve_resume(postgres_dsn, caplog)
    assert all(TOKEN not in text for text in texts)
    with psycopg.connect(postgres_dsn) as conn:
        rows = conn.execute("SELECT t::text FROM handrail_snapshots t").fetchall()
    assert rows and all(TOKEN not in row[0] for row in rows)
