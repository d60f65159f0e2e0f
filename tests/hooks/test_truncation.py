from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handrail.dataclasses import ChatMessage, ImageContent, State, TextContent
from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.hooks import ToolResultTruncationHook
from handrail.testing import call
from tests.hooks._helpers import state_with

MARKER = re.compile(r"\n\[\.\.\. (\d+) characters cut \.\.\.\]\n")


def splits(out: str, text: str) -> list[tuple[str, int, str]]:
    """Every (head, cut, tail) reading of ``out`` that is consistent with ``text``."""
    found = []
    for match in MARKER.finditer(out):
        head, cut, tail = out[: match.start()], int(match.group(1)), out[match.end() :]
        if text.startswith(head) and text.endswith(tail) and len(head) + cut + len(tail) == len(text):
            found.append((head, cut, tail))
    return found


@given(text=st.text(max_size=3000), max_chars=st.integers(min_value=40, max_value=2000))
def test_truncation_keeps_head_and_tail_in_exactly_max_chars(text: str, max_chars: int) -> None:
    out = ToolResultTruncationHook(max_chars).truncate(text)
    if len(text) <= max_chars:
        assert out == text
        return
    assert len(out) == max_chars
    readings = splits(out, text)
    assert readings, out
    assert any(len(tail) <= len(head) <= len(tail) + 1 for head, _, tail in readings)


@given(
    text=st.text(alphabet="ab\n[.] 0123456789characterscut", min_size=41, max_size=400),
    max_chars=st.integers(min_value=40, max_value=120),
)
def test_truncation_of_text_that_looks_like_the_marker(text: str, max_chars: int) -> None:
    out = ToolResultTruncationHook(max_chars).truncate(text)
    assert len(out) == min(max_chars, len(text))
    if len(text) > max_chars:
        assert splits(out, text)


@given(length=st.integers(min_value=41, max_value=200_000))
def test_exact_length_over_many_digit_counts(length: int) -> None:
    out = ToolResultTruncationHook(40).truncate("x" * length)
    assert len(out) == 40
    match = MARKER.search(out)
    assert match is not None and int(match.group(1)) == length - (len(out) - len(match.group(0)))


def test_known_example() -> None:
    out = ToolResultTruncationHook(60).truncate("a" * 50 + "b" * 50)
    assert out == "a" * 16 + "\n[... 69 characters cut ...]\n" + "b" * 15


def test_one_character_over() -> None:
    text = "0123456789" * 4 + "!"
    assert ToolResultTruncationHook(40).truncate(text) == "012345\n[... 30 characters cut ...]\n6789!"


def tool_step(*results: tuple[str, bool]) -> tuple[State, list[ChatMessage]]:
    calls = [call("read", id=f"c{i}") for i in range(len(results))]
    earlier = call("read", "old")
    history = [
        ChatMessage.from_user("x" * 500),
        ChatMessage.from_assistant(tool_calls=[earlier]),
        ChatMessage.from_tool("y" * 500, earlier),
        ChatMessage.from_assistant("working", tool_calls=calls),
        *(ChatMessage.from_tool(text, c, error=err) for (text, err), c in zip(results, calls, strict=True)),
    ]
    return state_with(history), history


def test_only_long_results_of_the_current_step_are_rewritten() -> None:
    state, history = tool_step(("short", False), ("z" * 300, True), ("w" * 100, False))
    ToolResultTruncationHook(100).run(state)
    messages = state.data["messages"]
    assert messages is not history
    assert messages[:5] == history[:5]
    assert all(messages[i] is history[i] for i in (0, 1, 2, 3, 4, 6))
    new = messages[5].tool_call_result
    assert new is not None
    assert len(new.result) == 100 and "characters cut" in new.result
    assert new.error is True and new.origin.id == "c1"
    assert history[5].tool_call_result is not None and len(history[5].tool_call_result.result) == 300


def test_nothing_long_leaves_the_list_alone() -> None:
    state, _ = tool_step(("a" * 100, False))
    before = state.data["messages"]
    ToolResultTruncationHook(100).run(state)
    assert state.data["messages"] is before


def test_no_tool_step_is_a_no_op() -> None:
    state = state_with([ChatMessage.from_user("q" * 1000)])
    before = state.data["messages"]
    ToolResultTruncationHook(50).run(state)
    assert state.data["messages"] is before


def test_truncating_twice_changes_nothing_more() -> None:
    state, _ = tool_step(("z" * 1000, False))
    hook = ToolResultTruncationHook(60)
    hook.run(state)
    once = state.data["messages"]
    hook.run(state)
    assert state.data["messages"] is once


@pytest.mark.parametrize(
    ("value", "error"),
    [(39, ConfigurationError), (0, ConfigurationError), (None, ConfigurationTypeError), (50.0, ConfigurationTypeError)],
)
def test_max_chars_must_be_an_int_of_at_least_the_minimum(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="max_chars"):
        ToolResultTruncationHook(value)


def test_round_trip() -> None:
    data = ToolResultTruncationHook(77).to_dict()
    assert data == {"type": "handrail.hooks.truncation.ToolResultTruncationHook", "init_parameters": {"max_chars": 77}}
    assert ToolResultTruncationHook.from_dict(data).max_chars == 77


# --------------------------------------------------------------------------- results of content parts

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
IMAGE = ImageContent(PNG, "image/png")


def texts_of(parts: list[TextContent | ImageContent]) -> str:
    return "".join(p.text for p in parts if isinstance(p, TextContent))


@given(
    layout=st.lists(st.one_of(st.text(max_size=400), st.none()), max_size=8),
    max_chars=st.integers(min_value=40, max_value=600),
)
def test_text_parts_are_cut_as_one_text_and_images_kept_in_order(layout: list[str | None], max_chars: int) -> None:
    parts: list[TextContent | ImageContent] = [IMAGE if t is None else TextContent(t) for t in layout]
    hook = ToolResultTruncationHook(max_chars)
    out = hook.truncate_parts(parts)
    whole = texts_of(parts)
    if len(whole) <= max_chars:
        assert out is parts
        return
    assert texts_of(out) == hook.truncate(whole)  # the text parts read as the truncated text
    assert sum(len(p.text) for p in out if isinstance(p, TextContent)) == max_chars
    assert [p for p in out if isinstance(p, ImageContent)] == [p for p in parts if isinstance(p, ImageContent)]
    assert all(p.text for p in out if isinstance(p, TextContent) and p not in parts)  # no empty piece is made


def test_a_list_of_one_text_part_is_cut_as_its_text() -> None:
    hook = ToolResultTruncationHook(60)
    text = "a" * 50 + "b" * 50
    assert hook.truncate_parts([TextContent(text)]) == [TextContent(hook.truncate(text))]


def test_parts_inside_the_cut_are_dropped_and_the_marker_ends_the_head() -> None:
    parts = [TextContent("h" * 30), IMAGE, TextContent("m" * 100), IMAGE, TextContent("t" * 30)]
    out = ToolResultTruncationHook(60).truncate_parts(parts)
    assert out == [
        TextContent("h" * 15 + "\n[... 130 characters cut ...]\n"),
        IMAGE,
        IMAGE,
        TextContent("t" * 15),
    ]


def test_the_hook_shortens_a_result_of_parts_and_keeps_its_images() -> None:
    calls = [call("chart", id="c0"), call("chart", id="c1")]
    long_parts = [TextContent("x" * 300), IMAGE, TextContent("y" * 300)]
    short_parts = [TextContent("fits"), IMAGE]
    history = [
        ChatMessage.from_assistant(tool_calls=calls),
        ChatMessage.from_tool(long_parts, calls[0]),
        ChatMessage.from_tool(short_parts, calls[1]),
    ]
    state = state_with(history)
    ToolResultTruncationHook(100).run(state)
    messages = state.data["messages"]
    new = messages[1].tool_call_result
    assert new is not None and isinstance(new.result, list) and new.origin.id == "c0"
    assert sum(len(p.text) for p in new.result if isinstance(p, TextContent)) == 100
    assert IMAGE in new.result and "characters cut" in new.text
    assert messages[2] is history[2]  # its text fits: left alone, image and all
    ToolResultTruncationHook(100).run(state)
    assert state.data["messages"] is messages  # truncating twice changes nothing more


def test_images_alone_are_never_cut() -> None:
    state = state_with([ChatMessage.from_assistant(tool_calls=[call("chart", id="c0")])])
    state.data["messages"].append(ChatMessage.from_tool([IMAGE] * 50, call("chart", id="c0")))
    before = state.data["messages"]
    ToolResultTruncationHook(40).run(state)
    assert state.data["messages"] is before
