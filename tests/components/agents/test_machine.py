"""The sans-I/O step machine driven by hand, with no driver: it yields effects and does no I/O itself."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from handrail.components.agents._machine import CallModel, RunPlan, agent_machine
from handrail.components.tools._effects import Emit, RunCalls
from handrail.components.tools._step import ToolStepOptions
from handrail.dataclasses import ChatMessage, ChatRole, State
from handrail.tools import Tool, ToolCallId, create_tool_from_function

from .._helpers import ECHO_TOOL, FINISH_TOOL, call, calls_msg, reply, user


def make_plan(tools: list[Tool], *, exit_tools: tuple[str, ...] = (), max_steps: int = 10, **options: Any) -> RunPlan:
    return RunPlan(
        tools=list(tools),
        static_tools=list(tools),
        static_by_name={t.name: t for t in tools},
        exit_tools=frozenset(exit_tools),
        max_agent_steps=max_steps,
        step_options=ToolStepOptions(**options),
    )


def make_state(messages: list[ChatMessage], tools: list[Tool], schema: dict[str, Any] | None = None) -> State:
    state = State(schema)
    state.data["messages"] = list(messages)
    state.data["tool_call_counts"] = {t.name: 0 for t in tools}
    return state


def finish_with(machine: Generator[Any, Any, None], value: Any) -> None:
    with pytest.raises(StopIteration):
        machine.send(value)


def test_text_reply_ends_the_run() -> None:
    tools = [ECHO_TOOL]
    state = make_state([user("hi")], tools)
    machine = agent_machine(make_plan(tools), state)
    effect = next(machine)
    assert isinstance(effect, CallModel)
    assert effect.messages == [user("hi")]
    assert effect.tools == tools
    finish_with(machine, [reply("hello", usage={"total_tokens": 3})])
    assert state.data["exit_reason"] == "text"
    assert state.data["step_count"] == 1
    assert state.data["token_usage"] == {"total_tokens": 3}
    assert [m.text for m in state.data["messages"]] == ["hi", "hello"]


def test_a_tool_step_then_an_exit_tool() -> None:
    tools = [ECHO_TOOL, FINISH_TOOL]
    state = make_state([user("hi")], tools)
    machine = agent_machine(make_plan(tools, exit_tools=("finish",), max_workers=4), state)

    first = next(machine)
    assert isinstance(first, CallModel)

    run = machine.send([calls_msg(call("echo", {"text": "a"}, None), call("echo", '{"text": "b"}', "x"))])
    assert isinstance(run, RunCalls)
    assert run.max_workers == 4
    assert [inv.tool is ECHO_TOOL for inv in run.invocations] == [True, True]
    assert [inv.kwargs for inv in run.invocations] == [{"text": "a"}, {"text": "b"}]
    assert [inv.call.id for inv in run.invocations] == ["call_1", "x"]

    # the driver reports the outcomes, in call order
    second = machine.send([(True, "A"), (False, RuntimeError("nope"))])
    assert isinstance(second, CallModel)
    roles = [m.role for m in second.messages]
    assert roles == [ChatRole.USER, ChatRole.ASSISTANT, ChatRole.TOOL, ChatRole.TOOL]
    assert [c.id for c in second.messages[1].tool_calls] == ["call_1", "x"]
    ok, failed = (m.tool_call_result for m in second.messages[2:])
    assert (ok.result, ok.error, ok.origin.id) == ("A", False, "call_1")
    assert failed.error is True and "RuntimeError" in failed.result and "nope" in failed.result
    assert state.data["step_count"] == 1
    assert state.data["exit_reason"] is None

    run = machine.send([calls_msg(call("finish", {"answer": "42"}, "f"))])
    assert isinstance(run, RunCalls)
    assert run.invocations[0].kwargs == {"answer": "42"}
    finish_with(machine, [(True, "final: 42")])

    assert state.data["exit_reason"] == "finish"
    assert state.data["step_count"] == 2
    assert state.data["tool_call_counts"] == {"echo": 2, "finish": 1}
    assert state.data["messages"][-1].tool_call_result.result == "final: 42"
    assert len(state.data["messages"]) == 6


def test_invalid_calls_never_reach_the_driver() -> None:
    tools = [ECHO_TOOL]
    state = make_state([user("hi")], tools)
    machine = agent_machine(make_plan(tools), state)
    next(machine)
    effect = machine.send(
        [calls_msg(call("echo", "{bad", "1"), call("ghost", {}, "2"), call("echo", {"text": 5}, "3"))]
    )
    # nothing to run: the machine answers the model itself and asks it again
    assert isinstance(effect, CallModel)
    results = [m.tool_call_result for m in effect.messages[2:]]
    assert [r.error for r in results] == [True, True, True]
    assert [r.origin.id for r in results] == ["1", "2", "3"]
    finish_with(machine, [reply("ok")])
    assert state.data["tool_call_counts"] == {"echo": 2, "ghost": 1}


def test_only_valid_calls_are_sent_to_run() -> None:
    tools = [ECHO_TOOL]
    machine = agent_machine(make_plan(tools), make_state([user("hi")], tools))
    next(machine)
    effect = machine.send([calls_msg(call("echo", "{bad", "1"), call("echo", {"text": "ok"}, "2"))])
    assert isinstance(effect, RunCalls)
    assert [inv.call.id for inv in effect.invocations] == ["2"]


def test_state_and_call_id_are_injected_into_kwargs() -> None:
    def tool_fn(text: str, state: State, key: ToolCallId, city: str) -> str:
        return text

    tool = create_tool_from_function(tool_fn, name="t", inputs_from_state={"city": "city"})
    state = make_state([user("hi")], [tool], schema={"city": {"type": str}})
    state.set("city", "Oslo")
    machine = agent_machine(make_plan([tool]), state)
    next(machine)
    effect = machine.send([calls_msg(call("t", {"text": "a"}, "k1"))])
    assert isinstance(effect, RunCalls)
    kwargs = effect.invocations[0].kwargs
    assert kwargs["text"] == "a" and kwargs["key"] == "k1" and kwargs["city"] == "Oslo"
    assert kwargs["state"] is state


def test_streaming_options_yield_emit_effects() -> None:
    tools = [ECHO_TOOL]
    state = make_state([user("hi")], tools)
    machine = agent_machine(make_plan(tools, streaming_callback=lambda chunk: None), state)
    next(machine)
    effect = machine.send([calls_msg(call("echo", {"text": "a"}, "1"))])
    assert isinstance(effect, RunCalls)
    emitted = machine.send([(True, "a")])
    assert isinstance(emitted, Emit)
    assert emitted.chunk.tool_call_result is not None and emitted.chunk.tool_call_result.result == "a"
    final = machine.send(None)
    assert isinstance(final, Emit) and final.chunk.finish_reason == "tool_call_results"
    assert isinstance(machine.send(None), CallModel)


def test_max_agent_steps() -> None:
    tools = [ECHO_TOOL]
    state = make_state([user("hi")], tools)
    machine = agent_machine(make_plan(tools, max_steps=1), state)
    next(machine)
    machine.send([calls_msg(call("echo", {"text": "a"}, "1"))])
    finish_with(machine, [(True, "a")])
    assert state.data["exit_reason"] == "max_agent_steps"
    assert state.data["step_count"] == 1


def test_max_agent_steps_zero_yields_nothing() -> None:
    state = make_state([user("hi")], [ECHO_TOOL])
    machine = agent_machine(make_plan([ECHO_TOOL], max_steps=0), state)
    with pytest.raises(StopIteration):
        next(machine)
    assert state.data["exit_reason"] == "max_agent_steps"


def test_no_tools_one_reply() -> None:
    state = make_state([user("hi")], [])
    machine = agent_machine(make_plan([]), state)
    effect = next(machine)
    assert isinstance(effect, CallModel) and effect.tools is None
    finish_with(machine, [calls_msg(call("echo", {"text": "a"}, "1"))])
    assert state.data["exit_reason"] == "text"
    assert state.data["step_count"] == 1


def test_empty_reply_asks_again() -> None:
    state = make_state([user("hi")], [ECHO_TOOL])
    machine = agent_machine(make_plan([ECHO_TOOL]), state)
    next(machine)
    effect = machine.send([ChatMessage.from_assistant("")])
    assert isinstance(effect, CallModel)
    assert state.data["step_count"] == 1
    assert state.data["exit_reason"] is None
    finish_with(machine, [reply("ok")])
    assert state.data["step_count"] == 2


def test_model_input_is_a_copy() -> None:
    state = make_state([user("hi")], [ECHO_TOOL])
    machine = agent_machine(make_plan([ECHO_TOOL]), state)
    effect = next(machine)
    effect.messages.append(user("sneaky"))
    finish_with(machine, [reply("ok")])
    assert [m.text for m in state.data["messages"]] == ["hi", "ok"]
