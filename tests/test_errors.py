from __future__ import annotations

import inspect

import pytest

import handrail.errors as errors
from handrail.errors import (
    ConfigurationError,
    ConfigurationTypeError,
    HandrailError,
    NotSupportedYetError,
    PersistenceError,
    RunError,
    SchemaGenerationError,
    ScriptExhaustedError,
    SerializationError,
    StateError,
    StringConversionError,
    ToolInvocationError,
    ToolNotFoundException,
    ToolOutputMergeError,
)

MISUSE_VALUE_ERRORS = [
    ConfigurationError,
    NotSupportedYetError,
    SchemaGenerationError,
    StateError,
    SerializationError,
]
RUN_ERRORS = [
    RunError,
    ToolNotFoundException,
    ToolInvocationError,
    ToolOutputMergeError,
    StringConversionError,
    ScriptExhaustedError,
]


def exception_classes() -> list[type[BaseException]]:
    return [
        obj
        for _, obj in inspect.getmembers(errors, inspect.isclass)
        if issubclass(obj, BaseException) and obj.__module__ == errors.__name__
    ]


def test_all_lists_every_exception_class_of_the_module() -> None:
    assert sorted(errors.__all__) == sorted(cls.__name__ for cls in exception_classes())
    assert len(errors.__all__) == len(set(errors.__all__))


@pytest.mark.parametrize("cls", exception_classes(), ids=lambda c: c.__name__)
def test_every_class_subclasses_handrail_error(cls: type[BaseException]) -> None:
    assert issubclass(cls, HandrailError)
    assert issubclass(cls, Exception)


@pytest.mark.parametrize("cls", MISUSE_VALUE_ERRORS, ids=lambda c: c.__name__)
def test_misuse_errors_are_value_errors(cls: type[Exception]) -> None:
    assert issubclass(cls, ValueError)
    assert issubclass(cls, ConfigurationError)
    assert not issubclass(cls, RunError)


def test_configuration_type_error_is_a_type_error_and_a_value_error() -> None:
    # Issue 20, item 8: where Haystack raises ValueError for a mistake handrail calls a type error.
    assert issubclass(ConfigurationTypeError, TypeError)
    assert issubclass(ConfigurationTypeError, ValueError)
    assert not issubclass(ConfigurationTypeError, ConfigurationError)  # its exit code stays 1
    with pytest.raises(TypeError, match="wrong"):
        raise ConfigurationTypeError("wrong")


@pytest.mark.parametrize("cls", RUN_ERRORS, ids=lambda c: c.__name__)
def test_run_errors_are_not_misuse_errors(cls: type[Exception]) -> None:
    assert issubclass(cls, RunError)
    assert not issubclass(cls, ValueError)
    assert not issubclass(cls, TypeError)


def test_every_class_is_in_exactly_one_branch() -> None:
    """By its first bases: a class that moved keeps its old branch as a further base (see test_error_tree)."""
    for cls in exception_classes():
        if cls is HandrailError:
            continue
        line = [cls]
        while line[-1].__bases__[0] is not HandrailError:
            line.append(line[-1].__bases__[0])
        branches = [b for b in (ConfigurationError, ConfigurationTypeError, PersistenceError, RunError) if b in line]
        assert len(branches) == 1, (cls, branches)


def test_code_catching_value_error_catches_a_state_error() -> None:
    with pytest.raises(ValueError, match="bad key"):
        raise StateError("bad key")


def test_not_supported_yet_names_the_parameter() -> None:
    err = NotSupportedYetError("memory_store")
    assert err.parameter == "memory_store"
    assert "'memory_store' is not supported yet" in str(err)
    assert "leave it unset" in str(err)
    assert isinstance(err, ValueError)


def test_tool_not_found_lists_the_available_tools() -> None:
    err = ToolNotFoundException("wether", ["weather", "time"])
    assert err.tool_name == "wether"
    assert err.available == ["weather", "time"]
    assert str(err) == "Tool 'wether' not found. Available tools: weather, time"


def test_tool_not_found_with_no_tools_says_none() -> None:
    assert str(ToolNotFoundException("x", [])) == "Tool 'x' not found. Available tools: (none)"


def test_tool_invocation_error_carries_the_tool_and_call() -> None:
    err = ToolInvocationError("it broke", "weather", "call_1")
    assert str(err) == "it broke"
    assert err.tool_name == "weather"
    assert err.tool_call_id == "call_1"
    assert ToolInvocationError("x", "t").tool_call_id is None


def test_errors_chain_their_cause() -> None:
    try:
        try:
            raise KeyError("k")
        except KeyError as exc:
            raise SerializationError("cannot read") from exc
    except HandrailError as caught:
        assert isinstance(caught.__cause__, KeyError)
    else:  # pragma: no cover
        pytest.fail("not raised")
