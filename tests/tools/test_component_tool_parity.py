"""ComponentTool as in Haystack 2.19: chat generators, components held by a Pipeline, typed inputs, the constructor."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Optional, Union

import jsonschema
import pytest

from handrail import ChatMessage, Pipeline, ToolCall, component
from handrail.components.tools import ToolInvoker
from handrail.dataclasses.state import State
from handrail.errors import ToolInvocationError
from handrail.testing import ScriptedChatGenerator
from handrail.tools import ComponentTool, Tool


@dataclasses.dataclass
class Address:
    street: str
    city: str = "Rome"


@dataclasses.dataclass
class Person:
    name: str
    address: Address


@component
class Typed:
    @component.output_types(out=str)
    def run(
        self,
        person: Person,
        people: list[Person],
        maybe: Optional[Address] = None,  # noqa: UP045
        either: Union[int, str] = 1,  # noqa: UP007
        words: list[str] | None = None,
    ) -> dict[str, Any]:
        return {"out": repr((person, people, maybe, either, words))}


def test_the_constructor_takes_haystacks_parameters_in_its_order() -> None:
    params = inspect.signature(ComponentTool).parameters
    assert list(params)[:7] == [
        "component",
        "name",
        "description",
        "parameters",
        "outputs_to_string",
        "inputs_from_state",
        "outputs_to_state",
    ]
    assert [p.kind for p in list(params.values())[:4]] == [inspect.Parameter.POSITIONAL_OR_KEYWORD] * 4
    assert all(params[n].kind is inspect.Parameter.KEYWORD_ONLY for n in list(params)[4:])
    assert all(params[n].default is None for n in list(params)[1:])


def test_a_chat_generator_is_wrapped_its_messages_described_and_converted() -> None:
    generator = ScriptedChatGenerator([ChatMessage.from_assistant("Paris.")])
    t = ComponentTool(generator, name="ask_model", description="Ask another model.")
    schema = t.parameters
    assert schema["required"] == ["messages"]
    assert "tools" not in schema["properties"]  # Tool objects hold callables: a model cannot send them
    assert "streaming_callback" not in schema["properties"]
    item = schema["properties"]["messages"]["items"]
    assert item["required"] == ["role", "content"]
    assert item["properties"]["role"]["enum"] == ["user", "system", "assistant", "tool"]
    arguments = {"messages": [{"role": "user", "content": [{"text": "Capital of France?"}]}]}
    jsonschema.validate(arguments, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"messages": [{"role": "robot", "content": "x"}]}, schema)
    result = t.invoke(**arguments)
    assert result["replies"][0].text == "Paris."
    assert generator.calls[0]["messages"] == [ChatMessage.from_user("Capital of France?")]


def test_a_message_given_as_plain_text_content_converts_too() -> None:
    generator = ScriptedChatGenerator([ChatMessage.from_assistant("ok")])
    t = ComponentTool(generator)
    jsonschema.validate({"messages": [{"role": "system", "content": "Be brief."}]}, t.parameters)
    t.invoke(messages=[{"role": "system", "content": "Be brief."}])
    assert generator.calls[0]["messages"] == [ChatMessage.from_system("Be brief.")]


@pytest.mark.parametrize(
    ("messages", "got"),
    [
        ("hi", r"got the str 'hi' \(wrap a text as"),
        ({"role": "user", "content": "hi"}, "got the dict"),
        ([ChatMessage.from_user("ok"), 5], "got the int 5 at index 1"),
    ],
)
def test_messages_that_are_not_a_list_of_messages_are_refused_not_iterated(messages: Any, got: str) -> None:
    generator = ScriptedChatGenerator([ChatMessage.from_assistant("unused")])
    t = ComponentTool(generator)
    expected = (
        r"argument 'messages' could not be converted: expected a list of messages, each a ChatMessage or a dict "
        r'like \{"role": "user", "content": "..."\}, ' + got
    )
    with pytest.raises(ToolInvocationError, match=expected):
        t.invoke(messages=messages)
    assert generator.calls == []  # "hi" was sent as the messages "h" and "i"


def test_a_component_added_to_a_pipeline_is_refused_with_value_error() -> None:
    generator = ScriptedChatGenerator([])
    pipeline = Pipeline()
    pipeline.add_component("llm", generator)
    with pytest.raises(ValueError, match=r"has been added to a pipeline \(as 'llm'\) and can't be used"):
        ComponentTool(generator)


def test_dataclass_list_optional_and_union_inputs_convert_as_in_haystack() -> None:
    t = ComponentTool(Typed())
    props = t.parameters["properties"]
    assert props["person"] == {"$ref": "#/$defs/Person"}
    assert props["people"]["items"] == {"$ref": "#/$defs/Person"}
    assert props["either"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert t.parameters["required"] == ["person", "people"]
    result = t.invoke(
        person={"name": "a", "address": {"street": "s"}},
        people=[{"name": "b", "address": {"street": "t", "city": "X"}}],
        maybe={"street": "m"},
        either="x",
        words=["w"],
    )
    assert result == {
        "out": "(Person(name='a', address=Address(street='s', city='Rome')), "
        "[Person(name='b', address=Address(street='t', city='X'))], Address(street='m', city='Rome'), 'x', ['w'])"
    }


def test_a_dataclass_argument_missing_a_field_fails_the_call() -> None:
    with pytest.raises(ToolInvocationError, match=r"(?s)argument 'person' could not be converted.*address"):
        ComponentTool(Typed()).invoke(person={"name": "a"}, people=[])


@component
class Lookup:
    """Look a city up."""

    @component.output_types(temp=str, humidity=int)
    def run(self, city: str, unit: str = "C") -> dict[str, Any]:
        return {"temp": f"20{unit} in {city}", "humidity": 60}


def test_the_tool_invoker_runs_a_component_tool_and_writes_its_outputs_to_state() -> None:
    t = ComponentTool(Lookup(), outputs_to_state={"temp": {"source": "temp"}}, inputs_from_state={"unit": "unit"})
    assert "unit" not in t.parameters["properties"]
    invoker = ToolInvoker([t])
    state = State({"temp": {"type": str}, "unit": {"type": str}}, {"unit": "F"})
    call = ToolCall(tool_name="lookup", arguments={"city": "Oslo"}, id="c1")
    result = invoker.run([ChatMessage.from_assistant(tool_calls=[call])], state=state)
    assert result["tool_messages"][0].tool_call_result.result == '{"temp": "20F in Oslo", "humidity": 60}'
    assert state.get("temp") == "20F in Oslo"


def test_a_chat_generator_tool_round_trips() -> None:
    t = ComponentTool(ScriptedChatGenerator([ChatMessage.from_assistant("hi")]), name="ask", description="Ask.")
    data = t.to_dict()
    rebuilt = Tool.from_dict(data)
    assert isinstance(rebuilt, ComponentTool) and rebuilt.to_dict() == data
    assert rebuilt.parameters == t.parameters
    assert rebuilt.invoke(messages=[{"role": "user", "content": "x"}])["replies"][0].text == "hi"
