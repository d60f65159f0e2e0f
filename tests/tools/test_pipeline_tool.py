"""PipelineTool: a Pipeline as one tool (SuperComponent + ComponentTool), through the Agent loop and approval."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

from handrail import Agent, ChatMessage, Pipeline, SuperComponent, Tool, ToolCall, component
from handrail.dataclasses.decisions import ConfirmationUIResult
from handrail.human_in_the_loop import AlwaysAskPolicy, BlockingConfirmationStrategy
from handrail.testing import ScriptedChatGenerator
from handrail.tools import ComponentTool, PipelineTool


@component
class Retrieve:
    def __init__(self, top_k: int = 2) -> None:
        self.top_k = top_k
        self.warm_ups = 0
        self.runs = 0

    def warm_up(self) -> None:
        self.warm_ups += 1

    @component.output_types(documents=list[str])
    def run(self, query: str) -> dict[str, Any]:
        self.runs += 1
        return {"documents": [f"{query} doc {i}" for i in range(self.top_k)]}


@component
class Join:
    @component.output_types(text=str)
    def run(self, documents: list[str], separator: str = "; ") -> dict[str, Any]:
        return {"text": separator.join(documents)}


def search_pipeline(top_k: int = 2) -> Pipeline:
    p = Pipeline()
    p.add_component("retrieve", Retrieve(top_k=top_k))
    p.add_component("join", Join())
    p.connect("retrieve.documents", "join.documents")
    return p


def search_tool(**kwargs: Any) -> PipelineTool:
    return PipelineTool(
        search_pipeline(),
        name="search",
        description="Search the documents.",
        input_mapping={"query": ["retrieve.query"]},
        output_mapping={"join.text": "text", "retrieve.documents": "documents"},
        **kwargs,
    )


class Answers:
    """A ConfirmationUI answering from a list and recording what it was shown."""

    def __init__(self, *answers: ConfirmationUIResult) -> None:
        self.answers = list(answers)
        self.shown: list[dict[str, Any]] = []

    def get_user_confirmation(
        self,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        injected_params: dict[str, Any] | None = None,
    ) -> ConfirmationUIResult:
        self.shown.append({"tool_name": tool_name, "tool_params": tool_params})
        return self.answers.pop(0)


def test_the_constructor_takes_haystacks_parameters() -> None:
    params = inspect.signature(PipelineTool).parameters
    assert list(params)[:10] == [
        "pipeline",
        "name",
        "description",
        "input_mapping",
        "output_mapping",
        "parameters",
        "outputs_to_string",
        "inputs_from_state",
        "outputs_to_state",
        "preview",
    ]
    assert params["pipeline"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert (
        params["name"].default is inspect.Parameter.empty and params["description"].default is inspect.Parameter.empty
    )


def test_the_schema_comes_from_the_mapped_inputs_and_invoke_returns_the_mapped_outputs() -> None:
    t = search_tool()
    assert isinstance(t, ComponentTool) and isinstance(t.component, SuperComponent)
    assert t.parameters == {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
        "description": t.description,  # the tool's own text, not SuperComponent.run's docstring
    }
    assert t.invoke(query="tea") == {"text": "tea doc 0; tea doc 1", "documents": ["tea doc 0", "tea doc 1"]}
    assert asyncio.run(t.invoke_async(query="ink"))["text"] == "ink doc 0; ink doc 1"


def test_default_mappings_expose_every_free_input() -> None:
    t = PipelineTool(search_pipeline(), name="search", description="Search.")
    assert sorted(t.parameters["properties"]) == ["query", "separator"]
    assert t.parameters["required"] == ["query"]
    assert t.invoke(query="q", separator="|") == {"text": "q doc 0|q doc 1"}


def test_a_non_pipeline_is_refused_with_value_error() -> None:
    with pytest.raises(ValueError, match="The 'pipeline' parameter must be an instance of Pipeline"):
        PipelineTool(Join(), name="x", description="x")  # type: ignore[arg-type]


def test_warm_up_warms_the_pipeline_once() -> None:
    t = search_tool()
    t.warm_up()
    t.warm_up()
    assert t.pipeline.get_component("retrieve").warm_ups == 1


def test_round_trip_through_to_dict_and_tool_from_dict() -> None:
    t = search_tool(outputs_to_state={"found": {"source": "documents"}})
    data = t.to_dict()
    assert data["type"] == "handrail.tools.pipeline_tool.PipelineTool"
    params = data["init_parameters"]
    assert params["input_mapping"] == {"query": ["retrieve.query"]}
    assert params["pipeline"]["components"]["retrieve"]["init_parameters"] == {"top_k": 2}
    assert params["is_pipeline_async"] is False
    rebuilt = Tool.from_dict(data)
    assert isinstance(rebuilt, PipelineTool)
    assert rebuilt.to_dict() == data
    assert rebuilt.invoke(query="z")["documents"] == ["z doc 0", "z doc 1"]


def test_an_agent_runs_the_pipeline_tool_after_approval_and_writes_state() -> None:
    ui = Answers(ConfirmationUIResult(action="confirm"))
    call = ToolCall(tool_name="search", arguments={"query": "tea"}, id="c1")
    generator = ScriptedChatGenerator(
        [ChatMessage.from_assistant(tool_calls=[call]), ChatMessage.from_assistant("Found two.")]
    )
    agent = Agent(
        chat_generator=generator,
        tools=[search_tool(outputs_to_state={"found": {"source": "documents"}})],
        state_schema={"found": {"type": list[str]}},
        confirmation_strategies={
            "search": BlockingConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), confirmation_ui=ui)
        },
    )
    result = agent.run([ChatMessage.from_user("Find tea.")])
    assert ui.shown == [{"tool_name": "search", "tool_params": {"query": "tea"}}]
    assert result["found"] == ["tea doc 0", "tea doc 1"]
    assert result["last_message"].text == "Found two."
    generator.assert_complete()


def test_a_rejected_pipeline_tool_call_does_not_run_the_pipeline() -> None:
    ui = Answers(ConfirmationUIResult(action="reject", feedback="not now"))
    call = ToolCall(tool_name="search", arguments={"query": "tea"}, id="c1")
    generator = ScriptedChatGenerator(
        [ChatMessage.from_assistant(tool_calls=[call]), ChatMessage.from_assistant("OK.")]
    )
    tool = search_tool(outputs_to_state={"found": {"source": "documents"}})
    agent = Agent(
        chat_generator=generator,
        tools=[tool],
        state_schema={"found": {"type": list[str]}},
        confirmation_strategies={
            "search": BlockingConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), confirmation_ui=ui)
        },
    )
    result = agent.run([ChatMessage.from_user("Find tea.")])
    tool_result = result["messages"][2].tool_call_result
    assert tool_result.error and "rejected" in tool_result.result and "not now" in tool_result.result
    assert result.get("found") is None
    assert tool.pipeline.get_component("retrieve").runs == 0
