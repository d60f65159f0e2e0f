from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest

from handrail.core.serialization import object_from_dict
from handrail.errors import SerializationError
from handrail.tools import Tool, create_tool_from_function, tool

from . import helpers
from .helpers import ADD_SCHEMA, CountingTool, add, add_async, concat, get_weather, get_weather_async, to_text


def _json_round_trip(data: dict[str, Any]) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(json.dumps(data))
    return loaded


def test_decorated_module_function_round_trips() -> None:
    data = get_weather.to_dict()
    assert data == {
        "type": "handrail.tools.tool.Tool",
        "init_parameters": {
            "name": "get_weather",
            "description": "Get the weather for a location.",
            "parameters": {
                "type": "object",
                "properties": {"location": {"type": "string"}},
                "required": ["location"],
            },
            "function": "tests.common_tools.get_weather",
            "async_function": None,
            "outputs_to_string": None,
            "inputs_from_state": None,
            "outputs_to_state": None,
        },
    }
    loaded = _json_round_trip(data)
    before = copy.deepcopy(loaded)
    rebuilt = Tool.from_dict(loaded)
    assert loaded == before
    assert rebuilt.to_dict() == data
    assert rebuilt == get_weather
    assert rebuilt.function is get_weather.function
    assert rebuilt.invoke(location="Oslo") == "Sunny in Oslo"


async def test_decorated_async_module_function_round_trips() -> None:
    data = _json_round_trip(get_weather_async.to_dict())
    assert data["init_parameters"]["function"] is None
    assert data["init_parameters"]["async_function"] == "tests.tools.helpers.get_weather_async"
    rebuilt = Tool.from_dict(data)
    assert rebuilt.to_dict() == get_weather_async.to_dict()
    assert await rebuilt.invoke_async(location="Bergen") == "Rainy in Bergen"


def test_handlers_round_trip_as_dotted_paths() -> None:
    original = Tool(
        name="add",
        description="Add.",
        parameters=ADD_SCHEMA,
        function=add,
        async_function=add_async,
        outputs_to_string={"source": "value", "handler": to_text},
        inputs_from_state={"base": "b"},
        outputs_to_state={"total": {"source": "value", "handler": concat}, "raw": {}},
    )
    data = original.to_dict()
    params = data["init_parameters"]
    assert params["function"] == "tests.common_tools.add"
    assert params["async_function"] == "tests.tools.helpers.add_async"
    assert params["outputs_to_string"] == {"source": "value", "handler": "tests.tools.helpers.to_text"}
    assert params["outputs_to_state"] == {
        "total": {"source": "value", "handler": "tests.tools.helpers.concat"},
        "raw": {},
    }
    loaded = _json_round_trip(data)
    before = copy.deepcopy(loaded)
    rebuilt = Tool.from_dict(loaded)
    assert loaded == before
    assert rebuilt == original
    assert rebuilt.to_dict() == data


def test_multi_output_configs_and_a_state_key_named_handler_round_trip() -> None:
    original = Tool(
        name="add",
        description="Add.",
        parameters=ADD_SCHEMA,
        function=add,
        outputs_to_string={"handler": {"source": "value", "handler": to_text}, "other": {"source": "x"}},
        outputs_to_state={"handler": {"source": "value", "handler": concat}},
    )
    rebuilt = Tool.from_dict(_json_round_trip(original.to_dict()))
    assert rebuilt == original


def test_from_dict_does_not_share_mutable_values_with_its_input() -> None:
    data = helpers.make_add_tool().to_dict()
    rebuilt = Tool.from_dict(data)
    rebuilt.parameters["properties"]["c"] = {"type": "string"}
    assert "c" not in data["init_parameters"]["parameters"]["properties"]
    out = rebuilt.to_dict()
    out["init_parameters"]["parameters"]["required"].append("b")
    assert rebuilt.parameters["required"] == ["a"]


def test_tool_subclass_comes_back_with_its_class() -> None:
    original = CountingTool(name="add", description="Add.", parameters=ADD_SCHEMA, function=add)
    data = original.to_dict()
    assert data["type"] == "tests.tools.helpers.CountingTool"
    rebuilt = object_from_dict(data)
    assert type(rebuilt) is CountingTool
    assert rebuilt == original


def test_from_dict_without_init_parameters_is_refused() -> None:
    with pytest.raises(SerializationError, match="init_parameters"):
        Tool.from_dict({"type": "handrail.tools.tool.Tool"})


def test_from_dict_with_an_unknown_function_path_is_refused() -> None:
    data = helpers.make_add_tool().to_dict()
    data["init_parameters"]["function"] = "tests.tools.helpers.does_not_exist"
    with pytest.raises(SerializationError, match="does_not_exist"):
        Tool.from_dict(data)


def test_lambdas_are_refused_at_to_dict() -> None:
    t = Tool(name="echo", description="", parameters={"type": "object"}, function=lambda text: text)
    with pytest.raises(SerializationError, match="lambdas and functions defined inside other functions"):
        t.to_dict()


def test_closures_are_refused_at_to_dict() -> None:
    def local(x: int) -> int:
        return x

    with pytest.raises(SerializationError, match="Define it at module level"):
        create_tool_from_function(local).to_dict()

    @tool
    def decorated_local(x: int) -> int:
        return x

    with pytest.raises(SerializationError, match="decorated_local"):
        decorated_local.to_dict()


def test_lambda_handler_is_refused_at_to_dict() -> None:
    t = Tool(
        name="add",
        description="",
        parameters=ADD_SCHEMA,
        function=add,
        outputs_to_string={"handler": lambda r: str(r)},
    )
    with pytest.raises(SerializationError, match="lambda"):
        t.to_dict()


@dataclasses.dataclass
class Point:
    x: int
    y: int


def norm1(point: Point) -> int:
    """Manhattan norm of a point."""
    return abs(point.x) + abs(point.y)


def test_base_from_dict_hands_a_subclass_dict_to_the_subclass() -> None:
    from handrail.tools import create_tool_from_function
    from handrail.tools.tool import Tool as BaseTool

    tool = create_tool_from_function(norm1)
    assert type(tool) is not BaseTool  # typed arguments need the converting subclass
    rebuilt = BaseTool.from_dict(json.loads(json.dumps(tool.to_dict())))
    assert type(rebuilt) is type(tool)
    assert rebuilt.function is not None and rebuilt.function(point={"x": 3, "y": -4}) == 7
