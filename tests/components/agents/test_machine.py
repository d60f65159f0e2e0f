"""The run as a state machine, driven by hand through the public seam (``Agent.start``), with no driver."""

from __future__ import annotations

from typing import Any

import pytest

from handrail import Agent
from handrail.components.agents.run import AgentRun
from handrail.components.effects import CallModel, Emit, RunTools, ToolOutcome
from handrail.dataclasses import ChatMessage, ChatRole, State
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool, ToolCallId, create_tool_from_function

from .._helpers import ECHO_TOOL, FINISH_TOOL, call, calls_msg, reply, user


def start(
    tools: list[Tool], messages: list[ChatMessage], *, exit_tools: tuple[str, ...] = (), max_steps: int = 10,
    state_schema: dict[str, Any] | None = None, **run_kwargs: Any,
) -> AgentRun:  # fmt: skip
    agent = Agent(
        chat_generator=ScriptedChatGenerator([]),
        tools=list(tools),
        exit_conditions=["text", *exit_tools],
        max_agent_steps=max_steps,
        state_schema=state_schema,
    )
    return agent.start(messages, **run_kwargs)


def data(run: AgentRun) -> dict[str, Any]:
    return run.context.state.data


def finish_with(run: AgentRun, value: Any) -> None:
    assert run.send(value) is None


def ok(effect: Any, *values: Any) -> list[ToolOutcome]:
    """The outcomes of ``effect``'s calls, one value each, in order."""
    assert isinstance(effect, RunTools)
    return [ToolOutcome(c.call_id, True, v) for c, v in zip(effect.calls, values, strict=True)]


def test_text_reply_ends_the_run() -> None:
    run = start([ECHO_TOOL], [user("hi")])
    effect = run.send(None)
    assert isinstance(effect, CallModel)
    assert effect.messages == [user("hi")]
    assert effect.tools == ("echo",)
    finish_with(run, [reply("hello", usage={"total_tokens": 3})])
    result = run.result
    assert result["exit_reason"] == "text"
    assert result["step_count"] == 1
    assert result["token_usage"] == {"total_tokens": 3}
    assert [m.text for m in result["messages"]] == ["hi", "hello"]


def test_a_tool_step_then_an_exit_tool() -> None:
    agent = Agent(
        chat_generator=ScriptedChatGenerator([]), tools=[ECHO_TOOL, FINISH_TOOL], exit_conditions=["finish"],
        tool_concurrency_limit=4,
    )  # fmt: skip
    run = agent.start([user("hi")])

    first = run.send(None)
    assert isinstance(first, CallModel)

    effect = run.send([calls_msg(call("echo", {"text": "a"}, None), call("echo", '{"text": "b"}', "x"))])
    assert isinstance(effect, RunTools)
    assert effect.max_workers == 4
    assert [(c.call_id, c.tool_name, c.arguments, c.key) for c in effect.calls] == [
        ("call_1", "echo", {"text": "a"}, "call_1"),
        ("x", "echo", {"text": "b"}, "x"),
    ]

    # the driver reports the outcomes, in call order
    second = run.send([ToolOutcome("call_1", True, "A"), ToolOutcome("x", False, error="RuntimeError: nope")])
    assert isinstance(second, CallModel)
    roles = [m.role for m in second.messages]
    assert roles == [ChatRole.USER, ChatRole.ASSISTANT, ChatRole.TOOL, ChatRole.TOOL]
    assert [c.id for c in second.messages[1].tool_calls] == ["call_1", "x"]
    done, failed = (m.tool_call_result for m in second.messages[2:])
    assert (done.result, done.error, done.origin.id) == ("A", False, "call_1")
    assert failed.error is True and "RuntimeError: nope" in failed.result
    assert data(run)["step_count"] == 1
    assert data(run)["exit_reason"] is None

    effect = run.send([calls_msg(call("finish", {"answer": "42"}, "f"))])
    assert isinstance(effect, RunTools)
    assert effect.calls[0].arguments == {"answer": "42"}
    finish_with(run, ok(effect, "final: 42"))

    result = run.result
    assert result["exit_reason"] == "finish"
    assert result["step_count"] == 2
    assert result["tool_call_counts"] == {"echo": 2, "finish": 1}
    assert result["messages"][-1].tool_call_result.result == "final: 42"
    assert len(result["messages"]) == 6


def test_invalid_calls_never_reach_the_driver() -> None:
    run = start([ECHO_TOOL], [user("hi")])
    run.send(None)
    effect = run.send([calls_msg(call("echo", "{bad", "1"), call("ghost", {}, "2"), call("echo", {"text": 5}, "3"))])
    # nothing to run: the machine answers the model itself and asks it again
    assert isinstance(effect, CallModel)
    results = [m.tool_call_result for m in effect.messages[2:]]
    assert [r.error for r in results] == [True, True, True]
    assert [r.origin.id for r in results] == ["1", "2", "3"]
    finish_with(run, [reply("ok")])
    assert run.result["tool_call_counts"] == {"echo": 2, "ghost": 1}


def test_only_valid_calls_are_sent_to_run() -> None:
    run = start([ECHO_TOOL], [user("hi")])
    run.send(None)
    effect = run.send([calls_msg(call("echo", "{bad", "1"), call("echo", {"text": "ok"}, "2"))])
    assert isinstance(effect, RunTools)
    assert [c.call_id for c in effect.calls] == ["2"]


def test_state_and_call_id_are_injected_by_the_context_not_the_effect() -> None:
    seen: dict[str, Any] = {}

    def tool_fn(text: str, state: State, key: ToolCallId, city: str) -> str:
        seen.update(text=text, state=state, key=key, city=city)
        return text

    tool = create_tool_from_function(tool_fn, name="t", inputs_from_state={"city": "city"})
    run = start([tool], [user("hi")], state_schema={"city": {"type": str}}, city="Oslo")
    run.send(None)
    effect = run.send([calls_msg(call("t", {"text": "a"}, "k1"))])
    assert isinstance(effect, RunTools)
    assert effect.calls[0].arguments == {"text": "a"}  # data only: no State, no key, no injected value
    outcomes = run.context.run_tools(effect)
    assert outcomes == [ToolOutcome("k1", True, "a")]
    assert seen["key"] == "k1" and seen["city"] == "Oslo" and seen["state"] is run.context.state


def test_streaming_options_yield_emit_effects() -> None:
    run = start([ECHO_TOOL], [user("hi")], streaming_callback=lambda chunk: None)
    run.send(None)
    effect = run.send([calls_msg(call("echo", {"text": "a"}, "1"))])
    assert isinstance(effect, RunTools)
    emitted = run.send(ok(effect, "a"))
    assert isinstance(emitted, Emit)
    assert emitted.chunk.tool_call_result is not None and emitted.chunk.tool_call_result.result == "a"
    final = run.send(None)
    assert isinstance(final, Emit) and final.chunk.finish_reason == "tool_call_results"
    assert isinstance(run.send(None), CallModel)


def test_max_agent_steps() -> None:
    run = start([ECHO_TOOL], [user("hi")], max_steps=1)
    run.send(None)
    effect = run.send([calls_msg(call("echo", {"text": "a"}, "1"))])
    finish_with(run, ok(effect, "a"))
    assert run.result["exit_reason"] == "max_agent_steps"
    assert run.result["step_count"] == 1


def test_max_agent_steps_zero_yields_nothing() -> None:
    run = start([ECHO_TOOL], [user("hi")], max_steps=0)
    assert run.send(None) is None
    assert run.result["exit_reason"] == "max_agent_steps"


def test_no_tools_one_reply() -> None:
    run = start([], [user("hi")])
    effect = run.send(None)
    assert isinstance(effect, CallModel) and effect.tools == ()
    finish_with(run, [calls_msg(call("echo", {"text": "a"}, "1"))])
    assert run.result["exit_reason"] == "text"
    assert run.result["step_count"] == 1


def test_empty_reply_asks_again() -> None:
    run = start([ECHO_TOOL], [user("hi")])
    run.send(None)
    effect = run.send([ChatMessage.from_assistant("")])
    assert isinstance(effect, CallModel)
    assert data(run)["step_count"] == 1
    assert data(run)["exit_reason"] is None
    finish_with(run, [reply("ok")])
    assert run.result["step_count"] == 2


def test_model_input_is_a_copy() -> None:
    run = start([ECHO_TOOL], [user("hi")])
    effect = run.send(None)
    assert isinstance(effect, CallModel)
    effect.messages.append(user("sneaky"))
    finish_with(run, [reply("ok")])
    assert [m.text for m in run.result["messages"]] == ["hi", "ok"]


def test_the_result_is_refused_before_the_run_ended() -> None:
    from handrail.errors import RunError

    run = start([ECHO_TOOL], [user("hi")])
    run.send(None)
    with pytest.raises(RunError, match="has not ended"):
        _ = run.result
