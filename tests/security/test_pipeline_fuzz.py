"""Pipeline files of wrong shapes and types: each loads, or is refused with a SerializationError or ComponentError.

Hypothesis damages valid pipeline YAML (a chat generator → router → tool invoker pipeline, and one holding an
Agent with tools, a Toolset, State and confirmation strategies) and checks that ``Pipeline.loads`` either
builds the pipeline or raises one of the errors it documents, naming the component; never another exception.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from handrail import Pipeline
from handrail.components.agents import Agent
from handrail.components.routers import ConditionalRouter
from handrail.components.tools import ToolInvoker
from handrail.dataclasses import ChatMessage, StreamingChunk, ToolCall
from handrail.dataclasses.streaming import ToolCallDelta
from handrail.errors import ComponentError, GenerationError, HandrailError, SerializationError
from handrail.hooks import MaxToolCallsHook, RedactionHook, TokenBudgetHook, ToolResultTruncationHook
from handrail.human_in_the_loop import AskOncePolicy, BlockingConfirmationStrategy, SimpleConsoleUI
from handrail.stores import InMemoryChatMessageStore
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool, Toolset, builtin
from tests.security import fuzz_helpers
from tests.security.mutations import mutated, with_huge_ints

ALLOW = ("tests.security.fuzz_helpers",)


def shouting_tool() -> Tool:
    return Tool(
        name="shout",
        description="Capitals.",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        function=fuzz_helpers.shout,
        inputs_from_state={"said": "text"},
        outputs_to_state={"said": {"source": "text", "handler": fuzz_helpers.keep_last}},
        outputs_to_string={"source": "text", "handler": fuzz_helpers.shout},
    )


def router_pipeline() -> dict[str, Any]:
    call = ToolCall(tool_name="calculator", arguments={"expression": "1 + 2"}, id="call_1")
    chunks = [StreamingChunk(content="", index=0, start=True, tool_calls=[ToolCallDelta(0, "calculator", "{}", "c")]),
              StreamingChunk(content="done", finish_reason="stop")]  # fmt: skip
    routes = [
        {"condition": "{{ replies[0].tool_calls | length > 0 }}", "output": "{{ replies }}",
         "output_name": "calls", "output_type": list[ChatMessage]},
        {"condition": "{{ (replies[0].text | shout) or extra }}", "output": ["{{ replies }}", "{{ 1 }}"],
         "output_name": ["answer", "count"], "output_type": [list[ChatMessage], int]},
    ]  # fmt: skip
    pipeline = Pipeline(metadata={"owner": "fuzz"}, max_runs_per_component=5)
    pipeline.add_component("gen", ScriptedChatGenerator([ChatMessage.from_assistant(tool_calls=[call]), chunks,
                                                         GenerationError("scripted")]))  # fmt: skip
    pipeline.add_component(
        "router",
        ConditionalRouter(
            routes, custom_filters={"shout": fuzz_helpers.shout}, unsafe=True, optional_variables=["extra"]
        ),
    )
    pipeline.add_component("invoker", ToolInvoker(tools=[builtin.calculator, shouting_tool()], max_workers=2))
    pipeline.connect("gen.replies", "router.replies")
    pipeline.connect("router.calls", "invoker.messages")
    return pipeline.to_dict()


def agent_pipeline() -> dict[str, Any]:
    strategy = BlockingConfirmationStrategy(confirmation_policy=AskOncePolicy(), confirmation_ui=SimpleConsoleUI())
    agent = Agent(
        chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant("hi", meta={"model": "m"})]),
        tools=[Toolset([builtin.calculator]), builtin.make_search_tool(top_k=2), shouting_tool()],
        system_prompt="Be brief.",
        state_schema={"said": {"type": str, "handler": fuzz_helpers.keep_last}, "notes": {"type": list[str]}},
        exit_conditions=["text", "shout"],
        max_agent_steps=3,
        confirmation_strategies={"calculator": strategy},
        user_prompt="{{ question }}",
        required_variables=["question"],
        hooks={
            "before_llm": [TokenBudgetHook(1000), RedactionHook(["sk-[a-z]+"])],
            "before_tool": [MaxToolCallsHook({"calculator": 2})],
            "after_tool": [ToolResultTruncationHook(200)],
        },
        chat_message_store=InMemoryChatMessageStore(),
    )
    pipeline = Pipeline()
    pipeline.add_component("agent", agent)
    return pipeline.to_dict()


BASES = {"router": router_pipeline(), "agent": agent_pipeline()}

FUZZ = settings(max_examples=150, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])

DAMAGED = st.one_of(*(mutated(base) for base in BASES.values()))


def load(doc: Any, *, as_yaml: bool = True) -> Pipeline | None:
    """Load the document (as YAML text, or as the dict such a file parses to); None when refused as documented.

    A warning a loaded component gives (a router's optional variable that no route reads) is its documented way
    to flag an odd but valid file: it is recorded, not raised as the suite's ``filterwarnings = error`` would.
    """
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        return _load(doc, as_yaml=as_yaml)


def _load(doc: Any, *, as_yaml: bool) -> Pipeline | None:
    try:
        if as_yaml:
            text = with_huge_ints(yaml.dump(doc, Dumper=yaml.CSafeDumper, allow_unicode=True, sort_keys=False))
            return Pipeline.loads(text, allowed_modules=ALLOW)
        return Pipeline.from_dict(doc, allowed_modules=ALLOW)
    except (SerializationError, ComponentError) as exc:
        # A refusal may carry the YAML loader's error (an integer too long to build, at its line), never another.
        assert exc.__cause__ is None or isinstance(exc.__cause__, HandrailError | yaml.YAMLError), repr(exc.__cause__)
        return None


@pytest.mark.parametrize("name", sorted(BASES))
def test_the_base_pipelines_load(name: str) -> None:
    assert load(BASES[name]) is not None


@FUZZ
@given(doc=DAMAGED)
def test_a_damaged_pipeline_loads_or_is_refused_with_a_documented_error(doc: Any) -> None:
    load(doc, as_yaml=False)  # the dict a file parses to: many cases, quickly (YAML parsing is the slow part)


@settings(FUZZ, max_examples=25)
@given(doc=DAMAGED)
def test_a_damaged_pipeline_file_loads_or_is_refused_with_a_documented_error(doc: Any) -> None:
    load(doc)
