from __future__ import annotations

import copy
import json

import pytest

from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError
from handrail.tools import Tool, Toolset, utils
from handrail.tools.utils import deserialize_tools, flatten_tools, serialize_tools

from .helpers import CountingTool, GrowingToolset, add, get_weather, make_add_tool


def test_utils_all() -> None:
    assert sorted(utils.__all__) == ["ToolsType", "deserialize_tools", "flatten_tools", "serialize_tools"]


def test_flatten_none_is_empty() -> None:
    assert flatten_tools(None) == []


def test_flatten_a_toolset_and_a_mixed_list() -> None:
    a, b, c = make_add_tool("a"), make_add_tool("b"), make_add_tool("c")
    assert flatten_tools(Toolset([a, b])) == [a, b]
    assert flatten_tools([a, Toolset([b]), c]) == [a, b, c]
    assert flatten_tools([]) == []
    assert flatten_tools((a,)) == [a]


def test_flatten_reports_duplicates_across_items() -> None:
    with pytest.raises(ConfigurationError) as info:
        flatten_tools([make_add_tool("a"), Toolset([make_add_tool("a"), make_add_tool("b")]), make_add_tool("b")])
    assert str(info.value) == "Duplicate tool names found: ['a', 'b']"
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("value", "type_name"),
    [
        (["weather"], "str"),
        ([make_add_tool(), 3], "int"),
        ([[make_add_tool()]], "list"),
    ],
)
def test_flatten_refuses_other_item_types_naming_them(value: object, type_name: str) -> None:
    with pytest.raises(ConfigurationTypeError, match=f"got {type_name}") as info:
        flatten_tools(value)  # type: ignore[arg-type]
    assert isinstance(info.value, TypeError)


@pytest.mark.parametrize(("value", "type_name"), [("weather", "str"), (make_add_tool(), "Tool"), (add, "function")])
def test_flatten_refuses_other_containers(value: object, type_name: str) -> None:
    with pytest.raises(ConfigurationTypeError, match=f"got {type_name}"):
        flatten_tools(value)  # type: ignore[arg-type]


def test_serialize_none_and_toolset() -> None:
    assert serialize_tools(None) is None
    assert deserialize_tools(None) is None
    ts = Toolset([make_add_tool()])
    assert serialize_tools(ts) == ts.to_dict()


def test_serialize_keeps_tool_and_toolset_boundaries() -> None:
    tools: list[Tool | Toolset] = [
        get_weather,
        GrowingToolset([make_add_tool("a")]),
        CountingTool(name="counter", description="", parameters={"type": "object"}, function=add),
        Toolset([make_add_tool("b")]),
    ]
    data = serialize_tools(tools)
    assert isinstance(data, list)
    assert [d["type"] for d in data] == [
        "handrail.tools.tool.Tool",
        "tests.tools.helpers.GrowingToolset",
        "tests.tools.helpers.CountingTool",
        "handrail.tools.toolset.Toolset",
    ]
    loaded = json.loads(json.dumps(data))
    before = copy.deepcopy(loaded)
    rebuilt = deserialize_tools(loaded)
    assert loaded == before
    assert isinstance(rebuilt, list)
    assert [type(item) for item in rebuilt] == [Tool, GrowingToolset, CountingTool, Toolset]
    assert rebuilt == tools
    assert serialize_tools(rebuilt) == data


def test_deserialize_a_toolset_dict() -> None:
    ts = GrowingToolset([make_add_tool()])
    data = serialize_tools(ts)
    assert isinstance(data, dict)
    before = copy.deepcopy(data)
    rebuilt = deserialize_tools(data)
    assert data == before
    assert type(rebuilt) is GrowingToolset
    assert rebuilt == ts


def test_serialize_refuses_other_types() -> None:
    with pytest.raises(ConfigurationTypeError, match="got str"):
        serialize_tools(["add"])  # type: ignore[list-item]
    with pytest.raises(ConfigurationTypeError, match="got Tool"):
        serialize_tools(make_add_tool())  # type: ignore[arg-type]


def test_deserialize_refuses_malformed_data() -> None:
    with pytest.raises(SerializationError, match="Expected a Toolset dict"):
        deserialize_tools(make_add_tool().to_dict())
    with pytest.raises(SerializationError, match="got str"):
        deserialize_tools("tools")  # type: ignore[arg-type]
    with pytest.raises(SerializationError, match="'type' key"):
        deserialize_tools([{"name": "add"}])
    with pytest.raises(SerializationError, match="Tool or Toolset"):
        deserialize_tools([{"type": "collections.OrderedDict", "init_parameters": {}}])
