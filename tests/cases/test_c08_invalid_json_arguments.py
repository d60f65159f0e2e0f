"""C08 — arguments that are not valid JSON give an error result the model can read; nothing runs."""

from __future__ import annotations

import pytest

from handrail.components.agents import Agent
from handrail.errors import ToolInvocationError
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool, create_tool_from_function
from tests.cases._helpers import asst, requested_calls, result_for, streamed_call, user

MALFORMED = [
    'query = """print(1)"""',  # Python, not JSON (the reported case)
    '{"query": "pri',  # truncated
    "{'query': 'print(1)'}",  # single quotes
    '{"query": "print(1)",}',  # trailing comma
    '{query: "print(1)"}',  # unquoted key
    '{"query": "print(1)"} {"query": "print(2)"}',  # two objects
]


def make_py() -> tuple[Tool, list[str]]:
    ran: list[str] = []

    def py(query: str) -> str:
        ran.append(query)
        return "1"

    return create_tool_from_function(py), ran


@pytest.mark.parametrize("transport", ["message", "stream"])
@pytest.mark.parametrize("raw", MALFORMED)
def test_invalid_json_arguments(run_agent, raw, transport):
    py, ran = make_py()
    first = asst(calls=[("c1", "py", raw)]) if transport == "message" else streamed_call("c1", "py", [raw])
    gen = ScriptedChatGenerator([first, asst(calls=[("c2", "py", '{"query": "print(1)"}')]), asst("1")])
    agent = Agent(chat_generator=gen, tools=[py])

    result = run_agent(agent, [user("run print(1)")])

    assert ran == ["print(1)"]  # c2 only
    assert len(gen.calls) == 3
    bad = result_for(gen.calls[1]["messages"], "c1")
    assert bad.error is True
    assert "not valid JSON" in bad.result
    assert "py" in bad.result
    good = result_for(result["messages"], "c2")
    assert good.error is False
    assert good.result == "1"
    # The malformed call stays in the history exactly as the model sent it.
    assert [c.id for c in requested_calls(result["messages"])] == ["c1", "c2"]
    assert requested_calls(result["messages"])[0].arguments == raw
    assert result["last_message"].text == "1"
    assert result["exit_reason"] == "text"
    assert result["tool_call_counts"] == {"py": 2}


def test_a_malformed_call_does_not_stop_its_siblings(run_agent):
    py, ran = make_py()
    gen = ScriptedChatGenerator(
        [asst(calls=[("c1", "py", '{"query": "pri'), ("c2", "py", {"query": "print(2)"})]), asst("1")]
    )
    agent = Agent(chat_generator=gen, tools=[py])

    result = run_agent(agent, [user("go")])

    assert ran == ["print(2)"]
    assert result_for(result["messages"], "c1").error is True
    assert result_for(result["messages"], "c2").error is False
    assert [m.tool_call_result.origin.id for m in result["messages"] if m.tool_call_result] == ["c1", "c2"]


@pytest.mark.parametrize("raw", MALFORMED[:2])
def test_invalid_json_raises_in_raise_mode_before_running(run_agent, raw):
    py, ran = make_py()
    gen = ScriptedChatGenerator([asst(calls=[("c1", "py", raw)]), asst("never reached")])
    agent = Agent(chat_generator=gen, tools=[py], raise_on_tool_invocation_failure=True)

    with pytest.raises(ToolInvocationError, match="not valid JSON") as info:
        run_agent(agent, [user("go")])

    assert info.value.tool_name == "py"
    assert info.value.tool_call_id == "c1"
    assert "c1" in str(info.value)
    assert ran == []
    assert len(gen.calls) == 1
