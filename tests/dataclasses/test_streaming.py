from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handrail.dataclasses import (
    ChatMessage,
    ChatRole,
    ChunkAssembler,
    StreamingChunk,
    ToolCall,
    ToolCallDelta,
    ToolCallResult,
    assemble_chunks,
)
from handrail.dataclasses.streaming import parse_arguments_text
from handrail.errors import ConfigurationError
from tests.dataclasses._strategies import argument_dicts, texts


def delta_chunk(index: int, **kwargs: Any) -> StreamingChunk:
    return StreamingChunk(index=index, tool_calls=[ToolCallDelta(index=index, **kwargs)])


def split_at(text: str, cuts: list[int]) -> list[str]:
    """Split ``text`` at the given positions (any order, duplicates allowed: they make empty fragments)."""
    points = [0, *sorted(min(c, len(text)) for c in cuts), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(points)]


# ---- StreamingChunk ---------------------------------------------------------------------------------------


def test_chunk_defaults() -> None:
    chunk = StreamingChunk()
    assert chunk.content == ""
    assert chunk.meta == {}
    assert chunk.index is None
    assert chunk.tool_calls is None
    assert chunk.tool_call_result is None
    assert chunk.start is False
    assert chunk.finish_reason is None


def test_chunk_with_tool_calls_requires_an_index() -> None:
    with pytest.raises(ConfigurationError, match="'index' is required") as info:
        StreamingChunk(tool_calls=[ToolCallDelta(index=0, tool_name="t")])
    assert isinstance(info.value, ValueError)


def test_chunk_with_tool_call_result_requires_an_index() -> None:
    result = ToolCallResult("ok", ToolCall("t", {}, "c"), error=False)
    with pytest.raises(ConfigurationError, match="'index' is required"):
        StreamingChunk(tool_call_result=result)
    assert StreamingChunk(tool_call_result=result, index=0).tool_call_result is result


def test_chunk_with_only_text_or_finish_reason_needs_no_index() -> None:
    assert StreamingChunk(content="hi").index is None
    assert StreamingChunk(finish_reason="stop").finish_reason == "stop"
    assert StreamingChunk(tool_calls=[]).index is None


def test_tool_call_delta_defaults() -> None:
    assert ToolCallDelta(index=3) == ToolCallDelta(index=3, tool_name=None, arguments=None, id=None)


# ---- parse_arguments_text ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("   \n\t", {}),
        ('{"a": 1}', {"a": 1}),
        (' {"città": "🍎"} ', {"città": "🍎"}),
        ("null", "null"),
        ("[]", "[]"),
        ("5", "5"),
        ('"s"', '"s"'),
        ('{"a": 1', '{"a": 1'),
        ("{'a': 1}", "{'a': 1}"),
    ],
)
def test_parse_arguments_text(text: str, expected: dict[str, Any] | str) -> None:
    assert parse_arguments_text(text) == expected


# ---- ChunkAssembler ---------------------------------------------------------------------------------------


def test_text_fragments_are_concatenated_exactly() -> None:
    a = ChunkAssembler()
    for part in ["Par", "", "is 🇫", "🇷", " ", "\n"]:
        a.add(StreamingChunk(content=part))
    m = a.message()
    assert m.role is ChatRole.ASSISTANT
    assert m.text == "Paris 🇫🇷 \n"
    assert m.tool_calls == []


def test_empty_stream_gives_an_empty_text_reply() -> None:
    m = ChunkAssembler().message()
    assert m.text == ""
    assert m.tool_calls == []
    assert m.meta == {}


def test_one_tool_call_in_fragments() -> None:
    chunks = [
        StreamingChunk(content="checking"),
        delta_chunk(0, id="call_1", tool_name="weather", arguments=""),
        delta_chunk(0, arguments='{"ci'),
        delta_chunk(0, arguments='ty": "Zü'),
        delta_chunk(0, arguments='rich"}'),
        StreamingChunk(finish_reason="tool_calls"),
    ]
    m = assemble_chunks(chunks)
    assert m.text == "checking"
    assert m.tool_calls == [ToolCall(tool_name="weather", arguments={"city": "Zürich"}, id="call_1")]
    assert m.meta == {"finish_reason": "tool_calls"}


def test_tool_calls_only_reply_has_no_text_part() -> None:
    m = assemble_chunks([delta_chunk(0, id="c", tool_name="t", arguments="{}")])
    assert m.text is None
    assert m.texts == []
    assert m.tool_calls == [ToolCall("t", {}, "c")]


def test_calls_at_different_indexes_stay_in_first_seen_order() -> None:
    chunks = [
        delta_chunk(0, id="a", tool_name="one"),
        delta_chunk(1, id="b", tool_name="two"),
        delta_chunk(1, arguments='{"y": 2}'),
        delta_chunk(0, arguments='{"x": 1}'),
    ]
    m = assemble_chunks(chunks)
    assert m.tool_calls == [ToolCall("one", {"x": 1}, "a"), ToolCall("two", {"y": 2}, "b")]


def test_a_new_non_empty_id_starts_a_new_call_even_when_the_index_repeats() -> None:
    chunks = [
        delta_chunk(0, id="call_1", tool_name="weather", arguments='{"city": "Oslo"}'),
        delta_chunk(0, id="call_2", tool_name="weather", arguments='{"city": '),
        delta_chunk(0, arguments='"Bergen"}'),
    ]
    m = assemble_chunks(chunks)
    assert m.tool_calls == [
        ToolCall("weather", {"city": "Oslo"}, "call_1"),
        ToolCall("weather", {"city": "Bergen"}, "call_2"),
    ]


def test_repeating_the_same_id_or_an_empty_id_continues_the_call() -> None:
    chunks = [
        delta_chunk(0, id="call_1", tool_name="t", arguments='{"a"'),
        delta_chunk(0, id="call_1", arguments=": "),
        delta_chunk(0, id="", arguments="1}"),
    ]
    assert assemble_chunks(chunks).tool_calls == [ToolCall("t", {"a": 1}, "call_1")]


def test_an_id_arriving_after_the_first_fragment_is_attached_to_the_call() -> None:
    chunks = [delta_chunk(0, tool_name="t", arguments="{}"), delta_chunk(0, id="late")]
    assert assemble_chunks(chunks).tool_calls == [ToolCall("t", {}, "late")]


def test_a_call_without_any_id_keeps_id_none() -> None:
    assert assemble_chunks([delta_chunk(0, tool_name="t")]).tool_calls == [ToolCall("t", {}, None)]


def test_a_tool_name_repeated_on_every_fragment_is_not_doubled() -> None:
    chunks = [
        delta_chunk(0, id="c", tool_name="ping", arguments="{"),
        delta_chunk(0, tool_name="ping", arguments="}"),
    ]
    assert assemble_chunks(chunks).tool_calls == [ToolCall("ping", {}, "c")]


def test_a_tool_name_streamed_in_pieces_is_joined() -> None:
    chunks = [delta_chunk(0, id="c", tool_name="get_"), delta_chunk(0, tool_name="weather")]
    assert assemble_chunks(chunks).tool_calls[0].tool_name == "get_weather"


@pytest.mark.parametrize("fragments", [[], [""], ["  ", "\n"]])
def test_empty_arguments_become_an_empty_dict(fragments: list[str]) -> None:
    chunks = [delta_chunk(0, id="c", tool_name="t"), *(delta_chunk(0, arguments=f) for f in fragments)]
    assert assemble_chunks(chunks).tool_calls == [ToolCall("t", {}, "c")]


@pytest.mark.parametrize("raw", ['{"city": "Oslo"', "{'city': 'Oslo'}", "city=Oslo"])
def test_invalid_json_arguments_are_kept_raw(raw: str) -> None:
    half = len(raw) // 2
    chunks = [
        delta_chunk(0, id="c", tool_name="t", arguments=raw[:half]),
        delta_chunk(0, arguments=raw[half:]),
    ]
    (call,) = assemble_chunks(chunks).tool_calls
    assert call.arguments == raw
    assert call.tool_name == "t"
    assert call.id == "c"


@pytest.mark.parametrize("raw", ["null", "[]", "[1, 2]", "5", '"text"', "true"])
def test_non_object_json_arguments_are_kept_raw(raw: str) -> None:
    (call,) = assemble_chunks([delta_chunk(0, id="c", tool_name="t", arguments=raw)]).tool_calls
    assert call.arguments == raw


def test_finish_reason_and_usage_are_kept_in_meta() -> None:
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    chunks = [
        StreamingChunk(content="hi", meta={"model": "m-1", "usage": None}),
        StreamingChunk(content="!", meta={"model": "m-1"}),
        StreamingChunk(finish_reason="stop"),
        StreamingChunk(meta={"usage": usage}),
        StreamingChunk(meta={"usage": None}),  # a later None never erases a value
    ]
    m = assemble_chunks(chunks)
    assert m.text == "hi!"
    assert m.meta == {"model": "m-1", "finish_reason": "stop", "usage": usage}


def test_finish_reason_field_wins_over_an_earlier_meta_value() -> None:
    chunks = [StreamingChunk(meta={"finish_reason": "length"}), StreamingChunk(finish_reason="tool_calls")]
    assert assemble_chunks(chunks).meta["finish_reason"] == "tool_calls"


def test_provider_tool_calls_meta_is_not_copied_into_the_message() -> None:
    m = assemble_chunks([StreamingChunk(content="x", meta={"tool_calls": [{"raw": 1}], "model": "m"})])
    assert m.meta == {"model": "m"}


def test_message_can_be_read_while_the_stream_goes_on() -> None:
    a = ChunkAssembler()
    a.add(StreamingChunk(content="Hel"))
    assert a.message().text == "Hel"
    a.add(StreamingChunk(content="lo"))
    assert a.message().text == "Hello"


def test_assemble_chunks_equals_feeding_an_assembler() -> None:
    chunks = [StreamingChunk(content="a"), delta_chunk(0, id="c", tool_name="t", arguments='{"k": "v"}')]
    a = ChunkAssembler()
    for c in chunks:
        a.add(c)
    assert assemble_chunks(chunks) == a.message()
    assert assemble_chunks(iter(chunks)) == a.message()


# ---- property-based ---------------------------------------------------------------------------------------


@given(
    arguments=argument_dicts,
    indent=st.sampled_from([None, 0, 2]),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
)
def test_json_arguments_split_into_arbitrary_fragments_reassemble_exactly(
    arguments: dict[str, Any], indent: int | None, cuts: list[int]
) -> None:
    text = json.dumps(arguments, ensure_ascii=False, indent=indent)
    fragments = split_at(text, cuts)
    assert "".join(fragments) == text
    chunks = [delta_chunk(0, id="call_1", tool_name="t"), *(delta_chunk(0, arguments=f) for f in fragments)]
    (call,) = assemble_chunks(chunks).tool_calls
    assert call == ToolCall(tool_name="t", arguments=arguments, id="call_1")


@given(text=texts, cuts=st.lists(st.integers(min_value=0, max_value=100), max_size=8))
def test_arbitrary_argument_text_is_joined_exactly_then_parsed(text: str, cuts: list[int]) -> None:
    chunks = [
        delta_chunk(0, id="c", tool_name="t"),
        *(delta_chunk(0, arguments=f) for f in split_at(text, cuts)),
    ]
    (call,) = assemble_chunks(chunks).tool_calls
    assert call.arguments == parse_arguments_text(text)
    if isinstance(call.arguments, str):
        assert call.arguments == text


@given(
    text_parts=st.lists(texts, max_size=6),
    calls=st.lists(st.tuples(texts, argument_dicts), max_size=4),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=6),
)
def test_interleaved_text_and_several_calls_reassemble(
    text_parts: list[str], calls: list[tuple[str, dict[str, Any]]], cuts: list[int]
) -> None:
    chunks = [StreamingChunk(content=p) for p in text_parts]
    for i, (name, args) in enumerate(calls):
        chunks.append(delta_chunk(i, id=f"call_{i}", tool_name=name or "t"))
        chunks.extend(delta_chunk(i, arguments=f) for f in split_at(json.dumps(args), cuts))
    m = assemble_chunks(chunks)
    expected_calls = [ToolCall(name or "t", args, f"call_{i}") for i, (name, args) in enumerate(calls)]
    assert m.tool_calls == expected_calls
    joined = "".join(text_parts)
    assert m.text == (joined if joined or not calls else None)
    assert ChatMessage.from_dict(m.to_dict()) == m
