from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from handrail.dataclasses import ChatMessage, State, ToolCall
from handrail.dataclasses.state import RESERVED_KEYS, merge_lists, replace_values, validate_state_schema
from handrail.errors import ConfigurationError, HandrailError, StateError


def keep_first(current: Any, new: Any) -> Any:
    """A custom handler importable by dotted path: keeps the first value ever set."""
    return new if current is None else current


# ---- handlers ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("current", "new", "expected"),
    [
        (None, None, []),
        (None, [1], [1]),
        ([1], None, [1]),
        ([1, 2], [3], [1, 2, 3]),
        ([1], 2, [1, 2]),
        (1, [2], [1, 2]),
        (1, 2, [1, 2]),
        (None, "ab", ["ab"]),  # a string is a scalar, never split into characters
        ("ab", None, ["ab"]),
        ([], [], []),
        ([{"a": 1}], ({"b": 2}), [{"a": 1}, {"b": 2}]),
    ],
)
def test_merge_lists(current: Any, new: Any, expected: list[Any]) -> None:
    assert merge_lists(current, new) == expected


def test_merge_lists_returns_a_new_list_and_leaves_its_inputs_alone() -> None:
    left, right = [1], [2]
    out = merge_lists(left, right)
    out.append(3)
    assert left == [1]
    assert right == [2]
    assert out is not left
    assert out is not right


@pytest.mark.parametrize(("current", "new"), [(None, 1), (1, None), ([1], [2]), ("a", "b"), ({"k": 1}, {})])
def test_replace_values_returns_the_new_value(current: Any, new: Any) -> None:
    assert replace_values(current, new) is new


# ---- schema validation ------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", RESERVED_KEYS)
def test_reserved_keys_are_refused_in_a_user_schema(key: str) -> None:
    with pytest.raises(StateError, match="reserved") as info:
        State({key: {"type": int}})
    assert key in str(info.value)
    assert isinstance(info.value, ValueError)


def test_the_reserved_keys_are_the_six_of_the_design() -> None:
    assert set(RESERVED_KEYS) == {
        "step_count",
        "token_usage",
        "tool_call_counts",
        "exit_reason",
        "stop_run",
        "continue_run",
    }


@pytest.mark.parametrize(
    ("schema", "match"),
    [
        ({"a": {}}, "missing a 'type'"),
        ({"a": int}, "missing a 'type'"),
        ({"a": {"type": "int"}}, "must be a Python type"),
        ({"a": {"type": 5}}, "must be a Python type"),
        ({"a": {"type": int, "handler": "nope"}}, "must be callable"),
        ({"messages": {"type": str}}, "'messages' must have a list type"),
        ({"a": {"type": list, "handelr": print}}, r"key 'a' has unknown entries \['handelr'\]"),
        ({1: {"type": int}}, "keys must be str"),
    ],
)
def test_invalid_schemas_are_refused(schema: dict[str, Any], match: str) -> None:
    with pytest.raises(StateError, match=match):
        validate_state_schema(schema)
    with pytest.raises(StateError, match=match):
        State(schema)


def test_a_schema_that_is_not_a_mapping_is_refused() -> None:
    with pytest.raises(StateError, match="must be a dict"):
        validate_state_schema([("a", {"type": int})])  # type: ignore[arg-type]


def test_valid_schema_types_are_accepted() -> None:
    validate_state_schema(
        {
            "a": {"type": int},
            "b": {"type": list[str], "handler": None},
            "c": {"type": dict[str, int] | None},
            "d": {"type": Any},
            "messages": {"type": list[ChatMessage]},
        }
    )


# ---- State behaviour --------------------------------------------------------------------------------------


def test_fresh_state_holds_messages_and_the_reserved_keys() -> None:
    state = State()
    assert state.get("messages") == []
    assert state.has("messages")
    for key in RESERVED_KEYS:
        assert state.has(key)
    assert state.get("step_count") == 0
    assert state.get("token_usage") == {}
    assert state.get("tool_call_counts") == {}
    assert state.get("exit_reason") is None
    assert state.get("stop_run") is None
    assert state.get("continue_run") is False
    assert set(state.schema) == {"messages"}


def test_messages_is_present_even_with_a_user_schema() -> None:
    state = State({"notes": {"type": list[str]}})
    assert state.get("messages") == []
    assert set(state.schema) == {"notes", "messages"}
    m = ChatMessage.from_user("hi")
    state.set("messages", [m])
    state.set("messages", m)
    assert state.get("messages") == [m, m]


def test_a_user_defined_messages_schema_is_kept() -> None:
    state = State({"messages": {"type": list[ChatMessage], "handler": replace_values}})
    a, b = ChatMessage.from_user("a"), ChatMessage.from_user("b")
    state.set("messages", [a])
    state.set("messages", [b])
    assert state.get("messages") == [b]


def test_list_keys_merge_by_default_including_none_and_scalars() -> None:
    state = State({"notes": {"type": list[str]}, "raw": {"type": list}})
    assert not state.has("notes")
    assert state.get("notes") is None
    assert state.get("notes", []) == []
    state.set("notes", None)
    assert state.get("notes") == []
    state.set("notes", "a")
    state.set("notes", ["b", "c"])
    state.set("notes", None)
    assert state.get("notes") == ["a", "b", "c"]
    state.set("raw", 1)
    state.set("raw", [2])
    assert state.get("raw") == [1, 2]


def test_other_keys_are_replaced_by_default_including_none() -> None:
    state = State({"count": {"type": int}, "info": {"type": dict[str, int]}, "maybe": {"type": str | None}})
    state.set("count", 1)
    state.set("count", 2)
    assert state.get("count") == 2
    state.set("info", {"a": 1})
    state.set("info", {"b": 2})
    assert state.get("info") == {"b": 2}
    state.set("maybe", "x")
    state.set("maybe", None)
    assert state.has("maybe")
    assert state.get("maybe") is None


def test_a_schema_handler_is_used() -> None:
    state = State({"first": {"type": str, "handler": keep_first}})
    state.set("first", "a")
    state.set("first", "b")
    assert state.get("first") == "a"


def test_handler_override_applies_to_one_call_only() -> None:
    state = State({"notes": {"type": list[str]}})
    state.set("notes", ["a"])
    state.set("notes", ["b"], handler_override=replace_values)
    assert state.get("notes") == ["b"]
    state.set("notes", ["c"])
    assert state.get("notes") == ["b", "c"]


def test_reserved_keys_can_be_set_and_are_replaced() -> None:
    state = State()
    state.set("step_count", 3)
    state.set("exit_reason", "text")
    state.set("stop_run", "hook said so")
    assert state.get("step_count") == 3
    assert state.get("exit_reason") == "text"
    assert state.get("stop_run") == "hook said so"


def test_an_unknown_key_is_refused_with_a_state_error() -> None:
    state = State({"notes": {"type": list[str]}})
    with pytest.raises(StateError, match="key 'nope' not found in schema") as info:
        state.set("nope", 1)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, ConfigurationError)
    assert isinstance(info.value, HandrailError)
    assert "notes" in str(info.value)
    assert not state.has("nope")


def test_an_unknown_key_in_initial_data_is_refused() -> None:
    with pytest.raises(StateError, match="'nope'"):
        State({"a": {"type": int}}, {"nope": 1})


def test_initial_data_goes_through_the_handlers() -> None:
    state = State({"notes": {"type": list[str]}, "n": {"type": int}}, {"notes": "a", "n": 1})
    assert state.get("notes") == ["a"]
    assert state.get("n") == 1


def test_get_returns_a_copy_and_data_is_the_live_dict() -> None:
    state = State({"info": {"type": dict}})
    state.set("info", {"a": 1})
    state.get("info")["b"] = 2
    assert state.get("info") == {"a": 1}
    state.data["info"]["b"] = 2
    assert state.get("info") == {"a": 1, "b": 2}
    state.data["info"] = {"c": 3}
    assert state.get("info") == {"c": 3}


def test_the_schema_given_is_copied() -> None:
    schema: dict[str, Any] = {"a": {"type": int}}
    state = State(schema)
    schema["b"] = {"type": str}
    schema["a"]["type"] = str
    assert set(state.schema) == {"a", "messages"}
    assert state.schema["a"]["type"] is int


def test_user_values_lists_only_the_users_keys_that_hold_a_value() -> None:
    state = State({"a": {"type": int}, "b": {"type": str}})
    state.set("a", 1)
    state.set("messages", [ChatMessage.from_user("x")])
    assert state.user_values() == {"a": 1}


def test_repr_names_the_keys() -> None:
    assert "messages" in repr(State())
    assert "step_count" in repr(State())


# ---- to_dict / from_dict ----------------------------------------------------------------------------------


def make_state() -> State:
    state = State(
        {
            "notes": {"type": list[str]},
            "count": {"type": int},
            "first": {"type": str | None, "handler": keep_first},
            "merged": {"type": list[int], "handler": merge_lists},
            "unset": {"type": dict[str, Any]},
        }
    )
    state.set("notes", ["città", "🍎"])
    state.set("count", 7)
    state.set("first", "uno")
    state.set("merged", [1, 2])
    call = ToolCall("weather", {"city": "Zürich"}, "call_1")
    state.set(
        "messages",
        [
            ChatMessage.from_user("Wie ist das Wetter in Zürich?"),
            ChatMessage.from_assistant(tool_calls=[call]),
            ChatMessage.from_tool("12 °C", call),
        ],
    )
    return state


def test_to_dict_shape() -> None:
    d = make_state().to_dict()
    assert d["schema"] == {
        "notes": {"type": "list[str]", "handler": None},
        "count": {"type": "int", "handler": None},
        "first": {"type": "str | None", "handler": "tests.dataclasses.test_state.keep_first"},
        "merged": {"type": "list[int]", "handler": "handrail.dataclasses.state.merge_lists"},
        "unset": {"type": "dict[str, typing.Any]", "handler": None},
    }
    assert d["data"]["notes"] == ["città", "🍎"]
    assert d["data"]["count"] == 7
    assert "unset" not in d["data"]
    assert d["data"]["messages"][0] == {
        "role": "user",
        "meta": {},
        "name": None,
        "content": [{"text": "Wie ist das Wetter in Zürich?"}],
    }
    for key in RESERVED_KEYS:
        assert key not in d["data"]
        assert key not in d["schema"]


def test_round_trip_through_json() -> None:
    state = make_state()
    d = json.loads(json.dumps(state.to_dict(), ensure_ascii=False))
    before = copy.deepcopy(d)
    back = State.from_dict(d)
    assert d == before  # from_dict does not modify its input
    assert back.to_dict() == state.to_dict()
    assert back.get("messages") == state.get("messages")
    assert back.get("notes") == ["città", "🍎"]
    assert back.get("first") == "uno"
    assert not back.has("unset")
    assert back.schema["first"]["type"] == str | None
    assert back.schema["notes"]["type"] == list[str]
    # the handlers survive: list merges, custom handler keeps the first value
    back.set("notes", "x")
    assert back.get("notes") == ["città", "🍎", "x"]
    back.set("first", "due")
    assert back.get("first") == "uno"
    back.set("merged", 3)
    assert back.get("merged") == [1, 2, 3]
    with pytest.raises(StateError):
        back.set("unknown", 1)


def test_round_trip_of_an_empty_state() -> None:
    back = State.from_dict(State().to_dict())
    assert back.get("messages") == []
    assert set(back.schema) == {"messages"}
    assert State().to_dict() == {"schema": {}, "data": {"messages": []}}


def test_from_dict_does_not_merge_messages_twice() -> None:
    state = State()
    state.set("messages", [ChatMessage.from_user("a"), ChatMessage.from_user("b")])
    back = State.from_dict(state.to_dict())
    assert [m.text for m in back.get("messages")] == ["a", "b"]


def test_a_user_defined_messages_entry_survives_the_round_trip() -> None:
    state = State({"messages": {"type": list[ChatMessage], "handler": replace_values}})
    state.set("messages", [ChatMessage.from_user("a")])

    back = State.from_dict(state.to_dict())

    assert back.schema["messages"] == {"type": list[ChatMessage], "handler": replace_values}
    assert [m.text for m in back.get("messages")] == ["a"]
    back.set("messages", [ChatMessage.from_user("b")])
    assert [m.text for m in back.get("messages")] == ["b"]  # replaced, not merged by the default handler


def test_a_payload_without_a_messages_entry_still_gets_the_default_one() -> None:
    old = {"schema": {"n": {"type": "int", "handler": None}}, "data": {"n": 1, "messages": []}}

    back = State.from_dict(old)

    assert back.schema["messages"] == {"type": list[ChatMessage], "handler": merge_lists}
    back.set("messages", [ChatMessage.from_user("a")])
    back.set("messages", [ChatMessage.from_user("b")])
    assert [m.text for m in back.get("messages")] == ["a", "b"]
