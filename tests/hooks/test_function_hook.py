from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from handrail.core.serialization import object_from_dict
from handrail.dataclasses import State
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError
from handrail.hooks import HOOK_POINTS, FunctionHook, Hook, hook
from tests.hooks import _helpers
from tests.hooks._helpers import decorated, decorated_async, record, record_async


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    _helpers.recorded.clear()


# ----------------------------------------------------------------------------- decorator rules


def test_decorating_a_sync_function_gives_a_sync_function_hook() -> None:
    h = hook(record)
    assert isinstance(h, FunctionHook)
    assert isinstance(h, Hook)
    assert h.function is record
    assert h.async_function is None
    assert h.allowed_hook_points == HOOK_POINTS


def test_decorating_an_async_function_gives_an_async_function_hook() -> None:
    h = hook(record_async)
    assert h.function is None
    assert h.async_function is record_async


def test_decorator_syntax_binds_a_function_hook() -> None:
    assert isinstance(decorated, FunctionHook)
    state = State()
    decorated.run(state)
    assert state.data["stop_run"] == "decorated"


def test_hook_accepts_an_unresolvable_string_annotation_named_state() -> None:
    def f(state: UnknownModule.State) -> None:  # type: ignore[name-defined]  # noqa: F821
        pass

    assert hook(f).function is f


class MyState(State):
    pass


def takes_my_state(state: MyState) -> None:
    pass


def test_hook_accepts_a_state_subclass() -> None:
    assert hook(takes_my_state).function is takes_my_state


def no_params() -> None:
    pass


def two_params(state: State, other: int) -> None:
    pass


def defaulted_extra(state: State, verbose: bool = False) -> None:
    pass


def unannotated(state) -> None:  # type: ignore[no-untyped-def]
    pass


def wrong_annotation(state: dict[str, Any]) -> None:
    pass


def keyword_only(*, state: State) -> None:
    pass


def var_args(*states: State) -> None:
    pass


async def async_two_params(state: State, x: int) -> None:
    pass


@pytest.mark.parametrize(
    "function",
    [no_params, two_params, defaulted_extra, unannotated, wrong_annotation, keyword_only, var_args, async_two_params],
)
def test_hook_refuses_anything_but_exactly_one_state_parameter(function: Any) -> None:
    with pytest.raises(ConfigurationError, match=rf"Hook function '.*\.{function.__name__}' must take exactly one"):
        hook(function)


@pytest.mark.parametrize(
    ("function", "shown"),
    [
        (two_params, "(state: State, other: int)"),
        (no_params, "()"),
        (unannotated, "(state)"),
        (wrong_annotation, "(state: dict[str, Any])"),
        (var_args, "(*states: State)"),
    ],
)
def test_hook_refusal_is_a_value_error_showing_the_parameters(function: Any, shown: str) -> None:
    with pytest.raises(ValueError, match=f"it takes {re.escape(shown)}\\.$"):
        hook(function)


@pytest.mark.parametrize("value", [None, 3, "record"])
def test_hook_refuses_non_callables(value: Any) -> None:
    with pytest.raises(ConfigurationTypeError, match="@hook decorates a function"):
        hook(value)


def test_hook_refuses_an_existing_function_hook() -> None:
    with pytest.raises(ConfigurationTypeError):
        hook(decorated)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- FunctionHook construction


def test_function_hook_needs_a_function() -> None:
    with pytest.raises(ConfigurationError, match="needs a function, an async_function, or both"):
        FunctionHook()


def test_function_hook_refuses_an_async_function_in_the_sync_slot() -> None:
    with pytest.raises(ConfigurationTypeError, match="is an async function; pass it as async_function"):
        FunctionHook(function=record_async)


def test_function_hook_refuses_a_sync_function_in_the_async_slot() -> None:
    with pytest.raises(ConfigurationTypeError, match="must be an async function"):
        FunctionHook(async_function=record)  # type: ignore[arg-type]


def test_function_hook_checks_both_signatures() -> None:
    with pytest.raises(ConfigurationError, match="async_two_params"):
        FunctionHook(function=record, async_function=async_two_params)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- sync / async running


def test_run_calls_the_sync_function_with_the_state() -> None:
    state = State()
    hook(record).run(state)
    assert _helpers.recorded == [("sync", state)]


def test_run_of_an_async_only_hook_raises_a_clear_error() -> None:
    with pytest.raises(ConfigurationError, match=r"async only .* use Agent\.run_async"):
        hook(record_async).run(State())


async def test_run_async_prefers_the_async_function() -> None:
    state = State()
    await FunctionHook(function=record, async_function=record_async).run_async(state)
    assert _helpers.recorded == [("async", state)]


async def test_run_async_falls_back_to_the_sync_function() -> None:
    state = State()
    await hook(record).run_async(state)
    assert _helpers.recorded == [("sync", state)]


def test_sync_run_of_a_hook_with_both_uses_the_sync_function() -> None:
    state = State()
    FunctionHook(function=record, async_function=record_async).run(state)
    assert _helpers.recorded == [("sync", state)]


def test_return_values_are_ignored() -> None:
    def returns(state: State) -> int:
        return 5

    assert hook(returns).run(State()) is None


def test_run_async_is_a_coroutine() -> None:
    state = State()
    asyncio.run(decorated_async.run_async(state))
    assert state.data["stop_run"] == "decorated_async"


# ----------------------------------------------------------------------------- serialization


def test_to_dict_names_functions_by_dotted_path() -> None:
    h = FunctionHook(function=record, async_function=record_async)
    assert h.to_dict() == {
        "type": "handrail.hooks.function_hook.FunctionHook",
        "init_parameters": {
            "function": "tests.hooks._helpers.record",
            "async_function": "tests.hooks._helpers.record_async",
        },
    }


def test_round_trip_of_plain_functions() -> None:
    h = FunctionHook(function=record, async_function=record_async)
    back = FunctionHook.from_dict(h.to_dict())
    assert back.function is record
    assert back.async_function is record_async


@pytest.mark.parametrize("decorated_hook", [decorated, decorated_async])
def test_round_trip_of_decorated_functions_resolves_the_wrapped_function(decorated_hook: FunctionHook) -> None:
    data = decorated_hook.to_dict()
    path = data["init_parameters"]["function"] or data["init_parameters"]["async_function"]
    assert path in ("tests.hooks._helpers.decorated", "tests.hooks._helpers.decorated_async")
    back = object_from_dict(data)
    assert isinstance(back, FunctionHook)
    assert back.function is decorated_hook.function
    assert back.async_function is decorated_hook.async_function


def test_from_dict_does_not_mutate_its_input() -> None:
    data = hook(record).to_dict()
    snapshot = {"type": data["type"], "init_parameters": dict(data["init_parameters"])}
    FunctionHook.from_dict(data)
    assert data == snapshot


def test_lambdas_and_closures_cannot_be_serialized() -> None:
    def local(state: State) -> None:
        pass

    with pytest.raises(SerializationError, match="lambdas and functions defined inside"):
        hook(local).to_dict()


def test_lambda_with_unannotated_parameter_is_refused_at_construction() -> None:
    with pytest.raises(ConfigurationError):
        FunctionHook(function=lambda state: None)


def test_from_dict_respects_an_allowlist() -> None:
    data = hook(record).to_dict()
    with pytest.raises(SerializationError, match="not in the allowlist"):
        FunctionHook.from_dict(data, allowed_modules=("somewhere_else",))
    assert FunctionHook.from_dict(data, allowed_modules=("tests.hooks",)).function is record


@pytest.mark.parametrize(
    "params",
    [
        {"function": 5, "async_function": None},
        {"function": "tests.hooks._helpers.no_such_function", "async_function": None},
        {"function": "tests.hooks._helpers.decorated_async", "async_function": None},
        {"function": None, "async_function": None, "extra": 1},
    ],
)
def test_from_dict_refuses_bad_data(params: dict[str, Any]) -> None:
    with pytest.raises((SerializationError, ConfigurationError)):
        FunctionHook.from_dict({"type": "handrail.hooks.function_hook.FunctionHook", "init_parameters": params})


def test_repr_and_name() -> None:
    h = FunctionHook(function=record, async_function=record_async)
    assert h.name == "tests.hooks._helpers.record"
    assert repr(h) == (
        "FunctionHook(function=tests.hooks._helpers.record, async_function=tests.hooks._helpers.record_async)"
    )
