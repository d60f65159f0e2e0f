"""Issue 20, item 13: errors name what was wrong and carry the phrase a Haystack user would search for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from handrail import Pipeline, component
from handrail.components.agents import Agent
from handrail.components.builders import PromptBuilder
from handrail.components.routers import ConditionalRouter
from handrail.components.tools import ToolInvoker
from handrail.dataclasses import ChatMessage
from handrail.tools import Tool, Toolset


def _tool(name: str) -> Tool:
    return Tool(name=name, description="d", parameters={"type": "object", "properties": {}}, function=lambda: 1)


@component
class _NoTools:
    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, Any]:
        return {"replies": []}


def _two_named_n() -> None:
    pipeline = Pipeline()
    pipeline.add_component("n", _NoTools())
    pipeline.add_component("n", _NoTools())


def _bad_route_template() -> None:
    ConditionalRouter([{"condition": "{{ x ", "output": "{{ x }}", "output_name": "o", "output_type": str}])


# (what is wrong, the call, Haystack 2.19's key phrase, what else the message must name)
CASES: list[tuple[str, Callable[[], object], str, str]] = [
    (
        "generator without tools",
        lambda: Agent(chat_generator=_NoTools(), tools=[_tool("a")]),
        "does not accept tools",
        "_NoTools",
    ),
    ("builder template", lambda: PromptBuilder("{{ x "), "Invalid template", "PromptBuilder"),
    ("router template", _bad_route_template, "Invalid template", "condition"),
    (
        "required variable",
        lambda: PromptBuilder("{{ x }}", required_variables=["x"]).run(),
        "Missing required input variables",
        "x",
    ),
    ("role", lambda: ChatMessage.from_openai_dict_format({"role": "bad", "content": "x"}), "Unsupported role", "'bad'"),
    ("toolset duplicates", lambda: Toolset([_tool("a"), _tool("a")]), "Duplicate tool names found", "'a'"),
    ("invoker duplicates", lambda: ToolInvoker(tools=[_tool("a"), _tool("a")]), "Duplicate tool names found", "'a'"),
    ("invoker without tools", lambda: ToolInvoker(tools=[]), "ToolInvoker requires at least one tool", ""),
    ("unknown component", lambda: Pipeline().connect("a.x", "b.y"), "not found in the pipeline", "'a'"),
    ("component name taken", _two_named_n, "already exists in this pipeline", "'n'"),
]


@pytest.mark.parametrize(("call", "phrase", "named"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_error_carries_haystack_s_phrase_and_names_the_problem(
    call: Callable[[], object], phrase: str, named: str
) -> None:
    with pytest.raises(ValueError) as caught:  # every one of them is a ValueError in Haystack too
        call()
    assert phrase in str(caught.value)
    assert named in str(caught.value)
