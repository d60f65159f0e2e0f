from __future__ import annotations

from typing import Any

import pytest

from handrail.dataclasses import ChatMessage, State
from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.hooks import MaxToolCallsHook
from handrail.hooks._messages import pending_calls
from handrail.testing import call
from tests.hooks._helpers import state_with


def pending(*names: str, counts: dict[str, int] | None = None, text: str | None = None) -> State:
    calls = [call(name, id=f"c{i}") for i, name in enumerate(names)]
    return state_with(
        [ChatMessage.from_user("go"), ChatMessage.from_assistant(text, tool_calls=calls)],
        tool_call_counts=dict(counts or {}),
    )


def layout(state: State) -> list[tuple[str, list[str], str | None]]:
    """(role, call ids, result text) per message after the user message."""
    rows = []
    for m in state.data["messages"][1:]:
        result = m.tool_call_result
        rows.append((m.role.value, [c.id for c in m.tool_calls], result.result if result else None))
    return rows


def refusal(name: str, limit: int) -> str:
    calls = "call" if limit == 1 else "calls"
    return f"Tool '{name}' reached its limit of {limit} {calls} in this run; the call was not run."


@pytest.mark.parametrize(("limit", "words"), [(0, "0 calls"), (1, "1 call"), (2, "2 calls")])
def test_the_refusal_message_counts_calls_grammatically(limit: int, words: str) -> None:
    assert MaxToolCallsHook.message("search", limit) == (
        f"Tool 'search' reached its limit of {words} in this run; the call was not run."
    )


def test_within_limits_nothing_changes() -> None:
    state = pending("search", "search", counts={"search": 1})
    before = state.data["messages"]
    MaxToolCallsHook({"search": 3}).run(state)
    assert state.data["messages"] is before


def test_calls_beyond_the_limit_are_refused_with_the_agreed_layout() -> None:
    state = pending("search", "fetch", "search", "search", counts={"search": 1}, text="Let me search")
    MaxToolCallsHook({"search": 2}).run(state)
    assert layout(state) == [
        ("assistant", ["c2"], None),
        ("tool", [], refusal("search", 2)),
        ("assistant", ["c3"], None),
        ("tool", [], refusal("search", 2)),
        ("assistant", ["c0", "c1"], None),
    ]
    messages = state.data["messages"]
    assert messages[-1].text == "Let me search"
    assert all(m.tool_call_result.error for m in messages if m.tool_call_result)  # type: ignore[union-attr]
    assert messages[2].tool_call_result.origin.id == "c2"  # type: ignore[union-attr]
    assert [c.id for c in pending_calls(messages)] == ["c0", "c1"]


def test_when_every_call_is_refused_the_history_ends_with_an_error_result() -> None:
    state = pending("search", "search", counts={"search": 5}, text="Searching")
    MaxToolCallsHook({"search": 5}).run(state)
    assert layout(state) == [
        ("assistant", ["c0"], None),
        ("tool", [], refusal("search", 5)),
        ("assistant", ["c1"], None),
        ("tool", [], refusal("search", 5)),
    ]
    assert pending_calls(state.data["messages"]) == []
    assert state.data["messages"][1].text == "Searching"


def test_a_limit_of_zero_refuses_every_call() -> None:
    state = pending("rm")
    MaxToolCallsHook({"rm": 0}).run(state)
    assert layout(state) == [("assistant", ["c0"], None), ("tool", [], refusal("rm", 0))]


def test_star_sets_the_limit_of_every_unnamed_tool_separately() -> None:
    state = pending("a", "b", "a", "c", counts={"b": 1})
    MaxToolCallsHook({"*": 1, "c": 5}).run(state)
    assert layout(state) == [
        ("assistant", ["c1"], None),
        ("tool", [], refusal("b", 1)),
        ("assistant", ["c2"], None),
        ("tool", [], refusal("a", 1)),
        ("assistant", ["c0", "c3"], None),
    ]


def test_tools_without_a_limit_are_never_refused() -> None:
    state = pending("free", "free", "free", counts={"free": 100})
    before = state.data["messages"]
    MaxToolCallsHook({"other": 1}).run(state)
    assert state.data["messages"] is before


def test_missing_counts_count_as_zero() -> None:
    state = pending("a", "a")
    state.data["tool_call_counts"] = {}
    MaxToolCallsHook({"a": 1}).run(state)
    assert [row[1] for row in layout(state)] == [["c1"], [], ["c0"]]


def test_running_again_on_the_rewritten_history_refuses_nothing_more() -> None:
    state = pending("a", "a", "a")
    hook = MaxToolCallsHook({"a": 2})
    hook.run(state)
    once = state.data["messages"]
    hook.run(state)
    assert state.data["messages"] is once


def test_no_pending_calls_is_a_no_op() -> None:
    state = state_with([ChatMessage.from_user("hi")])
    before = state.data["messages"]
    MaxToolCallsHook({"a": 0}).run(state)
    assert state.data["messages"] is before


def test_the_original_message_is_not_mutated() -> None:
    state = pending("a", "a")
    original = state.data["messages"][-1]
    MaxToolCallsHook({"a": 1}).run(state)
    assert [c.id for c in original.tool_calls] == ["c0", "c1"]


async def test_run_async() -> None:
    state = pending("a", "a")
    await MaxToolCallsHook({"a": 1}).run_async(state)
    assert len(state.data["messages"]) == 4


@pytest.mark.parametrize(
    ("limits", "error", "match"),
    [
        ({}, ConfigurationError, "limits is empty"),
        ({"a": -1}, ConfigurationError, r"limits\['a'\] must be at least 0"),
        ({"a": "3"}, ConfigurationTypeError, r"limits\['a'\] must be an int"),
        ({"a": True}, ConfigurationTypeError, "must be an int"),
        ({1: 3}, ConfigurationTypeError, "dict of tool name to int"),
        ([("a", 1)], ConfigurationTypeError, "dict of tool name to int"),
    ],
)
def test_bad_limits_are_refused(limits: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        MaxToolCallsHook(limits)


def test_round_trip() -> None:
    hook = MaxToolCallsHook({"search": 2, "*": 10})
    data = hook.to_dict()
    assert data == {
        "type": "handrail.hooks.max_tool_calls.MaxToolCallsHook",
        "init_parameters": {"limits": {"search": 2, "*": 10}},
    }
    back = MaxToolCallsHook.from_dict(data)
    assert back.limits == {"search": 2, "*": 10}
    assert back.limit_for("search") == 2 and back.limit_for("other") == 10
    assert MaxToolCallsHook({"a": 1}).limit_for("b") is None
