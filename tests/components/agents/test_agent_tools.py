"""Agent and tools: run-time tools, the tool step's options, streaming, failures and malformed model output."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ChatRole, StreamingChunk, ToolCallDelta
from handrail.errors import ToolInvocationError, ToolNotFoundException
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool, Toolset, create_tool_from_function

from .._helpers import (
    ADD_TOOL,
    BROKEN_TOOL,
    ECHO_TOOL,
    PARROT_TOOL,
    WEATHER_TOOL,
    AsyncProbe,
    SyncOnlyGenerator,
    ThreadProbe,
    call,
    calls_msg,
    echo,
    make_tool,
    reply,
    user,
)


def tool_names(recorded: dict[str, Any]) -> list[str] | None:
    tools = recorded["tools"]
    return None if tools is None else [t.name for t in tools]


def tool_results(out: dict[str, Any]) -> list[Any]:
    return [m.tool_call_result for m in out["messages"] if m.role is ChatRole.TOOL]


# --------------------------------------------------------------------------- run-time tools


class TestRunTimeTools:
    def test_names_select_configured_tools(self) -> None:
        gen = ScriptedChatGenerator([calls_msg(call("echo", {"text": "a"}, "1")), reply("ok")])
        agent = Agent(chat_generator=gen, tools=[WEATHER_TOOL, ECHO_TOOL, PARROT_TOOL])
        out = agent.run([user("hi")], tools=["echo", "parrot"])
        assert tool_names(gen.calls[0]) == ["echo", "parrot"]
        assert out["tool_call_counts"] == {"echo": 1, "parrot": 0}

    def test_names_select_from_a_configured_toolset(self) -> None:
        gen = ScriptedChatGenerator([reply("ok")])
        agent = Agent(chat_generator=gen, tools=Toolset([WEATHER_TOOL, ECHO_TOOL]))
        agent.run([user("hi")], tools=["weather"])
        assert tool_names(gen.calls[0]) == ["weather"]

    def test_objects_replace_the_configured_tools(self) -> None:
        gen = ScriptedChatGenerator(
            [calls_msg(call("add", {"a": 1}, "1"), call("echo", {"text": "x"}, "2")), reply("ok")]
        )
        agent = Agent(chat_generator=gen, tools=[ECHO_TOOL])
        out = agent.run([user("hi")], tools=[ADD_TOOL])
        assert tool_names(gen.calls[0]) == ["add"]
        add_result, echo_result = tool_results(out)
        assert (add_result.result, add_result.error) == ("2", False)
        assert echo_result.error is True and "not found" in echo_result.result
        assert agent.tools == [ECHO_TOOL]

    def test_run_time_toolset(self) -> None:
        gen = ScriptedChatGenerator([reply("ok")])
        agent = Agent(chat_generator=gen)
        agent.run([user("hi")], tools=Toolset([ECHO_TOOL, ADD_TOOL]))
        assert tool_names(gen.calls[0]) == ["echo", "add"]

    def test_run_time_tools_for_an_agent_configured_without_tools(self) -> None:
        gen = ScriptedChatGenerator([calls_msg(call("echo", {"text": "a"}, "1")), reply("ok")])
        out = Agent(chat_generator=gen).run([user("hi")], tools=[ECHO_TOOL])
        assert out["step_count"] == 2
        assert out["tool_call_counts"] == {"echo": 1}

    def test_unknown_name_is_a_value_error(self) -> None:
        gen = ScriptedChatGenerator([reply("ok")])
        agent = Agent(chat_generator=gen, tools=[ECHO_TOOL])
        with pytest.raises(ValueError, match="nope"):
            agent.run([user("hi")], tools=["nope"])
        assert gen.calls == []

    def test_names_without_configured_tools_is_a_value_error(self) -> None:
        gen = ScriptedChatGenerator([reply("ok")])
        with pytest.raises(ValueError):
            Agent(chat_generator=gen).run([user("hi")], tools=["echo"])
        assert gen.calls == []

    @pytest.mark.parametrize(
        "tools",
        [
            [ECHO_TOOL, ECHO_TOOL],
            [ECHO_TOOL, Toolset([ECHO_TOOL])],
            ["echo", make_tool("echo", echo)],
            ["echo", "echo"],
        ],
    )
    def test_duplicates_are_a_value_error(self, tools: list[Any]) -> None:
        gen = ScriptedChatGenerator([reply("ok")])
        agent = Agent(chat_generator=gen, tools=[ECHO_TOOL, ADD_TOOL])
        with pytest.raises(ValueError, match="Duplicate"):
            agent.run([user("hi")], tools=tools)
        assert gen.calls == []

    @pytest.mark.parametrize("tools", ["echo", 5, [5], {"echo": ECHO_TOOL}])
    def test_wrong_type_is_a_type_error(self, tools: Any) -> None:
        gen = ScriptedChatGenerator([reply("ok")])
        with pytest.raises(TypeError):
            Agent(chat_generator=gen, tools=[ECHO_TOOL]).run([user("hi")], tools=tools)
        assert gen.calls == []

    def test_run_time_tools_for_a_generator_without_tools_parameter(self) -> None:
        class NoTools:
            def run(self, messages: list[ChatMessage]) -> dict[str, Any]:
                return {"replies": [reply("x")]}

        with pytest.raises(TypeError):
            Agent(chat_generator=NoTools()).run([user("hi")], tools=[ECHO_TOOL])

    def test_growing_toolset_is_offered_at_the_next_step(self) -> None:
        class GrowingToolset(Toolset):
            pass

        toolset = GrowingToolset([])

        def grow(name: str) -> str:
            toolset.add(make_tool(name, echo))
            return f"added {name}"

        toolset.add(create_tool_from_function(grow))
        gen = ScriptedChatGenerator(
            [
                calls_msg(call("grow", {"name": "fresh"}, "1")),
                calls_msg(call("fresh", {"text": "new!"}, "2")),
                reply("ok"),
            ]
        )
        out = Agent(chat_generator=gen, tools=[toolset]).run([user("hi")])
        assert tool_names(gen.calls[0]) == ["grow"]
        assert tool_names(gen.calls[1]) == ["grow", "fresh"]
        assert tool_results(out)[1].result == "new!"
        assert tool_results(out)[1].error is False
        assert out["tool_call_counts"]["fresh"] == 1


# --------------------------------------------------------------------------- generation kwargs and the model call


class RecordingGenerator:
    """Records the keyword arguments of every call."""

    def __init__(self, replies: list[ChatMessage]) -> None:
        self.replies = list(replies)
        self.kwargs: list[dict[str, Any]] = []

    def run(
        self,
        messages: list[ChatMessage],
        tools: Any = None,
        streaming_callback: Any = None,
        generation_kwargs: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        self.kwargs.append(
            {"tools": tools, "streaming_callback": streaming_callback, "generation_kwargs": generation_kwargs}
        )
        return {"replies": [self.replies[len(self.kwargs) - 1]]}


class TestModelCall:
    def test_generation_kwargs_are_forwarded_every_step(self) -> None:
        gen = ScriptedChatGenerator([calls_msg(call("echo", {"text": "a"}, "1")), reply("ok")])
        Agent(chat_generator=gen, tools=[ECHO_TOOL]).run(
            [user("hi")], generation_kwargs={"temperature": 0.1, "seed": 7}
        )
        assert [c["generation_kwargs"] for c in gen.calls] == [{"temperature": 0.1, "seed": 7}] * 2

    async def test_generation_kwargs_are_forwarded_async(self) -> None:
        gen = ScriptedChatGenerator([reply("ok")])
        await Agent(chat_generator=gen).run_async([user("hi")], generation_kwargs={"max_tokens": 5})
        assert gen.calls[0]["generation_kwargs"] == {"max_tokens": 5}

    def test_no_generation_kwargs_no_callback(self) -> None:
        gen = RecordingGenerator([reply("ok")])
        Agent(chat_generator=gen).run([user("hi")])
        assert gen.kwargs == [{"tools": None, "streaming_callback": None, "generation_kwargs": None}]

    def test_generator_input_is_a_copy(self) -> None:
        gen = ScriptedChatGenerator([calls_msg(call("echo", {"text": "a"}, "1")), reply("ok")])
        Agent(chat_generator=gen, tools=[ECHO_TOOL]).run([user("hi")])
        assert [len(c["messages"]) for c in gen.calls] == [1, 3]

    def test_generator_exception_propagates(self) -> None:
        gen = ScriptedChatGenerator([RuntimeError("model down")])
        with pytest.raises(RuntimeError, match="model down"):
            Agent(chat_generator=gen).run([user("hi")])


# --------------------------------------------------------------------------- streaming


def text_chunks(*parts: str) -> list[StreamingChunk]:
    return [StreamingChunk(content=p) for p in parts] + [StreamingChunk(finish_reason="stop")]


def call_chunks() -> list[StreamingChunk]:
    return [
        StreamingChunk(index=0, tool_calls=[ToolCallDelta(index=0, tool_name="echo", id="s1")], start=True),
        StreamingChunk(index=0, tool_calls=[ToolCallDelta(index=0, arguments='{"text": ')]),
        StreamingChunk(index=0, tool_calls=[ToolCallDelta(index=0, arguments='"streamed"}')]),
        StreamingChunk(finish_reason="tool_calls"),
    ]


class TestStreaming:
    def test_sync_callback_in_run_gets_model_and_tool_chunks(self) -> None:
        chunks: list[StreamingChunk] = []
        gen = ScriptedChatGenerator([call_chunks(), text_chunks("Hel", "lo")])
        out = Agent(chat_generator=gen, tools=[ECHO_TOOL], streaming_callback=chunks.append).run([user("hi")])
        assert out["last_message"].text == "Hello"
        assert tool_results(out)[0].result == "streamed"
        result_chunks = [c for c in chunks if c.tool_call_result is not None]
        assert [c.tool_call_result.result for c in result_chunks] == ["streamed"]
        assert [c.finish_reason for c in chunks if c.finish_reason] == ["tool_calls", "tool_call_results", "stop"]
        assert "".join(c.content for c in chunks) == "Hello"

    def test_run_time_callback_beats_init_callback(self) -> None:
        init: list[StreamingChunk] = []
        runtime: list[StreamingChunk] = []
        gen = ScriptedChatGenerator([text_chunks("a")])
        Agent(chat_generator=gen, streaming_callback=init.append).run([user("hi")], streaming_callback=runtime.append)
        assert init == [] and runtime

    async def test_async_callback_in_run_async(self) -> None:
        chunks: list[StreamingChunk] = []

        async def cb(chunk: StreamingChunk) -> None:
            await asyncio.sleep(0)
            chunks.append(chunk)

        gen = ScriptedChatGenerator([call_chunks(), text_chunks("ok")])
        out = await Agent(chat_generator=gen, tools=[ECHO_TOOL]).run_async([user("hi")], streaming_callback=cb)
        assert out["last_message"].text == "ok"
        assert any(c.tool_call_result is not None for c in chunks)
        assert any(c.finish_reason == "tool_call_results" for c in chunks)

    async def test_sync_callback_in_run_async(self) -> None:
        chunks: list[StreamingChunk] = []
        gen = ScriptedChatGenerator([text_chunks("x", "y")])
        out = await Agent(chat_generator=gen, streaming_callback=chunks.append).run_async([user("hi")])
        assert out["last_message"].text == "xy"
        assert "".join(c.content for c in chunks) == "xy"

    async def test_async_callback_with_a_sync_only_generator(self) -> None:
        chunks: list[StreamingChunk] = []

        async def cb(chunk: StreamingChunk) -> None:
            chunks.append(chunk)

        gen = SyncOnlyGenerator([reply("ok")])
        out = await Agent(chat_generator=gen, tools=[ECHO_TOOL]).run_async([user("hi")], streaming_callback=cb)
        assert out["last_message"].text == "ok"
        assert [c.content for c in chunks] == ["chunk"]

    def test_async_init_callback_in_run_is_refused_before_any_model_call(self) -> None:
        async def cb(chunk: StreamingChunk) -> None:
            pass

        gen = ScriptedChatGenerator([reply("ok")])
        agent = Agent(chat_generator=gen, streaming_callback=cb)
        with pytest.raises((TypeError, ValueError), match=r"coroutine|async"):
            agent.run([user("hi")])
        assert gen.calls == []

    def test_async_run_time_callback_in_run_is_refused_before_any_model_call(self) -> None:
        async def cb(chunk: StreamingChunk) -> None:
            pass

        gen = ScriptedChatGenerator([reply("ok")])
        with pytest.raises((TypeError, ValueError), match=r"coroutine|async"):
            Agent(chat_generator=gen).run([user("hi")], streaming_callback=cb)
        assert gen.calls == []

    def test_non_callable_callback_is_refused(self) -> None:
        gen = ScriptedChatGenerator([reply("ok")])
        with pytest.raises(TypeError):
            Agent(chat_generator=gen).run([user("hi")], streaming_callback="print")  # type: ignore[arg-type]
        assert gen.calls == []


# --------------------------------------------------------------------------- tool step options


class TestToolStepOptions:
    def test_convert_result_to_json_string_via_tool_invoker_kwargs(self) -> None:
        gen = ScriptedChatGenerator([calls_msg(call("echo", {"text": "héllo"}, "1")), reply("ok")])
        agent = Agent(
            chat_generator=gen, tools=[ECHO_TOOL], tool_invoker_kwargs={"convert_result_to_json_string": True}
        )
        assert tool_results(agent.run([user("hi")]))[0].result == '"héllo"'

    def test_strings_are_kept_by_default(self) -> None:
        gen = ScriptedChatGenerator([calls_msg(call("echo", {"text": "héllo"}, "1")), reply("ok")])
        assert tool_results(Agent(chat_generator=gen, tools=[ECHO_TOOL]).run([user("hi")]))[0].result == "héllo"

    def _streaming_tool(self, seen: list[Any]) -> Tool:
        def stream(text: str, streaming_callback: Callable[[StreamingChunk], None] | None = None) -> str:
            seen.append(streaming_callback)
            return text

        return create_tool_from_function(stream)

    @pytest.mark.parametrize("enabled", [True, False])
    def test_passthrough_via_tool_invoker_kwargs(self, enabled: bool) -> None:
        seen: list[Any] = []
        chunks: list[StreamingChunk] = []
        gen = ScriptedChatGenerator([calls_msg(call("stream", {"text": "a"}, "1")), reply("ok")])
        agent = Agent(
            chat_generator=gen,
            tools=[self._streaming_tool(seen)],
            streaming_callback=chunks.append,
            tool_invoker_kwargs={"enable_streaming_callback_passthrough": enabled},
        )
        agent.run([user("hi")])
        assert seen == [chunks.append if enabled else None]

    @pytest.mark.parametrize("limit", [1, 2, 3])
    def test_tool_concurrency_limit_bounds_a_step(self, limit: int) -> None:
        probe = ThreadProbe(limit)

        def work(n: int) -> int:
            probe.enter()
            return n

        gen = ScriptedChatGenerator([calls_msg(*[call("work", {"n": i}, f"c{i}") for i in range(6)]), reply("ok")])
        agent = Agent(chat_generator=gen, tools=[create_tool_from_function(work)], tool_concurrency_limit=limit)
        out = agent.run([user("hi")])
        assert [r.result for r in tool_results(out)] == [str(i) for i in range(6)]
        assert probe.peak == limit

    async def test_tool_concurrency_limit_bounds_a_step_async(self) -> None:
        probe = AsyncProbe(3)

        async def work(n: int) -> int:
            await probe.enter()
            return n

        gen = ScriptedChatGenerator([calls_msg(*[call("work", {"n": i}, f"c{i}") for i in range(7)]), reply("ok")])
        agent = Agent(chat_generator=gen, tools=[create_tool_from_function(work)], tool_concurrency_limit=3)
        out = await agent.run_async([user("hi")])
        assert [r.result for r in tool_results(out)] == [str(i) for i in range(7)]
        assert probe.peak == 3

    def test_default_limit_is_eight(self) -> None:
        probe = ThreadProbe(8)

        def work(n: int) -> int:
            probe.enter()
            return n

        gen = ScriptedChatGenerator([calls_msg(*[call("work", {"n": i}, f"c{i}") for i in range(10)]), reply("ok")])
        Agent(chat_generator=gen, tools=[create_tool_from_function(work)]).run([user("hi")])
        assert probe.peak == 8

    def test_reader_of_a_state_key_runs_after_its_writer(self) -> None:
        def produce() -> dict[str, Any]:
            return {"value": "PRODUCED"}

        def consume(shared: str) -> str:
            return f"saw {shared}"

        writer = make_tool("produce", produce, outputs_to_state={"shared": {"source": "value"}})
        reader = make_tool("consume", consume, inputs_from_state={"shared": "shared"})
        gen = ScriptedChatGenerator([calls_msg(call("consume", {}, "r"), call("produce", {}, "w")), reply("ok")])
        agent = Agent(chat_generator=gen, tools=[writer, reader], state_schema={"shared": {"type": str}})
        out = agent.run([user("hi")], shared="OLD")
        assert [r.result for r in tool_results(out)] == ["saw PRODUCED", '{"value": "PRODUCED"}']
        assert [r.origin.id for r in tool_results(out)] == ["r", "w"]
        assert out["shared"] == "PRODUCED"


# --------------------------------------------------------------------------- failures


class TestFailures:
    def test_tool_error_goes_back_to_the_model(self) -> None:
        gen = ScriptedChatGenerator([calls_msg(call("broken", {"x": 2}, "1")), reply("sorry")])
        out = Agent(chat_generator=gen, tools=[BROKEN_TOOL]).run([user("hi")])
        err = gen.calls[1]["messages"][-1].tool_call_result
        assert err.error is True
        assert "ValueError" in err.result and "cannot handle 2" in err.result and "KeyError" in err.result
        assert out["exit_reason"] == "text"

    def test_raise_on_tool_invocation_failure(self) -> None:
        gen = ScriptedChatGenerator([calls_msg(call("broken", {"x": 2}, "1")), reply("unused")])
        agent = Agent(chat_generator=gen, tools=[BROKEN_TOOL], raise_on_tool_invocation_failure=True)
        with pytest.raises(ToolInvocationError) as info:
            agent.run([user("hi")])
        assert isinstance(info.value.__cause__, ValueError)
        assert len(gen.calls) == 1

    async def test_raise_on_tool_invocation_failure_async(self) -> None:
        gen = ScriptedChatGenerator([calls_msg(call("broken", {"x": 2}, "1"))])
        agent = Agent(chat_generator=gen, tools=[BROKEN_TOOL], raise_on_tool_invocation_failure=True)
        with pytest.raises(ToolInvocationError):
            await agent.run_async([user("hi")])

    def test_raise_on_unknown_tool(self) -> None:
        gen = ScriptedChatGenerator([calls_msg(call("ghost", {}, "1"))])
        agent = Agent(chat_generator=gen, tools=[ECHO_TOOL], raise_on_tool_invocation_failure=True)
        with pytest.raises(ToolNotFoundException, match="ghost"):
            agent.run([user("hi")])

    def test_raise_on_invalid_arguments(self) -> None:
        gen = ScriptedChatGenerator([calls_msg(call("echo", "{bad", "1"))])
        agent = Agent(chat_generator=gen, tools=[ECHO_TOOL], raise_on_tool_invocation_failure=True)
        with pytest.raises(ToolInvocationError):
            agent.run([user("hi")])

    def test_raise_flag_reassigned_between_runs(self) -> None:
        gen = ScriptedChatGenerator(
            [calls_msg(call("broken", {"x": 1}, "1")), reply("ok"), calls_msg(call("broken", {"x": 1}, "2"))]
        )
        agent = Agent(chat_generator=gen, tools=[BROKEN_TOOL])
        assert agent.run([user("hi")])["exit_reason"] == "text"
        agent.raise_on_tool_invocation_failure = True
        with pytest.raises(ToolInvocationError):
            agent.run([user("hi")])


# --------------------------------------------------------------------------- malformed model output


class TestMalformedModelOutput:
    @pytest.mark.parametrize(
        ("bad_call", "fragment"),
        [
            (call("add", "{not json", "b"), "not valid JSON"),
            (call("add", "[1, 2]", "b"), "JSON object"),
            (call("add", "null", "b"), "JSON object"),
            (call("ghost", {"a": 1}, "b"), "not found"),
            (call("add", {"a": "one"}, "b"), "Schema"),
            (call("add", {}, "b"), "Schema"),
        ],
    )
    @pytest.mark.parametrize("use_async", [False, True])
    async def test_becomes_an_error_result_in_the_next_model_input(
        self, bad_call: Any, fragment: str, use_async: bool
    ) -> None:
        ran: list[Any] = []

        def add(a: int, b: int = 1) -> int:
            ran.append(a)
            return a + b

        gen = ScriptedChatGenerator([calls_msg(bad_call), reply("recovered")])
        agent = Agent(chat_generator=gen, tools=[create_tool_from_function(add)])
        out = await agent.run_async([user("hi")]) if use_async else agent.run([user("hi")])
        assert ran == []
        next_input = gen.calls[1]["messages"]
        err = next_input[-1].tool_call_result
        assert err is not None and err.error is True
        assert fragment in err.result
        assert err.origin.id == "b"
        assert next_input[-2].tool_calls[0].id == "b"
        assert out["exit_reason"] == "text"
        assert out["step_count"] == 2

    def test_a_whole_series_of_bad_outputs_then_recovery(self) -> None:
        gen = ScriptedChatGenerator(
            [
                calls_msg(call("add", "{oops", None)),
                calls_msg(call("nope", {}, None)),
                calls_msg(call("add", {"a": "x"}, None)),
                ChatMessage.from_assistant(""),
                calls_msg(call("add", {"a": 1}, None)),
                reply("done"),
            ]
        )
        out = Agent(chat_generator=gen, tools=[ADD_TOOL]).run([user("hi")])
        assert out["exit_reason"] == "text"
        assert out["step_count"] == 6
        for i in range(1, 4):
            err = gen.calls[i]["messages"][-1].tool_call_result
            assert err.error is True
        assert "add" in gen.calls[1]["messages"][-1].tool_call_result.result
        assert "Available tools: add" in gen.calls[2]["messages"][-1].tool_call_result.result
        # the empty reply is in the next input, and the run went on
        assert gen.calls[4]["messages"][-1].role is ChatRole.ASSISTANT
        assert gen.calls[4]["messages"][-1].text == ""
        assert gen.calls[5]["messages"][-1].tool_call_result.result == "2"
        assert out["tool_call_counts"] == {"add": 3, "nope": 1}

    def test_streamed_call_with_broken_arguments_is_kept_and_answered(self) -> None:
        chunks = [
            StreamingChunk(index=0, tool_calls=[ToolCallDelta(index=0, tool_name="add", id="s1")]),
            StreamingChunk(index=0, tool_calls=[ToolCallDelta(index=0, arguments='{"a": 1')]),
            StreamingChunk(finish_reason="tool_calls"),
        ]
        gen = ScriptedChatGenerator([chunks, reply("ok")])
        out = Agent(chat_generator=gen, tools=[ADD_TOOL]).run([user("hi")])
        assert out["messages"][1].tool_calls[0].arguments == '{"a": 1'
        err = gen.calls[1]["messages"][-1].tool_call_result
        assert err.error is True and "not valid JSON" in err.result
