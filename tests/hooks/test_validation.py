from __future__ import annotations

import copy
import json
from typing import Any, ClassVar

import pytest

from handrail.dataclasses import State
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError
from handrail.hooks import (
    HOOK_POINTS,
    FunctionHook,
    MaxToolCallsHook,
    RedactionHook,
    TokenBudgetHook,
    ToolResultTruncationHook,
    deserialize_hooks,
    hook,
    serialize_hooks,
    validate_hooks,
)
from tests.hooks._helpers import decorated, decorated_async, record


class PlainHook:
    def run(self, state: State) -> None:
        pass


class OnlyBeforeRun:
    allowed_hook_points: ClassVar[tuple[str, ...]] = ("before_run",)

    def run(self, state: State) -> None:
        pass


class NotRunnable:
    run = "not a method"


def test_hook_points_are_the_six_in_run_order() -> None:
    assert HOOK_POINTS == ("before_run", "before_llm", "before_tool", "after_tool", "on_exit", "after_run")


def test_none_gives_every_point_an_empty_list() -> None:
    assert validate_hooks(None) == {p: [] for p in HOOK_POINTS}


def test_normalized_mapping_keeps_list_order_and_identity_in_new_lists() -> None:
    a, b = PlainHook(), PlainHook()
    given = {"after_run": [a], "before_llm": (b, a)}
    result = validate_hooks(given)
    assert list(result) == list(HOOK_POINTS)
    assert result["before_llm"] == [b, a]
    assert result["before_llm"][0] is b
    assert result["after_run"] == [a]
    assert result["after_run"] is not given["after_run"]
    assert result["before_tool"] == []


def test_the_same_object_may_sit_at_several_points() -> None:
    shared = PlainHook()
    result = validate_hooks({p: [shared] for p in HOOK_POINTS})
    assert all(result[p] == [shared] for p in HOOK_POINTS)


@pytest.mark.parametrize("point", ["before_step", "BEFORE_LLM", "", 3])
def test_unknown_points_are_refused_listing_the_valid_ones(point: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"Invalid hook point .*Valid hook points: 'before_run', 'before_llm'"):
        validate_hooks({point: [PlainHook()]})


def test_invalid_point_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="Invalid hook point 'before_step'"):
        validate_hooks({"before_step": []})


def test_a_bare_function_is_refused_with_a_hint_to_use_the_decorator() -> None:
    with pytest.raises(ConfigurationTypeError, match=r"hooks\['before_llm'\]\[1\] is the function 'record'.*@hook"):
        validate_hooks({"before_llm": [PlainHook(), record]})


def test_a_bare_lambda_is_refused_as_well() -> None:
    with pytest.raises(TypeError, match="Wrap it with @hook"):
        validate_hooks({"after_run": [lambda state: None]})


def test_an_object_without_run_is_refused() -> None:
    with pytest.raises(ConfigurationTypeError, match=r"hooks\['before_run'\]\[0\]: int has no callable run"):
        validate_hooks({"before_run": [3]})
    with pytest.raises(ConfigurationTypeError, match="NotRunnable has no callable run"):
        validate_hooks({"before_run": [NotRunnable()]})


class AsyncRunHook:
    async def run(self, state: State) -> None:
        pass


class SyncRunAsyncHook:
    def run(self, state: State) -> None:
        pass

    def run_async(self, state: State) -> None:
        pass


class BothForms:
    def run(self, state: State) -> None:
        pass

    async def run_async(self, state: State) -> None:
        pass


def test_a_hook_whose_run_is_a_coroutine_function_is_refused() -> None:
    with pytest.raises(
        ConfigurationTypeError,
        match=r"hooks\['after_run'\]\[0\]: AsyncRunHook\.run is a coroutine function \(async def\), so it would "
        r"never run.*async def run_async\(self, state\).*sync run\(self, state\).*@hook",
    ):
        validate_hooks({"after_run": [AsyncRunHook()]})


def test_a_hook_whose_run_async_is_not_a_coroutine_function_is_refused() -> None:
    with pytest.raises(ConfigurationTypeError, match=r"SyncRunAsyncHook\.run_async is not a coroutine function"):
        validate_hooks({"after_run": [SyncRunAsyncHook()]})


def test_a_hook_with_a_sync_run_and_an_async_run_async_is_accepted() -> None:
    both = BothForms()
    assert validate_hooks({"after_run": [both], "before_llm": [decorated_async]})["after_run"] == [both]


def test_a_class_is_refused_asking_for_an_instance() -> None:
    with pytest.raises(ConfigurationTypeError, match=r"is the class 'PlainHook'.*PlainHook\(\.\.\.\)"):
        validate_hooks({"before_run": [PlainHook]})


def test_a_single_hook_instead_of_a_list_is_refused() -> None:
    with pytest.raises(ConfigurationTypeError, match=r"must be a list of hooks, got PlainHook"):
        validate_hooks({"before_run": PlainHook()})  # type: ignore[dict-item]


def test_a_non_mapping_is_refused() -> None:
    with pytest.raises(ConfigurationTypeError, match="hooks must be a dict"):
        validate_hooks([PlainHook()])  # type: ignore[arg-type]


def test_allowed_hook_points_are_enforced_naming_them() -> None:
    validate_hooks({"before_run": [OnlyBeforeRun()]})
    with pytest.raises(ConfigurationError, match=r"OnlyBeforeRun cannot run at 'after_run'.*: 'before_run'\."):
        validate_hooks({"after_run": [OnlyBeforeRun()]})


@pytest.mark.parametrize(
    ("hook_obj", "allowed"),
    [
        (TokenBudgetHook(10), {"before_llm"}),
        (ToolResultTruncationHook(100), {"after_tool"}),
        (RedactionHook(), {"after_tool", "before_llm"}),
        (MaxToolCallsHook({"a": 1}), {"before_tool"}),
        (decorated, set(HOOK_POINTS)),
    ],
)
def test_ready_made_hooks_are_allowed_exactly_at_their_points(hook_obj: Any, allowed: set[str]) -> None:
    for point in HOOK_POINTS:
        if point in allowed:
            validate_hooks({point: [hook_obj]})
        else:
            with pytest.raises(ConfigurationError, match=f"cannot run at '{point}'"):
                validate_hooks({point: [hook_obj]})


def test_a_malformed_allowed_hook_points_is_refused() -> None:
    class Broken(PlainHook):
        allowed_hook_points = "before_run"

    with pytest.raises(ConfigurationTypeError, match="allowed_hook_points must be a tuple"):
        validate_hooks({"before_run": [Broken()]})


# ----------------------------------------------------------------------------- serialization


def test_serialize_none_and_empty_give_none() -> None:
    assert serialize_hooks(None) is None
    assert serialize_hooks({}) is None
    assert serialize_hooks({"before_llm": []}) is None
    assert deserialize_hooks(None) is None


def test_round_trip_of_every_ready_made_hook_and_function_hooks() -> None:
    hooks: dict[str, list[Any]] = {
        "before_run": [decorated],
        "before_llm": [TokenBudgetHook(500, add_final_message=True), RedactionHook([r"secret-\d+"])],
        "before_tool": [MaxToolCallsHook({"search": 2, "*": 5})],
        "after_tool": [ToolResultTruncationHook(80), RedactionHook()],
        "after_run": [FunctionHook(function=record, async_function=decorated_async.async_function)],
    }
    data = serialize_hooks(hooks)
    assert data is not None
    assert list(data) == ["before_run", "before_llm", "before_tool", "after_tool", "after_run"]
    assert json.loads(json.dumps(data)) == data
    frozen = copy.deepcopy(data)
    back = deserialize_hooks(data)
    assert data == frozen  # not mutated
    assert back is not None
    assert serialize_hooks(back) == data
    assert back["on_exit"] == []
    assert back["before_run"][0].function is decorated.function  # type: ignore[attr-defined]
    assert back["after_run"][0].async_function is decorated_async.async_function  # type: ignore[attr-defined]


def test_a_shared_object_is_written_per_point_and_comes_back_per_point() -> None:
    shared = RedactionHook()
    data = serialize_hooks({"before_llm": [shared], "after_tool": [shared]})
    assert data is not None
    assert data["before_llm"] == data["after_tool"] == [shared.to_dict()]
    back = deserialize_hooks(data)
    assert back is not None
    assert back["before_llm"][0] is not back["after_tool"][0]


def test_serializing_a_hook_without_to_dict_names_it() -> None:
    with pytest.raises(SerializationError, match="Cannot serialize PlainHook: it has no to_dict"):
        serialize_hooks({"before_run": [PlainHook()]})


def test_serializing_validates_first() -> None:
    with pytest.raises(ConfigurationError, match="Invalid hook point"):
        serialize_hooks({"nowhere": [RedactionHook()]})


def test_deserializing_checks_points_and_placements() -> None:
    with pytest.raises(ConfigurationError, match="Invalid hook point 'nowhere'"):
        deserialize_hooks({"nowhere": [RedactionHook().to_dict()]})
    with pytest.raises(ConfigurationError, match="cannot run at 'before_run'"):
        deserialize_hooks({"before_run": [RedactionHook().to_dict()]})


@pytest.mark.parametrize("entries", [[{"init_parameters": {}}], ["RedactionHook"], [None]])
def test_deserializing_malformed_entries_fails_clearly(entries: list[Any]) -> None:
    with pytest.raises(SerializationError, match=r"hooks\['after_tool'\]\[0\]"):
        deserialize_hooks({"after_tool": entries})


def test_deserializing_wrong_shapes_is_a_type_error() -> None:
    with pytest.raises(ConfigurationTypeError):
        deserialize_hooks([])  # type: ignore[arg-type]
    with pytest.raises(ConfigurationTypeError):
        deserialize_hooks({"after_tool": RedactionHook().to_dict()})


def test_deserializing_with_an_allowlist_covers_hook_classes_and_functions() -> None:
    data = serialize_hooks({"before_run": [hook(record)], "after_tool": [RedactionHook()]})
    assert data is not None
    with pytest.raises(SerializationError, match=r"Refusing to import 'tests\.hooks\._helpers\.record'"):
        deserialize_hooks(data, allowed_modules=("some_other_package",))
    back = deserialize_hooks(data, allowed_modules=("tests.hooks",))
    assert back is not None
    assert back["before_run"][0].function is record  # type: ignore[attr-defined]

    foreign = {"after_tool": [{"type": "tests.hooks.test_validation.PlainHook", "init_parameters": {}}]}
    with pytest.raises(SerializationError, match="not in the allowlist"):
        deserialize_hooks(foreign, allowed_modules=())
