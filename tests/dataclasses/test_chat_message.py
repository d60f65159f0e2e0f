from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handrail.dataclasses import ChatMessage, ChatRole, TextContent, ToolCall, ToolCallResult
from handrail.dataclasses.chat_message import call_id_from, call_id_problem
from handrail.errors import ConfigurationError, ConfigurationTypeError, HandrailError
from tests.dataclasses._strategies import argument_dicts, call_ids, json_values, texts


def json_round_trip(message: ChatMessage) -> ChatMessage:
    """Serialize through JSON text and UTF-8 bytes, as a file or a database row would, and read back."""
    raw = json.dumps(message.to_dict(), ensure_ascii=False).encode("utf-8")
    return ChatMessage.from_dict(json.loads(raw.decode("utf-8")))


# ---- ChatRole ---------------------------------------------------------------------------------------------


def test_chat_role_values_are_the_four_wire_names() -> None:
    assert [r.value for r in ChatRole] == ["user", "system", "assistant", "tool"]
    assert ChatRole.USER == "user"
    assert isinstance(ChatRole.TOOL, str)
    assert f"{ChatRole.ASSISTANT}" == "assistant"


def test_chat_role_from_str_accepts_known_names() -> None:
    assert ChatRole.from_str("tool") is ChatRole.TOOL
    assert ChatRole.from_str("system") is ChatRole.SYSTEM


def test_chat_role_from_str_refuses_unknown_name_with_a_value_error() -> None:
    with pytest.raises(ConfigurationError, match="Unknown chat role 'robot'") as info:
        ChatRole.from_str("robot")
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, HandrailError)
    assert "assistant" in str(info.value)


# ---- factories and properties -----------------------------------------------------------------------------


def test_from_user_builds_one_text_part() -> None:
    m = ChatMessage.from_user("hello", meta={"k": 1}, name="ann")
    assert m.role is ChatRole.USER
    assert m.is_from(ChatRole.USER)
    assert m.is_from("user")
    assert not m.is_from(ChatRole.ASSISTANT)
    assert m.text == "hello"
    assert m.texts == ["hello"]
    assert m.meta == {"k": 1}
    assert m.name == "ann"
    assert m.tool_calls == []
    assert m.tool_call is None
    assert m.tool_call_results == []
    assert m.tool_call_result is None


def test_from_system_builds_one_text_part() -> None:
    m = ChatMessage.from_system("be brief")
    assert m.role is ChatRole.SYSTEM
    assert m.text == "be brief"
    assert m.meta == {}
    assert m.name is None


@pytest.mark.parametrize("factory", [ChatMessage.from_user, ChatMessage.from_system])
@pytest.mark.parametrize("bad", [None, 5, ["a"], b"bytes"])
def test_user_and_system_factories_refuse_non_string_text(factory: Any, bad: Any) -> None:
    if bad is None and factory == ChatMessage.from_user:  # Haystack's ValueError: text or content_parts is needed
        with pytest.raises(ValueError, match="Either text or content_parts must be provided"):
            factory(bad)
        return
    with pytest.raises(ConfigurationTypeError, match="needs a str text") as info:
        factory(bad)
    assert isinstance(info.value, TypeError)


def test_meta_default_is_a_fresh_dict_per_message() -> None:
    a = ChatMessage.from_user("a")
    b = ChatMessage.from_user("b")
    a.meta["x"] = 1
    assert b.meta == {}


def test_from_assistant_text_only() -> None:
    m = ChatMessage.from_assistant("Paris", meta={"finish_reason": "stop"}, name="bot")
    assert m.role is ChatRole.ASSISTANT
    assert m.text == "Paris"
    assert m.tool_calls == []
    assert m.meta == {"finish_reason": "stop"}
    assert m.name == "bot"


def test_from_assistant_none_text_adds_no_part_but_empty_text_does() -> None:
    none = ChatMessage.from_assistant()
    assert none.text is None
    assert none.texts == []
    empty = ChatMessage.from_assistant("")
    assert empty.text == ""
    assert empty.texts == [""]
    assert none != empty


def test_from_assistant_with_tool_calls_keeps_their_order_after_the_text() -> None:
    c1 = ToolCall(tool_name="weather", arguments={"city": "Oslo"}, id="call_1")
    c2 = ToolCall(tool_name="time", arguments={}, id="call_2")
    m = ChatMessage.from_assistant("let me check", tool_calls=[c1, c2])
    assert m.text == "let me check"
    assert m.tool_calls == [c1, c2]
    assert m.tool_call is c1
    assert m.tool_call_results == []
    assert m.to_dict()["content"] == [
        {"text": "let me check"},
        {"tool_call": {"tool_name": "weather", "arguments": {"city": "Oslo"}, "id": "call_1", "extra": None}},
        {"tool_call": {"tool_name": "time", "arguments": {}, "id": "call_2", "extra": None}},
    ]


def test_from_assistant_with_only_tool_calls_has_no_text() -> None:
    call = ToolCall(tool_name="ping", arguments={"x": "a"})
    m = ChatMessage.from_assistant(tool_calls=[call])
    assert m.text is None
    assert m.tool_call == call
    assert m.tool_call.id is None  # type: ignore[union-attr]


def test_from_tool_holds_one_result_for_its_origin() -> None:
    origin = ToolCall(tool_name="weather", arguments={"city": "Oslo"}, id="call_1")
    m = ChatMessage.from_tool("12 °C", origin, meta={"elapsed_ms": 3})
    assert m.role is ChatRole.TOOL
    assert m.text is None
    assert m.tool_calls == []
    assert m.tool_call_result == ToolCallResult(result="12 °C", origin=origin, error=False)
    assert m.tool_call_results == [m.tool_call_result]
    assert m.meta == {"elapsed_ms": 3}
    assert m.name is None


def test_from_tool_error_flag() -> None:
    origin = ToolCall(tool_name="weather", arguments="{bad json", id="c")
    m = ChatMessage.from_tool("invalid JSON", origin, error=True)
    assert m.tool_call_result is not None
    assert m.tool_call_result.error is True
    assert m.tool_call_result.origin.arguments == "{bad json"


def test_texts_returns_every_text_part_in_order() -> None:
    m = ChatMessage(ChatRole.ASSISTANT, [TextContent("one"), ToolCall("t", {}), TextContent("two")])
    assert m.texts == ["one", "two"]
    assert m.text == "one"


def test_messages_compare_by_value() -> None:
    assert ChatMessage.from_user("a", meta={"m": 1}) == ChatMessage.from_user("a", meta={"m": 1})
    assert ChatMessage.from_user("a") != ChatMessage.from_user("b")
    assert ChatMessage.from_user("a") != ChatMessage.from_system("a")
    assert ChatMessage.from_user("a", name="x") != ChatMessage.from_user("a")


# ---- to_dict / from_dict ----------------------------------------------------------------------------------


def test_to_dict_shape_of_a_user_message() -> None:
    assert ChatMessage.from_user("hi", meta={"a": [1]}, name="n").to_dict() == {
        "role": "user",
        "meta": {"a": [1]},
        "name": "n",
        "content": [{"text": "hi"}],
    }


def test_to_dict_shape_of_a_tool_message() -> None:
    origin = ToolCall(tool_name="t", arguments={"q": 1}, id="c1", extra={"provider": "x"})
    assert ChatMessage.from_tool("ok", origin).to_dict() == {
        "role": "tool",
        "meta": {},
        "name": None,
        "content": [
            {
                "tool_call_result": {
                    "result": "ok",
                    "origin": {
                        "tool_name": "t",
                        "arguments": {"q": 1},
                        "id": "c1",
                        "extra": {"provider": "x"},
                    },
                    "error": False,
                }
            }
        ],
    }


@pytest.mark.parametrize(
    "message",
    [
        ChatMessage.from_user("Ciao, città 🍎"),
        ChatMessage.from_system("Système: réponds en français", name="sys"),
        ChatMessage.from_assistant(),
        ChatMessage.from_assistant(""),
        ChatMessage.from_assistant(
            "看看天气",
            meta={"finish_reason": "tool_calls", "usage": {"prompt_tokens": 3, "completion_tokens": 4}},
            tool_calls=[
                ToolCall(tool_name="weather", arguments={"city": "Zürich 🇨🇭"}, id="call_1"),
                ToolCall(tool_name="weather", arguments='{"city": "Bern"', id="call_2"),
                ToolCall(tool_name="noop", arguments="", id=None, extra={"index": 2}),
            ],
        ),
        ChatMessage.from_tool("Zürich: 12 °C ☁️", ToolCall("weather", {"city": "Zürich"}, "call_1")),
        ChatMessage.from_tool("boom", ToolCall("weather", "[1, 2]", "call_2"), error=True),
    ],
    ids=[
        "user",
        "system",
        "assistant-empty",
        "assistant-empty-text",
        "assistant-calls",
        "tool",
        "tool-error",
    ],
)
def test_round_trip_through_json_is_lossless(message: ChatMessage) -> None:
    text = message.to_json()
    assert "\\u" not in text  # non-ASCII is never escaped
    back = ChatMessage.from_dict(json.loads(text))
    assert back == message
    assert back.to_dict() == message.to_dict()
    assert json_round_trip(message) == message


def test_from_dict_does_not_modify_its_input() -> None:
    data = ChatMessage.from_assistant(
        "x", meta={"usage": {"total_tokens": 1}}, tool_calls=[ToolCall("t", {"a": [1]}, "c")]
    ).to_dict()
    before = copy.deepcopy(data)
    message = ChatMessage.from_dict(data)
    message.meta["added"] = True
    assert data == before


def test_from_dict_accepts_plain_string_content() -> None:
    m = ChatMessage.from_dict({"role": "assistant", "content": "plain"})
    assert m == ChatMessage.from_assistant("plain")


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"content": []}, "needs 'role' and 'content'.*The `role` field is required in the message dictionary"),
        ({"role": "user"}, "needs 'role' and 'content'.*Missing 'content' or '_content' in serialized ChatMessage"),
        ({"role": "robot", "content": []}, "Unknown chat role"),
        ({"role": "user", "content": [{"audio": "x"}]}, "unknown content part"),
        (
            {"role": "assistant", "content": [{"tool_call": {"tool_name": "t"}}]},
            r"missing the keys \['arguments'\]",
        ),
        (
            {"role": "tool", "content": [{"tool_call_result": {"result": "r"}}]},
            r"missing the keys \['origin'",
        ),
    ],
)
def test_from_dict_refuses_malformed_data_with_a_value_error(data: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match) as info:
        ChatMessage.from_dict(data)
    assert isinstance(info.value, ValueError)


# ---- ToolCall / ToolCallResult ----------------------------------------------------------------------------


def test_tool_call_defaults() -> None:
    call = ToolCall(tool_name="ping", arguments={"x": "a"})
    assert call.id is None
    assert call.extra is None
    assert call.to_dict() == {"tool_name": "ping", "arguments": {"x": "a"}, "id": None, "extra": None}


@pytest.mark.parametrize("raw", ["", "   ", "null", "[]", "5", '"s"', '{"city": "Oslo"', "not json at all", "{'a': 1}"])
def test_tool_call_with_raw_string_arguments_round_trips_exactly(raw: str) -> None:
    call = ToolCall(tool_name="weather", arguments=raw, id="call_1")
    back = ToolCall.from_dict(json.loads(json.dumps(call.to_dict(), ensure_ascii=False)))
    assert back == call
    assert back.arguments == raw
    assert isinstance(back.arguments, str)


def test_tool_call_from_dict_defaults_missing_optional_keys() -> None:
    assert ToolCall.from_dict({"tool_name": "t", "arguments": {}}) == ToolCall("t", {}, None, None)


def test_tool_call_result_from_dict_requires_all_keys_and_coerces_error() -> None:
    origin = ToolCall("t", {}, "c")
    assert ToolCallResult.from_dict({"result": "r", "origin": origin.to_dict(), "error": 0}) == ToolCallResult(
        "r", origin, False
    )
    with pytest.raises(ConfigurationError, match=r"\['error'\]"):
        ToolCallResult.from_dict({"result": "r", "origin": origin.to_dict()})


def test_text_content_to_dict() -> None:
    assert TextContent("é").to_dict() == {"text": "é"}


# ---- property-based round trips ---------------------------------------------------------------------------


@given(text=texts, name=st.none() | texts, meta=st.dictionaries(texts, json_values, max_size=3))
def test_user_message_with_arbitrary_text_round_trips(text: str, name: str | None, meta: dict[str, Any]) -> None:
    message = ChatMessage.from_user(text, meta=meta, name=name)
    back = json_round_trip(message)
    assert back == message
    assert back.text == text
    assert back.name == name
    assert back.meta == meta


@given(
    text=st.none() | texts,
    calls=st.lists(
        st.builds(
            ToolCall,
            tool_name=texts,
            arguments=argument_dicts | texts,
            id=st.none() | call_ids,
            extra=st.none() | st.dictionaries(texts, json_values, max_size=2),
        ),
        max_size=4,
    ),
)
def test_assistant_message_with_arbitrary_calls_round_trips(text: str | None, calls: list[ToolCall]) -> None:
    message = ChatMessage.from_assistant(text, tool_calls=calls)
    back = json_round_trip(message)
    assert back == message
    assert back.text == text
    assert [c.arguments for c in back.tool_calls] == [c.arguments for c in calls]
    assert [c.id for c in back.tool_calls] == [c.id for c in calls]


@given(result=texts, arguments=argument_dicts | texts, error=st.booleans())
def test_tool_message_with_arbitrary_result_round_trips(
    result: str, arguments: dict[str, Any] | str, error: bool
) -> None:
    message = ChatMessage.from_tool(result, ToolCall("tool_é", arguments, "call_🍎"), error=error)
    back = json_round_trip(message)
    assert back == message
    assert back.tool_call_result is not None
    assert back.tool_call_result.result == result
    assert back.tool_call_result.origin.arguments == arguments
    assert back.tool_call_result.error is error


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (5, "ChatMessage data must be a mapping, got int"),
        ({"role": ["user"], "content": "hi"}, "'role' must be a str, got list"),
        ({"role": "user", "content": {"text": "hi"}}, "'content' must be a str or a list of parts, got dict"),
        ({"role": "user", "content": 7}, "'content' must be a str or a list of parts, got int"),
        ({"role": "user", "content": "hi", "meta": ["a"]}, "'meta' must be a dict or null, got list"),
        ({"role": "user", "content": "hi", "name": 3}, "'name' must be a str or null, got int"),
        ({"role": "user", "content": ["hi"]}, r"'content\[0\]' must be a mapping, got str"),
        ({"role": "user", "content": [{"text": ["a"]}]}, r"'content\[0\]\.text' must be a str, got list"),
        ({"role": "assistant", "content": [{"tool_call": {"tool_name": "t", "arguments": [1]}}]},
         r"'content\[0\]\.tool_call\.arguments' must be a mapping .*got list"),
        ({"role": "assistant", "content": [{"tool_call": {"tool_name": "t", "arguments": {}, "extra": 1}}]},
         r"'content\[0\]\.tool_call\.extra' must be a mapping or null, got int"),
        ({"role": "tool", "content": [{"tool_call_result": {"result": 1, "origin": {}, "error": False}}]},
         r"'content\[0\]\.tool_call_result\.result' must be a str or a list of text and image parts, got int"),
        ({"role": "tool", "content": [{"tool_call_result": {"result": "r", "origin": {}, "error": "no"}}]},
         r"'content\[0\]\.tool_call_result\.error' must be true or false, got str"),
        ({"role": "tool", "content": [{"tool_call_result": {"result": "r", "origin": 5, "error": False}}]},
         r"'content\[0\]\.tool_call_result\.origin' must be a mapping, got int"),
    ],
)  # fmt: skip
def test_from_dict_refuses_fields_of_the_wrong_type_naming_them(data: Any, fragment: str) -> None:
    from handrail.errors import SerializationError

    with pytest.raises(SerializationError, match=fragment):
        ChatMessage.from_dict(data)


# --------------------------------------------------------------------------- call ids a person can type back


@pytest.mark.parametrize(
    "bad", ["a\nb", "c1\x1b[31m", "c1\x7f", "c1\x85", "a\u202eb", "a\u200bb", " c1", "c1\t", "c" * 257, "\ud800"]
)
def test_a_tool_call_refuses_an_id_a_person_cannot_read_and_type_back(bad: str) -> None:
    with pytest.raises(ConfigurationError, match=r"is refused: it (holds the unprintable|has)"):
        ToolCall(tool_name="echo", arguments={}, id=bad)
    assert call_id_from(bad) is None  # a model's such id is dropped, and the Agent gives the call one


@pytest.mark.parametrize("good", ["call_1", "c1\\x1b[31m\\n", "toolu_01A", "c" * 256, "a b", ""])
def test_a_readable_id_is_kept(good: str) -> None:
    assert ToolCall(tool_name="echo", arguments={}, id=good).id == good
    assert call_id_from(good) == (good or None)


@pytest.mark.parametrize("odd", ["é🍎", "c1\ufe0f", "\u3164", "c1\u034f", "\u2800", "c\u0301"])
def test_a_model_id_outside_ascii_is_dropped_but_a_python_built_one_is_kept(odd: str) -> None:
    """Outside ASCII two ids can print alike ("c1" and "c1" + U+FE0F): a model's is dropped (the Agent gives the
    call one); a ToolCall built in Python or read from a snapshot written before keeps it."""
    assert call_id_from(odd) is None
    assert call_id_problem(odd) is not None and "non-ASCII" in (call_id_problem(odd) or "")
    assert ToolCall(tool_name="echo", arguments={}, id=odd).id == odd


_CALL = {"tool_name": "t", "arguments": {}, "id": "c1", "extra": None}


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"role": "user", "content": "hi", "bogus": 5}, ("bogus",)),
        ({"role": "user", "content": [{"text": "hi", "bogus": 5}]}, ("content", 0, "bogus")),
        ({"role": "assistant", "content": [{"tool_call": {**_CALL, "bogus": 5}}]},
         ("content", 0, "tool_call", "bogus")),
        ({"role": "tool", "content": [{"tool_call_result": {"result": "r", "origin": _CALL, "error": False,
                                                            "x": 1}}]},
         ("content", 0, "tool_call_result", "x")),
        ({"role": "tool", "content": [{"tool_call_result": {"result": "r", "origin": {**_CALL, "y": 1},
                                                            "error": False}}]},
         ("content", 0, "tool_call_result", "origin", "y")),
        ({"role": "assistant", "content": [{"tool_call": {**_CALL, "id": [1]}}]}, ("content", 0, "tool_call", "id")),
        ({"role": "assistant", "content": [{"tool_call": {**_CALL, "tool_name": 5}}]},
         ("content", 0, "tool_call", "tool_name")),
        ({"role": "robot", "content": "hi"}, ("role",)),
    ],
)  # fmt: skip
def test_from_dict_refuses_unknown_keys_and_wrong_types_at_any_depth_with_the_path(
    data: dict[str, Any], path: tuple[str | int, ...]
) -> None:
    from handrail.dataclasses._message_shapes import render_path
    from handrail.errors import SerializationError

    with pytest.raises(SerializationError) as info:
        ChatMessage.from_dict(data)
    assert info.value.path == path
    assert render_path(path) in str(info.value)


def test_tool_call_and_result_from_dict_refuse_unknown_keys_as_haystack_does() -> None:
    from handrail.errors import SerializationError

    with pytest.raises(SerializationError, match=r"ToolCall 'bogus' is not a known key") as info:
        ToolCall.from_dict({**_CALL, "bogus": 5})
    assert info.value.path == ("bogus",)
    with pytest.raises(SerializationError, match=r"ToolCallResult 'origin\.id' must be a str or None"):
        ToolCallResult.from_dict({"result": "r", "origin": {**_CALL, "id": {"x": 1}}, "error": True})
