"""Agent construction, public attributes, not-yet-supported parameters and serialization."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.errors import ConfigurationError, ConfigurationTypeError, HandrailError
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Toolset

from .._helpers import (
    ECHO_TOOL,
    FINISH_TOOL,
    WEATHER_TOOL,
    EchoGenerator,
    NoToolsGenerator,
    call,
    calls_msg,
    collect_chunk,
    concat_handler,
    reply,
    user,
    warm_echo_tool,
)


def scripted(*texts: str) -> ScriptedChatGenerator:
    return ScriptedChatGenerator([reply(t) for t in texts])


# --------------------------------------------------------------------------- construction


class TestConstruction:
    def test_keyword_only(self) -> None:
        with pytest.raises(TypeError):
            Agent(scripted("x"))  # type: ignore[misc]

    def test_defaults_are_public_attributes(self) -> None:
        gen = scripted("x")
        agent = Agent(chat_generator=gen)
        assert agent.chat_generator is gen
        assert agent.tools == []
        assert agent.system_prompt is None
        assert agent.exit_conditions == ["text"]
        assert agent.state_schema is None
        assert agent.max_agent_steps == 100
        assert agent.streaming_callback is None
        assert agent.raise_on_tool_invocation_failure is False
        assert agent.tool_invoker_kwargs is None
        assert agent.tool_concurrency_limit == 8

    def test_init_values_are_public_attributes(self) -> None:
        schema = {"docs": {"type": list[str]}}
        agent = Agent(
            chat_generator=scripted("x"),
            tools=[ECHO_TOOL],
            system_prompt="sys",
            exit_conditions=["echo"],
            state_schema=schema,
            max_agent_steps=3,
            streaming_callback=collect_chunk,
            raise_on_tool_invocation_failure=True,
            tool_invoker_kwargs={"convert_result_to_json_string": True},
            tool_concurrency_limit=2,
        )
        assert agent.tools == [ECHO_TOOL]
        assert agent.system_prompt == "sys"
        assert agent.exit_conditions == ["echo"]
        assert agent.state_schema == schema
        assert agent.max_agent_steps == 3
        assert agent.streaming_callback is collect_chunk
        assert agent.raise_on_tool_invocation_failure is True
        assert agent.tool_invoker_kwargs == {"convert_result_to_json_string": True}
        assert agent.tool_concurrency_limit == 2

    def test_generator_without_tools_parameter_given_tools_is_a_type_error(self) -> None:
        with pytest.raises(TypeError, match="tools"):
            Agent(chat_generator=NoToolsGenerator(), tools=[ECHO_TOOL])

    def test_generator_without_tools_parameter_and_no_tools_is_fine(self) -> None:
        Agent(chat_generator=NoToolsGenerator())
        Agent(chat_generator=NoToolsGenerator(), tools=[])

    def test_chat_generator_needs_run(self) -> None:
        with pytest.raises(TypeError):
            Agent(chat_generator=object())

    @pytest.mark.parametrize("bad", ["text", [], ["text", 3], [""], ("text",)])
    def test_bad_exit_conditions(self, bad: Any) -> None:
        with pytest.raises(ValueError):
            Agent(chat_generator=scripted("x"), exit_conditions=bad)

    def test_unknown_exit_condition_names_are_accepted_at_construction(self) -> None:
        agent = Agent(chat_generator=scripted("x"), tools=[ECHO_TOOL], exit_conditions=["later_tool", "text"])
        assert agent.exit_conditions == ["later_tool", "text"]

    @pytest.mark.parametrize(
        "key", ["step_count", "token_usage", "tool_call_counts", "exit_reason", "stop_run", "continue_run"]
    )
    def test_reserved_state_keys_are_refused(self, key: str) -> None:
        with pytest.raises(ValueError, match="reserved"):
            Agent(chat_generator=scripted("x"), state_schema={key: {"type": int}})

    @pytest.mark.parametrize(
        "schema",
        [{"k": {}}, {"k": {"type": "str"}}, {"k": {"type": str, "handler": "nope"}}, {"k": "str"}],
    )
    def test_invalid_state_schema(self, schema: Any) -> None:
        with pytest.raises(ValueError):
            Agent(chat_generator=scripted("x"), state_schema=schema)

    @pytest.mark.parametrize("bad", [0, -1, 1.5, True])
    def test_bad_tool_concurrency_limit(self, bad: Any) -> None:
        with pytest.raises(ValueError):
            Agent(chat_generator=scripted("x"), tool_concurrency_limit=bad)

    @pytest.mark.parametrize("bad", [-1, 1.5, None, "3"])
    def test_bad_max_agent_steps(self, bad: Any) -> None:
        with pytest.raises(ValueError):
            Agent(chat_generator=scripted("x"), max_agent_steps=bad)

    def test_conflicting_max_workers_is_a_value_error(self) -> None:
        with pytest.raises(ValueError, match="max_workers"):
            Agent(chat_generator=scripted("x"), tool_concurrency_limit=4, tool_invoker_kwargs={"max_workers": 2})

    def test_matching_max_workers_is_accepted(self) -> None:
        Agent(chat_generator=scripted("x"), tool_concurrency_limit=4, tool_invoker_kwargs={"max_workers": 4})
        Agent(chat_generator=scripted("x"), tool_invoker_kwargs={"max_workers": 8})

    def test_unknown_tool_invoker_kwargs_key(self) -> None:
        with pytest.raises(ValueError):
            Agent(chat_generator=scripted("x"), tool_invoker_kwargs={"bogus": 1})

    def test_duplicate_tool_names_are_a_value_error(self) -> None:
        with pytest.raises(ValueError, match="Duplicate"):
            Agent(chat_generator=scripted("x"), tools=[ECHO_TOOL, Toolset([ECHO_TOOL])])

    def test_async_init_callback_is_accepted(self) -> None:
        async def cb(chunk: Any) -> None:
            pass

        Agent(chat_generator=scripted("x"), streaming_callback=cb)


# --------------------------------------------------------------------------- stores and pause parameters


STORE_INIT: dict[str, Any] = {
    "chat_message_store": object(),
    "memory_store": object(),
}

STORE_RUN: dict[str, Any] = {
    "chat_message_store_kwargs": {"chat_history_id": "1"},
    "memory_store_kwargs": {"user_id": "u"},
}


class TestStoreAndPauseParameters:
    @pytest.mark.parametrize("name", sorted(STORE_INIT))
    def test_an_object_that_is_not_a_store_is_refused(self, name: str) -> None:
        with pytest.raises(ConfigurationTypeError, match=name) as info:
            Agent(chat_generator=scripted("x"), **{name: STORE_INIT[name]})
        assert isinstance(info.value, TypeError)
        assert isinstance(info.value, HandrailError)

    @pytest.mark.parametrize("name", sorted(STORE_RUN))
    def test_store_kwargs_without_the_store_are_refused(self, name: str) -> None:
        gen = scripted("x")
        agent = Agent(chat_generator=gen)
        with pytest.raises(ConfigurationError, match=name):
            agent.run([user("hi")], **{name: STORE_RUN[name]})
        assert gen.calls == []

    @pytest.mark.parametrize("name", sorted(STORE_RUN))
    async def test_store_kwargs_without_the_store_are_refused_async(self, name: str) -> None:
        gen = scripted("x")
        agent = Agent(chat_generator=gen)
        with pytest.raises(ConfigurationError, match=name):
            await agent.run_async([user("hi")], **{name: STORE_RUN[name]})
        assert gen.calls == []

    @pytest.mark.parametrize("name", sorted(STORE_RUN))
    def test_store_kwargs_without_ids_do_nothing(self, name: str) -> None:
        agent = Agent(chat_generator=scripted("x"))
        assert agent.run([user("hi")], **{name: {}})["exit_reason"] == "text"

    @pytest.mark.parametrize("name", ["break_point", "snapshot"])
    def test_pause_parameters_of_the_wrong_type_are_named(self, name: str) -> None:
        gen = scripted("x")
        with pytest.raises(ConfigurationTypeError, match=name):
            Agent(chat_generator=gen).run([] if name == "snapshot" else [user("hi")], **{name: object()})
        assert gen.calls == []

    def test_allow_drift_false_is_fine(self) -> None:
        agent = Agent(chat_generator=scripted("x"))
        assert agent.run([user("hi")], allow_drift=False)["exit_reason"] == "text"

    def test_a_store_assigned_after_construction_is_checked_at_run(self) -> None:
        gen = scripted("x")
        agent = Agent(chat_generator=gen)
        agent.memory_store = object()
        with pytest.raises(ConfigurationTypeError, match="memory_store"):
            agent.run([user("hi")])
        assert gen.calls == []


# --------------------------------------------------------------------------- attributes read afresh


class TestAttributesReadAfresh:
    def test_system_prompt_and_max_agent_steps(self) -> None:
        gen = ScriptedChatGenerator(
            [reply("one"), calls_msg(call("echo", {"text": "a"}, "1")), calls_msg(call("echo", {"text": "b"}, "2"))]
        )
        agent = Agent(chat_generator=gen, tools=[ECHO_TOOL], system_prompt="first")
        assert agent.run([user("hi")])["messages"][0].text == "first"
        agent.system_prompt = "second"
        agent.max_agent_steps = 1
        out = agent.run([user("hi")])
        assert out["messages"][0].text == "second"
        assert out["exit_reason"] == "max_agent_steps"
        assert out["step_count"] == 1
        agent.system_prompt = None
        agent.max_agent_steps = 1
        out = agent.run([user("hi")])
        assert out["messages"][0].role.value == "user"

    def test_tools_and_exit_conditions(self) -> None:
        gen = ScriptedChatGenerator([calls_msg(call("finish", {"answer": "x"}, "1"))])
        agent = Agent(chat_generator=gen, tools=[ECHO_TOOL])
        agent.tools = [ECHO_TOOL, FINISH_TOOL]
        agent.exit_conditions = ["finish"]
        out = agent.run([user("hi")])
        assert out["exit_reason"] == "finish"
        assert [t.name for t in gen.calls[0]["tools"]] == ["echo", "finish"]

    def test_chat_generator(self) -> None:
        agent = Agent(chat_generator=scripted("a"))
        agent.chat_generator = scripted("b")
        assert agent.run([user("hi")])["last_message"].text == "b"

    def test_invalid_reassignment_is_checked_at_run(self) -> None:
        gen = scripted("x")
        agent = Agent(chat_generator=gen)
        agent.max_agent_steps = -1
        with pytest.raises(ValueError):
            agent.run([user("hi")])
        agent.max_agent_steps = 5
        agent.exit_conditions = []
        with pytest.raises(ValueError):
            agent.run([user("hi")])
        agent.exit_conditions = ["text"]
        agent.tool_concurrency_limit = 0
        with pytest.raises(ValueError):
            agent.run([user("hi")])
        assert gen.calls == []

    def test_generator_swapped_for_one_without_tools_is_checked_at_run(self) -> None:
        agent = Agent(chat_generator=scripted("x"), tools=[ECHO_TOOL])
        agent.chat_generator = NoToolsGenerator()
        with pytest.raises(TypeError):
            agent.run([user("hi")])

    def test_exit_conditions_reassigned_to_none_means_default(self) -> None:
        agent = Agent(chat_generator=scripted("x"), exit_conditions=["text"])
        agent.exit_conditions = None  # type: ignore[assignment]
        assert agent.exit_conditions == ["text"]
        assert agent.run([user("hi")])["exit_reason"] == "text"
        assert agent.to_dict()["init_parameters"]["exit_conditions"] == ["text"]

    def test_tools_reassigned_to_none_means_no_tools(self) -> None:
        agent = Agent(chat_generator=scripted("x"), tools=[ECHO_TOOL])
        agent.tools = None  # type: ignore[assignment]
        assert agent.tools == []
        assert agent.run([user("hi")])["exit_reason"] == "text"
        assert agent.chat_generator.calls[0]["tools"] is None


# --------------------------------------------------------------------------- warm-up


class WarmGenerator(ScriptedChatGenerator):
    def __init__(self, replies: list[Any]) -> None:
        super().__init__(replies)
        self.warm_ups = 0

    def warm_up(self) -> None:
        self.warm_ups += 1


class TestWarmUp:
    def test_first_run_warms_generator_and_tools_once(self) -> None:
        gen = WarmGenerator([reply("a"), reply("b")])
        tool = warm_echo_tool()
        agent = Agent(chat_generator=gen, tools=[tool])
        assert (gen.warm_ups, tool.warm_ups) == (0, 0)
        agent.run([user("hi")])
        agent.run([user("hi")])
        assert gen.warm_ups == 1
        assert tool.warm_ups == 1

    def test_explicit_warm_up_is_idempotent(self) -> None:
        gen = WarmGenerator([reply("a")])
        agent = Agent(chat_generator=gen, tools=[warm_echo_tool()])
        agent.warm_up()
        agent.warm_up()
        agent.run([user("hi")])
        assert gen.warm_ups == 1

    def test_run_time_tools_are_warmed(self) -> None:
        tool = warm_echo_tool()
        Agent(chat_generator=scripted("x")).run([user("hi")], tools=[tool])
        assert tool.warm_ups >= 1

    def test_reassigned_tools_are_warmed(self) -> None:
        agent = Agent(chat_generator=scripted("a", "b"))
        agent.run([user("hi")])
        tool = warm_echo_tool()
        agent.tools = [tool]
        agent.run([user("hi")])
        assert tool.warm_ups >= 1

    def test_reassigned_generator_is_warmed(self) -> None:
        agent = Agent(chat_generator=scripted("a"))
        agent.run([user("hi")])
        gen = WarmGenerator([reply("b")])
        agent.chat_generator = gen
        agent.run([user("hi")])
        assert gen.warm_ups == 1


# --------------------------------------------------------------------------- serialization


def full_agent() -> Agent:
    return Agent(
        chat_generator=ScriptedChatGenerator([reply("hi"), calls_msg(call("echo", {"text": "x"}, "1"))]),
        tools=[WEATHER_TOOL, Toolset([ECHO_TOOL])],
        system_prompt="You help.",
        exit_conditions=["text", "echo"],
        state_schema={"docs": {"type": list[str], "handler": concat_handler}, "city": {"type": str}},
        max_agent_steps=7,
        streaming_callback=collect_chunk,
        raise_on_tool_invocation_failure=True,
        tool_invoker_kwargs={"convert_result_to_json_string": True, "max_workers": 3},
        tool_concurrency_limit=3,
    )


class TestSerialization:
    def test_to_dict_shape(self) -> None:
        data = full_agent().to_dict()
        assert data["type"] == "handrail.components.agents.agent.Agent"
        params = data["init_parameters"]
        assert params["chat_generator"]["type"] == "handrail.testing.scripted.ScriptedChatGenerator"
        assert params["system_prompt"] == "You help."
        assert params["exit_conditions"] == ["text", "echo"]
        assert params["state_schema"] == {
            "docs": {"type": "list[str]", "handler": "tests.components._helpers.concat_handler"},
            "city": {"type": "str", "handler": None},
        }
        assert params["max_agent_steps"] == 7
        assert params["streaming_callback"] == "tests.components._helpers.collect_chunk"
        assert params["raise_on_tool_invocation_failure"] is True
        assert params["tool_invoker_kwargs"] == {"convert_result_to_json_string": True, "max_workers": 3}
        assert params["tool_concurrency_limit"] == 3
        assert len(params["tools"]) == 2
        json.dumps(data)

    def test_round_trip_equal(self) -> None:
        data = full_agent().to_dict()
        back = Agent.from_dict(data)
        assert back.to_dict() == data
        assert back.streaming_callback is collect_chunk
        assert back.state_schema["docs"]["handler"] is concat_handler
        assert back.state_schema["docs"]["type"] == list[str]
        assert isinstance(back.tools[1], Toolset)

    def test_from_dict_does_not_mutate_its_input(self) -> None:
        data = full_agent().to_dict()
        frozen = copy.deepcopy(data)
        Agent.from_dict(data)
        assert data == frozen

    def test_round_trip_of_defaults(self) -> None:
        agent = Agent(chat_generator=EchoGenerator())
        data = agent.to_dict()
        assert data["init_parameters"]["tools"] in ([], None)
        assert data["init_parameters"]["state_schema"] is None
        assert data["init_parameters"]["streaming_callback"] is None
        back = Agent.from_dict(data)
        assert back.to_dict() == data

    def test_round_tripped_agent_runs(self) -> None:
        agent = Agent(
            chat_generator=ScriptedChatGenerator([calls_msg(call("echo", {"text": "x"}, "1")), reply("done")]),
            tools=[ECHO_TOOL],
        )
        back = Agent.from_dict(agent.to_dict())
        out = back.run([user("hi")])
        assert out["last_message"].text == "done"
        assert out["tool_call_counts"] == {"echo": 1}

    @pytest.mark.parametrize(
        ("key", "value", "fragment"),
        [
            ("state_schema", {"docs": {"type": ["str"]}}, r"state_schema\['docs'\] must be \{'type'"),
            ("state_schema", {"docs": "list[str]"}, r"state_schema\['docs'\] must be \{'type'"),
            ("state_schema", ["docs"], "state_schema must be a mapping"),
            ("confirmation_strategies", ["x"], "confirmation_strategies must map tool names"),
            ("confirmation_strategies", {"[1, 2]": {}}, "is not a JSON array of tool names"),
        ],
    )
    def test_from_dict_names_a_field_of_the_wrong_shape(self, key: str, value: Any, fragment: str) -> None:
        from handrail.errors import SerializationError

        data = full_agent().to_dict()
        data["init_parameters"][key] = value
        with pytest.raises(SerializationError, match=fragment):
            Agent.from_dict(data)

    @pytest.mark.parametrize(
        ("change", "field"),
        [
            (lambda p: p["tools"][0]["init_parameters"].update(function="no_such_module.f"), "tools[0].function"),
            (lambda p: p["tools"][1]["init_parameters"]["tools"][0]["init_parameters"].update(function=5),
             "tools[1].tools[0].function"),
            (lambda p: p.update(streaming_callback=3), "streaming_callback"),
        ],
    )  # fmt: skip
    def test_from_dict_errors_name_the_field_and_no_private_class(self, change: Any, field: str) -> None:
        import traceback

        from handrail.errors import SerializationError

        data = full_agent().to_dict()
        change(data["init_parameters"])
        with pytest.raises(SerializationError) as caught:
            Agent.from_dict(data)
        shown = "".join(traceback.format_exception_only(caught.value))
        assert "_FieldError" not in str(caught.value) and "_FieldError" not in shown  # was ...serialization._FieldError
        assert shown.startswith("handrail.errors.SerializationError: ")
        assert field in str(caught.value)

    def test_lambda_callback_cannot_be_serialized(self) -> None:
        agent = Agent(chat_generator=scripted("x"), streaming_callback=lambda c: None)
        with pytest.raises(ConfigurationError):
            agent.to_dict()


def test_to_dict_names_a_value_that_is_not_json_data() -> None:
    from handrail.errors import SerializationError

    agent = Agent(chat_generator=scripted("x"), tool_invoker_kwargs={"convert_result_to_json_string": object()})
    with pytest.raises(
        SerializationError, match=r"\['tool_invoker_kwargs'\]\['convert_result_to_json_string'\]: an object"
    ):
        agent.to_dict()


@pytest.mark.parametrize(
    ("kwargs", "where"),
    [
        ({"state_schema": {"notes": {"type": list, "handler": lambda a, b: a}}}, "state_schema['notes'].handler"),
        ({"streaming_callback": lambda chunk: None}, "streaming_callback"),
    ],
)
def test_to_dict_names_the_part_that_cannot_be_serialized(kwargs: dict[str, Any], where: str) -> None:
    from handrail.errors import SerializationError

    agent = Agent(chat_generator=scripted("x"), **kwargs)
    with pytest.raises(SerializationError) as info:
        agent.to_dict()
    assert str(info.value).startswith(f"Agent.to_dict(): {where}: Cannot serialize '<lambda>'")
