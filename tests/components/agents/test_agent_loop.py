"""Agent.run: the loop, exit conditions, counters, system prompts and state arguments."""

from __future__ import annotations

import copy
import dataclasses
import logging
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ChatRole, StreamingChunk, TextContent, ToolCall
from handrail.errors import RunError
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function

from .._helpers import (
    BROKEN_TOOL,
    ECHO_TOOL,
    FINISH_TOOL,
    PARROT_TOOL,
    USAGE,
    WEATHER_TOOL,
    NoToolsGenerator,
    call,
    calls_msg,
    reply,
    user,
)

RESULT_KEYS = {"messages", "last_message", "step_count", "token_usage", "tool_call_counts", "exit_reason"}


def agent_with(replies: list[Any], **kwargs: Any) -> tuple[Agent, ScriptedChatGenerator]:
    gen = ScriptedChatGenerator(replies)
    return Agent(chat_generator=gen, **kwargs), gen


def roles(messages: list[ChatMessage]) -> list[str]:
    return [m.role.value for m in messages]


# --------------------------------------------------------------------------- no tools


class TestWithoutTools:
    def test_one_reply_then_exit(self) -> None:
        agent, gen = agent_with([reply("Berlin", usage=dict(USAGE))])
        out = agent.run([user("Capital of Germany?")])
        assert set(out) == RESULT_KEYS
        assert roles(out["messages"]) == ["user", "assistant"]
        assert out["last_message"] is out["messages"][-1]
        assert out["last_message"].text == "Berlin"
        assert out["exit_reason"] == "text"
        assert out["step_count"] == 1
        assert out["token_usage"] == USAGE
        assert out["tool_call_counts"] == {}
        assert gen.calls[0]["tools"] is None
        gen.assert_complete()

    def test_a_reply_holding_tool_calls_is_final(self) -> None:
        agent, gen = agent_with([calls_msg(call("weather", {"city": "Oslo"}, "1")), reply("unused")])
        out = agent.run([user("hi")])
        assert out["exit_reason"] == "text"
        assert out["step_count"] == 1
        assert len(gen.calls) == 1
        assert out["last_message"].tool_calls[0].tool_name == "weather"
        assert roles(out["messages"]) == ["user", "assistant"]

    def test_an_empty_reply_is_final(self) -> None:
        agent, gen = agent_with([ChatMessage.from_assistant(""), reply("unused")])
        out = agent.run([user("hi")])
        assert (out["exit_reason"], out["step_count"], len(gen.calls)) == ("text", 1, 1)

    def test_generator_without_tools_parameter(self) -> None:
        gen = NoToolsGenerator("plain")
        out = Agent(chat_generator=gen).run([user("hi")])
        assert out["last_message"].text == "plain"
        assert out["exit_reason"] == "text"
        assert len(gen.calls) == 1

    async def test_run_async(self) -> None:
        agent, _ = agent_with([reply("Berlin")])
        out = await agent.run_async([user("hi")])
        assert (out["last_message"].text, out["exit_reason"], out["step_count"]) == ("Berlin", "text", 1)

    async def test_run_async_with_a_sync_only_generator(self) -> None:
        gen = NoToolsGenerator("plain")
        out = await Agent(chat_generator=gen).run_async([user("hi")])
        assert out["last_message"].text == "plain"


# --------------------------------------------------------------------------- the tool loop


class TestToolLoop:
    def test_tool_step_then_text(self) -> None:
        agent, gen = agent_with(
            [
                calls_msg(
                    call("weather", {"city": "Berlin"}, "c1"),
                    meta={"usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}},
                ),
                reply("Done.", usage={"prompt_tokens": 6, "completion_tokens": 3, "total_tokens": 9}),
            ],
            tools=[WEATHER_TOOL, ECHO_TOOL],
        )
        out = agent.run([user("Weather in Berlin?")])
        assert roles(out["messages"]) == ["user", "assistant", "tool", "assistant"]
        assert out["step_count"] == 2
        assert out["exit_reason"] == "text"
        assert out["tool_call_counts"] == {"weather": 1, "echo": 0}
        assert out["token_usage"] == {"prompt_tokens": 16, "completion_tokens": 8, "total_tokens": 24}
        result = out["messages"][2].tool_call_result
        assert result.result == '{"weather": "sunny", "temperature": 7, "city": "Berlin"}'
        assert result.origin.id == "c1"
        # the second model input holds the tool result
        assert gen.calls[1]["messages"][-1].tool_call_result == result
        assert [t.name for t in gen.calls[0]["tools"]] == ["weather", "echo"]
        gen.assert_complete()

    def test_token_usage_sums_every_numeric_field_nested(self) -> None:
        agent, _ = agent_with(
            [
                calls_msg(
                    call("echo", {"text": "a"}, "1"),
                    meta={"usage": {"prompt_tokens": 1, "details": {"cached": 2, "audio": 0.5}, "model": "m"}},
                ),
                reply("x", usage={"prompt_tokens": 3, "details": {"cached": 4, "reasoning": 1}, "flag": True}),
            ],
            tools=[ECHO_TOOL],
        )
        out = agent.run([user("hi")])
        assert out["token_usage"] == {"prompt_tokens": 4, "details": {"cached": 6, "audio": 0.5, "reasoning": 1}}

    @pytest.mark.parametrize("first, second", [(1, {"cached": 1}), ({"cached": 1}, 1)])
    def test_usage_fields_of_different_shapes_do_not_end_the_run(self, first: Any, second: Any) -> None:
        agent, _ = agent_with(
            [
                calls_msg(call("echo", {"text": "a"}, "1"), meta={"usage": {"details": first, "total_tokens": 2}}),
                reply("x", usage={"details": second, "total_tokens": 3}),
            ],
            tools=[ECHO_TOOL],
        )
        out = agent.run([user("hi")])
        assert out["exit_reason"] == "text"
        assert out["token_usage"] == {"details": first, "total_tokens": 5}  # the first shape is kept

    def test_usage_numbers_that_are_negative_or_not_finite_are_left_out(self) -> None:
        agent, _ = agent_with(
            [
                calls_msg(call("echo", {"text": "a"}, "1"), meta={"usage": {"total_tokens": float("nan")}}),
                calls_msg(call("echo", {"text": "b"}, "2"), meta={"usage": {"total_tokens": -100}}),
                reply("x", usage={"total_tokens": 7, "cost": float("inf")}),
            ],
            tools=[ECHO_TOOL],
        )
        assert agent.run([user("hi")])["token_usage"] == {"total_tokens": 7}

    def test_no_usage_reported(self) -> None:
        agent, _ = agent_with([reply("x", usage={})], tools=[ECHO_TOOL])
        out = agent.run([user("hi")])
        assert out["token_usage"] == {}
        assert out["tool_call_counts"] == {"echo": 0}

    def test_counts_include_errors_and_unknown_tools(self) -> None:
        agent, _ = agent_with(
            [
                calls_msg(call("broken", {"x": 1}, "1"), call("ghost", {}, "2"), call("echo", {"text": "a"}, "3")),
                calls_msg(call("echo", {"text": "b"}, "4")),
                reply("done"),
            ],
            tools=[BROKEN_TOOL, ECHO_TOOL],
        )
        out = agent.run([user("hi")])
        assert out["tool_call_counts"] == {"broken": 1, "echo": 2, "ghost": 1}
        assert out["step_count"] == 3

    def test_one_tool_message_per_call_in_call_order(self) -> None:
        agent, _ = agent_with(
            [
                calls_msg(
                    call("echo", {"text": "a"}, "1"),
                    call("parrot", {"text": "b"}, "2"),
                    call("echo", {"text": "c"}, "3"),
                ),
                reply("ok"),
            ],
            tools=[ECHO_TOOL, PARROT_TOOL],
        )
        out = agent.run([user("hi")])
        tools = [m for m in out["messages"] if m.role is ChatRole.TOOL]
        assert [m.tool_call_result.result for m in tools] == ["a", "parrot: b", "c"]
        assert all(len(m.tool_call_results) == 1 for m in tools)

    def test_empty_reply_is_not_an_exit(self) -> None:
        agent, gen = agent_with([ChatMessage.from_assistant(""), reply("The weather is sunny.")], tools=[ECHO_TOOL])
        out = agent.run([user("hi")])
        assert out["step_count"] == 2
        assert out["exit_reason"] == "text"
        assert out["last_message"].text == "The weather is sunny."
        assert gen.calls[1]["messages"][-1].role is ChatRole.ASSISTANT  # the empty reply is in the history

    async def test_empty_reply_is_not_an_exit_async(self) -> None:
        agent, _ = agent_with([ChatMessage.from_assistant("   "), reply("Sunny.")], tools=[ECHO_TOOL])
        out = await agent.run_async([user("hi")])
        assert (out["step_count"], out["exit_reason"]) == (2, "text")

    @pytest.mark.parametrize("reason", ["length", "content_filter"])
    def test_length_and_content_filter_end_the_run(self, reason: str) -> None:
        agent, gen = agent_with(
            [ChatMessage.from_assistant("", meta={"finish_reason": reason}), reply("unused")], tools=[ECHO_TOOL]
        )
        out = agent.run([user("hi")])
        assert out["exit_reason"] == reason
        assert out["step_count"] == 1
        assert len(gen.calls) == 1

    def test_finish_reason_stop_with_empty_text_continues(self) -> None:
        agent, _ = agent_with(
            [ChatMessage.from_assistant("", meta={"finish_reason": "stop"}), reply("ok")], tools=[ECHO_TOOL]
        )
        assert agent.run([user("hi")])["step_count"] == 2

    def test_text_always_exits_even_when_not_listed(self) -> None:
        agent, _ = agent_with([reply("plain answer")], tools=[FINISH_TOOL], exit_conditions=["finish"])
        out = agent.run([user("hi")])
        assert out["exit_reason"] == "text"

    def test_max_agent_steps(self) -> None:
        replies = [calls_msg(call("echo", {"text": str(i)}, f"c{i}")) for i in range(5)]
        agent, gen = agent_with(replies, tools=[ECHO_TOOL], max_agent_steps=2)
        out = agent.run([user("hi")])
        assert out["exit_reason"] == "max_agent_steps"
        assert out["step_count"] == 2
        assert len(gen.calls) == 2
        assert out["tool_call_counts"] == {"echo": 2}
        assert out["last_message"].role is ChatRole.TOOL

    def test_max_agent_steps_zero_makes_no_model_call(self) -> None:
        agent, gen = agent_with([reply("unused")], tools=[ECHO_TOOL], max_agent_steps=0)
        out = agent.run([user("hi")])
        assert gen.calls == []
        assert out["exit_reason"] == "max_agent_steps"
        assert out["step_count"] == 0
        assert roles(out["messages"]) == ["user"]

    def test_call_ids_are_repaired_in_the_reply_and_its_results(self) -> None:
        agent, gen = agent_with(
            [
                calls_msg(
                    call("echo", {"text": "a"}, None),
                    call("echo", {"text": "b"}, ""),
                    call("echo", {"text": "c"}, "dup"),
                ),
                calls_msg(call("echo", {"text": "d"}, "dup"), call("echo", {"text": "e"}, "dup")),
                reply("done"),
            ],
            tools=[ECHO_TOOL],
        )
        out = agent.run([user("hi")])
        msgs = out["messages"]
        step1_ids = [c.id for c in msgs[1].tool_calls]
        assert step1_ids == ["call_1", "call_2", "dup"]
        assert [m.tool_call_result.origin.id for m in msgs[2:5]] == step1_ids
        step2_ids = [c.id for c in msgs[5].tool_calls]
        assert len(set(step1_ids + step2_ids)) == 5
        assert step2_ids == ["dup#2", "dup#3"]
        assert [m.tool_call_result.origin.id for m in msgs[6:8]] == step2_ids
        assert [m.tool_call_result.result for m in msgs[6:8]] == ["d", "e"]
        # the model saw the repaired ids
        assert [c.id for c in gen.calls[1]["messages"][1].tool_calls] == step1_ids
        # the scripted reply itself was not modified
        assert gen.replies[0].tool_calls[0].id is None

    @pytest.mark.parametrize("model_id", [None, "call_9"])
    def test_ids_are_unique_within_the_run_and_history_is_not_rescanned(self, model_id: str | None) -> None:
        # Documented trade-off: ids are unique among the calls of one run (repaired when missing, empty or
        # repeated within the run); the input history is not rescanned, so a run's cost stays independent
        # of the history's length.
        old = call("echo", {"text": "a"}, "call_9")
        history = [user("one"), calls_msg(old), ChatMessage.from_tool("a", old), reply("ok"), user("two")]
        script = [
            calls_msg(call("echo", {"text": "b"}, model_id)),
            calls_msg(call("echo", {"text": "c"}, model_id)),
            reply("done"),
        ]
        agent, _ = agent_with(script, tools=[ECHO_TOOL])
        out = agent.run(history)
        new_ids = [c.id for m in out["messages"][len(history) :] for c in m.tool_calls]
        assert len(new_ids) == 2
        assert len(set(new_ids)) == 2
        results = [m.tool_call_result for m in out["messages"][len(history) :] if m.tool_call_result]
        assert [r.origin.id for r in results] == new_ids

    def test_input_messages_are_not_modified(self) -> None:
        messages = [ChatMessage.from_system("orig"), user("hi")]
        before = copy.deepcopy(messages)
        agent, _ = agent_with(
            [calls_msg(call("echo", {"text": "a"}, None)), reply("done")], tools=[ECHO_TOOL], system_prompt="init"
        )
        agent.run(messages, system_prompt="override")
        assert messages == before


# --------------------------------------------------------------------------- exit tools


class TestExitTools:
    def test_exit_tool_ends_the_run_after_it_ran(self) -> None:
        agent, gen = agent_with(
            [calls_msg(call("finish", {"answer": "42"}, "1")), reply("unused")],
            tools=[FINISH_TOOL, ECHO_TOOL],
            exit_conditions=["finish"],
        )
        out = agent.run([user("hi")])
        assert out["exit_reason"] == "finish"
        assert out["step_count"] == 1
        assert roles(out["messages"]) == ["user", "assistant", "tool"]
        assert out["last_message"].tool_call_result.result == "final: 42"
        assert len(gen.calls) == 1

    def test_exit_tool_with_text_condition(self) -> None:
        agent, _ = agent_with(
            [calls_msg(call("echo", {"text": "a"}, "1")), calls_msg(call("finish", {"answer": "x"}, "2"))],
            tools=[FINISH_TOOL, ECHO_TOOL],
            exit_conditions=["text", "finish"],
        )
        out = agent.run([user("hi")])
        assert (out["exit_reason"], out["step_count"]) == ("finish", 2)

    @pytest.mark.parametrize(
        ("order", "expected"), [(("parrot", "finish"), "parrot"), (("finish", "parrot"), "finish")]
    )
    def test_first_exit_tool_in_call_order_wins(self, order: tuple[str, str], expected: str) -> None:
        args = {"parrot": {"text": "x"}, "finish": {"answer": "y"}}
        agent, _ = agent_with(
            [calls_msg(call("echo", {"text": "z"}, "0"), *[call(n, args[n], n) for n in order])],
            tools=[FINISH_TOOL, PARROT_TOOL, ECHO_TOOL],
            exit_conditions=["finish", "parrot"],
        )
        out = agent.run([user("hi")])
        assert out["exit_reason"] == expected
        assert out["last_message"].tool_call_result.origin.tool_name == order[-1]

    def test_an_errored_exit_tool_cancels_the_exit(self) -> None:
        agent, gen = agent_with(
            [
                calls_msg(call("finish", {"answer": "ok"}, "1"), call("broken", {"x": 1}, "2")),
                reply("recovered"),
            ],
            tools=[FINISH_TOOL, BROKEN_TOOL],
            exit_conditions=["finish", "broken"],
        )
        out = agent.run([user("hi")])
        assert out["exit_reason"] == "text"
        assert out["step_count"] == 2
        assert len(gen.calls) == 2

    def test_exit_tool_with_invalid_arguments_does_not_exit(self) -> None:
        agent, _ = agent_with(
            [calls_msg(call("finish", {"wrong": 1}, "1")), reply("recovered")],
            tools=[FINISH_TOOL],
            exit_conditions=["finish"],
        )
        out = agent.run([user("hi")])
        assert out["exit_reason"] == "text"
        assert out["messages"][2].tool_call_result.error is True

    def test_an_error_on_a_non_exit_tool_does_not_block_the_exit(self) -> None:
        agent, _ = agent_with(
            [calls_msg(call("broken", {"x": 1}, "1"), call("finish", {"answer": "ok"}, "2"))],
            tools=[FINISH_TOOL, BROKEN_TOOL],
            exit_conditions=["finish"],
        )
        out = agent.run([user("hi")])
        assert out["exit_reason"] == "finish"
        assert out["messages"][2].tool_call_result.error is True

    def test_exit_tool_given_only_at_run_time(self) -> None:
        agent, _ = agent_with(
            [calls_msg(call("finish", {"answer": "x"}, "1"))], tools=[ECHO_TOOL], exit_conditions=["finish"]
        )
        out = agent.run([user("hi")], tools=[FINISH_TOOL])
        assert out["exit_reason"] == "finish"

    def test_unknown_exit_condition_is_accepted_and_warned_at_run_time(self) -> None:
        agent, _ = agent_with([reply("done")], tools=[ECHO_TOOL], exit_conditions=["not_a_tool"])
        with pytest.warns(UserWarning, match="not_a_tool"):
            out = agent.run([user("hi")])
        assert out["exit_reason"] == "text"


# --------------------------------------------------------------------------- system prompts (§3.8)


def system_messages(messages: list[ChatMessage]) -> list[int]:
    return [i for i, m in enumerate(messages) if m.role is ChatRole.SYSTEM]


class TestSystemPrompt:
    def test_init_prompt_is_prepended(self) -> None:
        agent, gen = agent_with([reply("ok")], system_prompt="You are terse.")
        out = agent.run([user("hi")])
        assert out["messages"][0].role is ChatRole.SYSTEM
        assert out["messages"][0].text == "You are terse."
        assert gen.calls[0]["messages"][0].text == "You are terse."

    def test_leading_system_message_is_kept_and_init_prompt_not_added(self) -> None:
        agent, gen = agent_with([reply("ok")], system_prompt="init")
        out = agent.run([ChatMessage.from_system("mine"), user("hi")])
        assert [m.text for m in out["messages"] if m.role is ChatRole.SYSTEM] == ["mine"]
        assert system_messages(gen.calls[0]["messages"]) == [0]

    def test_run_prompt_replaces_leading_system_message(self) -> None:
        agent, gen = agent_with([reply("ok")], system_prompt="init")
        out = agent.run([ChatMessage.from_system("mine"), user("hi")], system_prompt="run")
        assert out["messages"][0].text == "run"
        assert system_messages(out["messages"]) == [0]
        assert gen.calls[0]["messages"][0].text == "run"

    def test_run_prompt_is_prepended_when_there_is_no_system_message(self) -> None:
        agent, _ = agent_with([reply("ok")], system_prompt="init")
        out = agent.run([user("hi")], system_prompt="run")
        assert [m.text for m in out["messages"] if m.role is ChatRole.SYSTEM] == ["run"]
        assert out["messages"][0].text == "run"

    def test_no_prompt_no_system_message(self) -> None:
        agent, _ = agent_with([reply("ok")])
        assert system_messages(agent.run([user("hi")])["messages"]) == []

    def test_one_system_message_first_in_every_model_input(self) -> None:
        agent, gen = agent_with(
            [calls_msg(call("echo", {"text": "a"}, "1")), calls_msg(call("echo", {"text": "b"}, "2")), reply("ok")],
            tools=[ECHO_TOOL],
            system_prompt="sys",
        )
        agent.run([user("hi")])
        assert len(gen.calls) == 3
        for recorded in gen.calls:
            assert system_messages(recorded["messages"]) == [0]

    def test_a_system_message_after_the_first_position_is_named_in_a_warning(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        agent, gen = agent_with([reply("ok")], system_prompt="sys")
        history = [user("a"), reply("b"), ChatMessage.from_system("late"), user("c")]
        with caplog.at_level(logging.WARNING, logger="handrail.components.agents"):
            agent.run(history)
        [record] = [r for r in caplog.records if "after the first position" in r.getMessage()]
        assert (record.name, record.levelno) == ("handrail.components.agents", logging.WARNING)
        assert "(indexes [3])" in record.getMessage()
        assert system_messages(gen.calls[0]["messages"]) == [0, 3]


# --------------------------------------------------------------------------- state arguments


class TestArguments:
    def test_messages_must_be_chat_messages(self) -> None:
        agent, gen = agent_with([reply("ok")])
        with pytest.raises(TypeError):
            agent.run("hi")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"messages\[1\] is a str, not a ChatMessage"):
            agent.run([user("hi"), "there"])  # type: ignore[list-item]
        assert gen.calls == []

    def test_long_history_with_one_bad_message_names_it(self) -> None:
        agent, gen = agent_with([reply("ok")])
        history: list[Any] = [user(str(i)) for i in range(2_000)]
        history[1_234] = {"role": "user", "content": "a dict"}
        with pytest.raises(TypeError, match=r"messages\[1234\] is a dict"):
            agent.run(history)
        assert gen.calls == []

    def test_a_chat_message_subclass_is_accepted(self) -> None:
        @dataclasses.dataclass(slots=True)
        class Tagged(ChatMessage):
            tag: str = ""

        agent, gen = agent_with([reply("ok")])
        out = agent.run([Tagged(ChatRole.USER, [TextContent("hi")], tag="x")])
        assert out["last_message"].text == "ok"
        assert isinstance(gen.calls[0]["messages"][0], Tagged)

    @pytest.mark.parametrize("with_tools", [False, True])
    def test_a_generator_returning_no_replies_is_a_run_error(self, with_tools: bool) -> None:
        class Silent:
            def run(self, messages: list[ChatMessage], tools: Any = None) -> dict[str, Any]:
                return {"replies": []}

        agent = Agent(chat_generator=Silent(), tools=[ECHO_TOOL] if with_tools else None)
        with pytest.raises(RunError, match=r"Silent.run returned no replies"):
            agent.run([user("hi")])

    @pytest.mark.parametrize("role", ["user", "tool", "system"])
    def test_a_generator_replying_with_a_non_assistant_message_is_a_run_error(self, role: str) -> None:
        make = {
            "user": lambda: ChatMessage.from_user("I am the answer"),
            "system": lambda: ChatMessage.from_system("new rules"),
            "tool": lambda: ChatMessage.from_tool("r", ToolCall("echo", {}, "c1")),
        }[role]

        class Confused:
            def run(self, messages: list[ChatMessage], tools: Any = None) -> dict[str, Any]:
                return {"replies": [make()]}

        with pytest.raises(RunError, match=rf"returned a {role} message as replies\[0\]"):
            Agent(chat_generator=Confused(), tools=[ECHO_TOOL]).run([user("hi")])

    def test_streaming_callback_is_the_second_positional_parameter(self) -> None:
        chunks: list[Any] = []
        agent, _ = agent_with([[StreamingChunk(content="hey")]])
        out = agent.run([user("hi")], chunks.append)
        assert out["last_message"].text == "hey"
        assert [c.content for c in chunks] == ["hey"]


class TestStateArguments:
    def test_unknown_kwarg_is_a_value_error_before_any_model_call(self) -> None:
        agent, gen = agent_with([reply("ok")], state_schema={"city": {"type": str}})
        with pytest.raises(ValueError, match="bogus"):
            agent.run([user("hi")], bogus=1)
        assert gen.calls == []

    def test_kwarg_without_schema_is_a_value_error(self) -> None:
        agent, gen = agent_with([reply("ok")])
        with pytest.raises(ValueError):
            agent.run([user("hi")], city="Oslo")
        assert gen.calls == []

    def test_state_values_are_returned(self) -> None:
        agent, _ = agent_with([reply("ok")], state_schema={"city": {"type": str}, "unset": {"type": int}})
        out = agent.run([user("hi")], city="Oslo")
        assert out["city"] == "Oslo"
        assert "unset" not in out

    def test_tools_read_and_write_state(self) -> None:
        def lookup(city: str) -> dict[str, Any]:
            return {"docs": [f"doc about {city}"]}

        tool = create_tool_from_function(
            lookup, inputs_from_state={"city": "city"}, outputs_to_state={"documents": {"source": "docs"}}
        )
        agent, _ = agent_with(
            [calls_msg(call("lookup", {}, "1")), calls_msg(call("lookup", {"city": "Rome"}, "2")), reply("ok")],
            tools=[tool],
            state_schema={"city": {"type": str}, "documents": {"type": list[str]}},
        )
        out = agent.run([user("hi")], city="Oslo", documents=["seed"])
        assert out["documents"] == ["seed", "doc about Oslo", "doc about Rome"]
        assert out["city"] == "Oslo"

    def test_reserved_keys_are_not_run_kwargs(self) -> None:
        agent, gen = agent_with([reply("ok")])
        with pytest.raises(ValueError):
            agent.run([user("hi")], step_count=5)
        assert gen.calls == []


def test_a_user_prompt_template_has_the_router_sandbox_limits() -> None:
    from handrail.errors import ConfigurationError

    agent = Agent(chat_generator=ScriptedChatGenerator([reply("x")]), user_prompt="{{ ('a' * 300000000)|length }}")
    with pytest.raises(ConfigurationError, match="user_prompt could not be rendered: SecurityError"):
        agent.run([])
