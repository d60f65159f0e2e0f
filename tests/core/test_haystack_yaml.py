"""load_haystack and the Haystack envelope: files written by Haystack 2.19 (tests/fixtures/haystack/) load and run."""

from __future__ import annotations

import copy
import importlib
import json
import re
import traceback
from pathlib import Path
from typing import Any

import pytest
import yaml

from handrail import Pipeline
from handrail.components.agents import Agent
from handrail.components.generators.chat import OpenAIChatGenerator
from handrail.components.routers import ConditionalRouter
from handrail.components.tools import ToolInvoker
from handrail.core import HAYSTACK_TYPES, Secret, load_haystack
from handrail.core.haystack_yaml import translate_haystack
from handrail.core.serialization import haystack_to_handrail
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.errors import SerializationError
from handrail.human_in_the_loop import (
    AlwaysAskPolicy,
    BlockingConfirmationStrategy,
    BreakpointConfirmationStrategy,
    NeverAskPolicy,
    SimpleConsoleUI,
)
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool, Toolset
from handrail.tools.utils import deserialize_tools
from tests.components.generators._openai_server import RecordedServer, recorded

HERE = Path(__file__).parents[1] / "fixtures" / "haystack"
USER = ("hs_user_tools",)


@pytest.fixture(autouse=True)
def _user_module_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HERE))  # the user's module the files name: hs_user_tools.get_weather


def _tools_json() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HERE / "tools.json").read_text(encoding="utf-8"))
    return data


# ---------------------------------------------------------------- the table


def test_every_entry_of_the_table_names_an_importable_handrail_object() -> None:
    for source, target in HAYSTACK_TYPES.items():
        assert source.split(".")[0] in ("haystack", "haystack_experimental"), source
        module, _, name = target.rpartition(".")
        assert target.startswith("handrail."), target
        assert callable(getattr(importlib.import_module(module), name)), target


def test_the_table_maps_every_type_the_fixtures_name() -> None:
    texts = [p.read_text(encoding="utf-8") for p in sorted(HERE.glob("*.yaml"))] + [(HERE / "tools.json").read_text()]
    for text in texts:
        translated = json.dumps(translate_haystack(yaml.safe_load(text)))
        assert "haystack." not in translated and "haystack_experimental." not in translated


def test_a_path_outside_haystack_is_left_alone_and_an_unmapped_one_is_named() -> None:
    assert haystack_to_handrail("myapp.tools.Weather") == "myapp.tools.Weather"
    assert haystack_to_handrail("haystack.tools.tool.Tool") == "handrail.tools.tool.Tool"
    with pytest.raises(SerializationError, match=r"'haystack\.components\.embedders\.X' is a Haystack type"):
        haystack_to_handrail("haystack.components.embedders.X")


# ---------------------------------------------------------------- the {type, data} envelope


def test_tool_from_dict_reads_haystacks_envelope() -> None:
    data = _tools_json()["tool"]
    before = copy.deepcopy(data)
    tool = Tool.from_dict(data)
    assert data == before
    assert tool.name == "weather" and tool.parameters["required"] == ["city"]
    assert tool.invoke(city="Oslo") == {"temp": "4°C", "humidity": "40%"}
    assert Tool.from_dict(tool.to_dict()) == tool


def test_toolset_and_tool_lists_read_haystacks_envelope() -> None:
    data = _tools_json()
    toolset = Toolset.from_dict(data["toolset"])
    assert [t.name for t in toolset] == ["weather", "add"]
    assert toolset[1].invoke(a=2, b=3) == 5
    listed = deserialize_tools(data["list"])
    assert isinstance(listed, list) and [t.name for t in listed] == ["weather", "add"]  # type: ignore[union-attr]
    nested = deserialize_tools(data["toolset"])
    assert isinstance(nested, Toolset) and len(nested) == 2


def test_a_tool_envelope_without_parameters_is_named() -> None:
    with pytest.raises(SerializationError, match=r"no 'init_parameters' \(or Haystack's 'data'\)"):
        Tool.from_dict({"type": "haystack.tools.tool.Tool"})


def test_agent_and_tool_invoker_from_dict_read_haystacks_tools() -> None:
    agent_data = yaml.safe_load((HERE / "agent.yaml").read_text(encoding="utf-8"))
    agent = Agent.from_dict(agent_data)
    assert isinstance(agent.tools, Toolset) and [t.name for t in agent.tools] == ["weather", "add"]
    assert isinstance(agent.chat_generator, OpenAIChatGenerator)
    pipeline = yaml.safe_load((HERE / "tool_invoker_pipeline.yaml").read_text(encoding="utf-8"))
    invoker = ToolInvoker.from_dict(pipeline["components"]["tool_invoker"])
    assert [t.name for t in invoker.tools] == ["weather"]  # type: ignore[union-attr]
    assert invoker.max_workers == 4 and invoker.raise_on_failure is True


# ---------------------------------------------------------------- load_haystack


def test_the_tool_invoker_pipeline_loads_and_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    pipeline = load_haystack(HERE / "tool_invoker_pipeline.yaml", allowed_modules=USER)
    assert isinstance(pipeline, Pipeline)
    generator = pipeline.get_component("generator")
    assert isinstance(generator, OpenAIChatGenerator)
    assert generator.api_key == Secret.from_env_var("OPENAI_API_KEY", strict=False)  # the secret stays an env var
    assert isinstance(pipeline.get_component("router"), ConditionalRouter)
    server = RecordedServer(recorded("completion_tool_call_oslo.json"))
    generator.http_client = server.generator().http_client  # the transport is faked; nothing else changes

    result = pipeline.run({"generator": {"messages": [ChatMessage.from_user("Weather in Oslo?")]}})

    (message,) = result["tool_invoker"]["tool_messages"]
    assert message.tool_call_result.origin.arguments == {"city": "Oslo"}
    assert json.loads(message.tool_call_result.result) == {"temp": "4°C", "humidity": "40%"}
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-env"
    assert [t["function"]["name"] for t in server.bodies[0]["tools"]] == ["weather"]


def test_an_agent_file_loads_and_runs_on_a_scripted_model() -> None:
    agent = load_haystack((HERE / "agent.yaml").read_text(encoding="utf-8"), allowed_modules=USER)
    assert isinstance(agent, Agent)
    assert agent.system_prompt == "You are a helpful assistant." and agent.max_agent_steps == 5
    assert agent.state_schema is not None and agent.state_schema["last_city"]["type"] is str
    agent.chat_generator = ScriptedChatGenerator(
        [
            ChatMessage.from_assistant(tool_calls=[ToolCall("add", {"a": 2, "b": 3}, id="c1")]),
            ChatMessage.from_assistant("2 + 3 = 5"),
        ]
    )

    result = agent.run([ChatMessage.from_user("What is 2 + 3?")])

    assert result["last_message"].text == "2 + 3 = 5"
    assert [m.tool_call_result.result for m in result["messages"] if m.tool_call_result] == ["5"]


def test_an_agent_pipeline_with_experimental_confirmation_strategies_loads_and_runs() -> None:
    pipeline = load_haystack(HERE / "agent_pipeline_confirmation.yaml", allowed_modules=USER)
    agent = pipeline.get_component("agent")
    strategies = agent.confirmation_strategies
    assert set(strategies) == {"weather", "add"}
    assert isinstance(strategies["weather"], BlockingConfirmationStrategy)
    assert isinstance(strategies["weather"].confirmation_policy, AlwaysAskPolicy)
    assert isinstance(strategies["add"].confirmation_policy, NeverAskPolicy)
    assert isinstance(strategies["add"].confirmation_ui, SimpleConsoleUI)
    agent.chat_generator = ScriptedChatGenerator(
        [
            ChatMessage.from_assistant(tool_calls=[ToolCall("add", {"a": 1, "b": 1}, id="c1")]),
            ChatMessage.from_assistant("2"),
        ]
    )

    result = pipeline.run({"agent": {"messages": [ChatMessage.from_user("1 + 1?")]}})

    assert result["agent"]["last_message"].text == "2"  # NeverAskPolicy: ran without asking


def test_a_breakpoint_confirmation_strategy_loads() -> None:
    agent = load_haystack(HERE / "agent_breakpoint_confirmation.yaml", allowed_modules=USER)
    strategy = agent.confirmation_strategies["weather"]
    assert isinstance(strategy, BreakpointConfirmationStrategy)
    assert strategy.snapshot_file_path == "snapshots"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d["init_parameters"]["tools"]["data"]["tools"][0]["data"].update(function=5),
         "tools.tools[0].function"),
        (lambda d: d["init_parameters"]["state_schema"]["last_city"].update(handler=7), "state_schema['last_city']"),
        (lambda d: d["init_parameters"].update(tools=5), "tools"),
    ],
)  # fmt: skip
def test_an_agent_file_with_a_field_of_the_wrong_type_names_the_field_and_no_private_class(
    change: Any, field: str
) -> None:
    data = yaml.safe_load((HERE / "agent.yaml").read_text(encoding="utf-8"))
    change(data)
    with pytest.raises(SerializationError) as caught:
        load_haystack(yaml.safe_dump(data), allowed_modules=USER)
    shown = "".join(traceback.format_exception_only(caught.value))
    assert type(caught.value) is SerializationError
    assert "_FieldError" not in str(caught.value) and "_FieldError" not in shown  # was ...serialization._FieldError
    assert shown.startswith("handrail.errors.SerializationError: ")
    assert field in str(caught.value)


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ((HERE / "agent.yaml").read_text(encoding="utf-8") + "  tools: [\n", "agent"),
        ((HERE / "tool_invoker_pipeline.yaml").read_text(encoding="utf-8") + "metadata: {\n", "pipeline"),
        ("type: haystack.components.builders.prompt_builder.PromptBuilder\ninit_parameters: {\n", "PromptBuilder"),
        ("init_parameters: [\n", "Haystack"),
    ],
    ids=["agent", "pipeline", "another type", "neither"],
)
def test_yaml_that_does_not_parse_is_named_for_what_it_holds(text: str, what: str) -> None:
    with pytest.raises(SerializationError, match=rf"^Cannot read the {what} YAML: "):
        load_haystack(text, allowed_modules=USER)  # an agent file was "Cannot read the pipeline YAML"


def test_an_agent_file_that_does_not_parse_is_named_an_agent_when_read_from_its_path(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text((HERE / "agent.yaml").read_text(encoding="utf-8").replace("max_agent_steps: 5", "max: [5"))
    with pytest.raises(SerializationError, match=r"^Cannot read the agent YAML: "):
        load_haystack(path, allowed_modules=USER)


def test_the_user_module_must_be_allowed() -> None:
    with pytest.raises(SerializationError, match=r"hs_user_tools\.get_weather.*not in the allowlist"):
        load_haystack(HERE / "agent.yaml")


def test_an_unmapped_type_is_named_with_its_place_before_anything_is_built() -> None:
    data = yaml.safe_load((HERE / "tool_invoker_pipeline.yaml").read_text(encoding="utf-8"))
    data["components"]["tool_invoker"]["init_parameters"]["tools"][0]["data"]["function"] = "no_such_module.f"
    data["components"]["router"]["type"] = "haystack.components.routers.metadata_router.MetadataRouter"
    data["components"]["generator"]["init_parameters"]["streaming_callback"] = (
        "haystack.components.generators.utils.no_such_callback"
    )
    with pytest.raises(SerializationError) as caught:
        load_haystack(data, allowed_modules=(*USER, "no_such_module"))
    message = str(caught.value)
    assert "'haystack.components.routers.metadata_router.MetadataRouter' (at components.router.type)" in message
    assert "no_such_callback' (at components.generator.init_parameters.streaming_callback)" in message
    assert "no_such_module" not in message  # refused before any import was tried


def test_free_text_that_mentions_haystack_is_not_translated() -> None:
    data = yaml.safe_load((HERE / "agent.yaml").read_text(encoding="utf-8"))
    data["init_parameters"]["system_prompt"] = "You know haystack.tools and haystack.dataclasses.ChatMessage well."
    agent = load_haystack(data, allowed_modules=USER)
    assert agent.system_prompt == "You know haystack.tools and haystack.dataclasses.ChatMessage well."


def test_a_file_with_neither_components_nor_type_is_refused() -> None:
    with pytest.raises(SerializationError, match="neither"):
        load_haystack("metadata: {}\n")
    with pytest.raises(SerializationError, match="must hold a mapping"):
        load_haystack("- a\n- b\n")


def test_the_docs_table_is_the_table() -> None:
    page = (Path(__file__).parents[2] / "docs" / "haystack.md").read_text(encoding="utf-8")
    section = page.split("## Loading Haystack YAML", 1)[1]
    rows = dict(re.findall(r"^\| `([\w.]+)` \| `([\w.]+)` \|$", section, re.MULTILINE))
    assert rows == dict(HAYSTACK_TYPES)


def test_agent_from_dict_reads_haystack_experimental_strategies() -> None:
    data = yaml.safe_load((HERE / "agent_breakpoint_confirmation.yaml").read_text(encoding="utf-8"))
    agent = Agent.from_dict(data)  # no load_haystack: the nested haystack_experimental types map on their own
    assert isinstance(agent.confirmation_strategies["weather"], BreakpointConfirmationStrategy)
    assert [t.name for t in agent.tools] == ["weather"]  # type: ignore[union-attr]


def test_builders_super_components_and_pipeline_tools_saved_by_haystack_load_and_run() -> None:
    pipeline = load_haystack(HERE / "builders_pipeline.yaml")
    call = ToolCall(tool_name="greeter", arguments={"name": "Bo"}, id="c1")
    result = pipeline.run(
        {"greet": {"who": "Ada"}, "invoker": {"messages": [ChatMessage.from_assistant(tool_calls=[call])]}}
    )
    assert result["chat"]["prompt"] == [ChatMessage.from_user("Say: Hello Ada!")]
    (message,) = result["invoker"]["tool_messages"]
    assert message.tool_call_result.result == '{"text": "Hello Bo!"}'  # the PipelineTool ran its own pipeline


def test_a_path_given_as_text_is_read_as_the_file() -> None:
    path = HERE / "builders_pipeline.yaml"
    assert sorted(load_haystack(str(path)).to_dict()["components"]) == ["chat", "greet", "invoker"]
    with pytest.raises(SerializationError, match="no such file"):
        load_haystack(str(HERE / "missing.yaml"))


def test_print_streaming_chunk_is_mapped() -> None:
    from handrail.components.generators.utils import print_streaming_chunk

    data = yaml.safe_load((HERE / "tool_invoker_pipeline.yaml").read_text(encoding="utf-8"))
    data["components"]["tool_invoker"]["init_parameters"]["streaming_callback"] = (
        "haystack.components.generators.utils.print_streaming_chunk"
    )
    pipeline = load_haystack(data, allowed_modules=USER)
    assert pipeline.get_component("tool_invoker").streaming_callback is print_streaming_chunk
