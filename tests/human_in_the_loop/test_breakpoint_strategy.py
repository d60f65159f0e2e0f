from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from handrail.core.serialization import object_from_dict
from handrail.dataclasses.breakpoints import BreakpointException, HITLBreakpointException
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy, ConfirmationStrategy
from handrail.human_in_the_loop.strategies import BreakpointConfirmationStrategy as FromStrategiesModule

CALL: dict[str, Any] = {
    "tool_name": "transfer",
    "tool_description": "Move money.",
    "tool_params": {"amount": 5},
    "tool_call_id": "c1",
}


async def test_run_and_run_async_always_raise_the_hitl_exception(tmp_path: Path) -> None:
    strategy = BreakpointConfirmationStrategy(tmp_path / "approvals")
    for attempt in ("sync", "async"):
        with pytest.raises(HITLBreakpointException) as caught:
            if attempt == "sync":
                strategy.run(**CALL, confirmation_strategy_context={"x": 1}, injected_params={"user": "a"})
            else:
                await strategy.run_async(**CALL, confirmation_strategy_context={"x": 1}, injected_params={})
        exc = caught.value
        assert isinstance(exc, BreakpointException)
        assert str(exc) == "Tool execution for 'transfer' requires user confirmation."
        assert (exc.tool_name, exc.tool_call_id, exc.tool_call_ids) == ("transfer", "c1", ["c1"])
        assert exc.snapshot_file_path is None and exc.snapshot is None


def test_a_call_without_id_has_no_ids() -> None:
    with pytest.raises(HITLBreakpointException) as caught:
        BreakpointConfirmationStrategy("d").run(tool_name="t", tool_description="", tool_params={})
    assert caught.value.tool_call_id is None and caught.value.tool_call_ids == []


def test_it_pauses_runs_and_is_a_confirmation_strategy(tmp_path: Path) -> None:
    strategy = BreakpointConfirmationStrategy(tmp_path)
    assert BreakpointConfirmationStrategy.pauses_run is True
    assert isinstance(strategy, ConfirmationStrategy)
    assert FromStrategiesModule is BreakpointConfirmationStrategy  # Haystack's module path works too


def test_the_directory_is_not_created_at_init(tmp_path: Path) -> None:
    target = tmp_path / "not" / "yet"
    strategy = BreakpointConfirmationStrategy(target)
    assert strategy.snapshot_file_path == str(target)
    assert not target.exists()


def test_a_file_as_the_directory_is_refused_when_built(tmp_path: Path) -> None:
    file = tmp_path / "approvals.json"
    file.write_text("{}")
    with pytest.raises(ConfigurationError) as caught:  # was a raw FileExistsError when the first pause was written
        BreakpointConfirmationStrategy(file)
    assert str(caught.value).startswith(
        f"BreakpointConfirmationStrategy snapshot_file_path '{file}' is an existing file: it must be a directory"
    )
    with pytest.raises(ConfigurationError, match=rf"'{file}/inside' is inside '{file}', which is a file"):
        BreakpointConfirmationStrategy(file / "inside")


def test_to_dict_from_dict_round_trip_without_mutating_the_data(tmp_path: Path) -> None:
    metadata = {"agent_file": "/abs/agent.yaml", "nested": {"k": [1, 2]}}
    strategy = BreakpointConfirmationStrategy(tmp_path, metadata=metadata)
    metadata["nested"]["k"].append(3)  # the strategy holds its own copy
    data = strategy.to_dict()
    assert data == {
        "type": "handrail.human_in_the_loop.breakpoint_strategy.BreakpointConfirmationStrategy",
        "init_parameters": {"snapshot_file_path": str(tmp_path), "metadata": {"agent_file": "/abs/agent.yaml",
                                                                                "nested": {"k": [1, 2]}}},
    }  # fmt: skip
    frozen = copy.deepcopy(data)
    rebuilt = BreakpointConfirmationStrategy.from_dict(data)
    assert data == frozen
    assert rebuilt.to_dict() == data
    generic = object_from_dict(data, allowed_modules=())
    assert isinstance(generic, BreakpointConfirmationStrategy) and generic.metadata == strategy.metadata


def test_default_metadata_is_empty() -> None:
    assert BreakpointConfirmationStrategy("d").to_dict()["init_parameters"] == {
        "snapshot_file_path": "d",
        "metadata": {},
    }


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"type": "x"}, "snapshot_file_path"),
        ({"init_parameters": {}}, "snapshot_file_path"),
        ({"init_parameters": {"snapshot_file_path": "d", "colour": 1}}, "unknown init parameters"),
    ],
)
def test_from_dict_refuses_bad_data(data: dict[str, Any], fragment: str) -> None:
    with pytest.raises(SerializationError, match=fragment):
        BreakpointConfirmationStrategy.from_dict(data)


@pytest.mark.parametrize(
    ("path", "metadata", "error"),
    [
        (None, None, ConfigurationError),
        (3, None, ConfigurationTypeError),
        ("", None, ConfigurationError),
        ("   ", None, ConfigurationError),
        ("d", ["not", "a", "dict"], ConfigurationTypeError),
        ("d", {"when": object()}, ConfigurationError),
        ("d", {"x": float("nan")}, ConfigurationError),
    ],
)
def test_bad_arguments_are_refused(path: Any, metadata: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        BreakpointConfirmationStrategy(path, metadata=metadata)


def test_repr_names_the_directory() -> None:
    assert "snapshot_file_path='approvals'" in repr(BreakpointConfirmationStrategy("approvals"))


def test_a_store_instead_of_a_directory(tmp_path: Path) -> None:
    from handrail.stores import SQLiteSnapshotStore

    url = f"sqlite:///{tmp_path}/approvals.db"
    by_url = BreakpointConfirmationStrategy(snapshot_store=url)
    assert by_url.snapshot_file_path is None
    assert BreakpointConfirmationStrategy.from_dict(by_url.to_dict()).snapshot_store == url
    store = SQLiteSnapshotStore(tmp_path / "a.db")
    again = BreakpointConfirmationStrategy.from_dict(BreakpointConfirmationStrategy(snapshot_store=store).to_dict())
    assert isinstance(again.snapshot_store, SQLiteSnapshotStore)
    with pytest.raises(ConfigurationError, match="exactly one"):
        BreakpointConfirmationStrategy(tmp_path, snapshot_store=url)
    with pytest.raises(ConfigurationTypeError, match="SnapshotStore"):
        BreakpointConfirmationStrategy(snapshot_store=object())


def test_a_store_class_instead_of_a_store_object_is_refused() -> None:
    from handrail.stores import SQLiteSnapshotStore

    with pytest.raises(ConfigurationTypeError, match="snapshot_store is the class 'SQLiteSnapshotStore', not a store"):
        BreakpointConfirmationStrategy(snapshot_store=SQLiteSnapshotStore)
