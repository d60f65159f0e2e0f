"""Regressions for bad input found by a new-user review: none of these may crash or hang a run."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.components.tools import ToolInvoker
from handrail.core.serialization import serialize_callable
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.errors import (
    ConfigurationError,
    ConfigurationTypeError,
    SerializationError,
    StateError,
    StringConversionError,
)
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool

NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}


def one_call(tool: Tool, arguments: Any = None) -> list[ChatMessage]:
    call = ToolCall(tool_name=tool.name, arguments={} if arguments is None else arguments, id="1")
    return [ChatMessage.from_assistant(tool_calls=[call])]


def stop_iteration() -> str:
    return next(iter([]))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_stop_iteration_in_a_sync_tool_is_an_error_result_not_a_hang(mode: str) -> None:
    tool = Tool(name="s", description="", parameters=NO_ARGS, function=stop_iteration)
    invoker = ToolInvoker(tools=[tool], raise_on_failure=False)
    out = invoker.run(one_call(tool)) if mode == "sync" else asyncio.run(invoker.run_async(one_call(tool)))
    result = out["tool_messages"][0].tool_call_result
    assert result.error and "StopIteration" in result.result


def test_stop_iteration_in_a_sync_only_generator_under_run_async_raises() -> None:
    class Gen:
        def run(self, messages: list[ChatMessage], tools: Any = None) -> dict[str, Any]:
            return {"replies": [next(iter([]))]}

    with pytest.raises(RuntimeError, match="StopIteration"):
        asyncio.run(Agent(chat_generator=Gen()).run_async([ChatMessage.from_user("x")]))


class BrokenStr:
    def __str__(self) -> str:
        raise RuntimeError("no str")


class BrokenException(Exception):
    def __str__(self) -> str:
        raise ZeroDivisionError


def raise_broken() -> None:
    raise BrokenException


@pytest.mark.parametrize("function", [lambda: BrokenStr(), lambda: 10**5000, raise_broken])
def test_results_that_cannot_become_text_are_error_results(function: Any) -> None:
    tool = Tool(name="t", description="", parameters=NO_ARGS, function=function)
    sibling = Tool(name="ok", description="", parameters=NO_ARGS, function=lambda: "fine")
    calls = [ToolCall("t", {}, "1"), ToolCall("ok", {}, "2")]
    gen = ScriptedChatGenerator([ChatMessage.from_assistant(tool_calls=calls), ChatMessage.from_assistant("done")])
    result = Agent(chat_generator=gen, tools=[tool, sibling]).run([ChatMessage.from_user("x")])
    first, second = (m.tool_call_result for m in result["messages"][2:4])
    assert first.error
    assert second.result == "fine" and not second.error
    assert result["exit_reason"] == "text"


def test_deeply_nested_argument_json_is_an_error_result() -> None:
    tool = Tool(name="d", description="", parameters={"type": "object"}, function=lambda **kw: "ran")
    deep = '{"d": ' + "[" * 5000 + "]" * 5000 + "}"
    out = ToolInvoker(tools=[tool], raise_on_failure=False).run(one_call(tool, deep))
    result = out["tool_messages"][0].tool_call_result
    assert result.error and "not valid JSON" in result.result
    assert len(result.result) < 1000  # the payload is not echoed back whole


@pytest.mark.parametrize(
    ("ref", "fragment"),
    [("#/$defs/nope", "points at nothing"), ("http://example.com/s.json", "not a local reference")],
)
def test_unresolvable_refs_are_refused_at_construction(ref: str, fragment: str) -> None:
    with pytest.raises(ConfigurationError, match=fragment):
        Tool(name="f", description="", parameters={"type": "object", "properties": {"x": {"$ref": ref}}},
             function=lambda x: x)  # fmt: skip


def test_local_refs_and_anchors_are_accepted() -> None:
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/n"}, "y": {"$ref": "#num"}},
              "$defs": {"n": {"type": "integer"}, "m": {"$anchor": "num", "type": "number"}}}  # fmt: skip
    tool = Tool(name="f", description="", parameters=schema, function=lambda x, y: x)
    assert tool.arguments_error({"x": 1, "y": 2.5}) is None
    assert tool.arguments_error({"x": "a", "y": 2}) is not None


def test_non_object_schemas_and_bad_names_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="type 'object'"):
        Tool(name="f", description="", parameters={"type": "string"}, function=lambda: 1)
    for name, message in (("  ", "must not be empty or blank"), ("my\ntool", "U\\+000A")):
        with pytest.raises(ConfigurationError, match=message):
            Tool(name=name, description="", parameters=NO_ARGS, function=lambda: 1)


def test_malformed_assistant_messages_are_refused() -> None:
    with pytest.raises(ConfigurationTypeError, match="not a ToolCall"):
        ChatMessage.from_assistant(tool_calls=[{"tool_name": "f", "arguments": {}}])  # type: ignore[list-item]
    with pytest.raises(ConfigurationTypeError, match="list of ToolCall"):
        ChatMessage.from_assistant(tool_calls={"a": 1})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationTypeError, match="origin"):
        ChatMessage.from_tool("x", None)  # type: ignore[arg-type]


def test_outputs_to_state_keys_must_exist_in_the_schema() -> None:
    tool = Tool(name="w", description="", parameters=NO_ARGS, function=lambda: {"a": 1},
                outputs_to_state={"nokey": {"source": "a"}})  # fmt: skip
    with pytest.raises(StateError, match="nokey"):
        Agent(chat_generator=ScriptedChatGenerator([]), tools=[tool])
    gen = ScriptedChatGenerator([ChatMessage.from_assistant("never")])
    with pytest.raises(StateError, match="nokey"):
        Agent(chat_generator=gen).run([ChatMessage.from_user("x")], tools=[tool])
    assert gen.calls == []


class Holder:
    def method(self, x: str) -> str:
        return x


def test_bound_methods_are_refused_at_to_dict() -> None:
    with pytest.raises(SerializationError, match="bound method"):
        serialize_callable(Holder().method)


@pytest.mark.parametrize(
    ("cls", "data"),
    [
        (Agent, {}),
        (Agent, {"init_parameters": {}}),
        (Agent, None),
        (ToolInvoker, {}),
        (ScriptedChatGenerator, {"init_parameters": {"nonsense": 1}}),
    ],
)
def test_from_dict_of_garbage_raises_serialization_error(cls: Any, data: Any) -> None:
    with pytest.raises(SerializationError):
        cls.from_dict(data)


def test_wrong_types_are_caught_at_construction_or_run_start() -> None:
    gen = ScriptedChatGenerator([ChatMessage.from_assistant("x")])
    with pytest.raises(ConfigurationTypeError, match="system_prompt"):
        Agent(chat_generator=gen, system_prompt=5)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationTypeError, match="raise_on_tool_invocation_failure"):
        Agent(chat_generator=gen, raise_on_tool_invocation_failure="no")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationTypeError, match="generation_kwargs"):
        Agent(chat_generator=gen).run([ChatMessage.from_user("x")], generation_kwargs=5)  # type: ignore[arg-type]

    class AsyncRun:
        async def run(self, messages: list[ChatMessage]) -> dict[str, Any]:
            return {}

    with pytest.raises(ConfigurationTypeError, match="coroutine"):
        Agent(chat_generator=AsyncRun())


def test_a_str_subclass_result_is_kept_as_text() -> None:
    class Name(str):
        pass

    tool = Tool(name="n", description="", parameters=NO_ARGS, function=lambda: Name("hi"))
    out = ToolInvoker(tools=[tool]).run(one_call(tool))
    assert out["tool_messages"][0].tool_call_result.result == "hi"


def test_non_finite_results_are_not_sent_as_invalid_json() -> None:
    tool = Tool(name="n", description="", parameters=NO_ARGS, function=lambda: {"v": float("nan")})
    text = ToolInvoker(tools=[tool]).run(one_call(tool))["tool_messages"][0].tool_call_result.result
    assert "NaN" not in text or text.startswith("{'")  # str() fallback, never JSON with NaN
    with pytest.raises(ValueError):
        json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))


def test_many_repeated_ids_are_repaired_quickly_and_uniquely() -> None:
    from handrail.components.tools._step import repair_calls

    calls = [ToolCall("t", {}, "same") for _ in range(3000)]
    fixed = repair_calls(calls, set())
    assert len({c.id for c in fixed}) == 3000
    assert fixed[0].id == "same" and fixed[1].id == "same#2" and fixed[-1].id == "same#3000"


@pytest.mark.parametrize("odd", ["c1\ufe0f", "\u3164", "c1\u034f", "\u2800", "c\u0301", "città"])
def test_a_call_id_outside_printable_ascii_is_repaired_like_a_missing_one(odd: str) -> None:
    from handrail.components.tools._step import repair_calls

    changed = ToolCall(tool_name="b", arguments={}, id="x")
    changed.id = odd  # a ToolCall changed after it was built (a hook, a custom generator)
    fixed = repair_calls([ToolCall(tool_name="a", arguments={}, id="c1"), changed], set())
    assert [c.id for c in fixed] == ["c1", "call_2"]


def test_raise_mode_reports_a_failing_tool() -> None:
    tool = Tool(name="t", description="", parameters=NO_ARGS, function=lambda: BrokenStr())
    with pytest.raises(StringConversionError, match="BrokenStr"):
        ToolInvoker(tools=[tool]).run(one_call(tool))


def test_a_generated_id_never_takes_an_id_the_model_gave_later_in_the_step() -> None:
    from handrail.components.tools._step import repair_calls

    calls = [ToolCall(tool_name="a", arguments={}, id=None), ToolCall(tool_name="b", arguments={}, id="call_1")]
    fixed = repair_calls(calls, set())
    assert [c.id for c in fixed] == ["call_1#2", "call_1"]
