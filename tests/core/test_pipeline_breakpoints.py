"""Pipeline breakpoints and snapshots (Haystack 2.19's Breakpoint / PipelineSnapshot / load_pipeline_snapshot)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from handrail import Pipeline, component
from handrail.components.agents import Agent
from handrail.components.builders import ChatPromptBuilder
from handrail.dataclasses import (
    AgentBreakpoint,
    Breakpoint,
    BreakpointException,
    ChatMessage,
    HITLBreakpointException,
    PipelineSnapshot,
    ToolBreakpoint,
    load_pipeline_snapshot,
)
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.pipeline_snapshot import write_pipeline_snapshot
from handrail.errors import ConfigurationError, ConfigurationTypeError, SnapshotError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.testing import ScriptedChatGenerator, call, reply
from handrail.tools import tool
from tests.core.test_pipeline import loop_pipeline


@component
class Add:
    def __init__(self) -> None:
        self.seen: list[int] = []

    @component.output_types(value=int)
    def run(self, value: int, step: int = 1) -> dict[str, Any]:
        self.seen.append(value)
        return {"value": value + step}


@component
class Collect:
    @component.output_types(texts=list[str])
    def run(self, replies: list[ChatMessage]) -> dict[str, Any]:
        return {"texts": [m.text or "" for m in replies]}


def chain() -> Pipeline:
    pipeline = Pipeline()
    for name in ("a", "b", "c"):
        pipeline.add_component(name, Add())
    pipeline.connect("a", "b")
    pipeline.connect("b", "c")
    return pipeline


def stop(pipeline: Pipeline, data: dict[str, Any], **kwargs: Any) -> BreakpointException:
    with pytest.raises(BreakpointException) as info:
        pipeline.run(data, **kwargs)
    return info.value


def test_a_breakpoint_stops_before_the_component_and_the_snapshot_resumes() -> None:
    pipeline = chain()
    error = stop(pipeline, {"a": {"value": 1}, "c": {"step": 10}}, break_point=Breakpoint("b"))
    assert str(error) == "Breaking at component b at visit count 0"
    assert error.component == "b"
    assert pipeline.get_component("b").seen == []
    snapshot = error.pipeline_snapshot
    assert isinstance(snapshot, PipelineSnapshot)
    assert snapshot.pipeline_state.component_visits == {"a": 1, "b": 0, "c": 0}
    assert snapshot.pipeline_state.inputs == {"b": {"value": 2}}
    assert snapshot.ordered_component_names == ["a", "b", "c"]
    assert error.pipeline_snapshot_file_path is None
    assert pipeline.run({}, pipeline_snapshot=snapshot) == {"c": {"value": 13}}
    assert pipeline.get_component("a").seen == [1]  # a did not run again


def test_visit_count_counts_completed_runs_in_a_loop() -> None:
    pipeline = loop_pipeline(limit=3)
    counter = pipeline.get_component("counter")
    error = stop(pipeline, {"start": {"value": 0}}, break_point=Breakpoint("counter", visit_count=2))
    assert str(error) == "Breaking at component counter at visit count 2"
    snapshot = error.pipeline_snapshot
    assert snapshot is not None
    assert snapshot.pipeline_state.component_visits == {"start": 3, "counter": 2, "threshold": 2}
    runs_before = counter.runs
    full = loop_pipeline(limit=3).run({"start": {"value": 0}})
    assert pipeline.run({}, pipeline_snapshot=snapshot) == full
    assert counter.runs == runs_before + 1


def test_include_outputs_from_and_earlier_outputs_survive_the_resume() -> None:
    pipeline = chain()
    error = stop(pipeline, {"a": {"value": 1}}, include_outputs_from={"a"}, break_point=Breakpoint("c"))
    snapshot = error.pipeline_snapshot
    assert snapshot is not None
    assert snapshot.include_outputs_from == {"a"}
    assert snapshot.pipeline_state.pipeline_outputs == {"a": {"value": 2}}
    again = PipelineSnapshot.from_dict(json.loads(json.dumps(snapshot.to_dict())))
    assert pipeline.run({}, pipeline_snapshot=again) == {"a": {"value": 2}, "c": {"value": 4}}


def test_the_snapshot_file_is_written_and_loads(tmp_path: Path) -> None:
    pipeline = chain()
    error = stop(pipeline, {"a": {"value": 5}}, break_point=Breakpoint("c", snapshot_file_path=tmp_path))
    path = error.pipeline_snapshot_file_path
    assert path is not None and Path(path).parent == tmp_path
    assert Path(path).name.startswith("c_0_") and path in str(error)
    assert os.stat(path).st_mode & 0o777 == 0o600
    loaded = load_pipeline_snapshot(path)
    assert loaded.pipeline_state.inputs == {"c": {"value": 7}}
    assert loaded.break_point == Breakpoint("c", snapshot_file_path=tmp_path)
    assert pipeline.run({}, pipeline_snapshot=loaded) == {"c": {"value": 8}}


@pytest.mark.parametrize(
    ("point", "kind"),
    [
        (lambda d: Breakpoint("c", snapshot_file_path=d), "Breakpoint"),
        (lambda d: AgentBreakpoint("agent", ToolBreakpoint(snapshot_file_path=d)), "ToolBreakpoint"),
    ],
    ids=["Breakpoint", "AgentBreakpoint"],
)
def test_a_file_as_the_snapshot_directory_is_refused_before_anything_runs(
    point: Any, kind: str, tmp_path: Path
) -> None:
    file = tmp_path / "snapshot.json"
    file.write_text("{}")
    pipeline = chain()
    generator = ScriptedChatGenerator([reply("unused")])
    pipeline.add_component("agent", Agent(chat_generator=generator))
    data = {"a": {"value": 5}, "agent": {"messages": [ChatMessage.from_user("hi")]}}
    with pytest.raises(ConfigurationError) as caught:  # was a raw FileExistsError once 'c' was reached
        pipeline.run(data, break_point=point(str(file)))
    assert str(caught.value).startswith(
        f"The break_point's {kind} snapshot_file_path '{file}' is an existing file: it must be a directory"
    )
    assert pipeline.get_component("a").seen == [] and generator.calls == [] and file.read_text() == "{}"


def test_a_snapshot_directory_that_became_a_file_is_refused_when_written(tmp_path: Path) -> None:
    snapshot = stop(chain(), {"a": {"value": 5}}, break_point=Breakpoint("c")).pipeline_snapshot
    assert snapshot is not None
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigurationError, match=r"'.*/file/snaps' is inside '.*/file', which is a file: it must"):
        write_pipeline_snapshot(snapshot, str(tmp_path / "file" / "snaps"))  # was a NotADirectoryError


def test_typed_values_survive_the_file(tmp_path: Path) -> None:
    pipeline = Pipeline()
    pipeline.add_component("prompt", ChatPromptBuilder([ChatMessage.from_user("{{ q }}")], required_variables="*"))
    pipeline.add_component("llm", ScriptedChatGenerator([reply("42")]))
    pipeline.add_component("collect", Collect())
    pipeline.connect("prompt.prompt", "llm.messages")
    pipeline.connect("llm.replies", "collect.replies")
    error = stop(pipeline, {"prompt": {"q": "why?"}}, break_point=Breakpoint("llm", snapshot_file_path=tmp_path))
    assert error.pipeline_snapshot_file_path is not None
    loaded = load_pipeline_snapshot(error.pipeline_snapshot_file_path)
    (message,) = loaded.pipeline_state.inputs["llm"]["messages"]
    assert isinstance(message, ChatMessage) and message.text == "why?"
    assert pipeline.run({}, pipeline_snapshot=loaded) == {"collect": {"texts": ["42"]}}


def test_a_later_visit_breaks_later() -> None:
    pipeline = Pipeline()
    pipeline.add_component("a", Add())
    error = stop(pipeline, {"a": {"value": 1}}, break_point=Breakpoint("a", visit_count=0))
    assert error.pipeline_snapshot is not None
    assert pipeline.run({"a": {"value": 1}}, break_point=Breakpoint("a", visit_count=1)) == {"a": {"value": 2}}


def test_bad_breakpoints_and_snapshots_are_named(tmp_path: Path) -> None:
    pipeline = chain()
    with pytest.raises(ValueError, match="is not a registered component in the pipeline"):
        pipeline.run({"a": {"value": 1}}, break_point=Breakpoint("nope"))
    with pytest.raises(ConfigurationTypeError, match="break_point must be a Breakpoint"):
        pipeline.run({"a": {"value": 1}}, break_point="b")
    snapshot = stop(pipeline, {"a": {"value": 1}}, break_point=Breakpoint("b")).pipeline_snapshot
    with pytest.raises(ConfigurationError, match="cannot be provided at the same time"):
        pipeline.run({}, break_point=Breakpoint("b"), pipeline_snapshot=snapshot)
    other = Pipeline()
    other.add_component("a", Add())
    with pytest.raises(ConfigurationError, match="does not fit this pipeline"):
        other.run({}, pipeline_snapshot=snapshot)
    with pytest.raises(FileNotFoundError, match="File not found"):
        load_pipeline_snapshot(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(SnapshotError, match="Invalid pipeline snapshot from"):
        load_pipeline_snapshot(broken)
    assert snapshot is not None
    data = snapshot.to_dict()
    data["pipeline_state"]["component_visits"] = {"a": 1}
    with pytest.raises(SnapshotError, match="component visits"):
        PipelineSnapshot.from_dict(data)


def test_an_agent_breakpoint_inside_a_pipeline_resumes_through_it() -> None:
    ran: list[str] = []

    @tool
    def lookup(city: str) -> str:
        """Look up the weather."""
        ran.append(city)
        return "sunny"

    generator = ScriptedChatGenerator([reply(call("lookup", {"city": "Oslo"}, "l1")), reply("Sunny.")])
    pipeline = Pipeline()
    pipeline.add_component("agent", Agent(chat_generator=generator, tools=[lookup]))
    pipeline.add_component("collect", Collect())
    pipeline.connect("agent.messages", "collect.replies")
    point = AgentBreakpoint("agent", ToolBreakpoint(tool_name="lookup"))
    error = stop(pipeline, {"agent": {"messages": [ChatMessage.from_user("Weather?")]}}, break_point=point)
    snapshot = error.pipeline_snapshot
    assert snapshot is not None and snapshot.agent_snapshot is not None
    assert snapshot.break_point == point
    assert ran == []
    result = pipeline.run({}, pipeline_snapshot=snapshot)
    assert ran == ["Oslo"]
    assert result["collect"]["texts"][-1] == "Sunny."


def test_an_agent_paused_for_approval_resumes_through_the_pipeline(tmp_path: Path) -> None:
    ran: list[int] = []

    @tool
    def transfer(amount: int) -> str:
        """Send money."""
        ran.append(amount)
        return f"sent {amount}"

    def make_pipeline(replies: list[ChatMessage]) -> Pipeline:
        agent = Agent(
            chat_generator=ScriptedChatGenerator(replies),
            tools=[transfer],
            confirmation_strategies={"transfer": BreakpointConfirmationStrategy(tmp_path)},
        )
        pipeline = Pipeline()
        pipeline.add_component("agent", agent)
        pipeline.add_component("collect", Collect())
        pipeline.connect("agent.messages", "collect.replies")
        return pipeline

    data = {"agent": {"messages": [ChatMessage.from_user("Pay the rent.")]}}
    with pytest.raises(HITLBreakpointException) as info:
        make_pipeline([reply(call("transfer", {"amount": 500}, "c1"))]).run(data)
    paused = info.value
    assert paused.tool_call_ids == ["c1"] and ran == []
    assert paused.pipeline_snapshot is not None and paused.pipeline_snapshot_file_path is not None
    assert Path(paused.pipeline_snapshot_file_path).parent == tmp_path
    snapshot = load_pipeline_snapshot(paused.pipeline_snapshot_file_path)
    assert snapshot.agent_snapshot is not None
    assert [c.id for c in snapshot.agent_snapshot.pending_tool_calls] == ["c1"]
    decision = ToolExecutionDecision("transfer", True, "c1", final_tool_params={"amount": 450})
    decided = dataclasses.replace(
        snapshot,
        agent_snapshot=dataclasses.replace(snapshot.agent_snapshot, tool_execution_decisions=[decision]),
    )
    result = make_pipeline([reply("The rent is paid.")]).run({}, pipeline_snapshot=decided)
    assert ran == [450]
    assert result["collect"]["texts"][-1] == "The rent is paid."


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda d: d["pipeline_state"]["component_visits"].update(b="x"), "component_visits.b"),
        (lambda d: d["pipeline_state"]["component_visits"].update(b=-1), "component_visits.b"),
        (lambda d: d.update(break_point=None), "'break_point' must be a dict"),
        (lambda d: d.update(ordered_component_names="abc"), "ordered_component_names"),
        (lambda d: d.update(pipeline_state=[]), "'pipeline_state' must be a dict"),
    ],
    ids=["visits not a number", "negative visits", "no break point", "names not a list", "state not a dict"],
)
def test_a_hand_edited_snapshot_is_refused_naming_the_field(edit: Any, named: str) -> None:
    pipeline = chain()
    snapshot = stop(pipeline, {"a": {"value": 1}}, break_point=Breakpoint("b")).pipeline_snapshot
    assert snapshot is not None
    data = json.loads(json.dumps(snapshot.to_dict()))
    edit(data)
    with pytest.raises(SnapshotError, match=re.escape(named)):
        PipelineSnapshot.from_dict(data)
    assert pipeline.get_component("b").seen == []  # refused before anything ran
