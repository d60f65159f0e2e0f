from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from handrail import Agent, ChatMessage, ToolCall
from handrail.core.component import component
from handrail.dataclasses.state import State
from handrail.errors import ConfigurationError, HandrailError, ToolInvocationError
from handrail.testing import ScriptedChatGenerator
from handrail.tools import ComponentTool, Tool
from handrail.tools.tool import ToolCallId


@component
class WeatherLookup:
    """Look up the weather of a city.

    Args:
        unit: The temperature unit.
    """

    def __init__(self, unit: str = "C") -> None:
        self.unit = unit
        self.warm_ups = 0

    def warm_up(self) -> None:
        self.warm_ups += 1

    @component.output_types(temp=str, humidity=int)
    def run(self, city: str, days: int = 1) -> dict[str, Any]:
        """Return the weather.

        Args:
            city: The city's name.
            days: How many days ahead.
        """
        return {"temp": f"20{self.unit} in {city} for {days}d", "humidity": 60}


@dataclasses.dataclass
class Point:
    x: int
    y: int


@component
class Mixed:
    @component.output_types(summary=str)
    def run(
        self,
        messages: list[ChatMessage],
        first: ChatMessage | None = None,
        point: Point | None = None,
        state: State | None = None,
        call_id: ToolCallId | None = None,
        streaming_callback: Callable[[Any], None] | None = None,
        user: str = "anon",
    ) -> dict[str, Any]:
        texts = [m.text for m in messages]
        return {
            "summary": f"{user}:{texts}:{first.text if first else None}:{point}:"
            f"{state.get('who') if state is not None else None}:{call_id}"
        }


@component
class AsyncEcho:
    def __init__(self) -> None:
        self.used: list[str] = []

    @component.output_types(text=str)
    def run(self, text: str) -> dict[str, Any]:
        self.used.append("sync")
        return {"text": text}

    @component.output_types(text=str)
    async def run_async(self, text: str) -> dict[str, Any]:
        self.used.append("async")
        return {"text": text}


def test_schema_name_and_description_come_from_the_component() -> None:
    t = ComponentTool(WeatherLookup())
    assert t.name == "weather_lookup"
    assert t.description == "Look up the weather of a city."
    assert t.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city's name."},
            "days": {"type": "integer", "description": "How many days ahead.", "default": 1},
        },
        "required": ["city"],
        "description": "Return the weather.",
    }
    assert t.invoke(city="Oslo") == {"temp": "20C in Oslo for 1d", "humidity": 60}


def test_explicit_name_description_and_parameters_win() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    t = ComponentTool(WeatherLookup(), name="weather", description="Weather.", parameters=schema)
    assert (t.name, t.description, t.parameters) == ("weather", "Weather.", schema)


def test_snake_case_names_and_fallback_description() -> None:
    @component
    class LLMRouterV2:
        @component.output_types(out=str)
        def run(self, text: str) -> dict[str, Any]:
            return {"out": text}

    t = ComponentTool(LLMRouterV2())
    assert t.name == "llm_router_v2"
    assert t.description == "Runs the LLMRouterV2 component."


@pytest.mark.parametrize("value", [WeatherLookup, object(), len])
def test_only_component_instances_are_accepted(value: Any) -> None:
    with pytest.raises(ValueError, match=r"needs a component instance.*is not a component") as caught:
        ComponentTool(value)
    assert isinstance(caught.value, HandrailError)  # Haystack raises ValueError here


def test_supplied_and_callable_sockets_stay_out_of_the_schema() -> None:
    t = ComponentTool(Mixed(), inputs_from_state={"name": "user"})
    assert sorted(t.parameters["properties"]) == ["first", "messages", "point"]
    assert t.parameters["required"] == ["messages"]
    assert t.roles.state_param == "state" and t.roles.call_id_param == "call_id" and t.roles.streaming_param


def test_unknown_inputs_from_state_socket_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"inputs_from_state names \['nope'\].*\['city', 'days'\]"):
        ComponentTool(WeatherLookup(), inputs_from_state={"x": "nope"})


def test_json_arguments_are_converted_to_the_socket_types() -> None:
    t = ComponentTool(Mixed())
    result = t.invoke(
        messages=[ChatMessage.from_user("hi").to_dict()],
        first=ChatMessage.from_assistant("yo").to_dict(),
        point={"x": 1, "y": 2},
    )
    assert result == {"summary": "anon:['hi']:yo:Point(x=1, y=2):None:None"}


def test_an_argument_that_cannot_be_converted_fails_the_call() -> None:
    t = ComponentTool(Mixed())
    with pytest.raises(ToolInvocationError, match="argument 'point' could not be converted"):
        t.invoke(messages=[], point={"x": "not a number", "y": 2})


def test_a_chat_message_argument_that_is_not_a_message_fails_the_call() -> None:
    with pytest.raises(ToolInvocationError, match=r"argument 'first' could not be converted: expected a message"):
        ComponentTool(Mixed()).invoke(messages=[], first="yo")


def test_warm_up_reaches_the_component_once() -> None:
    weather = WeatherLookup()
    t = ComponentTool(weather)
    t.warm_up()
    t.warm_up()
    assert weather.warm_ups == 1


def test_async_runs_use_run_async() -> None:
    echo = AsyncEcho()
    t = ComponentTool(echo)
    assert asyncio.run(t.invoke_async(text="a")) == {"text": "a"}
    assert t.invoke(text="b") == {"text": "b"}
    assert echo.used == ["async", "sync"]


def test_round_trip_through_to_dict_and_tool_from_dict() -> None:
    t = ComponentTool(WeatherLookup(unit="F"), name="weather", outputs_to_state={"temp": {"source": "temp"}})
    data = t.to_dict()
    assert data["type"] == "handrail.tools.component_tool.ComponentTool"
    assert data["init_parameters"]["component"] == {
        "type": f"{__name__}.WeatherLookup",
        "init_parameters": {"unit": "F"},
    }
    assert data["init_parameters"]["parameters"] is None  # generated again on load
    rebuilt = Tool.from_dict(data)
    assert isinstance(rebuilt, ComponentTool)
    assert rebuilt.to_dict() == data
    assert rebuilt.parameters == t.parameters
    assert rebuilt.invoke(city="Rome") == {"temp": "20F in Rome for 1d", "humidity": 60}


def test_an_agent_calls_the_component_and_merges_its_outputs_into_state() -> None:
    weather = ComponentTool(WeatherLookup(), outputs_to_state={"temp": {"source": "temp"}})
    call = ToolCall(tool_name="weather_lookup", arguments={"city": "Oslo", "days": 2}, id="c1")
    generator = ScriptedChatGenerator(
        [ChatMessage.from_assistant(tool_calls=[call]), ChatMessage.from_assistant("Mild.")]
    )
    agent = Agent(chat_generator=generator, tools=[weather], state_schema={"temp": {"type": str}})
    result = agent.run([ChatMessage.from_user("Weather in Oslo?")])
    assert result["temp"] == "20C in Oslo for 2d"
    tool_message = result["messages"][2]
    assert tool_message.tool_call_result.result == '{"temp": "20C in Oslo for 2d", "humidity": 60}'
    assert generator.calls[0]["tools"][0].name == "weather_lookup"
    generator.assert_complete()


def test_a_component_class_defined_in_a_function_is_refused_when_serialized() -> None:
    from handrail.errors import SerializationError

    @component
    class Local:
        @component.output_types(out=str)
        def run(self, x: str) -> dict[str, Any]:
            return {"out": x}

    tool = ComponentTool(Local(), name="local", description="A local component.")
    with pytest.raises(SerializationError, match=r"defined inside a function.*define it at module level"):
        Agent(chat_generator=ScriptedChatGenerator([]), tools=[tool]).to_dict()
