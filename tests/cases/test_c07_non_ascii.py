"""C07 — non-ASCII text survives arguments, results, errors and serialization."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.cases._helpers import asst, result_for, user

QUERY = "preço da taça de romã"
REPLY = "O termo não resultou em nenhum resultado 🍎"


@dataclass
class Answer:
    reply: str


RESULTS: dict[str, Any] = {
    "dict": {"reply": REPLY},
    "str": REPLY,
    "list": [REPLY],
    "dataclass": Answer(REPLY),
}


def round_trip(messages: list[ChatMessage], ensure_ascii: bool) -> list[ChatMessage]:
    text = json.dumps([m.to_dict() for m in messages], ensure_ascii=ensure_ascii)
    return [ChatMessage.from_dict(d) for d in json.loads(text)]


@pytest.mark.parametrize("returned", RESULTS.values(), ids=RESULTS.keys())
def test_non_ascii_survives(run_agent, returned):
    received: list[str] = []

    def kb(query: str) -> Any:
        received.append(query)
        return returned

    gen = ScriptedChatGenerator([asst(calls=[("c1", "kb", {"query": QUERY})]), asst("ok")])
    agent = Agent(chat_generator=gen, tools=[create_tool_from_function(kb)])

    result = run_agent(agent, [user("Quanto custa a taça de romã? 🍎")])

    assert received == [QUERY]
    text = result_for(gen.calls[1]["messages"], "c1").result
    assert "não" in text
    assert "🍎" in text
    assert "\\u" not in text
    if isinstance(returned, dict):
        assert json.loads(text) == returned
    messages = result["messages"]
    assert round_trip(messages, ensure_ascii=False) == messages
    assert round_trip(messages, ensure_ascii=True) == messages
    assert [ChatMessage.from_dict(json.loads(m.to_json())) for m in messages] == messages
    assert "🍎" in messages[2].to_json()


def test_json_string_mode_keeps_non_ascii(run_agent):
    def kb(query: str) -> str:
        return REPLY

    gen = ScriptedChatGenerator([asst(calls=[("c1", "kb", {"query": QUERY})]), asst("ok")])
    agent = Agent(
        chat_generator=gen,
        tools=[create_tool_from_function(kb)],
        tool_invoker_kwargs={"convert_result_to_json_string": True},
    )

    result = run_agent(agent, [user("q")])

    assert result_for(result["messages"], "c1").result == json.dumps(REPLY, ensure_ascii=False)


def test_error_texts_keep_non_ascii(run_agent):
    def kb(query: str) -> str:
        raise ValueError(f"consulta inválida: {query} 🍎")

    gen = ScriptedChatGenerator(
        [
            asst(calls=[("c1", "kb", {"query": QUERY}), ("c2", "kb", '{"query": "romã')]),
            asst("ok"),
        ]
    )
    agent = Agent(chat_generator=gen, tools=[create_tool_from_function(kb)])

    result = run_agent(agent, [user("q")])

    failed = result_for(result["messages"], "c1")
    assert failed.error is True
    assert f"consulta inválida: {QUERY} 🍎" in failed.result
    assert QUERY in failed.result  # the arguments echoed in the error text are not escaped either
    malformed = result_for(result["messages"], "c2")
    assert malformed.error is True
    assert "romã" in malformed.result
    assert "\\u" not in failed.result + malformed.result
    assert round_trip(result["messages"], ensure_ascii=False) == result["messages"]
