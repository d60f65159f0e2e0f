from __future__ import annotations

import copy
import json

import pytest

from handrail.core.serialization import object_from_dict
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError
from handrail.tools import Tool, Toolset, flatten_tools

from .helpers import CountingTool, GrowingToolset, LazyToolset, add, get_weather, make_add_tool


def test_empty_toolset() -> None:
    for ts in (Toolset(), Toolset(None), Toolset([])):
        assert len(ts) == 0
        assert list(ts) == []
        assert "anything" not in ts


def test_iteration_len_indexing_and_contains() -> None:
    first, second = make_add_tool("first"), make_add_tool("second")
    ts = Toolset([first, second])
    assert len(ts) == 2
    assert list(ts) == [first, second]
    assert ts[0] is first
    assert ts[-1] is second
    assert "first" in ts
    assert "third" not in ts
    assert second in ts
    assert make_add_tool("third") not in ts
    assert 3 not in ts
    with pytest.raises(IndexError):
        ts[2]


def test_a_single_tool_is_refused_with_a_hint() -> None:
    with pytest.raises(ConfigurationTypeError) as info:
        Toolset(make_add_tool())  # type: ignore[arg-type]
    assert str(info.value) == "A single Tool cannot be passed to Toolset; use a list: Toolset([tool])"
    assert isinstance(info.value, TypeError)


def test_non_list_and_non_tool_items_are_refused() -> None:
    with pytest.raises(ConfigurationTypeError, match="got str"):
        Toolset("add")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationTypeError, match="must be Tool objects, got dict"):
        Toolset([{"name": "add"}])  # type: ignore[list-item]


def test_duplicate_names_at_construction_are_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"Duplicate tool names found: \['add'\]") as info:
        Toolset([make_add_tool(), make_add_tool()])
    assert isinstance(info.value, ValueError)


def test_add_a_tool() -> None:
    ts = Toolset([make_add_tool("a")])
    extra = make_add_tool("b")
    ts.add(extra)
    assert [t.name for t in ts] == ["a", "b"]
    with pytest.raises(ConfigurationError, match=r"\['b'\]"):
        ts.add(make_add_tool("b"))
    assert len(ts) == 2


def test_add_a_toolset_checks_every_name_before_adding_any() -> None:
    ts = Toolset([make_add_tool("a")])
    ts.add(Toolset([make_add_tool("b"), make_add_tool("c")]))
    assert [t.name for t in ts] == ["a", "b", "c"]
    with pytest.raises(ConfigurationError, match=r"Duplicate tool names found: \['c'\]"):
        ts.add(Toolset([make_add_tool("d"), make_add_tool("c")]))
    assert [t.name for t in ts] == ["a", "b", "c"]


def test_add_other_types_is_refused() -> None:
    ts = Toolset()
    with pytest.raises(ConfigurationTypeError, match="got list"):
        ts.add([make_add_tool()])  # type: ignore[arg-type]
    with pytest.raises(ConfigurationTypeError, match="got function"):
        ts.add(add)  # type: ignore[arg-type]


def _counting(name: str) -> CountingTool:
    return CountingTool(name=name, description="", parameters={"type": "object"}, function=add)


def test_warm_up_is_idempotent_and_warms_tools_added_later() -> None:
    first = _counting("first")
    ts = Toolset([first])
    ts.warm_up()
    ts.warm_up()
    assert first.warm_ups == 1
    second = _counting("second")
    ts.add(second)
    ts.warm_up()
    assert (first.warm_ups, second.warm_ups) == (1, 1)


def test_to_dict_shape_and_round_trip() -> None:
    ts = Toolset([make_add_tool(), get_weather])
    data = ts.to_dict()
    assert data == {
        "type": "handrail.tools.toolset.Toolset",
        "init_parameters": {"tools": [make_add_tool().to_dict(), get_weather.to_dict()]},
    }
    loaded = json.loads(json.dumps(data))
    before = copy.deepcopy(loaded)
    rebuilt = Toolset.from_dict(loaded)
    assert loaded == before
    assert rebuilt == ts
    assert rebuilt.to_dict() == data
    assert rebuilt[1].invoke(location="Rome") == "Sunny in Rome"


def test_subclasses_round_trip_with_their_classes() -> None:
    ts = GrowingToolset([_counting("counter")])
    data = ts.to_dict()
    assert data["type"] == "tests.tools.helpers.GrowingToolset"
    rebuilt = object_from_dict(data)
    assert type(rebuilt) is GrowingToolset
    assert type(rebuilt[0]) is CountingTool


def test_from_dict_refuses_malformed_data() -> None:
    with pytest.raises(SerializationError, match="init_parameters"):
        Toolset.from_dict({"type": "handrail.tools.toolset.Toolset"})
    with pytest.raises(SerializationError, match="must be a list"):
        Toolset.from_dict({"type": "x", "init_parameters": {"tools": {"a": 1}}})
    not_a_tool = Toolset().to_dict()
    with pytest.raises(SerializationError, match="is not a Tool"):
        Toolset.from_dict({"type": "x", "init_parameters": {"tools": [not_a_tool]}})


def test_equality_and_repr() -> None:
    assert Toolset([make_add_tool()]) == Toolset([make_add_tool()])
    assert Toolset([make_add_tool()]) != GrowingToolset([make_add_tool()])
    assert Toolset([make_add_tool("a")]) != Toolset([make_add_tool("b")])
    assert repr(Toolset([make_add_tool("a")])) == "Toolset(tools=['a'])"


def test_dynamic_toolset_growth_is_seen_by_every_reader() -> None:
    ts = GrowingToolset([make_add_tool("a")])
    assert [t.name for t in flatten_tools([ts])] == ["a"]
    grown = ts.grow("b")
    assert [t.name for t in flatten_tools([ts])] == ["a", "b"]
    assert len(ts) == 2
    assert "b" in ts
    assert grown in ts
    assert ts[1] is grown


def test_toolset_overriding_only_iter_is_read_through_iteration() -> None:
    ts = LazyToolset([make_add_tool("a")])
    assert len(ts) == 1
    late: Tool = make_add_tool("late")
    ts.source.append(late)
    assert len(ts) == 2
    assert "late" in ts
    assert ts[1] is late
    assert [t.name for t in flatten_tools(ts)] == ["a", "late"]
    with pytest.raises(ConfigurationError, match="'late'"):
        ts.add(make_add_tool("late"))


def test_iteration_is_a_snapshot() -> None:
    ts = GrowingToolset([make_add_tool("a")])
    names = []
    for t in ts:
        names.append(t.name)
        if t.name == "a":
            ts.grow("b")
    assert names == ["a"]
    assert len(ts) == 2
