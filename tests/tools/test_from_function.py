from __future__ import annotations

import copy
import dataclasses
import enum
import functools
import inspect
import json
from collections.abc import Callable
from typing import Annotated, Any, Literal, Optional

import pydantic
import pytest

from handrail.core.serialization import object_from_dict
from handrail.dataclasses.state import State
from handrail.errors import ConfigurationError, SchemaGenerationError, ToolInvocationError
from handrail.tools import Tool, ToolCallId, create_tool_from_function, tool
from handrail.tools.from_function import FunctionTool
from handrail.tools.utils import deserialize_tools


def test_simple_function_gives_the_exact_schema() -> None:
    def f(city: str) -> str:
        return city

    t = create_tool_from_function(f)
    assert t.parameters == {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
    assert t.name == "f"
    assert t.description == ""
    assert t.function is f
    assert t.async_function is None


def test_no_parameters_gives_an_empty_object_schema() -> None:
    def ping() -> str:
        return "pong"

    assert create_tool_from_function(ping).parameters == {"type": "object", "properties": {}}


def test_description_is_the_cleaned_docstring() -> None:
    def f(x: int) -> int:
        """Do a thing.

        More detail.
        """
        return x

    assert create_tool_from_function(f).description == "Do a thing.\n\nMore detail."


def test_explicit_description_and_name_win_and_empty_description_is_kept() -> None:
    def f(x: int) -> int:
        """Docstring."""
        return x

    assert create_tool_from_function(f, description="").description == ""
    t = create_tool_from_function(f, name="other", description="Explicit.")
    assert (t.name, t.description) == ("other", "Explicit.")


def test_annotated_literal_and_defaults() -> None:
    def f(
        city: Annotated[str, "The city"],
        unit: Annotated[Literal["celsius", "fahrenheit"], "The unit"] = "celsius",
        days: int = 3,
    ) -> str:
        return city

    assert create_tool_from_function(f).parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city"},
            "unit": {
                "type": "string",
                "enum": ["celsius", "fahrenheit"],
                "default": "celsius",
                "description": "The unit",
            },
            "days": {"type": "integer", "default": 3},
        },
        "required": ["city"],
    }


def test_annotated_keeps_other_metadata() -> None:
    def f(count: Annotated[int, pydantic.Field(ge=0), "How many"]) -> int:
        return count

    assert create_tool_from_function(f).parameters["properties"]["count"] == {
        "type": "integer",
        "minimum": 0,
        "description": "How many",
    }


def test_optional_becomes_any_of() -> None:
    def f(a: str | None = None, b: Optional[int] = None, c: int | None = 5) -> None:  # noqa: UP045
        return None

    props = create_tool_from_function(f).parameters["properties"]
    assert props["a"] == {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}
    assert props["b"] == {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}
    assert props["c"] == {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 5}
    assert "required" not in create_tool_from_function(f).parameters


@dataclasses.dataclass
class Address:
    """A postal address."""

    street: str
    title: str = "home"


class Person(pydantic.BaseModel):
    name: str
    address: Address


def test_titles_are_removed_but_a_property_named_title_survives() -> None:
    def f(title: str, person: Person, addresses: list[Address] | None = None) -> None:
        return None

    schema = create_tool_from_function(f).parameters
    assert schema["properties"]["title"] == {"type": "string"}
    assert schema["required"] == ["title", "person"]
    assert schema["properties"]["person"] == {"$ref": "#/$defs/Person"}
    assert schema["$defs"]["Address"] == {
        "description": "A postal address.",
        "type": "object",
        "properties": {"street": {"type": "string"}, "title": {"type": "string", "default": "home"}},
        "required": ["street"],
    }
    assert schema["$defs"]["Person"] == {
        "type": "object",
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/Address"}},
        "required": ["name", "address"],
    }


def _walk_titles(node: Any, in_names: bool = False) -> list[Any]:
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "title" and not in_names:
                found.append(value)
            found += _walk_titles(value, in_names=key in ("properties", "$defs") and not in_names)
    elif isinstance(node, list):
        for item in node:
            found += _walk_titles(item)
    return found


def test_no_title_keyword_anywhere_in_nested_schemas() -> None:
    def f(title: str, person: Person, addresses: list[Address] | None = None) -> None:
        return None

    assert _walk_titles(create_tool_from_function(f).parameters) == []


def test_defaults_that_are_data_keep_their_title_key() -> None:
    def f(opts: dict[str, str] = {"title": "x"}) -> None:  # noqa: B006
        return None

    assert create_tool_from_function(f).parameters["properties"]["opts"]["default"] == {"title": "x"}


def test_parameter_names_that_clash_with_pydantic_do_not_warn() -> None:
    def f(json: str, model_config: int, copy: bool, _private: int = 0, schema: str = "") -> None:
        return None

    props = create_tool_from_function(f).parameters["properties"]
    assert list(props) == ["json", "model_config", "copy", "_private", "schema"]


def test_non_json_default_is_left_out_silently() -> None:
    sentinel = object()

    def f(x: Any = sentinel) -> None:
        return None

    assert create_tool_from_function(f).parameters == {"type": "object", "properties": {"x": {}}}


def test_missing_type_hint_names_function_and_parameter() -> None:
    def f(p, q: int) -> None:  # type: ignore[no-untyped-def]
        return None

    with pytest.raises(SchemaGenerationError) as info:
        create_tool_from_function(f)
    assert str(info.value) == "Function 'f': parameter 'p' does not have a type hint."
    assert isinstance(info.value, ValueError)


class Opaque:
    pass


def test_unsupported_type_hint_is_a_schema_generation_error() -> None:
    def f(x: Opaque) -> None:
        return None

    with pytest.raises(SchemaGenerationError, match="Function 'f': cannot build a JSON Schema") as info:
        create_tool_from_function(f)
    assert info.value.__cause__ is not None


def test_unresolvable_forward_reference_is_a_schema_generation_error() -> None:
    def f(x: NotDefinedAnywhere) -> None:  # type: ignore[name-defined]  # noqa: F821
        return None

    with pytest.raises(SchemaGenerationError, match="cannot resolve its type hints"):
        create_tool_from_function(f)


def test_positional_only_parameter_is_refused() -> None:
    def f(x: int, /) -> None:
        return None

    with pytest.raises(SchemaGenerationError, match="positional-only"):
        create_tool_from_function(f)


def test_state_tool_call_id_callable_and_varargs_are_kept_out_of_the_schema() -> None:
    def f(
        query: str,
        state: State,
        maybe_state: Optional[State],  # noqa: UP045
        call_id: ToolCallId,
        streaming_callback: Callable[[str], None] | None = None,
        on_done: Callable[..., Any] | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> str:
        return query

    t = create_tool_from_function(f)
    assert t.parameters == {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    }
    assert t.roles.call_id_param == "call_id"
    assert t.roles.state_param in ("state", "maybe_state")


def test_inputs_from_state_parameters_are_kept_out_even_without_hints() -> None:
    def f(query: str, documents, user: str) -> str:  # type: ignore[no-untyped-def]
        return query

    t = create_tool_from_function(f, inputs_from_state={"docs": "documents", "user_name": "user"})
    assert t.parameters == {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    }
    assert t.inputs_from_state == {"docs": "documents", "user_name": "user"}


def test_inputs_from_state_unknown_parameter_is_refused_at_build_time() -> None:
    def f(query: str) -> str:
        return query

    with pytest.raises(ConfigurationError, match="'missing'"):
        create_tool_from_function(f, inputs_from_state={"docs": "missing"})


def test_inputs_from_state_of_the_wrong_type_is_reported_by_tool() -> None:
    def f(query: str) -> str:
        return query

    with pytest.raises(TypeError):
        create_tool_from_function(f, inputs_from_state=["query"])  # type: ignore[arg-type]


def test_outputs_configs_are_passed_to_the_tool() -> None:
    def f(query: str) -> dict[str, Any]:
        return {"docs": [query]}

    t = create_tool_from_function(
        f, outputs_to_state={"documents": {"source": "docs"}}, outputs_to_string={"source": "docs"}
    )
    assert t.outputs_to_state == {"documents": {"source": "docs"}}
    assert t.outputs_to_string == {"source": "docs"}


def test_methods_partials_and_callable_instances() -> None:
    class Calculator:
        def double(self, x: int) -> int:
            return 2 * x

        def __call__(self, text: str) -> str:
            return text

    def scale(x: int, factor: int) -> int:
        return x * factor

    method_tool = create_tool_from_function(Calculator().double)
    assert method_tool.parameters["properties"] == {"x": {"type": "integer"}}
    assert method_tool.invoke(x=4) == 8
    instance_tool = create_tool_from_function(Calculator(), name="echo")
    assert instance_tool.parameters["required"] == ["text"]
    partial_tool = create_tool_from_function(functools.partial(scale, factor=3), name="triple")
    assert partial_tool.invoke(x=2) == 6
    with pytest.raises(ConfigurationError, match="pass name="):
        create_tool_from_function(functools.partial(scale, factor=3))


def test_generated_schema_validates_model_arguments() -> None:
    def f(city: str, unit: Literal["c", "f"] = "c") -> str:
        return city

    t = create_tool_from_function(f)
    assert t.arguments_error({"city": "Paris"}) is None
    assert t.arguments_error({"city": "Paris", "unit": "k"}) is not None
    assert t.arguments_error({}) == "'city' is a required property"


async def test_async_function_becomes_async_function() -> None:
    async def fetch(url: str) -> str:
        """Fetch a URL."""
        return f"<{url}>"

    t = create_tool_from_function(fetch)
    assert t.function is None
    assert t.async_function is fetch
    assert t.description == "Fetch a URL."
    assert t.parameters["required"] == ["url"]
    assert await t.invoke_async(url="x") == "<x>"
    with pytest.raises(ToolInvocationError, match="only an async_function"):
        t.invoke(url="x")


def test_bare_decorator() -> None:
    @tool
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Hello, {name}!"

    assert isinstance(greet, Tool)
    assert greet.name == "greet"
    assert greet.description == "Greet someone."
    assert greet.invoke(name="Ada") == "Hello, Ada!"
    assert greet.function is not None
    assert greet.function(name="Bob") == "Hello, Bob!"


def test_decorator_with_keywords_and_with_empty_parentheses() -> None:
    @tool(name="lookup", description="Look up.", inputs_from_state={"user_name": "user"})
    def find(query: str, user: str) -> str:
        return f"{user}:{query}"

    assert (find.name, find.description) == ("lookup", "Look up.")
    assert find.parameters["required"] == ["query"]
    assert find.inputs_from_state == {"user_name": "user"}

    @tool()
    def plain(x: int) -> int:
        return x

    assert plain.name == "plain"


def test_decorator_errors_surface_at_decoration_time() -> None:
    with pytest.raises(SchemaGenerationError):

        @tool
        def bad(x) -> None:  # type: ignore[no-untyped-def]
            return None


def test_google_docstring_sections_are_left_out_of_the_description() -> None:
    def f(city: str, days: int = 3) -> str:
        """Get the weather forecast.

        Uses the public service.

        Args:
            city: The city's name.
            days: How many days.

        Returns:
            The forecast.

        Raises:
            ValueError: For an unknown city.
        """
        return city

    t = create_tool_from_function(f)
    assert t.description == "Get the weather forecast.\n\nUses the public service."
    assert t.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city's name."},
            "days": {"type": "integer", "default": 3, "description": "How many days."},
        },
        "required": ["city"],
    }


def test_every_section_header_ends_the_description() -> None:
    for header in ("Arguments", "Parameters", "Returns", "Yields", "Raises", "Example", "Examples", "Note", "Notes"):

        def f(x: int) -> int:
            return x

        f.__doc__ = f"Do it.\n\n    {header}:\n        x: The x.\n    "
        assert create_tool_from_function(f).description == "Do it.", header


def test_arguments_and_parameters_headers_give_parameter_descriptions() -> None:
    def f(a: int, b: int) -> int:
        """Add.

        Arguments:
            a: First.

        Parameters:
            b: Second.
        """
        return a + b

    props = create_tool_from_function(f).parameters["properties"]
    assert props["a"]["description"] == "First."
    assert props["b"]["description"] == "Second."


def test_multi_line_parameter_descriptions_are_joined_with_a_space() -> None:
    def f(query: str, limit: int = 10) -> str:
        """Search.

        Args:
            query: The text to look for,
                matched case-insensitively
                    against titles.
            limit:
                At most this many results.
        """
        return query

    props = create_tool_from_function(f).parameters["properties"]
    assert props["query"]["description"] == "The text to look for, matched case-insensitively against titles."
    assert props["limit"]["description"] == "At most this many results."


def test_parameter_entries_with_a_type_in_parentheses() -> None:
    def f(count: int, mapping: dict[str, int] | None = None) -> int:
        """Count.

        Args:
            count (int): How many.
            mapping (dict[str, int] | None): Optional (extra) weights.
        """
        return count

    props = create_tool_from_function(f).parameters["properties"]
    assert props["count"] == {"type": "integer", "description": "How many."}
    assert props["mapping"]["description"] == "Optional (extra) weights."


def test_annotated_description_wins_over_the_docstring() -> None:
    def f(city: Annotated[str, "From Annotated"], days: int) -> str:
        """Forecast.

        Args:
            city: From the docstring.
            days: Days.
        """
        return city

    props = create_tool_from_function(f).parameters["properties"]
    assert props["city"]["description"] == "From Annotated"
    assert props["days"]["description"] == "Days."


def test_explicit_description_wins_and_parameter_descriptions_still_come_from_the_docstring() -> None:
    def f(city: str) -> str:
        """Docstring text.

        Args:
            city: The city.
        """
        return city

    t = create_tool_from_function(f, description="Explicit.")
    assert t.description == "Explicit."
    assert t.parameters["properties"]["city"] == {"type": "string", "description": "The city."}

    @tool(description="")
    def g(city: str) -> str:
        """Docstring text.

        Args:
            city: The city.
        """
        return city

    assert g.description == ""
    assert g.parameters["properties"]["city"]["description"] == "The city."


def test_no_docstring_gives_an_empty_description_and_no_parameter_descriptions() -> None:
    def f(x: int) -> int:
        return x

    t = create_tool_from_function(f)
    assert t.description == ""
    assert t.parameters["properties"] == {"x": {"type": "integer"}}


def test_docstring_with_only_an_args_section_gives_an_empty_description() -> None:
    def f(x: int) -> int:
        """Args:
        x: The x.
        """
        return x

    def g(x: int) -> int:
        """
        Args:
            x: The x.
        """
        return x

    for func in (f, g):
        t = create_tool_from_function(func)
        assert t.description == ""
        assert t.parameters["properties"]["x"] == {"type": "integer", "description": "The x."}


def test_docstring_without_sections_is_kept_whole_and_unknown_entries_are_ignored() -> None:
    def f(x: int) -> int:
        """First line.

            Indented detail: kept as is.

        Last line.
        """
        return x

    assert create_tool_from_function(f).description == "First line.\n\n    Indented detail: kept as is.\n\nLast line."

    def g(x: int, *args: int, **kwargs: int) -> int:
        """Sum.

        Args:
            x: The x.
            *args: More.
            **kwargs: Named.
            not_a_parameter: Ignored.
            this line has no colon
        """
        return x

    assert create_tool_from_function(g).parameters["properties"] == {"x": {"type": "integer", "description": "The x."}}


def test_decorator_reads_the_google_docstring() -> None:
    @tool
    def greet(name: str) -> str:
        """Greet someone.

        Args:
            name: Who to greet.

        Returns:
            The greeting.
        """
        return f"Hello, {name}!"

    assert greet.description == "Greet someone."
    assert greet.parameters["properties"]["name"] == {"type": "string", "description": "Who to greet."}


def test_a_partial_takes_its_function_docstring() -> None:
    def scale(x: int, factor: int) -> int:
        """Scale a number.

        Args:
            x: The number.
        """
        return x * factor

    t = create_tool_from_function(functools.partial(scale, factor=3), name="triple")
    assert t.description == "Scale a number."
    assert t.parameters["properties"]["x"]["description"] == "The number."


# ----------------------------------------------------------------------------- arguments converted to their types


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Line(pydantic.BaseModel):
    start: Point
    end: Point
    label: str = ""

    @pydantic.field_validator("label")
    @classmethod
    def _no_shouting(cls, value: str) -> str:
        if value.isupper():
            raise ValueError("no shouting")
        return value


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


def shift(point: Point, dx: int = 1) -> Point:
    """Move a point right."""
    return Point(point.x + dx, point.y)


@tool
def length(line: Line) -> float:
    """Length of a line."""
    return float(((line.end.x - line.start.x) ** 2 + (line.end.y - line.start.y) ** 2) ** 0.5)


def test_a_dataclass_parameter_arrives_as_the_dataclass() -> None:
    t = create_tool_from_function(shift)
    assert isinstance(t, FunctionTool)
    assert t.invoke(point={"x": 1, "y": 2}, dx=3) == Point(4, 2)
    assert t.function is not None and t.function(point={"x": 0, "y": 0}) == Point(1, 0)


def test_a_pydantic_model_parameter_arrives_as_the_model_with_nested_dataclasses() -> None:
    seen: list[Any] = []

    def draw(line: Line) -> str:
        seen.append(line)
        return "ok"

    t = create_tool_from_function(draw)
    assert t.invoke(line={"start": {"x": 0, "y": 0}, "end": {"x": 3, "y": 4}}) == "ok"
    assert seen == [Line(start=Point(0, 0), end=Point(3, 4))]
    assert isinstance(seen[0].start, Point)
    assert length.invoke(line={"start": {"x": 0, "y": 0}, "end": {"x": 3, "y": 4}}) == 5.0


def test_lists_dicts_and_optionals_of_models_are_converted() -> None:
    seen: dict[str, Any] = {}

    def collect(
        points: list[Point],
        named: dict[str, Line],
        maybe: Optional[Point] = None,  # noqa: UP045
        other: Point | None = None,
        color: Color = Color.RED,
    ) -> None:
        seen.update(points=points, named=named, maybe=maybe, other=other, color=color)

    t = create_tool_from_function(collect)
    line = {"start": {"x": 0, "y": 0}, "end": {"x": 1, "y": 1}}
    t.invoke(points=[{"x": 1, "y": 2}, {"x": 3, "y": 4}], named={"a": line}, maybe=None, other={"x": 5, "y": 6})
    assert seen["points"] == [Point(1, 2), Point(3, 4)]
    assert seen["named"] == {"a": Line(start=Point(0, 0), end=Point(1, 1))}
    assert seen["maybe"] is None
    assert seen["other"] == Point(5, 6)
    assert seen["color"] is Color.RED  # a default the model left out is not touched
    t.invoke(points=[], named={}, color="blue")
    assert seen["color"] is Color.BLUE
    assert seen["maybe"] is None


def test_plain_typed_arguments_reach_the_function_untouched() -> None:
    seen: list[dict[str, Any]] = []

    def plain(
        text: str,
        count: int,
        ratio: float,
        flag: bool,
        tags: list[str],
        extra: dict[str, Any],
        mode: Literal["a", "b"] = "a",
        note: Annotated[str | None, "A note."] = None,
        nested: list[dict[str, list[int]]] | None = None,
    ) -> None:
        seen.append(extra)
        seen.append({"tags": tags, "ratio": ratio, "nested": nested})

    t = create_tool_from_function(plain)
    assert type(t) is Tool
    assert t.function is plain
    extra = {"k": [1, {"deep": True}]}
    tags = ["x"]
    nested = [{"a": [1]}]
    t.invoke(text="t", count=1, ratio=2, flag=True, tags=tags, extra=extra, nested=nested)
    assert seen[0] is extra
    assert seen[1]["tags"] is tags and seen[1]["nested"] is nested
    assert seen[1]["ratio"] == 2 and type(seen[1]["ratio"]) is int


def test_parameters_not_filled_by_the_model_are_not_converted() -> None:
    seen: list[Any] = []

    def f(point: Point, origin: Point, state: State, call_id: ToolCallId) -> None:
        seen.extend([point, origin, call_id])

    t = create_tool_from_function(f, inputs_from_state={"origin": "origin"})
    assert list(t.parameters["properties"]) == ["point"]
    t.invoke(point={"x": 1, "y": 1}, origin={"x": 0, "y": 0}, state=None, call_id="c1")
    assert seen == [Point(1, 1), {"x": 0, "y": 0}, "c1"]


def test_a_value_that_cannot_be_converted_makes_the_tool_raise() -> None:
    t = create_tool_from_function(shift)
    with pytest.raises(
        ToolInvocationError, match=r"argument 'point' could not be converted to Point: y: Field required"
    ):
        t.invoke(point={"x": 1})
    with pytest.raises(ToolInvocationError, match=r"to Line: label: Value error, no shouting"):
        length.invoke(line={"start": {"x": 0, "y": 0}, "end": {"x": 1, "y": 1}, "label": "LOUD"})


def test_an_agent_answers_a_refused_conversion_with_an_error_tool_result() -> None:
    from handrail.components.agents import Agent
    from handrail.dataclasses import ChatMessage, ToolCall
    from handrail.testing import ScriptedChatGenerator

    bad = {"line": {"start": {"x": 0, "y": 0}, "end": {"x": 3, "y": 4}, "label": "LOUD"}}
    good = {"line": {"start": {"x": 0, "y": 0}, "end": {"x": 3, "y": 4}}}
    model = ScriptedChatGenerator(
        [
            ChatMessage.from_assistant(tool_calls=[ToolCall("length", bad, id="call_1")]),
            ChatMessage.from_assistant(tool_calls=[ToolCall("length", good, id="call_2")]),
            ChatMessage.from_assistant("5"),
        ]
    )
    result = Agent(chat_generator=model, tools=[length]).run([ChatMessage.from_user("How long?")])
    first, second = (m.tool_call_result for m in result["messages"] if m.tool_call_result is not None)
    assert first.error and "no shouting" in first.result
    assert not second.error and second.result == "5.0"


async def test_async_functions_get_their_arguments_converted_too() -> None:
    async def shift_async(point: Point) -> Point:
        return Point(point.x + 1, point.y)

    t = create_tool_from_function(shift_async)
    assert t.function is None and t.async_function is not None
    assert inspect.iscoroutinefunction(t.async_function)
    assert await t.invoke_async(point={"x": 1, "y": 2}) == Point(2, 2)


def test_a_converting_tool_round_trips_through_its_dict() -> None:
    t = create_tool_from_function(shift, name="shift_point", inputs_from_state={"step": "dx"})
    data = t.to_dict()
    assert data["type"] == "handrail.tools.from_function.FunctionTool"
    assert data["init_parameters"]["function"] == f"{__name__}.shift"
    restored = object_from_dict(json.loads(json.dumps(data)))
    assert type(restored) is FunctionTool
    assert restored == t
    assert restored.to_dict() == data
    assert restored.invoke(point={"x": 1, "y": 2}, dx=2) == Point(3, 2)
    assert FunctionTool.from_dict(data) == t
    [again] = deserialize_tools([data]) or []
    assert isinstance(again, FunctionTool) and again.invoke(point={"x": 0, "y": 0}) == Point(1, 0)


def test_a_decorated_converting_tool_round_trips_by_its_dotted_path() -> None:
    data = length.to_dict()
    assert data["init_parameters"]["function"] == f"{__name__}.length"
    restored = object_from_dict(json.loads(json.dumps(data)))
    assert restored == length
    assert restored.to_dict() == data
    assert restored.function is not None and restored.function.__wrapped__ is length.function.__wrapped__  # type: ignore[union-attr]
    assert restored.invoke(line={"start": {"x": 0, "y": 0}, "end": {"x": 0, "y": 2}}) == 2.0


def test_replace_and_copy_keep_one_layer_of_conversion() -> None:
    t = create_tool_from_function(shift)
    renamed = dataclasses.replace(t, name="moved")
    assert isinstance(renamed, FunctionTool)
    assert renamed.function is not None and renamed.function.__wrapped__ is shift  # type: ignore[union-attr]
    assert renamed.invoke(point={"x": 1, "y": 1}) == Point(2, 1)
    assert copy.deepcopy(t) == t
