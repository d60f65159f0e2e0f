from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool, create_tool_from_function
from tests.components.agents.hitl_helpers import ScriptedStrategy, echo

RAN: list[tuple[str, Any]] = []


def make_tool(name: str) -> Tool:
    def fn(x: int) -> dict[str, int]:
        RAN.append((name, x))
        return {"echoed": x}

    return create_tool_from_function(fn, name=name, description=f"The {name} tool.")


def agent_for(replies: list[ChatMessage], strategies: dict[Any, Any], tools: list[Tool] | None = None) -> Agent:
    tools = tools or [make_tool("foo"), make_tool("bar"), make_tool("baz")]
    return Agent(chat_generator=ScriptedChatGenerator(replies), tools=tools, confirmation_strategies=strategies)


def calls(*items: tuple[str, str, dict[str, Any]]) -> ChatMessage:
    return ChatMessage.from_assistant(tool_calls=[ToolCall(n, a, i) for i, n, a in items])


def shape(messages: list[ChatMessage]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for m in messages:
        if m.tool_calls:
            out.append(("assistant", [(c.id, c.tool_name, c.arguments) for c in m.tool_calls]))
        elif m.tool_call_result is not None:
            r = m.tool_call_result
            out.append(("tool", (r.origin.id, r.result, r.error)))
        else:
            out.append((m.role.value, m.text))
    return out


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_reference_transcript_mixed_decisions(mode: str) -> None:
    strategy = ScriptedStrategy({"foo": ("reject", None), "bar": ({"x": 99}, None), "baz": ({"x": 77}, None)})
    agent = agent_for(
        [calls(("c1", "foo", {"x": 1}), ("c2", "bar", {"x": 2}), ("c3", "baz", {"x": 3})),
         ChatMessage.from_assistant("done")],
        {("foo", "bar", "baz"): strategy},
    )  # fmt: skip
    run = agent.run if mode == "sync" else (lambda m: asyncio.run(agent.run_async(m)))
    result = run([ChatMessage.from_user("go")])
    assert shape(result["messages"]) == [
        ("user", "go"),
        ("assistant", [("c1", "foo", {"x": 1})]),
        ("tool", ("c1", "Tool execution for 'foo' was rejected by the user.", True)),
        ("user", "The parameters for tool 'bar' were updated by the user to:\n{\"x\": 99}"),
        ("user", "The parameters for tool 'baz' were updated by the user to:\n{\"x\": 77}"),
        ("assistant", [("c2", "bar", {"x": 99}), ("c3", "baz", {"x": 77})]),
        ("tool", ("c2", '{"echoed": 99}', False)),
        ("tool", ("c3", '{"echoed": 77}', False)),
        ("assistant", "done"),
    ]
    assert result["tool_call_counts"] == {"foo": 0, "bar": 1, "baz": 1}
    assert sorted(RAN) == [("bar", 99), ("baz", 77)]
    # the model's second input is exactly that history
    assert shape(agent.chat_generator.calls[1]["messages"]) == shape(result["messages"][:-1])


def test_reject_feedback_reaches_the_model_and_the_tool_does_not_run() -> None:
    agent = agent_for([calls(("c1", "foo", {"x": 10})), ChatMessage.from_assistant("ok")],
                      {"foo": ScriptedStrategy({"foo": ("reject", "too much")})})  # fmt: skip
    result = agent.run([ChatMessage.from_user("go")])
    error = result["messages"][2].tool_call_result
    assert error is not None and error.error
    assert error.result == "Tool execution for 'foo' was rejected by the user. With user feedback: too much"
    assert RAN == []
    assert result["tool_call_counts"]["foo"] == 0


def test_lookup_exact_then_tuple_then_star() -> None:
    exact, group, star = ScriptedStrategy(), ScriptedStrategy(), ScriptedStrategy()
    agent = agent_for([calls(("c1", "foo", {"x": 1}), ("c2", "bar", {"x": 2}), ("c3", "baz", {"x": 3})),
                       ChatMessage.from_assistant("ok")],
                      {"*": star, ("bar", "foo"): group, "foo": exact})  # fmt: skip
    agent.run([ChatMessage.from_user("go")])
    assert [a["tool_name"] for a in exact.asked] == ["foo"]
    assert [a["tool_name"] for a in group.asked] == ["bar"]
    assert [a["tool_name"] for a in star.asked] == ["baz"]
    assert sorted(RAN) == [("bar", 2), ("baz", 3), ("foo", 1)]


def test_tools_without_a_strategy_run_without_asking() -> None:
    strategy = ScriptedStrategy()
    agent = agent_for([calls(("c1", "foo", {"x": 1}), ("c2", "bar", {"x": 2})), ChatMessage.from_assistant("ok")],
                      {"bar": strategy})  # fmt: skip
    agent.run([ChatMessage.from_user("go")])
    assert [a["tool_call_id"] for a in strategy.asked] == ["c2"]
    assert sorted(RAN) == [("bar", 2), ("foo", 1)]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_context_is_passed_by_identity(mode: str) -> None:
    strategy = ScriptedStrategy()
    context = {"lock": threading.Lock(), "queue": asyncio.Queue if mode == "async" else object()}
    agent = agent_for([calls(("c1", "foo", {"x": 1})), ChatMessage.from_assistant("ok")], {"foo": strategy})
    if mode == "sync":
        agent.run([ChatMessage.from_user("go")], confirmation_strategy_context=context)
    else:
        asyncio.run(agent.run_async([ChatMessage.from_user("go")], confirmation_strategy_context=context))
    assert strategy.asked[0]["context"] is context


def test_model_arguments_are_validated_before_anyone_is_asked() -> None:
    strategy = ScriptedStrategy()
    agent = agent_for([calls(("c1", "foo", {"x": "not a number"})), ChatMessage.from_assistant("ok")],
                      {"foo": strategy})  # fmt: skip
    result = agent.run([ChatMessage.from_user("go")])
    assert strategy.asked == []
    assert result["messages"][2].tool_call_result.error


def test_an_edit_violating_the_schema_raises_naming_the_call_before_anything_runs() -> None:
    agent = agent_for([calls(("c1", "foo", {"x": 1}), ("c2", "bar", {"x": 2})), ChatMessage.from_assistant("ok")],
                      {"bar": ScriptedStrategy({"bar": ({"x": "lots"}, None)})})  # fmt: skip
    with pytest.raises(ConfigurationError, match=r"'c2' to 'bar'.*refused"):
        agent.run([ChatMessage.from_user("go")])
    assert RAN == []


def test_a_decision_for_another_call_is_refused() -> None:
    class Wrong:
        def run(self, **kw: Any) -> ToolExecutionDecision:
            return ToolExecutionDecision(kw["tool_name"], True, "someone-else")

    agent = agent_for([calls(("c1", "foo", {"x": 1})), ChatMessage.from_assistant("ok")], {"foo": Wrong()})
    with pytest.raises(ConfigurationError, match=r"'someone-else'.*'c1'"):
        agent.run([ChatMessage.from_user("go")])
    assert RAN == []


def test_a_strategy_returning_something_else_is_refused() -> None:
    class Bad:
        def run(self, **kw: Any) -> str:
            return "yes"

    agent = agent_for([calls(("c1", "foo", {"x": 1})), ChatMessage.from_assistant("ok")], {"foo": Bad()})
    with pytest.raises(ConfigurationTypeError, match="ToolExecutionDecision"):
        agent.run([ChatMessage.from_user("go")])


@pytest.mark.parametrize(
    "strategies",
    [{"foo": object()}, {("foo", 3): ScriptedStrategy()}, {(): ScriptedStrategy()}, ["foo"]],
)
def test_bad_strategy_tables_are_refused_at_construction(strategies: Any) -> None:
    with pytest.raises((ConfigurationError, ConfigurationTypeError)):
        agent_for([], strategies)


def test_state_injected_values_are_shown_and_cannot_be_edited() -> None:
    def greet(name: str, user: str) -> str:
        return f"{name} greets {user}"

    tool = create_tool_from_function(greet, inputs_from_state={"user": "user"})
    strategy = ScriptedStrategy()
    script = [calls(("c1", "greet", {"name": "bot"})), ChatMessage.from_assistant("k")]
    agent = Agent(
        chat_generator=ScriptedChatGenerator(script),
        tools=[tool], state_schema={"user": {"type": str}}, confirmation_strategies={"greet": strategy},
    )  # fmt: skip
    result = agent.run([ChatMessage.from_user("hi")], user="ana")
    assert strategy.asked[0]["tool_params"] == {"name": "bot", "user": "ana"}
    assert result["messages"][2].tool_call_result.result == "bot greets ana"
    editing = Agent(
        chat_generator=ScriptedChatGenerator([calls(("c1", "greet", {"name": "bot"}))]), tools=[tool],
        state_schema={"user": {"type": str}},
        confirmation_strategies={"greet": ScriptedStrategy({"greet": ({"name": "bot", "user": "eve"}, None)})},
    )  # fmt: skip
    with pytest.raises(ConfigurationError, match="State and cannot be edited"):
        editing.run([ChatMessage.from_user("hi")], user="ana")


def test_agent_with_strategies_round_trips_with_tuple_keys() -> None:
    tool = create_tool_from_function(echo)
    agent = Agent(chat_generator=ScriptedChatGenerator([]), tools=[tool],
                  confirmation_strategies={("echo", "other"): ScriptedStrategy({"echo": ["reject", None]}),
                                           "*": ScriptedStrategy()})  # fmt: skip
    data = agent.to_dict()
    assert set(data["init_parameters"]["confirmation_strategies"]) == {'["echo", "other"]', "*"}
    text = json.dumps(data)
    again = Agent.from_dict(json.loads(text))
    assert again.to_dict() == data
    assert set(again.confirmation_strategies) == {("echo", "other"), "*"}  # type: ignore[arg-type]


def test_concurrent_runs_keep_their_own_decisions() -> None:
    strategy = ScriptedStrategy({"foo": ("reject", None)})
    tools = [make_tool("foo"), make_tool("bar")]

    class Gen:
        def run(self, messages: list[ChatMessage], tools: Any = None, **_: Any) -> dict[str, Any]:
            if messages[-1].tool_call_result is None:
                return {"replies": [calls(("c1", "foo", {"x": 1}), ("c2", "bar", {"x": 2}))]}
            return {"replies": [ChatMessage.from_assistant("end")]}

    agent = Agent(chat_generator=Gen(), tools=tools, confirmation_strategies={"*": strategy})
    results: list[dict[str, Any]] = []
    threads = [threading.Thread(target=lambda: results.append(agent.run([ChatMessage.from_user("go")])))
               for _ in range(6)]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 6
    for r in results:
        assert r["tool_call_counts"] == {"foo": 0, "bar": 1}
        assert [m.role.value for m in r["messages"]] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]


def test_a_strategy_key_that_matches_no_tool_warns() -> None:
    agent = agent_for([ChatMessage.from_assistant("ok")], {"delete-all": ScriptedStrategy()})
    with pytest.warns(UserWarning, match="WITHOUT approval"):
        agent.run([ChatMessage.from_user("go")])


def test_approval_of_a_state_reader_sees_the_value_its_writer_just_stored() -> None:
    # argument-bound approval: a call reading a State key is decided after the call writing that key ran,
    # so the person approves the effective arguments, not a stale value
    def write_total() -> dict[str, int]:
        return {"total": 42}

    def report(total: int) -> str:
        return f"total is {total}"

    writer = create_tool_from_function(write_total, outputs_to_state={"total": {"source": "total"}})
    reader = create_tool_from_function(report, inputs_from_state={"total": "total"})
    strategy = ScriptedStrategy()
    script = [calls(("c1", "report", {}), ("c2", "write_total", {})), ChatMessage.from_assistant("ok")]
    agent = Agent(chat_generator=ScriptedChatGenerator(script), tools=[writer, reader],
                  state_schema={"total": {"type": int}}, confirmation_strategies={"report": strategy})  # fmt: skip
    result = agent.run([ChatMessage.from_user("go")], total=1)
    assert strategy.asked[0]["tool_params"] == {"total": 42}
    assert result["messages"][2].tool_call_result.result == "total is 42"
