from __future__ import annotations

from typing import Any

import pytest

from handrail.dataclasses import ChatMessage, ChatRole, State
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError
from handrail.hooks import TokenBudgetHook
from handrail.hooks.token_budget import total_tokens


def state_using(usage: dict[str, Any]) -> State:
    state = State()
    state.data["messages"] = [ChatMessage.from_system("sys"), ChatMessage.from_user("hi")]
    state.data["token_usage"] = usage
    return state


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({}, 0),
        ({"total_tokens": 7}, 7),
        ({"prompt_tokens": 5, "completion_tokens": 4}, 9),
        ({"prompt_tokens": 5}, 5),
        ({"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 20}, 20),
        ({"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": None}, 9),
        ({"total_tokens": True, "prompt_tokens": 2}, 2),
        ({"prompt_tokens": "many", "completion_tokens": 3}, 3),
        ({"total_tokens": 2.5}, 2.5),
    ],
)
def test_total_tokens(usage: dict[str, Any], expected: float) -> None:
    assert total_tokens(usage) == expected


def test_total_tokens_of_none() -> None:
    assert total_tokens(None) == 0


def test_within_budget_does_nothing() -> None:
    state = state_using({"total_tokens": 100})
    before = state.data["messages"]
    TokenBudgetHook(100).run(state)
    assert state.data["stop_run"] is None
    assert state.data["messages"] is before


def test_over_budget_stops_with_the_reason() -> None:
    state = state_using({"total_tokens": 101})
    before = list(state.data["messages"])
    TokenBudgetHook(100).run(state)
    assert state.data["stop_run"] == "token_budget_exceeded"
    assert state.data["messages"] == before


def test_prompt_plus_completion_is_used_when_total_is_missing() -> None:
    state = state_using({"prompt_tokens": 60, "completion_tokens": 41})
    TokenBudgetHook(100).run(state)
    assert state.data["stop_run"] == TokenBudgetHook.STOP_REASON


def test_empty_usage_never_stops() -> None:
    state = State()
    TokenBudgetHook(1).run(state)
    assert state.data["stop_run"] is None


def test_final_message_is_appended_to_a_new_list() -> None:
    state = state_using({"total_tokens": 250})
    original = state.data["messages"]
    TokenBudgetHook(200, add_final_message=True).run(state)
    messages = state.data["messages"]
    assert messages is not original and len(original) == 2
    assert messages[:2] == original
    last = messages[-1]
    assert last.role is ChatRole.ASSISTANT and last.tool_calls == []
    assert last.text == "Stopped: this run used 250 tokens, more than its budget of 200 tokens."


def test_an_earlier_stop_reason_is_kept() -> None:
    state = state_using({"total_tokens": 1000})
    state.data["stop_run"] = "other_reason"
    TokenBudgetHook(10, add_final_message=True).run(state)
    assert state.data["stop_run"] == "other_reason"
    assert len(state.data["messages"]) == 2


async def test_run_async_behaves_like_run() -> None:
    state = state_using({"total_tokens": 11})
    await TokenBudgetHook(10).run_async(state)
    assert state.data["stop_run"] == "token_budget_exceeded"


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (0, ConfigurationError),
        (-5, ConfigurationError),
        (True, ConfigurationTypeError),
        (1.5, ConfigurationTypeError),
        ("10", ConfigurationTypeError),
    ],
)
def test_budget_must_be_a_positive_int(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="max_total_tokens"):
        TokenBudgetHook(value)


def test_add_final_message_must_be_a_bool() -> None:
    with pytest.raises(ConfigurationTypeError, match="add_final_message"):
        TokenBudgetHook(10, add_final_message="yes")  # type: ignore[arg-type]


def test_keyword_construction_like_haystack() -> None:
    assert TokenBudgetHook(max_total_tokens=5, add_final_message=True).max_total_tokens == 5


def test_round_trip() -> None:
    h = TokenBudgetHook(1234, add_final_message=True)
    data = h.to_dict()
    assert data == {
        "type": "handrail.hooks.token_budget.TokenBudgetHook",
        "init_parameters": {"max_total_tokens": 1234, "add_final_message": True},
    }
    back = TokenBudgetHook.from_dict(data)
    assert (back.max_total_tokens, back.add_final_message) == (1234, True)
    assert repr(back) == "TokenBudgetHook(max_total_tokens=1234, add_final_message=True)"


def test_from_dict_refuses_unknown_or_missing_parameters() -> None:
    with pytest.raises(SerializationError, match="unknown init parameters"):
        TokenBudgetHook.from_dict({"type": "x.TokenBudgetHook", "init_parameters": {"max_total_tokens": 1, "x": 2}})
    with pytest.raises(SerializationError, match="missing init parameters"):
        TokenBudgetHook.from_dict({"type": "x.TokenBudgetHook", "init_parameters": {}})
    with pytest.raises(ConfigurationError):
        TokenBudgetHook.from_dict({"type": "x.TokenBudgetHook", "init_parameters": {"max_total_tokens": 0}})
