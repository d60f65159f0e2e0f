"""A model reply that echoes a known secret value is masked when the Agent takes it.

Model output is untrusted text: a key in its text, in a call's arguments (at any depth, keys too) or in its meta
never reaches the history, the tools, a snapshot or a chat / memory store row (SQLite bytes, WAL included).
"""

from __future__ import annotations

import secrets
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from handrail.components.agents import Agent, _reply_secrets
from handrail.core import Secret, _secret_values
from handrail.dataclasses import ChatMessage, ReasoningContent, ToolCall
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.stores import SQLiteChatMessageStore, SQLiteMemoryStore, open_snapshot_store
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool
from tests.cases._helpers import result_for, user

TOKEN = "sk-proj-REPLY" + secrets.token_urlsafe(24)
SEEN: list[Any] = []


def _echo(**arguments: Any) -> str:
    SEEN.append(arguments)
    return f"searched with {TOKEN}"  # a tool result echoing the key: masked too, in the chat and memory rows


def _replies(token: str) -> list[ChatMessage]:
    call = ToolCall("search", {"query": f"use {token}", "deep": [{"k": [token]}], token: "as a key"}, "c1")
    raw = ToolCall("search", f'{{"query": "{token}"', "c2")  # arguments the model sent as text (not JSON)
    return [
        ChatMessage.from_assistant(f"I will use {token}.", tool_calls=[call, raw], meta={"refusal": f"no {token}"}),
        ChatMessage.from_assistant(f"Done with {token[:14]}..."),
    ]


def _agent(replies: list[ChatMessage], db: Path, snapshots: str) -> tuple[Agent, ScriptedChatGenerator]:
    generator = ScriptedChatGenerator(replies)
    search = Tool(name="search", description="s", function=_echo,
                  parameters={"type": "object", "properties": {}, "additionalProperties": True})  # fmt: skip
    strategies = {"search": BreakpointConfirmationStrategy(snapshot_store=snapshots)}
    agent = Agent(chat_generator=generator, tools=[search], chat_message_store=SQLiteChatMessageStore(db),
                  memory_store=SQLiteMemoryStore(db), confirmation_strategies=strategies)  # fmt: skip
    return agent, generator


def _stored_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def test_a_key_the_model_echoes_is_in_no_history_tool_snapshot_or_store_row(tmp_path: Path) -> None:
    Secret.from_token(TOKEN)
    db, snapshots = tmp_path / "stores.db", f"sqlite:///{tmp_path}/snapshots.db"
    stores = {"chat_message_store_kwargs": {"chat_history_id": "c"}, "memory_store_kwargs": {"user_id": "ann"}}
    first, _ = _agent(_replies(TOKEN), db, snapshots)
    with pytest.raises(HITLBreakpointException) as info:
        first.run([user("go")], **stores)
    snapshot = info.value.snapshot
    assert TOKEN not in repr(snapshot.messages) and "use ***" in repr(snapshot.messages)
    store = open_snapshot_store(snapshots)
    for call_id in ("c1", "c2"):
        store.record_decision(snapshot.snapshot_id, ToolExecutionDecision("search", True, call_id), decided_by="ana")
    SEEN.clear()
    second, generator = _agent(_replies(TOKEN)[1:], db, snapshots)
    result = second.run([], snapshot=store.load(snapshot.snapshot_id), **stores)
    assert SEEN == [{"query": "use ***", "deep": [{"k": ["***"]}], "***": "as a key"}]  # the tool got masked text
    assert result_for(result["messages"], "c1").result == "searched with ***"
    assert result["last_message"].text == "Done with ***"
    chat = SQLiteChatMessageStore(db).retrieve_messages("c")
    memories = SQLiteMemoryStore(db).search_memories(user_id="ann", query="use")
    done = store.load(snapshot.snapshot_id)
    store.close()
    texts = [repr(result), repr(generator.calls), repr(chat), repr(memories), repr(done)]
    assert all(TOKEN not in text and TOKEN[:16] not in text for text in texts)
    with sqlite3.connect(db) as conn:
        dumped = "\n".join(conn.iterdump())  # every table, the full-text index included
    assert "use ***" in dumped and TOKEN not in dumped
    assert TOKEN.encode() not in _stored_bytes(tmp_path) and TOKEN[:16].encode() not in _stored_bytes(tmp_path)


def test_a_reply_without_a_secret_is_taken_as_it_is() -> None:
    Secret.from_token(TOKEN)
    reply = ChatMessage.from_assistant("plain text", tool_calls=[ToolCall("search", {"query": ["a", {"b": 1}]}, "c1")])
    assert _reply_secrets.masked(reply) is reply


def test_with_no_secret_known_a_reply_is_not_even_looked_at(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_secret_values, "_exact", ())
    monkeypatch.setattr(_reply_secrets, "mask_data", None)  # would raise if called
    reply = ChatMessage.from_assistant(f"echo {TOKEN}")
    assert _reply_secrets.masked(reply) is reply


def test_a_key_in_the_models_reasoning_is_masked() -> None:
    Secret.from_token(TOKEN)
    reply = ChatMessage.from_assistant("ok", reasoning=ReasoningContent(f"I saw {TOKEN}", {"sig": TOKEN}))
    masked = _reply_secrets.masked(reply)
    assert masked.reasoning is not None and TOKEN not in str(masked.to_dict())
    assert masked.reasoning.reasoning_text.startswith("I saw ") and masked.text == "ok"
