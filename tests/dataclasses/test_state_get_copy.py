"""State.get hands out values the caller may change without changing the State (Haystack's deep copy)."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import threading
from typing import Any

import pytest

from handrail.dataclasses import ChatMessage, State, ToolCall
from handrail.errors import ConfigurationTypeError


class Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class Bag:
    items: list[int]


@dataclasses.dataclass
class Box:
    items: list[int]


def _state(**values: Any) -> State:
    return State({key: {"type": object} for key in values}, values)


def test_a_list_read_through_get_can_be_changed_without_changing_the_state() -> None:
    state = State({"notes": {"type": list[str]}}, {"notes": ["a"]})
    notes = state.get("notes")
    notes.append("b")
    assert state.get("notes") == ["a"]
    assert state.data["notes"] == ["a"]


def test_a_dict_read_through_get_can_be_changed_without_changing_the_state() -> None:
    state = State({"info": {"type": dict}}, {"info": {"a": 1}})
    info = state.get("info")
    info["b"] = 2
    assert state.get("info") == {"a": 1}


@pytest.mark.parametrize(
    "value",
    [
        {"a": [1, 2], "b": {"c": [3]}},
        [[1], [2]],
        [{"k": "v"}],
        ({"k": [1]}, 2),
        Box([1, 2]),
        Bag([1, 2]),
    ],
    ids=["nested-dict", "list-of-lists", "list-of-dicts", "tuple-holding-a-dict", "dataclass", "frozen-with-list"],
)
def test_nested_mutable_values_are_copied_all_the_way_down(value: Any) -> None:
    state = _state(v=value)
    got = state.get("v")
    assert got == value
    assert got is not value
    before = repr(state.data["v"])
    if isinstance(got, dict):
        next(iter(v for v in got.values() if isinstance(v, list | dict))).clear()
    elif isinstance(got, list):
        got[0].clear()
    elif isinstance(got, tuple):
        got[0]["k"].append(9)
    else:
        got.items.append(9)
    assert repr(state.data["v"]) == before


@pytest.mark.parametrize(
    "value",
    [
        "text",
        7,
        2.5,
        True,
        None,
        b"raw",
        Colour.RED,
        datetime.date(2026, 1, 2),
        (1, "a", (2, None)),
        frozenset({1, 2}),
        Point(1, (2, 3)),
    ],
)
def test_immutable_values_are_returned_as_they_are(value: Any) -> None:
    state = _state(v=value)
    assert state.get("v") is value


def test_messages_are_copied_so_a_caller_cannot_rewrite_the_history() -> None:
    message = ChatMessage.from_assistant(tool_calls=[ToolCall(tool_name="f", arguments={"x": 1}, id="c1")])
    state = State()
    state.set("messages", [message])
    got = state.get("messages")
    got[0].tool_calls[0].arguments["x"] = 2
    got.append(ChatMessage.from_user("extra"))
    assert state.data["messages"] == [message]
    assert message.tool_calls[0].arguments == {"x": 1}


def test_the_default_is_copied_too_as_in_haystack() -> None:
    default: list[int] = [1]
    got = State().get("missing", default)
    assert got == [1]
    assert got is not default


def test_data_stays_the_live_dict() -> None:
    state = State({"notes": {"type": list[str]}}, {"notes": ["a"]})
    state.data["notes"].append("b")
    assert state.get("notes") == ["a", "b"]


def test_a_value_that_cannot_be_copied_is_a_type_error_naming_the_key_and_the_way_out() -> None:
    lock = threading.Lock()
    state = _state(lock=lock)
    with pytest.raises(ConfigurationTypeError, match=r"State\.get\('lock'\).*lock.*state\.data\['lock'\]") as info:
        state.get("lock")
    assert isinstance(info.value, TypeError)
    assert state.data["lock"] is lock


def test_a_tool_reading_state_gets_a_copy() -> None:
    from handrail.components.agents import Agent
    from handrail.testing import ScriptedChatGenerator, call, reply, user
    from handrail.tools import Tool

    def spoil(note: str, notes: list[str]) -> str:
        notes.append("spoiled")
        return note

    agent = Agent(
        chat_generator=ScriptedChatGenerator([reply(call("spoil", {"note": "n"}, "c1")), reply("done")]),
        tools=[
            Tool(
                name="spoil",
                description="Change the list it is given.",
                parameters={"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]},
                function=spoil,
                inputs_from_state={"notes": "notes"},
            )
        ],
        state_schema={"notes": {"type": list[str]}},
    )
    result = agent.run([user("go")], notes=["kept"])
    assert result["notes"] == ["kept"]
