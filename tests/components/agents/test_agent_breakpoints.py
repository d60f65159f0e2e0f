"""Debugging breakpoints: stop before the model call or a tool step, snapshot, resume where it stopped."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from handrail.components.agents import Agent, State
from handrail.dataclasses import ChatMessage
from handrail.dataclasses.breakpoints import AgentBreakpoint, Breakpoint, BreakpointException, ToolBreakpoint
from handrail.dataclasses.snapshot import load_snapshot
from handrail.errors import ConfigurationError, SnapshotDriftError, SnapshotUnavailableError
from handrail.hooks import hook
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.cases._helpers import asst, user

CALLS: list[tuple[str, int]] = []


def add(a: int, b: int) -> int:
    """Add two numbers."""
    CALLS.append(("add", a + b))
    return a + b


def mul(a: int, b: int) -> int:
    """Multiply two numbers."""
    CALLS.append(("mul", a * b))
    return a * b


def _replies() -> list[ChatMessage]:
    return [
        asst(calls=[("c1", "add", {"a": 1, "b": 2})]),
        asst(calls=[("c2", "mul", {"a": 3, "b": 4}), ("c3", "add", {"a": 5, "b": 6})]),
        asst("The answers are 3, 12 and 11."),
    ]


def _agent(replies: list[ChatMessage] | None = None, **kwargs: Any) -> Agent:
    tools = [create_tool_from_function(add), create_tool_from_function(mul)]
    return Agent(chat_generator=ScriptedChatGenerator(replies or _replies()), tools=tools, **kwargs)


def _texts(messages: list[ChatMessage]) -> list[str]:
    return [json.dumps(m.to_dict(), sort_keys=True) for m in messages]


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    CALLS.clear()


def _uninterrupted() -> dict[str, Any]:
    result = _agent().run([user("go")])
    CALLS.clear()
    return result


def _resume_with_fresh_model(snapshot: Any, used: int, **kwargs: Any) -> dict[str, Any]:
    """Resume on a new Agent whose scripted model continues after the ``used`` replies already given."""
    return _agent(_replies()[used:]).run(messages=[], snapshot=snapshot, **kwargs)


@pytest.mark.parametrize("visit", [0, 1, 2])
def test_break_before_the_model_call_and_resume_gives_the_uninterrupted_history(visit: int, tmp_path: Path) -> None:
    expected = _uninterrupted()
    bp = AgentBreakpoint("math", Breakpoint("chat_generator", visit_count=visit, snapshot_file_path=str(tmp_path)))
    with pytest.raises(BreakpointException) as info:
        _agent().run([user("go")], break_point=bp)
    exc = info.value
    assert exc.snapshot is not None and exc.snapshot.position == "chat_generator"
    assert exc.snapshot.component_visits["chat_generator"] == visit
    assert exc.snapshot_file_path is not None and Path(exc.snapshot_file_path).parent == tmp_path
    name = Path(exc.snapshot_file_path).name  # the run's record: named when created (at its first tool step)
    assert name.startswith("math_") and name.endswith(".json")
    result = _resume_with_fresh_model(load_snapshot(exc.snapshot_file_path), visit)
    assert _texts(result["messages"]) == _texts(expected["messages"])
    assert result["tool_call_counts"] == expected["tool_call_counts"]
    assert result["step_count"] == expected["step_count"]
    assert sorted(CALLS) == [("add", 3), ("add", 11), ("mul", 12)]  # every tool ran once across both runs


def test_break_resume_break_again_resume(tmp_path: Path) -> None:
    expected = _uninterrupted()
    first = AgentBreakpoint("", Breakpoint(visit_count=0, snapshot_file_path=str(tmp_path)))
    with pytest.raises(BreakpointException) as one:
        _agent().run([user("go")], break_point=first)
    second = AgentBreakpoint("", ToolBreakpoint(visit_count=1, snapshot_file_path=str(tmp_path)))
    with pytest.raises(BreakpointException) as two:
        _agent().run(messages=[], snapshot=load_snapshot(one.value.snapshot_file_path), break_point=second)
    assert two.value.snapshot.position == "tool_invoker"
    assert [c.id for c in two.value.snapshot.pending_tool_calls] == ["c2", "c3"]
    assert CALLS == [("add", 3)]
    result = _resume_with_fresh_model(load_snapshot(two.value.snapshot_file_path), 2)
    assert _texts(result["messages"]) == _texts(expected["messages"])
    assert CALLS == [("add", 3), ("mul", 12), ("add", 11)]


def test_in_memory_breakpoint_writes_nothing_and_resumes_from_the_object(tmp_path: Path) -> None:
    expected = _uninterrupted()
    with pytest.raises(BreakpointException) as info:
        _agent().run([user("go")], break_point=ToolBreakpoint(tool_name="mul"))
    assert info.value.snapshot_file_path is None
    assert list(tmp_path.iterdir()) == []
    assert info.value.snapshot.break_point.break_point.tool_name == "mul"
    result = _resume_with_fresh_model(info.value.snapshot, 2)
    assert _texts(result["messages"]) == _texts(expected["messages"])


def test_tool_breakpoint_visits_count_the_steps_that_call_that_tool() -> None:
    # add is called in steps 1 and 2; its second visit (visit_count=1) is step 2.
    with pytest.raises(BreakpointException) as info:
        _agent().run([user("go")], break_point=ToolBreakpoint(tool_name="add", visit_count=1))
    assert [c.id for c in info.value.snapshot.pending_tool_calls] == ["c2", "c3"]
    # mul is called once: its visit 1 never comes, so the run finishes.
    CALLS.clear()
    result = _agent().run([user("go")], break_point=ToolBreakpoint(tool_name="mul", visit_count=1))
    assert result["exit_reason"] == "text"


def test_tool_breakpoint_for_an_unknown_tool_is_refused_before_the_model_is_called() -> None:
    agent = _agent()
    with pytest.raises(ConfigurationError, match="Tool 'nope' is not available"):
        agent.run([user("go")], break_point=ToolBreakpoint(tool_name="nope"))
    assert agent.chat_generator.calls == []


@pytest.mark.parametrize(
    "point",
    [
        lambda d: Breakpoint(visit_count=1, snapshot_file_path=d),
        lambda d: ToolBreakpoint(snapshot_file_path=d),
        lambda d: AgentBreakpoint("math", Breakpoint(visit_count=0, snapshot_file_path=d)),
    ],
    ids=["Breakpoint", "ToolBreakpoint", "AgentBreakpoint"],
)
def test_a_file_as_the_snapshot_directory_is_refused_before_the_model_is_called(point: Any, tmp_path: Path) -> None:
    file = tmp_path / "snapshot.json"
    file.write_text("{}")
    agent = _agent()
    with pytest.raises(ConfigurationError, match=rf"snapshot_file_path '{file}' is an existing file: it must be a dir"):
        agent.run([user("go")], break_point=point(str(file)))  # was a FileExistsError at the first write
    assert agent.chat_generator.calls == [] and CALLS == []
    assert file.read_text() == "{}"


def test_a_strategy_directory_that_became_a_file_is_refused_when_the_run_starts(tmp_path: Path) -> None:
    from handrail.human_in_the_loop import BreakpointConfirmationStrategy

    target = tmp_path / "approvals"
    agent = _agent(confirmation_strategies={"add": BreakpointConfirmationStrategy(target)})
    target.write_text("not a directory")  # after the strategy was built
    with pytest.raises(ConfigurationError, match=rf"strategy for 'add' '{target}' is an existing file: it must be"):
        agent.run([user("go")])
    assert agent.chat_generator.calls == [] and CALLS == []


def test_a_resumed_snapshot_cannot_be_resumed_again(tmp_path: Path) -> None:
    bp = Breakpoint(visit_count=1, snapshot_file_path=str(tmp_path))
    with pytest.raises(BreakpointException) as info:
        _agent().run([user("go")], break_point=bp)
    path = info.value.snapshot_file_path
    snap = load_snapshot(path)
    _resume_with_fresh_model(snap, 1)
    with pytest.raises(SnapshotUnavailableError, match=Path(path).stem):
        _resume_with_fresh_model(snap, 1)
    assert json.loads(Path(path).read_text())["status"] == "done"


def test_resuming_against_a_changed_agent_shows_a_diff_unless_drift_is_allowed(tmp_path: Path) -> None:
    with pytest.raises(BreakpointException) as info:
        _agent().run([user("go")], break_point=Breakpoint(visit_count=1, snapshot_file_path=str(tmp_path)))
    snap = load_snapshot(info.value.snapshot_file_path)
    changed = _agent(_replies()[1:], system_prompt="Be terse.")
    with pytest.raises(SnapshotDriftError) as drift:
        changed.run(messages=[], snapshot=snap)
    assert '+  "system_prompt": "Be terse."' in str(drift.value)
    assert changed.chat_generator.calls == []
    result = changed.run(messages=[], snapshot=snap, allow_drift=True)
    assert result["exit_reason"] == "text"


def test_resume_refuses_new_messages_and_state_arguments() -> None:
    with pytest.raises(BreakpointException) as info:
        _agent().run([user("go")], break_point=Breakpoint())
    with pytest.raises(ConfigurationError, match="messages must be empty"):
        _agent().run([user("again")], snapshot=info.value.snapshot)
    with pytest.raises(ConfigurationError, match="system_prompt"):
        _agent().run([], snapshot=info.value.snapshot, system_prompt="x")


def test_hooks_run_at_the_same_points_when_the_run_is_interrupted(tmp_path: Path) -> None:
    counts: dict[str, int] = {}

    def counter(point: str) -> Any:
        @hook
        def count(state: State) -> None:
            counts[point] = counts.get(point, 0) + 1

        return count

    points = ["before_run", "before_llm", "before_tool", "after_tool", "on_exit", "after_run"]
    hooks = {p: [counter(p)] for p in points}
    _agent(hooks=hooks).run([user("go")])
    uninterrupted = dict(counts)
    counts.clear()
    with pytest.raises(BreakpointException) as one:
        _agent(hooks=hooks).run([user("go")], break_point=ToolBreakpoint(visit_count=1))
    with pytest.raises(BreakpointException) as two:
        _agent(_replies()[2:], hooks=hooks).run([], snapshot=one.value.snapshot, break_point=Breakpoint(visit_count=2))
    _agent(_replies()[2:], hooks=hooks).run([], snapshot=two.value.snapshot)
    assert counts == uninterrupted
    assert uninterrupted == {"before_run": 1, "before_llm": 3, "before_tool": 2, "after_tool": 2, "on_exit": 1,
                             "after_run": 1}  # fmt: skip


async def test_async_break_and_resume(tmp_path: Path) -> None:
    expected = _uninterrupted()
    with pytest.raises(BreakpointException) as info:
        await _agent().run_async([user("go")], break_point=ToolBreakpoint(snapshot_file_path=str(tmp_path)))
    result = await _agent(_replies()[1:]).run_async([], snapshot=load_snapshot(info.value.snapshot_file_path))
    assert _texts(result["messages"]) == _texts(expected["messages"])


def test_snapshot_keeps_state_value_types(tmp_path: Path) -> None:
    from datetime import date

    schema = {"when": {"type": date}, "pair": {"type": tuple}, "tags": {"type": set}}
    with pytest.raises(BreakpointException) as info:
        _agent(state_schema=schema).run(
            [user("go")], break_point=Breakpoint(snapshot_file_path=str(tmp_path)),
            when=date(2026, 11, 30), pair=(1, "a"), tags={"x"},
        )  # fmt: skip
    snap = load_snapshot(info.value.snapshot_file_path)
    result = _agent(state_schema=schema).run([], snapshot=dataclasses.replace(snap))
    assert result["when"] == date(2026, 11, 30)
    assert result["pair"] == (1, "a")
    assert result["tags"] == {"x"}
