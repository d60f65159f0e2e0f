from __future__ import annotations

import asyncio
import re
import threading
from typing import Any

import pytest

from handrail.errors import (
    ConfigurationError,
    ConfigurationTypeError,
    HandrailError,
    ToolInvocationError,
)
from handrail.tools import Tool

from .helpers import ADD_SCHEMA, add, add_async, failing, make_add_tool

STRING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


def weather(city: str) -> str:
    return f"Sunny in {city}"


def test_tool_spec() -> None:
    t = Tool(name="weather", description="Weather.", parameters=STRING_SCHEMA, function=weather)
    assert t.tool_spec == {"name": "weather", "description": "Weather.", "parameters": STRING_SCHEMA}


@pytest.mark.parametrize("name", ["", " ", "\t\n"])
def test_name_must_not_be_blank(name: str) -> None:
    with pytest.raises(ConfigurationError, match="must not be empty or blank"):
        Tool(name=name, description="", parameters=STRING_SCHEMA, function=weather)


@pytest.mark.parametrize("name", [None, 3])
def test_name_must_be_a_string(name: Any) -> None:
    with pytest.raises(ConfigurationTypeError, match="must be a str, got"):
        Tool(name=name, description="", parameters=STRING_SCHEMA, function=weather)


def test_invalid_schema_is_refused() -> None:
    bad = {"type": "object", "properties": {"city": {"type": "strin"}}}
    with pytest.raises(ConfigurationError, match="do not define a valid JSON Schema") as info:
        Tool(name="weather", description="", parameters=bad, function=weather)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, HandrailError)


def test_parameters_must_be_a_dict() -> None:
    with pytest.raises(ConfigurationTypeError, match="JSON Schema dict"):
        Tool(name="weather", description="", parameters=["city"], function=weather)  # type: ignore[arg-type]


def test_description_must_be_a_string() -> None:
    with pytest.raises(ConfigurationTypeError, match="description must be a str"):
        Tool(name="weather", description=None, parameters=STRING_SCHEMA, function=weather)  # type: ignore[arg-type]


def test_a_function_is_required() -> None:
    with pytest.raises(ConfigurationTypeError, match="requires at least one of `function` or `async_function`"):
        Tool(name="weather", description="", parameters=STRING_SCHEMA)


def test_coroutine_function_as_function_is_refused() -> None:
    with pytest.raises(ConfigurationTypeError, match="pass it as `async_function`") as info:
        Tool(name="add", description="", parameters=ADD_SCHEMA, function=add_async)
    assert isinstance(info.value, TypeError)


def test_sync_function_as_async_function_is_refused() -> None:
    with pytest.raises(ConfigurationTypeError, match="must be a coroutine function"):
        Tool(name="add", description="", parameters=ADD_SCHEMA, async_function=add)  # type: ignore[arg-type]


def test_non_callable_function_is_refused() -> None:
    with pytest.raises(ConfigurationTypeError, match="must be callable"):
        Tool(name="add", description="", parameters=ADD_SCHEMA, function="add")  # type: ignore[arg-type]


def test_inputs_from_state_checks() -> None:
    with pytest.raises(ConfigurationError, match="no such parameter"):
        Tool(name="add", description="", parameters=ADD_SCHEMA, function=add, inputs_from_state={"x": "c"})
    with pytest.raises(ConfigurationTypeError, match="must name a parameter"):
        Tool(name="add", description="", parameters=ADD_SCHEMA, function=add, inputs_from_state={"x": 1})  # type: ignore[dict-item]

    def kw(**kwargs: Any) -> Any:
        return kwargs

    t = Tool(name="kw", description="", parameters={"type": "object"}, function=kw, inputs_from_state={"x": "y"})
    assert t.inputs_from_state == {"x": "y"}


@pytest.mark.parametrize(
    ("config", "error"),
    [
        ("docs", ConfigurationTypeError),
        ({"documents": "docs"}, ConfigurationTypeError),
        ({"documents": {"source": 1}}, ConfigurationError),
        ({"documents": {"handler": "not callable"}}, ConfigurationError),
        ({"documents": {"source": "docs", "extra": 1}}, ConfigurationError),
    ],
)
def test_outputs_to_state_checks(config: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        Tool(name="add", description="", parameters=ADD_SCHEMA, function=add, outputs_to_state=config)


@pytest.mark.parametrize(
    "config",
    [
        {"source": "docs"},
        {"source": "docs", "handler": str, "raw_result": False},
        {"raw_result": True},
        {"first": {"source": "a"}, "second": {"source": "b", "handler": str}},
    ],
)
def test_outputs_to_string_valid_configs(config: dict[str, Any]) -> None:
    t = Tool(name="add", description="", parameters=ADD_SCHEMA, function=add, outputs_to_string=config)
    assert t.outputs_to_string == config


@pytest.mark.parametrize(
    ("config", "error"),
    [
        ("docs", ConfigurationTypeError),
        ({"source": 1}, ConfigurationError),
        ({"handler": "x"}, ConfigurationError),
        ({"raw_result": "yes"}, ConfigurationError),
        ({"first": {"handler": str}}, ConfigurationError),
        ({"first": {"source": "a", "raw_result": True}}, ConfigurationError),
        ({"first": "a"}, ConfigurationTypeError),
    ],
)
def test_outputs_to_string_invalid_configs(config: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        Tool(name="add", description="", parameters=ADD_SCHEMA, function=add, outputs_to_string=config)


def test_arguments_error() -> None:
    t = make_add_tool()
    assert t.arguments_error({"a": 1}) is None
    assert t.arguments_error({"a": 1, "b": 2}) is None
    assert t.arguments_error({}) == "'a' is a required property"
    assert t.arguments_error({"a": "one"}) == "'one' is not of type 'integer' (at 'a')"


def test_arguments_error_reports_nested_paths() -> None:
    schema = {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
    }
    t = Tool(name="sum", description="", parameters=schema, function=lambda items: sum(items))
    assert t.arguments_error({"items": [1, "x"]}) == "'x' is not of type 'integer' (at 'items/1')"


def test_invoke_passes_arguments_without_validating_them() -> None:
    t = make_add_tool()
    assert t.invoke(a=2, b=3) == 5
    assert t.invoke(a="x", b="y") == "xy"


def test_invoke_wraps_errors_with_cause() -> None:
    t = make_add_tool()
    with pytest.raises(ToolInvocationError) as info:
        t.invoke()
    assert str(info.value).startswith("Failed to invoke tool 'add' with parameters {}. Error: TypeError:")
    assert "missing 1 required positional argument: 'a'" in str(info.value)
    assert isinstance(info.value.__cause__, TypeError)
    assert info.value.tool_name == "add"


def test_invoke_wraps_a_raising_function() -> None:
    t = Tool(name="failing", description="", parameters={"type": "object"}, function=failing)
    with pytest.raises(ToolInvocationError, match=r"parameters \{'x': 3\}\. Error: RuntimeError: boom 3") as info:
        t.invoke(x=3)
    assert isinstance(info.value.__cause__, RuntimeError)


async def test_invoke_async_runs_a_sync_function_in_a_thread() -> None:
    loop_thread: list[Any] = []

    def where(x: int) -> int:
        loop_thread.append(threading.current_thread())
        return x

    t = Tool(name="where", description="", parameters={"type": "object"}, function=where)
    assert await t.invoke_async(x=1) == 1
    assert loop_thread[0] is not threading.current_thread()


async def test_invoke_async_prefers_the_async_function() -> None:
    t = Tool(name="add", description="", parameters=ADD_SCHEMA, function=add, async_function=add_async)
    assert await t.invoke_async(a=1, b=2) == 3
    only_async = Tool(name="add", description="", parameters=ADD_SCHEMA, async_function=add_async)
    assert await only_async.invoke_async(a=4) == 5
    with pytest.raises(ToolInvocationError, match="only an async_function"):
        only_async.invoke(a=1)


async def test_invoke_async_wraps_errors_with_cause() -> None:
    async def boom(x: int) -> int:
        await asyncio.sleep(0)
        raise ValueError("bad x")

    t = Tool(name="boom", description="", parameters={"type": "object"}, async_function=boom)
    with pytest.raises(ToolInvocationError, match="Error: ValueError: bad x") as info:
        await t.invoke_async(x=1)
    assert isinstance(info.value.__cause__, ValueError)
    sync = Tool(name="failing", description="", parameters={"type": "object"}, function=failing)
    with pytest.raises(ToolInvocationError) as sync_info:
        await sync.invoke_async(x=2)
    assert isinstance(sync_info.value.__cause__, RuntimeError)


def test_warm_up_is_a_no_op() -> None:
    t = make_add_tool()
    t.warm_up()
    t.warm_up()
    assert t.invoke(a=1) == 2


@pytest.mark.parametrize("name", ["Addition tool", "météo à Genève", "a.b/c", "x" * 200, "天气"])
def test_any_readable_name_is_accepted_as_in_haystack(name: str) -> None:
    t = Tool(name=name, description="", parameters=STRING_SCHEMA, function=weather)
    assert t.name == name and t.tool_spec["name"] == name
    assert Tool.from_dict(t.to_dict()).name == name


@pytest.mark.parametrize(("name", "code"), [("a\nb", "U+000A"), ("a\u200bb", "U+200B"), ("pay\u202eyou", "U+202E")])
def test_control_and_invisible_characters_are_refused_naming_them(name: str, code: str) -> None:
    with pytest.raises(ConfigurationError, match=rf"position \d+ \({re.escape(code)}\)"):
        Tool(name=name, description="", parameters=STRING_SCHEMA, function=weather)
