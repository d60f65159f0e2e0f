from __future__ import annotations

import copy
import json
import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handrail.core.serialization import object_from_dict
from handrail.dataclasses.decisions import ConfirmationUIResult
from handrail.errors import SerializationError
from handrail.human_in_the_loop import AlwaysAskPolicy, AskOncePolicy, ConfirmationPolicy, NeverAskPolicy
from handrail.human_in_the_loop.policies import params_digest

CONFIRM = ConfirmationUIResult("confirm")
REJECT = ConfirmationUIResult("reject", feedback="no")
MODIFY = ConfirmationUIResult("modify", new_tool_params={"city": "Bergen"})


def confirm(policy: AskOncePolicy, tool: str, params: dict[str, Any]) -> None:
    policy.update_after_confirmation(tool, "desc", params, CONFIRM)


# ----------------------------------------------------------------------------- stateless policies


@pytest.mark.parametrize("result", [CONFIRM, REJECT, MODIFY])
def test_always_ask_always_asks(result: ConfirmationUIResult) -> None:
    policy = AlwaysAskPolicy()
    assert policy.should_ask("t", "d", {"a": 1})
    policy.update_after_confirmation("t", "d", {"a": 1}, result)
    assert policy.should_ask("t", "d", {"a": 1})
    assert policy.should_ask("t", "d", {})


@pytest.mark.parametrize("result", [CONFIRM, REJECT, MODIFY])
def test_never_ask_never_asks(result: ConfirmationUIResult) -> None:
    policy = NeverAskPolicy()
    assert not policy.should_ask("t", "d", {"a": 1})
    policy.update_after_confirmation("t", "d", {"a": 1}, result)
    assert not policy.should_ask("t", "d", {"a": 1})


@pytest.mark.parametrize("cls", [AlwaysAskPolicy, NeverAskPolicy, AskOncePolicy])
def test_policies_satisfy_the_protocol_and_round_trip(cls: type[Any]) -> None:
    policy = cls()
    assert isinstance(policy, ConfirmationPolicy)
    data = policy.to_dict()
    assert data == {"type": f"handrail.human_in_the_loop.policies.{cls.__name__}", "init_parameters": {}}
    assert json.loads(json.dumps(data)) == data
    frozen = copy.deepcopy(data)
    rebuilt = cls.from_dict(data)
    assert type(rebuilt) is cls
    assert data == frozen
    assert type(object_from_dict(data)) is cls


def test_from_dict_refuses_another_class_and_missing_init_parameters() -> None:
    with pytest.raises(SerializationError):
        AlwaysAskPolicy.from_dict(NeverAskPolicy().to_dict())
    with pytest.raises(SerializationError, match="init_parameters"):
        AskOncePolicy.from_dict({"type": "handrail.human_in_the_loop.policies.AskOncePolicy"})


def test_stateless_policies_compare_by_type() -> None:
    assert AlwaysAskPolicy() == AlwaysAskPolicy()
    assert AlwaysAskPolicy() != NeverAskPolicy()
    assert hash(NeverAskPolicy()) == hash(NeverAskPolicy())
    assert repr(NeverAskPolicy()) == "NeverAskPolicy()"


# ----------------------------------------------------------------------------- AskOncePolicy


def test_ask_once_does_not_ask_again_after_a_confirm() -> None:
    policy = AskOncePolicy()
    assert policy.should_ask("weather", "d", {"city": "Oslo"})
    confirm(policy, "weather", {"city": "Oslo"})
    assert not policy.should_ask("weather", "d", {"city": "Oslo"})
    assert policy.should_ask("weather", "d", {"city": "Bergen"})
    assert policy.should_ask("other_tool", "d", {"city": "Oslo"})


def test_ask_once_remembers_every_confirmed_argument_set() -> None:
    policy = AskOncePolicy()
    for city in ("Oslo", "Bergen", "Tromsø"):
        confirm(policy, "weather", {"city": city})
    for city in ("Oslo", "Bergen", "Tromsø"):
        assert not policy.should_ask("weather", "d", {"city": city})
    assert policy.should_ask("weather", "d", {"city": "Paris"})
    assert len(policy.export_memory()["weather"]) == 3


@pytest.mark.parametrize("result", [REJECT, ConfirmationUIResult("reject"), MODIFY])
def test_ask_once_records_nothing_for_reject_or_modify(result: ConfirmationUIResult) -> None:
    policy = AskOncePolicy()
    policy.update_after_confirmation("weather", "d", {"city": "Oslo"}, result)
    assert policy.should_ask("weather", "d", {"city": "Oslo"})
    assert policy.export_memory() == {}


def test_ask_once_compares_by_canonical_digest() -> None:
    policy = AskOncePolicy()
    confirm(policy, "t", {"a": 1, "b": {"y": 2, "x": [1, "é"]}})
    assert not policy.should_ask("t", "d", {"b": {"x": [1, "é"], "y": 2}, "a": 1})
    assert policy.should_ask("t", "d", {"a": 1, "b": {"y": 2, "x": [1, "e"]}})
    assert policy.should_ask("t", "d", {"a": "1", "b": {"y": 2, "x": [1, "é"]}})
    assert policy.should_ask("t", "d", {"a": True, "b": {"y": 2, "x": [1, "é"]}})


def test_ask_once_digest_falls_back_to_str_for_non_json_values() -> None:
    policy = AskOncePolicy()
    confirm(policy, "t", {"when": {1, 2}.__class__})  # a type: not JSON
    assert not policy.should_ask("t", "d", {"when": set})


def test_ask_once_memory_belongs_to_the_instance() -> None:
    first, second = AskOncePolicy(), AskOncePolicy()
    confirm(first, "t", {"a": 1})
    assert not first.should_ask("t", "d", {"a": 1})
    assert second.should_ask("t", "d", {"a": 1})
    assert AskOncePolicy.from_dict(first.to_dict()).should_ask("t", "d", {"a": 1})


def test_ask_once_to_dict_holds_configuration_only() -> None:
    policy = AskOncePolicy()
    confirm(policy, "t", {"a": 1})
    assert policy.to_dict()["init_parameters"] == {}


def test_ask_once_export_load_round_trip() -> None:
    policy = AskOncePolicy()
    confirm(policy, "weather", {"city": "Oslo"})
    confirm(policy, "weather", {"city": "Bergen"})
    confirm(policy, "search", {"q": "x"})
    exported = policy.export_memory()
    assert set(exported) == {"weather", "search"}
    assert exported["weather"] == sorted(exported["weather"])
    assert json.loads(json.dumps(exported)) == exported

    restored = AskOncePolicy()
    restored.load_memory(json.loads(json.dumps(exported)))
    assert restored.export_memory() == exported
    assert not restored.should_ask("weather", "d", {"city": "Bergen"})
    assert not restored.should_ask("search", "d", {"q": "x"})
    assert restored.should_ask("search", "d", {"q": "y"})


def test_ask_once_load_replaces_the_memory() -> None:
    policy = AskOncePolicy()
    confirm(policy, "old", {"a": 1})
    policy.load_memory({"new": [params_digest({"b": 2})]})
    assert policy.should_ask("old", "d", {"a": 1})
    assert not policy.should_ask("new", "d", {"b": 2})


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (["weather"], "must be a dict"),
        ({"weather": "abc"}, "must be a list"),
        ({"weather": ["abc"]}, "not a 64-character"),
        ({"weather": [params_digest({}).upper()]}, "not a 64-character"),
        ({"weather": [1]}, "not a 64-character"),
        ({1: [params_digest({})]}, "tool names must be str"),
    ],
)
def test_ask_once_load_refuses_bad_data_and_changes_nothing(data: Any, match: str) -> None:
    policy = AskOncePolicy()
    confirm(policy, "t", {"a": 1})
    before = policy.export_memory()
    with pytest.raises(SerializationError, match=match):
        policy.load_memory(data)
    assert policy.export_memory() == before
    assert issubclass(SerializationError, ValueError)


def test_ask_once_forget() -> None:
    policy = AskOncePolicy()
    confirm(policy, "a", {})
    confirm(policy, "b", {})
    policy.forget("a")
    assert policy.should_ask("a", "d", {})
    assert not policy.should_ask("b", "d", {})
    policy.forget("missing")
    policy.forget()
    assert policy.export_memory() == {}


def test_ask_once_copies_are_independent() -> None:
    policy = AskOncePolicy()
    confirm(policy, "t", {"a": 1})
    for clone in (copy.copy(policy), copy.deepcopy(policy), copy.deepcopy({"p": policy})["p"]):
        assert not clone.should_ask("t", "d", {"a": 1})
        confirm(clone, "t", {"a": 2})
        assert policy.should_ask("t", "d", {"a": 2})
    assert "1 confirmed" in repr(policy)


def test_ask_once_is_thread_safe() -> None:
    policy = AskOncePolicy()
    barrier = threading.Barrier(8)

    def work(worker: int) -> None:
        barrier.wait()
        for i in range(200):
            params = {"worker": worker, "i": i}
            policy.should_ask("t", "d", params)
            confirm(policy, "t", params)
            policy.export_memory()

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(policy.export_memory()["t"]) == 1600


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=10,
)


@given(st.dictionaries(st.text(max_size=8), json_values, max_size=5))
def test_digest_ignores_key_order_and_json_round_trips(params: dict[str, Any]) -> None:
    reordered = dict(reversed(list(params.items())))
    assert params_digest(params) == params_digest(reordered)
    assert params_digest(params) == params_digest(json.loads(json.dumps(params)))
    policy = AskOncePolicy()
    confirm(policy, "t", params)
    assert not policy.should_ask("t", "d", reordered)
