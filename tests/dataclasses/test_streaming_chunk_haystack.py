"""StreamingChunk takes Haystack 2.19's fields (component_info, reasoning) in its order, and reads its dicts."""

from __future__ import annotations

from typing import Any

import pytest

from handrail import Pipeline, component
from handrail.dataclasses import ComponentInfo, ReasoningContent, StreamingChunk, ToolCallDelta
from handrail.errors import ConfigurationError, SerializationError

# Written by Haystack 2.19: StreamingChunk(...).to_dict() for a tool-call chunk and a reasoning chunk.
HAYSTACK_DICTS: list[dict[str, Any]] = [
    {
        "content": "",
        "meta": {"model": "m"},
        "component_info": {"type": "x.Gen", "name": "llm"},
        "index": 1,
        "tool_calls": [{"index": 1, "tool_name": "add", "arguments": '{"a": 1}', "id": "c1"}],
        "tool_call_result": None,
        "start": True,
        "finish_reason": None,
        "reasoning": None,
    },
    {
        "content": "",
        "meta": {},
        "component_info": None,
        "index": 0,
        "tool_calls": None,
        "tool_call_result": None,
        "start": False,
        "finish_reason": None,
        "reasoning": {"reasoning_text": "think", "extra": {}},
    },
]


@pytest.mark.parametrize("data", HAYSTACK_DICTS, ids=["tool call", "reasoning"])
def test_haystack_s_chunk_dicts_load_and_write_back_the_same(data: dict[str, Any]) -> None:
    chunk = StreamingChunk.from_dict(data)
    assert chunk.to_dict() == data


def test_the_fields_are_in_haystack_s_order() -> None:
    info = ComponentInfo(type="x.Gen", name="llm")
    chunk = StreamingChunk("hi", {"model": "m"}, info, 0)  # content, meta, component_info, index
    assert (chunk.component_info, chunk.index) == (info, 0)
    assert chunk.tool_calls is None and chunk.reasoning is None


def test_reasoning_needs_an_index_as_tool_calls_do() -> None:
    with pytest.raises(ConfigurationError, match="'index' is required"):
        StreamingChunk(reasoning=ReasoningContent("think"))
    delta = ToolCallDelta(index=0, tool_name="add")
    assert StreamingChunk(tool_calls=[delta], index=0).tool_calls == [delta]


def test_component_info_names_the_component_and_its_pipeline_name() -> None:
    @component
    class Gen:
        @component.output_types(text=str)
        def run(self, text: str) -> dict[str, Any]:
            return {"text": text}

    alone = Gen()
    assert ComponentInfo.from_component(alone) == ComponentInfo(type=f"{Gen.__module__}.{Gen.__qualname__}")
    pipeline = Pipeline()
    inside = Gen()
    pipeline.add_component("llm", inside)
    assert ComponentInfo.from_component(inside).name == "llm"


@pytest.mark.parametrize(
    "data",
    [{"content": "x", "colour": "red"}, {"component_info": {"name": "no type"}}, {"tool_calls": [{"nope": 1}]}],
    ids=["unknown key", "component_info without type", "bad delta"],
)
def test_a_bad_chunk_dict_is_refused_naming_the_problem(data: dict[str, Any]) -> None:
    with pytest.raises(SerializationError):
        StreamingChunk.from_dict(data)
