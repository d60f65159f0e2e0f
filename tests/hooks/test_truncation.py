from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handrail.dataclasses import ChatMessage, State
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
