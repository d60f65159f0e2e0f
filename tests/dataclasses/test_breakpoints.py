from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import handrail.dataclasses as dc
from handrail.dataclasses import (
    AgentBreakpoint,
    AgentSnapshot,
    Breakpoint,
    BreakpointException,
    ChatMessage,
    HITLBreakpointException,
    ToolBreakpoint,
)
from handrail.dataclasses import breakpoints as breakpoints_module
from handrail.errors import ConfigurationError, HandrailError


def test_exports() -> None:
    for name in breakpoints_module.__all__:
        assert getattr(dc, name) is getattr(breakpoints_module, name)


# ---- Breakpoint / ToolBreakpoint -------------------------------------------------------------------------


def test_defaults() -> None:
    assert Breakpoint() == Breakpoint("chat_generator", 0, None)
    tool = ToolBreakpoint()
    assert (tool.component_name, tool.tool_name, tool.visit_count, tool.snapshot_file_path) == (
        "tool_invoker",
        None,
        0,
        None,
    )


def test_an_agent_breakpoint_is_for_the_chat_generator_only() -> None:
    # As in Haystack 2.19: a Breakpoint may name any Pipeline component; inside an AgentBreakpoint it must
    # name the chat generator.
    assert Breakpoint(component_name="tool_invoker").component_name == "tool_invoker"
    with pytest.raises(
        ConfigurationError,
        match="If the break_point is a Breakpoint, it must have the component_name 'chat_generator'",
    ):
        AgentBreakpoint("agent", Breakpoint(component_name="tool_invoker"))


def test_a_tool_breakpoint_is_for_the_tool_invoker_only() -> None:
    with pytest.raises(
        ConfigurationError,
        match="If the break_point is a ToolBreakpoint, it must have the component_name 'tool_invoker'",
    ):
        ToolBreakpoint(component_name="chat_generator")


@pytest.mark.parametrize("count", [-1, True, 1.0, "1", None])
def test_visit_count_must_be_an_int_at_least_zero(count: Any) -> None:
    with pytest.raises(ConfigurationError, match="visit_count"):
        Breakpoint(visit_count=count)
    with pytest.raises(ConfigurationError, match="visit_count"):
        ToolBreakpoint(visit_count=count)


def test_snapshot_file_path_is_stored_as_a_string(tmp_path: Path) -> None:
    assert Breakpoint(snapshot_file_path=tmp_path).snapshot_file_path == str(tmp_path)
    assert ToolBreakpoint(snapshot_file_path=tmp_path).snapshot_file_path == str(tmp_path)
    assert Breakpoint(snapshot_file_path="runs").snapshot_file_path == "runs"


@pytest.mark.parametrize("value", [b"/tmp", 5, ["a"], "", "  "])
def test_snapshot_file_path_must_be_a_path(value: Any) -> None:
    with pytest.raises(ConfigurationError, match="snapshot_file_path"):
        Breakpoint(snapshot_file_path=value)


def test_tool_name_must_be_a_string() -> None:
    with pytest.raises(ConfigurationError, match="tool_name"):
        ToolBreakpoint(tool_name=3)  # type: ignore[arg-type]


def test_breakpoints_are_frozen_hashable_and_replaceable() -> None:
    bp = ToolBreakpoint(tool_name="t", visit_count=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        bp.visit_count = 2  # type: ignore[misc]
    assert hash(bp) == hash(ToolBreakpoint(tool_name="t", visit_count=1))
    moved = dataclasses.replace(bp, visit_count=3)
    assert type(moved) is ToolBreakpoint
    assert (moved.tool_name, moved.visit_count) == ("t", 3)
    with pytest.raises(ConfigurationError):
        dataclasses.replace(bp, visit_count=-1)


def test_a_breakpoint_never_equals_a_tool_breakpoint() -> None:
    assert Breakpoint() != ToolBreakpoint()


@pytest.mark.parametrize(
    "bp",
    [
        Breakpoint(),
        Breakpoint(visit_count=2, snapshot_file_path="/tmp/snaps"),
        ToolBreakpoint(),
        ToolBreakpoint(tool_name="weather", visit_count=1, snapshot_file_path="d"),
    ],
)
def test_to_dict_from_dict_round_trip(bp: Breakpoint) -> None:
    data = bp.to_dict()
    assert Breakpoint.from_dict(data) == bp
    assert type(bp).from_dict(data) == bp


def test_to_dict_shape() -> None:
    assert ToolBreakpoint(tool_name="t").to_dict() == {
        "component_name": "tool_invoker",
        "visit_count": 0,
        "snapshot_file_path": None,
        "tool_name": "t",
    }


def test_from_dict_picks_a_tool_breakpoint_when_tool_name_is_a_key() -> None:
    bp = Breakpoint.from_dict({"component_name": "tool_invoker", "tool_name": None})
    assert type(bp) is ToolBreakpoint
    assert type(Breakpoint.from_dict({"component_name": "chat_generator"})) is Breakpoint


@pytest.mark.parametrize(
    "data", [{"component_name": "chat_generator", "extra": 1}, ["chat_generator"], {"visit_count": -2}]
)
def test_from_dict_refuses_bad_data(data: Any) -> None:
    with pytest.raises(ConfigurationError):
        Breakpoint.from_dict(data)


def test_from_dict_does_not_modify_its_input() -> None:
    data = {"component_name": "tool_invoker", "tool_name": "t", "visit_count": 1, "snapshot_file_path": None}
    before = dict(data)
    ToolBreakpoint.from_dict(data)
    assert data == before


# ---- AgentBreakpoint -------------------------------------------------------------------------------------


def test_agent_breakpoint_round_trip() -> None:
    bp = AgentBreakpoint("helper", ToolBreakpoint(tool_name="t"))
    assert bp.to_dict() == {"agent_name": "helper", "break_point": bp.break_point.to_dict()}
    back = AgentBreakpoint.from_dict(bp.to_dict())
    assert back == bp
    assert type(back.break_point) is ToolBreakpoint


@pytest.mark.parametrize(
    ("args", "expected"),
    [(("helper", "chat_generator"), "break_point"), ((None, Breakpoint()), "agent_name")],
)
def test_agent_breakpoint_validates(args: tuple[Any, Any], expected: str) -> None:
    with pytest.raises(ConfigurationError, match=expected):
        AgentBreakpoint(*args)


@pytest.mark.parametrize("data", [{"agent_name": "a"}, {"break_point": {}}, {"agent_name": "a", "break_point": 1}])
def test_agent_breakpoint_from_dict_refuses_bad_data(data: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        AgentBreakpoint.from_dict(data)


# ---- exceptions ------------------------------------------------------------------------------------------


def make_snapshot() -> AgentSnapshot:
    return AgentSnapshot(
        messages=[ChatMessage.from_user("hi")],
        state={"step_count": 0},
        component_visits={"chat_generator": 0, "tool_invoker": 0},
        break_point=AgentBreakpoint("helper", Breakpoint()),
        position="chat_generator",
    )


def test_breakpoint_exceptions_are_signals_not_errors() -> None:
    assert not issubclass(BreakpointException, HandrailError)
    assert issubclass(HITLBreakpointException, BreakpointException)


def test_a_bare_breakpoint_exception_is_none_safe() -> None:
    exc = BreakpointException("stopped")
    assert str(exc) == "stopped"
    assert (exc.snapshot, exc.snapshot_file_path, exc.break_point, exc.component, exc.inputs) == (
        None,
        None,
        None,
        None,
        None,
    )


def test_a_breakpoint_exception_carries_the_snapshot() -> None:
    snap = make_snapshot()
    exc = BreakpointException(
        "stopped", snapshot=snap, snapshot_file_path="/d/s.json", break_point=AgentBreakpoint("a", ToolBreakpoint())
    )
    assert exc.snapshot is snap
    assert exc.snapshot_file_path == "/d/s.json"
    assert exc.component == "tool_invoker"
    assert exc.inputs == snap.messages


def test_the_hitl_exception_fills_the_first_call_id_from_the_list_and_back() -> None:
    message = HITLBreakpointException.confirmation_message("transfer")
    assert message == "Tool execution for 'transfer' requires user confirmation."
    both = HITLBreakpointException(message, tool_name="transfer", tool_call_ids=["c1", "c2"])
    assert (both.tool_call_id, both.tool_call_ids) == ("c1", ["c1", "c2"])
    one = HITLBreakpointException(message, tool_name="transfer", tool_call_id="c9")
    assert (one.tool_call_id, one.tool_call_ids) == ("c9", ["c9"])
    none = HITLBreakpointException(message)
    assert (none.tool_name, none.tool_call_id, none.tool_call_ids) == (None, None, [])


def test_the_hitl_exception_does_not_share_the_callers_list() -> None:
    ids = ["c1"]
    exc = HITLBreakpointException("m", tool_call_ids=ids)
    ids.append("c2")
    assert exc.tool_call_ids == ["c1"]


def test_confirmation_message_with_a_snapshot_path() -> None:
    assert HITLBreakpointException.confirmation_message("t", "/d/s.json") == (
        "Tool execution for 't' requires user confirmation. Snapshot: /d/s.json"
    )


def test_with_snapshot_returns_a_filled_copy_of_the_same_class() -> None:
    snap = make_snapshot()
    original = HITLBreakpointException(
        HITLBreakpointException.confirmation_message("transfer"), tool_name="transfer", tool_call_ids=["c1", "c2"]
    )
    filled = original.with_snapshot(snap, "/d/s.json")
    assert type(filled) is HITLBreakpointException
    assert str(filled) == "Tool execution for 'transfer' requires user confirmation. Snapshot: /d/s.json"
    assert filled.snapshot is snap
    assert filled.snapshot_file_path == "/d/s.json"
    assert filled.break_point == snap.break_point
    assert filled.component == "chat_generator"
    assert (filled.tool_name, filled.tool_call_id, filled.tool_call_ids) == ("transfer", "c1", ["c1", "c2"])
    assert original.snapshot is None  # unchanged
    assert str(original) == "Tool execution for 'transfer' requires user confirmation."


def test_with_snapshot_without_a_file_keeps_the_message() -> None:
    snap = make_snapshot()
    bp = AgentBreakpoint("x", ToolBreakpoint())
    filled = BreakpointException("stopped").with_snapshot(snap, None, bp)
    assert str(filled) == "stopped"
    assert filled.break_point is bp
    assert filled.component == "tool_invoker"


def test_tool_breakpoint_binds_haystack_s_positional_order() -> None:
    breakpoint_ = ToolBreakpoint("tool_invoker", 2, None, "add")  # Haystack 2.19's field order
    assert (breakpoint_.visit_count, breakpoint_.snapshot_file_path, breakpoint_.tool_name) == (2, None, "add")
    assert ToolBreakpoint.from_dict(breakpoint_.to_dict()) == breakpoint_
