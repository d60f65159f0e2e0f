"""The reply schema of the embedded model and reading its replies (no model needed)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from handrail.components.generators.chat._constrained import (
    FinalAnswerStream,
    arguments_schema,
    parse_reply,
    repeats_previous_call,
    reply_schema,
)
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.tools import Tool


def _noop(**kwargs: Any) -> None:
    return None


CALC = Tool(
    name="calculator",
    description="Arithmetic.",
    parameters={"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]},
    function=_noop,
)
SEARCH = Tool(
    name="search",
    description="Search.",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string"}, "filters": {"$ref": "#/$defs/Filters"}},
        "required": ["query"],
        "$defs": {
            "Filters": {
                "type": "object",
                "properties": {"site": {"type": "string"}, "range": {"$ref": "#/$defs/Range"}},
            },
            "Range": {"type": "string", "enum": ["day", "week"]},
        },
    },
    function=_noop,
)
OPEN = Tool(  # explicitly allows extra keys
    name="open",
    description="Open.",
    parameters={"type": "object", "properties": {"url": {"type": "string"}}, "additionalProperties": True},
    function=_noop,
)


def _valid(schema: dict[str, Any], value: Any) -> bool:
    return Draft202012Validator(schema).is_valid(value)


# ----------------------------------------------------------------------------- the schema


def test_the_schema_allows_one_call_of_each_tool_or_a_final_answer() -> None:
    schema = reply_schema([CALC, SEARCH, OPEN])
    Draft202012Validator.check_schema(schema)
    assert len(schema["anyOf"]) == 4
    assert _valid(schema, {"name": "calculator", "arguments": {"expression": "1+1"}})
    assert _valid(schema, {"name": "search", "arguments": {"query": "x", "filters": {"site": "a", "range": "day"}}})
    assert _valid(schema, {"final_answer": "It is 2."})


@pytest.mark.parametrize(
    "reply",
    [
        {"name": "calculator", "arguments": {}},  # a required argument missing
        {"name": "calculator", "arguments": {"expression": 5}},  # wrong type
        {"name": "calculator", "arguments": {"expression": "1", "extra": 1}},  # invented key
        {"name": "search", "arguments": {"query": "x", "filters": {"range": "year"}}},  # not in the enum ($ref)
        {"name": "nope", "arguments": {}},  # unknown tool
        {"name": "calculator", "arguments": {"expression": "1"}, "final_answer": "x"},  # both branches
        {"final_answer": ""},  # an empty answer would not end the run
        {"answer": "x"},
        [],
    ],
)
def test_the_schema_rejects_everything_else(reply: Any) -> None:
    assert not _valid(reply_schema([CALC, SEARCH, OPEN]), reply)


def test_an_object_that_allows_extra_keys_keeps_allowing_them() -> None:
    assert _valid(reply_schema([OPEN]), {"name": "open", "arguments": {"url": "u", "other": 1}})
    assert arguments_schema(OPEN.parameters)["additionalProperties"] is True


def test_tool_defs_are_hoisted_and_refs_rewritten() -> None:
    schema = reply_schema([CALC, SEARCH])
    assert set(schema["$defs"]) == {"t1_Filters", "t1_Range"}
    arguments = schema["anyOf"][1]["properties"]["arguments"]
    assert arguments["properties"]["filters"] == {"$ref": "#/$defs/t1_Filters"}
    assert schema["$defs"]["t1_Filters"]["properties"]["range"] == {"$ref": "#/$defs/t1_Range"}
    assert "$defs" not in arguments
    assert "$defs" in SEARCH.parameters  # the tool's own schema is untouched


def test_final_answer_only() -> None:
    only = {"type": "object", "properties": {"final_answer": {"type": "string", "minLength": 1}}}
    for schema in (reply_schema([CALC], allow_calls=False), reply_schema([])):
        assert schema["properties"] == only["properties"]
        assert not _valid(schema, {"name": "calculator", "arguments": {"expression": "1"}})
        assert _valid(schema, {"final_answer": "done"})


# ----------------------------------------------------------------------------- parsing replies


def test_parse_a_call_and_a_final_answer() -> None:
    call = parse_reply('{\n  "name": "calculator",\n  "arguments": {"expression": "17 * 23"}\n}')
    assert (call.kind, call.tool_name, call.arguments) == ("tool_call", "calculator", {"expression": "17 * 23"})
    answer = parse_reply('{"final_answer": "C\'est 391 \\u2014 voilà"}')
    assert (answer.kind, answer.text) == ("final_answer", "C'est 391 — voilà")


@pytest.mark.parametrize(
    ("raw", "arguments"),
    [
        ('{"name": "calculator"}', {}),
        ('{"name": "calculator", "arguments": [1, 2]}', "[1, 2]"),
        ('{"name": "calculator", "arguments": "1+1"}', '"1+1"'),
        ('{"name": "calculator", "arguments": {"expression": "1+1",}}', '{"expression": "1+1",}'),
        ('{"name": "calculator", "arguments": {"expression": "1+', '{"expression": "1+'),
    ],
)
def test_a_call_whose_arguments_are_not_an_object_keeps_them_raw(raw: str, arguments: Any) -> None:
    parsed = parse_reply(raw)
    assert (parsed.kind, parsed.tool_name, parsed.arguments) == ("tool_call", "calculator", arguments)


@pytest.mark.parametrize("raw", ["", "{", "Sure! 391", '{"final_answer": "unterminated', "[1]", '{"other": 1}', "null"])
def test_replies_that_are_neither_are_invalid(raw: str) -> None:
    parsed = parse_reply(raw)
    assert parsed.kind == "invalid"
    assert parsed.text == raw


# ----------------------------------------------------------------------------- streaming the answer


@given(
    text=st.text(),
    ascii_only=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
)
def test_streamed_answer_text_equals_the_decoded_answer(text: str, ascii_only: bool, cuts: list[int]) -> None:
    raw = '{ "final_answer" : ' + json.dumps(text, ensure_ascii=ascii_only) + "}"
    bounds = sorted({min(c, len(raw)) for c in cuts} | {0, len(raw)})
    stream = FinalAnswerStream()
    pieces = [stream.feed(raw[a:b]) for a, b in itertools.pairwise(bounds)]
    assert "".join(pieces) == text == stream.text
    assert stream.started


def test_a_call_streams_no_text() -> None:
    stream = FinalAnswerStream()
    for piece in ['{"name": "calc', 'ulator", "arguments": {"expression": "', '1"}}']:
        assert stream.feed(piece) == ""
    assert not stream.started


def test_text_after_the_closing_quote_is_ignored() -> None:
    stream = FinalAnswerStream()
    assert stream.feed('{"final_answer": "ab"') == "ab"
    assert stream.feed(', "x": "cd"}') == ""


# ----------------------------------------------------------------------------- repeated calls


def _history(arguments: dict[str, Any], *, with_result: bool = True) -> list[ChatMessage]:
    call = ToolCall(tool_name="calculator", arguments=arguments, id="call_1")
    messages = [ChatMessage.from_user("17*23?"), ChatMessage.from_assistant(tool_calls=[call])]
    if with_result:
        messages.append(ChatMessage.from_tool("391", call))
    return messages


def test_a_call_equal_to_the_previous_one_with_its_result_present_is_a_repeat() -> None:
    assert repeats_previous_call(_history({"expression": "17*23"}), "calculator", {"expression": "17*23"})


@pytest.mark.parametrize(
    ("messages", "name", "arguments"),
    [
        (_history({"expression": "17*23"}), "calculator", {"expression": "17*24"}),
        (_history({"expression": "17*23"}), "search", {"expression": "17*23"}),
        (_history({"expression": "17*23"}, with_result=False), "calculator", {"expression": "17*23"}),
        ([ChatMessage.from_user("hi")], "calculator", {"expression": "17*23"}),
    ],
)
def test_other_calls_are_not_repeats(messages: list[ChatMessage], name: str, arguments: dict[str, Any]) -> None:
    assert not repeats_previous_call(messages, name, arguments)


def test_only_the_most_recent_call_counts() -> None:
    messages = _history({"expression": "1"})
    later = ToolCall(tool_name="calculator", arguments={"expression": "2"}, id="call_2")
    messages += [ChatMessage.from_assistant(tool_calls=[later]), ChatMessage.from_tool("2", later)]
    assert not repeats_previous_call(messages, "calculator", {"expression": "1"})
    assert repeats_previous_call(messages, "calculator", {"expression": "2"})


# ----------------------------------------------------------------------------- never a crash

_JSONISH = st.text(alphabet='{}[]":,\\ nuaeflmrt_0123456789.-', max_size=80)


@given(raw=st.one_of(st.text(max_size=80), _JSONISH, _JSONISH.map(lambda tail: '{"name": "calculator", ' + tail)))
def test_parsing_any_text_never_raises(raw: str) -> None:
    parsed = parse_reply(raw)
    assert parsed.kind in ("tool_call", "final_answer", "invalid")
    if parsed.kind == "tool_call":
        assert isinstance(parsed.tool_name, str)
        assert isinstance(parsed.arguments, dict | str)


@given(fragments=st.lists(st.one_of(st.text(max_size=12), _JSONISH), max_size=8))
def test_streaming_any_text_never_raises(fragments: list[str]) -> None:
    stream = FinalAnswerStream()
    out = "".join(stream.feed('{"final_answer": "' if i == 0 else f) for i, f in enumerate(["", *fragments]))
    assert out == stream.text


# --------------------------------------------------------------------------- names with spaces and non-ASCII


@pytest.mark.parametrize("name", ["Addition tool", "météo à Genève", 'say "hi"'])
def test_the_embedded_model_calls_a_tool_by_its_own_name(name: str) -> None:
    """The llama.cpp runtime takes any tool name: the schema holds it as a JSON string constant, no mapping."""
    tool = Tool(name=name, description="d.", parameters={"type": "object", "properties": {}}, function=lambda: 1)
    validator = Draft202012Validator(reply_schema([tool]))
    raw = json.dumps({"name": name, "arguments": {}})  # ASCII-escaped, as the grammar generates it
    assert validator.is_valid(json.loads(raw))
    assert not validator.is_valid({"name": name.replace(" ", "_"), "arguments": {}})
    parsed = parse_reply(raw)
    assert (parsed.kind, parsed.tool_name) == ("tool_call", name)
    salvaged = parse_reply(raw[:-2])  # cut short: the name is still read
    assert (salvaged.kind, salvaged.tool_name) == ("tool_call", name)
