"""Literal parameters of Enum members, and the messages for tools that cannot be named or called."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

import pytest

from handrail.components.tools import ToolInvoker
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.errors import ConfigurationError, ConfigurationTypeError, ToolInvocationError
from handrail.tools import create_tool_from_function, tool


class Mode(enum.Enum):
    FAST = "fast"
    SLOW = "slow"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class C(enum.Enum):
    A = "a"


def run_mode(mode: Literal[Mode.FAST, Mode.SLOW]) -> str:
    """Run in a mode."""
    return repr(mode)


def test_a_literal_of_enum_members_accepts_the_values_its_schema_advertises() -> None:
    t = create_tool_from_function(run_mode)

    assert t.parameters["properties"]["mode"]["enum"] == ["fast", "slow"]
    assert t.invoke(mode="fast") == repr(Mode.FAST)
    assert t.invoke(mode="slow") == repr(Mode.SLOW)
    assert t.invoke(mode=Mode.SLOW) == repr(Mode.SLOW)  # a Python caller may pass the member


def test_a_one_member_literal_with_a_default_accepts_its_const() -> None:
    def pick(c: Literal[C.A] = C.A) -> str:
        return repr(c)

    t = create_tool_from_function(pick)

    assert t.parameters["properties"]["c"]["const"] == "a"
    assert t.invoke(c="a") == repr(C.A)
    assert t.invoke() == repr(C.A)


def test_values_outside_the_literal_are_still_refused() -> None:
    t = create_tool_from_function(run_mode)

    with pytest.raises(ToolInvocationError, match="argument 'mode' could not be converted"):
        t.invoke(mode="medium")


def test_int_enum_members_accept_their_numbers() -> None:
    def level(value: Literal[Level.LOW, Level.HIGH]) -> str:
        return f"{type(value).__name__}.{value.name}"

    t = create_tool_from_function(level)

    assert t.parameters["properties"]["value"]["enum"] == [1, 2]
    assert t.invoke(value=2) == "Level.HIGH"


def test_enum_literals_inside_lists_optionals_and_annotated_are_converted() -> None:
    seen: dict[str, Any] = {}

    def collect(
        modes: list[Literal[Mode.FAST, Mode.SLOW]],
        maybe: Literal[Mode.FAST] | None = None,
        described: Annotated[Literal[Mode.SLOW, "other"], "A mode or 'other'"] = "other",
        by_name: dict[str, Literal[C.A]] | None = None,
    ) -> str:
        seen.update(modes=modes, maybe=maybe, described=described, by_name=by_name)
        return "ok"

    t = create_tool_from_function(collect)
    t.invoke(modes=["slow", "fast"], maybe="fast", described="slow", by_name={"x": "a"})

    assert seen == {"modes": [Mode.SLOW, Mode.FAST], "maybe": Mode.FAST, "described": Mode.SLOW, "by_name": {"x": C.A}}
    t.invoke(modes=[], described="other")
    assert seen["described"] == "other"


def test_a_tool_invoker_runs_a_call_with_the_advertised_value() -> None:
    invoker = ToolInvoker([create_tool_from_function(run_mode)])
    call = ToolCall(tool_name="run_mode", arguments={"mode": "slow"}, id="call_1")

    (message,) = invoker.run([ChatMessage.from_assistant(tool_calls=[call])])["tool_messages"]

    assert message.tool_call_result is not None
    assert message.tool_call_result.error is False
    assert message.tool_call_result.result == repr(Mode.SLOW)


# --------------------------------------------------------------------------- naming and callability


def test_an_empty_name_is_reported_as_empty() -> None:
    with pytest.raises(ConfigurationError, match="the name given is empty") as info:
        create_tool_from_function(run_mode, name="")
    assert "__name__" not in str(info.value)


def test_a_name_that_is_not_a_string_is_a_type_error() -> None:
    with pytest.raises(ConfigurationTypeError, match="name must be a str, got int"):
        create_tool_from_function(run_mode, name=5)  # type: ignore[arg-type]


@pytest.mark.parametrize("make", [tool, create_tool_from_function], ids=["tool", "create_tool_from_function"])
def test_something_not_callable_is_reported_as_not_callable(make: Any) -> None:
    with pytest.raises(ConfigurationTypeError, match="Cannot make a tool of 5: it is not callable") as info:
        make(5)
    assert "__name__" not in str(info.value)
