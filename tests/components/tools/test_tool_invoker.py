"""ToolInvoker: construction, execution, errors, State, result text, streaming, serialization."""

from __future__ import annotations

import asyncio
import copy
import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

from handrail.components.tools import ToolInvoker
from handrail.dataclasses import ChatMessage, ChatRole, State, StreamingChunk
from handrail.errors import (
    ConfigurationTypeError,
    HandrailError,
    StringConversionError,
    ToolInvocationError,
    ToolNotFoundException,
    ToolOutputMergeError,
)
from handrail.tools import Tool, ToolCallId, Toolset, create_tool_from_function

from .._helpers import (
    ADD_TOOL,
    BROKEN_TOOL,
    ECHO_TOOL,
    WEATHER_TOOL,
    AsyncProbe,
    Point,
    Report,
    ThreadProbe,
    call,
    calls_msg,
    collect_chunk,
    echo,
    make_tool,
    upper,
    user,
    warm_echo_tool,
)


def results(out: dict[str, Any]) -> list[str]:
    return [m.tool_call_result.result for m in out["tool_messages"]]


def counting(name: str, function: Callable[..., Any], ran: list[Any], **kwargs: Any) -> Tool:
    """A tool named ``name`` that records each call's kwargs in ``ran``."""
    base = create_tool_from_function(function, name=name, **kwargs)

    def wrapper(**kw: Any) -> Any:
        ran.append(kw)
        return function(**kw)

    return Tool(
        name=name,
        description=base.description,
        parameters=base.parameters,
        function=wrapper,
        inputs_from_state=base.inputs_from_state,
        outputs_to_state=base.outputs_to_state,
        outputs_to_string=base.outputs_to_string,
    )


# --------------------------------------------------------------------------- construction


class TestConstruction:
    def test_defaults(self) -> None:
        inv = ToolInvoker([ECHO_TOOL])
        assert inv.raise_on_failure is True
        assert inv.convert_result_to_json_string is False
        assert inv.streaming_callback is None
        assert inv.enable_streaming_callback_passthrough is False
        assert inv.max_workers == 8

    def test_passthrough_and_max_workers_are_keyword_only(self) -> None:
        with pytest.raises(TypeError):
            ToolInvoker([ECHO_TOOL], True, False, None, True)  # type: ignore[misc]

    @pytest.mark.parametrize("tools", [[], Toolset([])])
    def test_no_tools_is_a_value_error(self, tools: Any) -> None:
        with pytest.raises(ValueError, match="at least one tool"):
            ToolInvoker(tools)

    def test_duplicate_names_are_a_value_error(self) -> None:
        with pytest.raises(ValueError, match="Duplicate"):
            ToolInvoker([ECHO_TOOL, make_tool("echo", echo)])

    @pytest.mark.parametrize("bad", [0, -1, 1.5, True, "4"])
    def test_bad_max_workers(self, bad: Any) -> None:
        with pytest.raises(ValueError, match="max_workers"):
            ToolInvoker([ECHO_TOOL], max_workers=bad)

    @pytest.mark.parametrize(
        "flag", ["raise_on_failure", "convert_result_to_json_string", "enable_streaming_callback_passthrough"]
    )
    @pytest.mark.parametrize("bad", ["no", 0, None])
    def test_flags_must_be_bools(self, flag: str, bad: Any) -> None:
        with pytest.raises(ConfigurationTypeError, match=f"{flag} must be a bool, got {bad!r}"):
            ToolInvoker([ECHO_TOOL], **{flag: bad})

    def test_warm_up_is_idempotent_and_reaches_every_tool(self) -> None:
        tool = warm_echo_tool()
        inv = ToolInvoker([Toolset([tool])])
        inv.warm_up()
        inv.warm_up()
        assert tool.warm_ups >= 1

    def test_run_warms_the_tools_up_automatically(self) -> None:
        tool = warm_echo_tool()
        ToolInvoker([tool]).run([calls_msg(call("echo", {"text": "a"}, "1"))])
        assert tool.warm_ups == 1

    def test_accepts_a_toolset(self) -> None:
        out = ToolInvoker(Toolset([ECHO_TOOL])).run([calls_msg(call("echo", {"text": "hi"}, "1"))])
        assert results(out) == ["hi"]


# --------------------------------------------------------------------------- running


class TestRun:
    def test_result_shape_and_origin(self) -> None:
        state = State()
        tc = call("echo", {"text": "hi"}, "c1")
        out = ToolInvoker([ECHO_TOOL]).run([calls_msg(tc)], state=state)
        assert set(out) == {"tool_messages", "state"}
        assert out["state"] is state
        [msg] = out["tool_messages"]
        assert msg.role is ChatRole.TOOL
        assert msg.tool_call_result.origin == tc
        assert msg.tool_call_result.error is False
        assert msg.tool_call_result.result == "hi"

    def test_state_none_gives_a_fresh_state(self) -> None:
        out = ToolInvoker([ECHO_TOOL]).run([calls_msg(call("echo", {"text": "x"}, "1"))])
        assert isinstance(out["state"], State)

    def test_messages_without_tool_calls(self) -> None:
        inv = ToolInvoker([ECHO_TOOL])
        assert inv.run([])["tool_messages"] == []
        assert inv.run([user("hi"), ChatMessage.from_assistant("no calls")])["tool_messages"] == []

    def test_calls_of_every_message_run_in_order(self) -> None:
        msgs = [
            user("ignored"),
            calls_msg(call("echo", {"text": "a"}, "1"), call("echo", {"text": "b"}, "2")),
            calls_msg(call("echo", {"text": "c"}, "3")),
        ]
        out = ToolInvoker([ECHO_TOOL]).run(msgs)
        assert results(out) == ["a", "b", "c"]
        assert [m.tool_call_result.origin.id for m in out["tool_messages"]] == ["1", "2", "3"]

    def test_zero_argument_tool_with_empty_arguments(self) -> None:
        def hello() -> str:
            return "Hello, world!"

        inv = ToolInvoker([create_tool_from_function(hello)])
        out = inv.run([calls_msg(call("hello", {}, "1"), call("hello", "", "2"), call("hello", "  ", "3"))])
        assert results(out) == ["Hello, world!"] * 3

    def test_string_arguments_are_parsed(self) -> None:
        out = ToolInvoker([ADD_TOOL]).run([calls_msg(call("add", '{"a": 2, "b": 3}', "1"))])
        assert results(out) == ["5"]

    def test_run_time_tools_override(self) -> None:
        inv = ToolInvoker([ECHO_TOOL])
        out = inv.run([calls_msg(call("add", {"a": 1}, "1"))], tools=[ADD_TOOL])
        assert results(out) == ["2"]

    def test_run_time_tools_replace_init_tools(self) -> None:
        inv = ToolInvoker([ECHO_TOOL], raise_on_failure=False)
        out = inv.run([calls_msg(call("echo", {"text": "x"}, "1"))], tools=[ADD_TOOL])
        res = out["tool_messages"][0].tool_call_result
        assert res.error is True
        assert "not found" in res.result

    async def test_run_async(self) -> None:
        out = await ToolInvoker([ECHO_TOOL, ADD_TOOL]).run_async(
            [calls_msg(call("echo", {"text": "a"}, "1"), call("add", {"a": 1, "b": 1}, "2"))]
        )
        assert results(out) == ["a", "2"]

    async def test_run_async_awaits_async_functions(self) -> None:
        async def shout(text: str) -> str:
            await asyncio.sleep(0)
            return text.upper()

        inv = ToolInvoker([create_tool_from_function(shout)])
        out = await inv.run_async([calls_msg(call("shout", {"text": "hi"}, "1"))])
        assert results(out) == ["HI"]

    def test_sync_run_of_an_async_only_tool_runs_it_on_a_loop_of_its_own(self) -> None:
        async def shout(text: str) -> str:
            await asyncio.sleep(0)
            return text.upper()

        inv = ToolInvoker([create_tool_from_function(shout)], raise_on_failure=False)
        res = inv.run([calls_msg(call("shout", {"text": "hi"}, "1"))])["tool_messages"][0].tool_call_result
        assert (res.result, res.error) == ("HI", False)


# --------------------------------------------------------------------------- concurrency


class TestConcurrency:
    @pytest.mark.parametrize("max_workers", [1, 2, 3])
    def test_sync_bound_by_max_workers(self, max_workers: int) -> None:
        probe = ThreadProbe(limit=max_workers)

        def work(n: int) -> int:
            probe.enter()
            return n

        tool = create_tool_from_function(work)
        msgs = [calls_msg(*[call("work", {"n": i}, f"c{i}") for i in range(6)])]
        out = ToolInvoker([tool], max_workers=max_workers).run(msgs)
        assert results(out) == [str(i) for i in range(6)]
        assert probe.total == 6
        assert probe.peak == max_workers

    def test_sync_calls_run_concurrently_by_default(self) -> None:
        probe = ThreadProbe(limit=8)

        def work(n: int) -> int:
            probe.enter()
            return n

        msgs = [calls_msg(*[call("work", {"n": i}, f"c{i}") for i in range(10)])]
        ToolInvoker([create_tool_from_function(work)]).run(msgs)
        assert probe.peak == 8

    @pytest.mark.parametrize("max_workers", [1, 2, 4])
    async def test_async_bound_by_max_workers(self, max_workers: int) -> None:
        probe = AsyncProbe(limit=max_workers)

        async def work(n: int) -> int:
            await probe.enter()
            return n

        msgs = [calls_msg(*[call("work", {"n": i}, f"c{i}") for i in range(7)])]
        out = await ToolInvoker([create_tool_from_function(work)], max_workers=max_workers).run_async(msgs)
        assert results(out) == [str(i) for i in range(7)]
        assert probe.total == 7
        assert probe.peak == max_workers

    async def test_async_bound_applies_to_sync_tools_in_threads(self) -> None:
        probe = ThreadProbe(limit=2)

        def work(n: int) -> int:
            probe.enter()
            return n

        msgs = [calls_msg(*[call("work", {"n": i}, f"c{i}") for i in range(5)])]
        out = await ToolInvoker([create_tool_from_function(work)], max_workers=2).run_async(msgs)
        assert results(out) == [str(i) for i in range(5)]
        assert probe.peak == 2

    def test_results_in_call_order_when_later_calls_finish_first(self) -> None:
        last_done = threading.Event()
        finished: list[int] = []
        lock = threading.Lock()

        def work(n: int) -> int:
            if n == 0:
                assert last_done.wait(5), "call 2 never finished"
            with lock:
                finished.append(n)
            if n == 2:
                last_done.set()
            return n * 10

        msgs = [calls_msg(*[call("work", {"n": i}, f"c{i}") for i in range(3)])]
        out = ToolInvoker([create_tool_from_function(work)], max_workers=3).run(msgs)
        assert finished[-1] == 0 and finished.index(2) < finished.index(0)
        assert results(out) == ["0", "10", "20"]
        assert [m.tool_call_result.origin.id for m in out["tool_messages"]] == ["c0", "c1", "c2"]

    async def test_async_results_in_call_order_when_later_calls_finish_first(self) -> None:
        finished: list[int] = []
        gate = asyncio.Event()

        async def work(n: int) -> int:
            if n == 0:
                await asyncio.wait_for(gate.wait(), 5)
            finished.append(n)
            if n == 2:
                gate.set()
            return n

        msgs = [calls_msg(*[call("work", {"n": i}, f"c{i}") for i in range(3)])]
        out = await ToolInvoker([create_tool_from_function(work)]).run_async(msgs)
        assert finished[-1] == 0
        assert results(out) == ["0", "1", "2"]

    def test_a_single_call_runs_inline(self) -> None:
        seen: list[int] = []

        def where() -> str:
            seen.append(threading.get_ident())
            return "ok"

        ToolInvoker([create_tool_from_function(where)]).run([calls_msg(call("where", {}, "1"))])
        assert seen == [threading.get_ident()]


# --------------------------------------------------------------------------- errors


class TestErrors:
    def test_unknown_tool_raises_in_raise_mode(self) -> None:
        inv = ToolInvoker([ECHO_TOOL, ADD_TOOL])
        with pytest.raises(ToolNotFoundException, match="Available tools: echo, add") as info:
            inv.run([calls_msg(call("nope", {}, "1"))])
        assert info.value.tool_name == "nope"

    def test_unknown_tool_error_result_lists_available_tools(self) -> None:
        inv = ToolInvoker([ECHO_TOOL, ADD_TOOL], raise_on_failure=False)
        out = inv.run([calls_msg(call("nope", {}, "1"), call("echo", {"text": "ok"}, "2"))])
        first, second = (m.tool_call_result for m in out["tool_messages"])
        assert first.error is True
        assert "nope" in first.result and "not found" in first.result
        assert "echo" in first.result and "add" in first.result
        assert first.origin.id == "1"
        assert (second.result, second.error) == ("ok", False)

    def test_exception_error_result_has_type_message_and_root_cause(self) -> None:
        inv = ToolInvoker([BROKEN_TOOL], raise_on_failure=False)
        res = inv.run([calls_msg(call("broken", {"x": 3}, "1"))])["tool_messages"][0].tool_call_result
        assert res.error is True
        assert "broken" in res.result
        assert "ValueError" in res.result
        assert "cannot handle 3" in res.result
        assert "KeyError" in res.result and "missing" in res.result

    def test_exception_raises_tool_invocation_error(self) -> None:
        inv = ToolInvoker([BROKEN_TOOL])
        with pytest.raises(ToolInvocationError, match="cannot handle 3") as info:
            inv.run([calls_msg(call("broken", {"x": 3}, "c9"))])
        assert isinstance(info.value.__cause__, ValueError)
        assert info.value.tool_name == "broken"
        assert info.value.tool_call_id == "c9"

    async def test_async_exception_error_result(self) -> None:
        inv = ToolInvoker([BROKEN_TOOL, ECHO_TOOL], raise_on_failure=False)
        out = await inv.run_async([calls_msg(call("broken", {"x": 1}, "1"), call("echo", {"text": "fine"}, "2"))])
        first, second = (m.tool_call_result for m in out["tool_messages"])
        assert first.error and "ValueError" in first.result and "KeyError" in first.result
        assert (second.result, second.error) == ("fine", False)

    async def test_async_exception_raises(self) -> None:
        with pytest.raises(ToolInvocationError):
            await ToolInvoker([BROKEN_TOOL]).run_async([calls_msg(call("broken", {"x": 1}, "1"))])

    async def test_async_unknown_tool_raises(self) -> None:
        with pytest.raises(ToolNotFoundException):
            await ToolInvoker([ECHO_TOOL]).run_async([calls_msg(call("nope", {}, "1"))])

    @pytest.mark.parametrize(
        ("arguments", "fragment"),
        [
            ("{not json", "not valid JSON"),
            ('{"a": 1', "not valid JSON"),
            ("null", "JSON object"),
            ("[]", "JSON object"),
            ("5", "JSON object"),
            ('"text"', "JSON object"),
            ({"a": "one"}, "Schema"),
            ({"b": 2}, "Schema"),
        ],
    )
    def test_bad_arguments_become_an_error_result_and_the_tool_does_not_run(
        self, arguments: Any, fragment: str
    ) -> None:
        ran: list[Any] = []
        tool = counting("add", ADD_TOOL.function, ran)  # type: ignore[arg-type]
        inv = ToolInvoker([tool], raise_on_failure=False)
        out = inv.run([calls_msg(call("add", arguments, "1"), call("add", {"a": 1}, "2"))])
        bad, good = (m.tool_call_result for m in out["tool_messages"])
        assert bad.error is True
        assert fragment in bad.result
        assert "add" in bad.result
        assert (good.result, good.error) == ("2", False)
        assert ran == [{"a": 1}]

    def test_bad_arguments_raise_in_raise_mode_before_running(self) -> None:
        ran: list[Any] = []
        tool = counting("echo", echo, ran)
        with pytest.raises(ToolInvocationError):
            ToolInvoker([tool]).run([calls_msg(call("echo", {"text": "ok"}, "1"), call("echo", "{bad", "2"))])
        assert ran == []

    def test_error_types_are_handrail_errors(self) -> None:
        assert issubclass(ToolNotFoundException, HandrailError)
        assert issubclass(ToolInvocationError, HandrailError)


# --------------------------------------------------------------------------- call ids


class TestCallIds:
    """The ToolInvoker answers the calls exactly as given; only the Agent, which owns the history, repairs ids."""

    def test_missing_empty_and_repeated_ids_every_call_runs_and_is_answered_as_given(self) -> None:
        ran: list[Any] = []
        tool = counting("echo", echo, ran)
        given = [
            call("echo", {"text": "a"}, None),
            call("echo", {"text": "b"}, ""),
            call("echo", {"text": "c"}, "x"),
            call("echo", {"text": "d"}, "x"),
            call("echo", {"text": "e"}, "x"),
        ]
        out = ToolInvoker([tool]).run([calls_msg(*given)])
        assert results(out) == ["a", "b", "c", "d", "e"]
        assert [m.tool_call_result.origin for m in out["tool_messages"]] == given
        assert len(ran) == 5

    def test_tool_call_id_for_a_missing_id_is_deterministic(self) -> None:
        def pay(amount: int, key: ToolCallId) -> str:
            return f"{amount}@{key}"

        msgs = [
            calls_msg(call("pay", {"amount": 1}, None), call("pay", {"amount": 2}, ""), call("pay", {"amount": 3}, "k"))
        ]
        inv = ToolInvoker([create_tool_from_function(pay)])
        first = results(inv.run(msgs))
        assert first == results(inv.run(msgs))
        assert first[2] == "3@k"
        assert first[0] != first[1]
        assert all(r.split("@")[1] for r in first)

    def test_input_messages_are_not_modified(self) -> None:
        msg = calls_msg(call("echo", {"text": "a"}, None))
        before = copy.deepcopy(msg.to_dict())
        ToolInvoker([ECHO_TOOL]).run([msg])
        assert msg.to_dict() == before


# --------------------------------------------------------------------------- State


class TestState:
    def test_outputs_to_state_with_source_and_whole_result(self) -> None:
        tool = make_tool(
            "weather",
            WEATHER_TOOL.function,  # type: ignore[arg-type]
            outputs_to_state={"temp": {"source": "temperature"}, "report": {}},
        )
        state = State({"temp": {"type": int}, "report": {"type": dict}})
        ToolInvoker([tool]).run([calls_msg(call("weather", {"city": "Oslo"}, "1"))], state=state)
        assert state.get("temp") == 7
        assert state.get("report") == {"weather": "sunny", "temperature": 7, "city": "Oslo"}

    def test_outputs_to_state_lists_merge_and_handler_override(self) -> None:
        def docs(q: str) -> dict[str, Any]:
            return {"docs": [q], "n": 1}

        tool = make_tool(
            "docs",
            docs,
            outputs_to_state={
                "documents": {"source": "docs"},
                "total": {"source": "n", "handler": lambda c, n: (c or 0) + n},
            },
        )
        state = State({"documents": {"type": list[str]}, "total": {"type": int}})
        msgs = [calls_msg(call("docs", {"q": "a"}, "1"))]
        inv = ToolInvoker([tool])
        inv.run(msgs, state=state)
        inv.run([calls_msg(call("docs", {"q": "b"}, "2"))], state=state)
        assert state.get("documents") == ["a", "b"]
        assert state.get("total") == 2

    def test_missing_source_key_is_skipped(self) -> None:
        def partial() -> dict[str, Any]:
            return {"other": 1}

        tool = make_tool("partial", partial, outputs_to_state={"documents": {"source": "docs"}})
        state = State({"documents": {"type": list[str]}}, {"documents": ["kept"]})
        ToolInvoker([tool]).run([calls_msg(call("partial", {}, "1"))], state=state)
        assert state.get("documents") == ["kept"]

    def test_merge_error_is_an_error_result_or_raises(self) -> None:
        tool = make_tool("weather", WEATHER_TOOL.function, outputs_to_state={"unknown_key": {}})  # type: ignore[arg-type]
        msgs = [calls_msg(call("weather", {"city": "Oslo"}, "1"))]
        res = ToolInvoker([tool], raise_on_failure=False).run(msgs)["tool_messages"][0].tool_call_result
        assert res.error is True
        assert "weather" in res.result and "unknown_key" in res.result
        with pytest.raises(ToolOutputMergeError):
            ToolInvoker([tool]).run(msgs)

    def test_inputs_from_state(self) -> None:
        def greet(name: str, greeting: str) -> str:
            return f"{greeting}, {name}"

        tool = make_tool("greet", greet, inputs_from_state={"user_name": "name"})
        assert "name" not in tool.parameters["properties"]
        state = State({"user_name": {"type": str}}, {"user_name": "Ada"})
        out = ToolInvoker([tool]).run([calls_msg(call("greet", {"greeting": "Hi"}, "1"))], state=state)
        assert results(out) == ["Hi, Ada"]

    def test_model_arguments_beat_state(self) -> None:
        def greet(name: str) -> str:
            return f"hello {name}"

        tool = Tool(
            name="greet",
            description="",
            parameters={"type": "object", "properties": {"name": {"type": "string"}}},
            function=greet,
            inputs_from_state={"user_name": "name"},
        )
        state = State({"user_name": {"type": str}}, {"user_name": "Ada"})
        out = ToolInvoker([tool]).run([calls_msg(call("greet", {"name": "Bob"}, "1"))], state=state)
        assert results(out) == ["hello Bob"]

    @pytest.mark.parametrize("reader_first", [True, False])
    def test_reader_of_a_state_key_runs_after_its_writer_in_the_same_batch(self, reader_first: bool) -> None:
        order: list[str] = []

        def produce() -> dict[str, Any]:
            order.append("produce")
            return {"value": "PRODUCED"}

        def consume(shared: str) -> str:
            order.append("consume")
            return f"saw {shared}"

        writer = make_tool("produce", produce, outputs_to_state={"shared": {"source": "value"}})
        reader = make_tool("consume", consume, inputs_from_state={"shared": "shared"})
        calls = [call("consume", {}, "r"), call("produce", {}, "w")]
        if not reader_first:
            calls.reverse()
        state = State({"shared": {"type": str}}, {"shared": "OLD"})
        out = ToolInvoker([writer, reader]).run([calls_msg(*calls)], state=state)
        by_id = {m.tool_call_result.origin.id: m.tool_call_result.result for m in out["tool_messages"]}
        assert by_id["r"] == "saw PRODUCED"
        assert order == ["produce", "consume"]
        assert [m.tool_call_result.origin.id for m in out["tool_messages"]] == [c.id for c in calls]

    async def test_reader_after_writer_async(self) -> None:
        def produce() -> dict[str, Any]:
            return {"value": "PRODUCED"}

        def consume(shared: str) -> str:
            return f"saw {shared}"

        writer = make_tool("produce", produce, outputs_to_state={"shared": {"source": "value"}})
        reader = make_tool("consume", consume, inputs_from_state={"shared": "shared"})
        state = State({"shared": {"type": str}}, {"shared": "OLD"})
        out = await ToolInvoker([writer, reader]).run_async(
            [calls_msg(call("consume", {}, "r"), call("produce", {}, "w"))], state=state
        )
        assert results(out)[0] == "saw PRODUCED"

    def test_state_parameter_gets_the_live_state(self) -> None:
        seen: list[Any] = []

        def inspect_state(key: str, state: State) -> str:
            seen.append(state)
            state.set("note", key)
            return "ok"

        tool = create_tool_from_function(inspect_state)
        assert "state" not in tool.parameters["properties"]
        st = State({"note": {"type": str}})
        ToolInvoker([tool]).run([calls_msg(call("inspect_state", {"key": "k"}, "1"))], state=st)
        assert seen == [st] and seen[0] is st
        assert st.get("note") == "k"

    def test_optional_state_parameter(self) -> None:
        seen: list[Any] = []

        def peek(state: State | None = None) -> str:
            seen.append(state)
            return "ok"

        st = State()
        ToolInvoker([create_tool_from_function(peek)]).run([calls_msg(call("peek", {}, "1"))], state=st)
        assert seen[0] is st

    def test_tool_call_id_parameter_gets_the_call_id(self) -> None:
        def pay(amount: int, key: ToolCallId) -> str:
            return f"{amount}@{key}"

        tool = create_tool_from_function(pay)
        assert "key" not in tool.parameters["properties"]
        out = ToolInvoker([tool]).run([calls_msg(call("pay", {"amount": 5}, "id-7"), call("pay", {"amount": 6}, None))])
        assert results(out) == ["5@id-7", "6@call_2"]


# --------------------------------------------------------------------------- result text


class TestResultText:
    @pytest.mark.parametrize(
        ("value", "text"),
        [
            ("hello", "hello"),
            ("città 🍎", "città 🍎"),
            (42, "42"),
            (True, "true"),
            (None, "null"),
            ({"key": "value"}, '{"key": "value"}'),
            ({"city": "Zürich", "emoji": "🌞"}, '{"city": "Zürich", "emoji": "🌞"}'),
            ([1, "a"], '[1, "a"]'),
            (Report("T"), '{"title": "T", "kind": "report"}'),
            (Point(1, "é"), '{"x": 1, "label": "é"}'),
            ([Point(2, "b")], '[{"x": 2, "label": "b"}]'),
            (
                {"r": Report("T"), "p": Point(3, "ü")},
                '{"r": {"title": "T", "kind": "report"}, "p": {"x": 3, "label": "ü"}}',
            ),
        ],
    )
    def test_default_conversion(self, value: Any, text: str) -> None:
        def produce() -> Any:
            return value

        out = ToolInvoker([create_tool_from_function(produce)]).run([calls_msg(call("produce", {}, "1"))])
        assert results(out) == [text]

    @pytest.mark.parametrize(
        ("value", "text"),
        [
            ("hello", '"hello"'),
            ("città", '"città"'),
            (42, "42"),
            (True, "true"),
            (None, "null"),
            ({"key": "värde"}, '{"key": "värde"}'),
            (Report("T"), '{"title": "T", "kind": "report"}'),
            (Point(1, "a"), '{"x": 1, "label": "a"}'),
        ],
    )
    def test_json_flag_encodes_everything(self, value: Any, text: str) -> None:
        def produce() -> Any:
            return value

        inv = ToolInvoker([create_tool_from_function(produce)], convert_result_to_json_string=True)
        assert results(inv.run([calls_msg(call("produce", {}, "1"))])) == [text]

    def test_unserializable_falls_back_to_str(self) -> None:
        class Opaque:
            def __str__(self) -> str:
                return "opaque!"

        def produce() -> Any:
            return Opaque()

        out = ToolInvoker([create_tool_from_function(produce)]).run([calls_msg(call("produce", {}, "1"))])
        assert results(out) == ["opaque!"]

    def test_outputs_to_string_single_source(self) -> None:
        tool = make_tool("weather", WEATHER_TOOL.function, outputs_to_string={"source": "weather"})  # type: ignore[arg-type]
        out = ToolInvoker([tool]).run([calls_msg(call("weather", {"city": "Oslo"}, "1"))])
        assert results(out) == ["sunny"]

    def test_outputs_to_string_single_handler(self) -> None:
        tool = make_tool(
            "weather",
            WEATHER_TOOL.function,  # type: ignore[arg-type]
            outputs_to_string={"source": "city", "handler": upper},
        )
        out = ToolInvoker([tool]).run([calls_msg(call("weather", {"city": "Oslo"}, "1"))])
        assert results(out) == ["OSLO"]

    def test_outputs_to_string_multi(self) -> None:
        tool = make_tool(
            "weather",
            WEATHER_TOOL.function,  # type: ignore[arg-type]
            outputs_to_string={
                "weather": {"source": "weather"},
                "temp": {"source": "temperature", "handler": lambda t: f"{t}°C"},
            },
        )
        out = ToolInvoker([tool]).run([calls_msg(call("weather", {"city": "Oslo"}, "1"))])
        assert json.loads(results(out)[0]) == {"weather": "sunny", "temp": "7°C"}
        assert "°C" in results(out)[0]

    def test_outputs_to_string_raw_result(self) -> None:
        def raw() -> str:
            return '{"already": "text"}'

        tool = make_tool("raw", raw, outputs_to_string={"raw_result": True})
        inv = ToolInvoker([tool], convert_result_to_json_string=True)
        assert results(inv.run([calls_msg(call("raw", {}, "1"))])) == ['{"already": "text"}']

    def test_outputs_to_string_raw_result_with_handler(self) -> None:
        tool = make_tool(
            "weather",
            WEATHER_TOOL.function,  # type: ignore[arg-type]
            outputs_to_string={"handler": lambda r: f"{r['city']} is {r['weather']}", "raw_result": True},
        )
        out = ToolInvoker([tool]).run([calls_msg(call("weather", {"city": "Oslo"}, "1"))])
        assert results(out) == ["Oslo is sunny"]

    def test_handler_error_is_an_error_result_or_raises(self) -> None:
        def bad_handler(value: Any) -> str:
            raise RuntimeError("handler broke")

        tool = make_tool("echo", echo, outputs_to_string={"handler": bad_handler})
        msgs = [calls_msg(call("echo", {"text": "x"}, "1"))]
        res = ToolInvoker([tool], raise_on_failure=False).run(msgs)["tool_messages"][0].tool_call_result
        assert res.error is True and "handler broke" in res.result
        with pytest.raises(StringConversionError):
            ToolInvoker([tool]).run(msgs)


# --------------------------------------------------------------------------- streaming


class TestStreaming:
    def test_one_chunk_per_result_then_a_final_chunk(self) -> None:
        chunks: list[StreamingChunk] = []
        inv = ToolInvoker([ECHO_TOOL, ADD_TOOL], streaming_callback=chunks.append)
        out = inv.run([calls_msg(call("echo", {"text": "a"}, "1"), call("add", {"a": 1}, "2"))])
        assert len(chunks) == 3
        for i, (chunk, msg) in enumerate(zip(chunks[:2], out["tool_messages"], strict=True)):
            assert chunk.index == i
            assert chunk.content == ""
            assert chunk.start is True
            assert chunk.tool_call_result == msg.tool_call_result
        last = chunks[-1]
        assert last.finish_reason == "tool_call_results"
        assert last.content == ""
        assert last.tool_call_result is None

    def test_run_time_callback_beats_init_callback(self) -> None:
        init: list[StreamingChunk] = []
        runtime: list[StreamingChunk] = []
        inv = ToolInvoker([ECHO_TOOL], streaming_callback=init.append)
        inv.run([calls_msg(call("echo", {"text": "a"}, "1"))], streaming_callback=runtime.append)
        assert init == [] and len(runtime) == 2

    def test_error_results_are_streamed_too(self) -> None:
        chunks: list[StreamingChunk] = []
        inv = ToolInvoker([ECHO_TOOL], raise_on_failure=False, streaming_callback=chunks.append)
        inv.run([calls_msg(call("nope", {}, "1"))])
        assert chunks[0].tool_call_result is not None and chunks[0].tool_call_result.error is True
        assert chunks[-1].finish_reason == "tool_call_results"

    def test_no_calls_no_chunks(self) -> None:
        chunks: list[StreamingChunk] = []
        ToolInvoker([ECHO_TOOL], streaming_callback=chunks.append).run([user("hi")])
        assert chunks == []

    async def test_async_callback_in_run_async(self) -> None:
        chunks: list[StreamingChunk] = []

        async def cb(chunk: StreamingChunk) -> None:
            chunks.append(chunk)

        await ToolInvoker([ECHO_TOOL], streaming_callback=cb).run_async([calls_msg(call("echo", {"text": "a"}, "1"))])
        assert [c.finish_reason for c in chunks] == [None, "tool_call_results"]

    def test_async_callback_in_sync_run_is_refused(self) -> None:
        async def cb(chunk: StreamingChunk) -> None:
            pass

        ran: list[Any] = []
        with pytest.raises((TypeError, ValueError)):
            ToolInvoker([counting("echo", echo, ran)], streaming_callback=cb).run(
                [calls_msg(call("echo", {"text": "a"}, "1"))]
            )
        assert ran == []

    def _streaming_tool(self, seen: list[Any]) -> Tool:
        def stream(text: str, streaming_callback: Callable[[StreamingChunk], None] | None = None) -> str:
            seen.append(streaming_callback)
            return text

        tool = create_tool_from_function(stream)
        assert "streaming_callback" not in tool.parameters["properties"]
        return tool

    def test_passthrough_gives_the_callback_to_tools_that_declare_it(self) -> None:
        seen: list[Any] = []
        chunks: list[StreamingChunk] = []
        inv = ToolInvoker(
            [self._streaming_tool(seen), ECHO_TOOL],
            streaming_callback=chunks.append,
            enable_streaming_callback_passthrough=True,
        )
        inv.run([calls_msg(call("stream", {"text": "a"}, "1"), call("echo", {"text": "b"}, "2"))])
        assert seen == [chunks.append]

    def test_no_passthrough_by_default(self) -> None:
        seen: list[Any] = []
        chunks: list[StreamingChunk] = []
        inv = ToolInvoker([self._streaming_tool(seen)], streaming_callback=chunks.append)
        inv.run([calls_msg(call("stream", {"text": "a"}, "1"))])
        assert seen == [None]

    def test_passthrough_run_time_override(self) -> None:
        seen: list[Any] = []
        chunks: list[StreamingChunk] = []
        inv = ToolInvoker([self._streaming_tool(seen)], streaming_callback=chunks.append)
        inv.run([calls_msg(call("stream", {"text": "a"}, "1"))], enable_streaming_callback_passthrough=True)
        assert seen == [chunks.append]
        inv2 = ToolInvoker(
            [self._streaming_tool(seen)],
            streaming_callback=chunks.append,
            enable_streaming_callback_passthrough=True,
        )
        inv2.run([calls_msg(call("stream", {"text": "a"}, "1"))], enable_streaming_callback_passthrough=False)
        assert seen[-1] is None

    def test_passthrough_without_callback_passes_nothing(self) -> None:
        seen: list[Any] = []
        inv = ToolInvoker([self._streaming_tool(seen)], enable_streaming_callback_passthrough=True)
        inv.run([calls_msg(call("stream", {"text": "a"}, "1"))])
        assert seen == [None]


# --------------------------------------------------------------------------- serialization


class TestSerialization:
    def test_to_dict_shape(self) -> None:
        inv = ToolInvoker(
            [ECHO_TOOL, Toolset([ADD_TOOL])],
            raise_on_failure=False,
            convert_result_to_json_string=True,
            streaming_callback=collect_chunk,
            enable_streaming_callback_passthrough=True,
            max_workers=3,
        )
        data = inv.to_dict()
        assert data["type"] == "handrail.components.tools.tool_invoker.ToolInvoker"
        params = data["init_parameters"]
        assert params["raise_on_failure"] is False
        assert params["convert_result_to_json_string"] is True
        assert params["streaming_callback"] == "tests.components._helpers.collect_chunk"
        assert params["enable_streaming_callback_passthrough"] is True
        assert params["max_workers"] == 3
        assert isinstance(params["tools"], list) and len(params["tools"]) == 2
        json.dumps(data)

    def test_round_trip(self) -> None:
        inv = ToolInvoker(
            [ECHO_TOOL, Toolset([ADD_TOOL])],
            raise_on_failure=False,
            streaming_callback=collect_chunk,
            max_workers=2,
        )
        data = inv.to_dict()
        frozen = copy.deepcopy(data)
        back = ToolInvoker.from_dict(data)
        assert data == frozen
        assert back.to_dict() == data
        assert back.streaming_callback is collect_chunk
        assert back.max_workers == 2
        assert results(back.run([calls_msg(call("add", {"a": 4}, "1"))])) == ["5"]

    def test_round_trip_of_a_single_toolset_and_defaults(self) -> None:
        inv = ToolInvoker(Toolset([ECHO_TOOL]))
        data = inv.to_dict()
        assert data["init_parameters"]["streaming_callback"] is None
        back = ToolInvoker.from_dict(data)
        assert back.to_dict() == data
        assert isinstance(back.tools, Toolset)


def test_a_hand_written_schema_may_require_a_parameter_that_state_fills() -> None:
    """Haystack fills ``a`` from State although the schema requires it; the model only sends ``b``."""
    from handrail.dataclasses import ToolCall, ToolCallResult

    def add(a: int, b: int) -> int:
        return a + b

    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }
    add_tool = Tool(name="add", description="Add.", parameters=schema, function=add, inputs_from_state={"base": "a"})
    invoker = ToolInvoker(tools=[add_tool], raise_on_failure=False)
    state = State(schema={"base": {"type": int}}, data={"base": 5})

    def result(arguments: dict[str, int]) -> ToolCallResult:
        calls = [ToolCall(tool_name="add", arguments=arguments, id="c1")]
        (message,) = invoker.run(messages=[ChatMessage.from_assistant(tool_calls=calls)], state=state)["tool_messages"]
        assert message.tool_call_result is not None
        return message.tool_call_result

    assert result({"b": 2}).result == "7"
    assert result({"a": 1, "b": 2}).result == "3"  # what the model sent wins, as in Haystack
    missing_b = result({"a": 1})
    assert missing_b.error and "'b' is a required property" in missing_b.result  # the rest is still checked
    assert add_tool.parameters["required"] == ["a", "b"]  # the schema the model reads is as written
