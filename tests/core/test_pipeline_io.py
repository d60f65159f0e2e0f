"""Pipeline written out: to_dict / from_dict, YAML (dumps / loads) through the allowlist, and the Mermaid drawing."""

from __future__ import annotations

import copy
import re
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml

from handrail.core.component import component
from handrail.core.pipeline import Pipeline
from handrail.errors import ComponentError, HandrailError, SerializationError
from tests.core.test_pipeline import Counter, Greeter, LoopStart, Threshold, Upper, loop_pipeline

ALLOW = ("tests.core",)


@component
class Opaque:
    """Holds an object its default to_dict cannot write."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    @component.output_types(text=str)
    def run(self, text: str) -> dict[str, Any]:
        return {"text": text}


def expected_dict() -> dict[str, Any]:
    return {
        "metadata": {"owner": "team"},
        "max_runs_per_component": 7,
        "components": {
            "start": {"type": "tests.core.test_pipeline.LoopStart", "init_parameters": {}},
            "counter": {"type": "tests.core.test_pipeline.Counter", "init_parameters": {}},
            "threshold": {"type": "tests.core.test_pipeline.Threshold", "init_parameters": {"limit": 3}},
        },
        "connections": [
            {"sender": "start.value", "receiver": "counter.value"},
            {"sender": "counter.value", "receiver": "threshold.value"},
            {"sender": "threshold.below", "receiver": "start.feedback"},
        ],
    }


def sample() -> Pipeline:
    pipeline = loop_pipeline(limit=3, max_runs=7)
    pipeline.metadata["owner"] = "team"
    return pipeline


def test_to_dict_has_the_documented_shape() -> None:
    assert sample().to_dict() == expected_dict()


def test_from_dict_round_trips_and_runs_the_same() -> None:
    data = expected_dict()
    frozen = copy.deepcopy(data)
    rebuilt = Pipeline.from_dict(data, allowed_modules=ALLOW)
    assert data == frozen  # not modified
    assert rebuilt.to_dict() == data
    assert isinstance(rebuilt.get_component("threshold"), Threshold)
    assert rebuilt.max_runs_per_component == 7 and rebuilt.metadata == {"owner": "team"}
    assert rebuilt.run({"value": 0}) == sample().run({"value": 0}) == {"threshold": {"above": 3}}


def test_yaml_round_trip() -> None:
    text = sample().dumps()
    assert yaml.safe_load(text) == expected_dict()
    assert text.index("metadata") < text.index("components") < text.index("connections")  # keys keep their order
    assert Pipeline.loads(text, allowed_modules=ALLOW).to_dict() == expected_dict()


def test_a_type_outside_the_allowlist_is_refused_naming_the_component() -> None:
    with pytest.raises(SerializationError) as caught:
        Pipeline.loads(sample().dumps())  # tests.core is not allowed: only handrail is
    message = str(caught.value)
    assert "'start'" in message and "tests.core.test_pipeline.LoopStart" in message and "allowlist" in message


def test_an_unknown_yaml_type_names_the_component() -> None:
    text = """
components:
  parser:
    type: handrail.components.nowhere.Parser
    init_parameters: {}
connections: []
"""
    with pytest.raises(SerializationError, match=r"'parser' of type 'handrail.components.nowhere.Parser'"):
        Pipeline.loads(text)


def test_a_type_that_is_not_a_component_is_refused() -> None:
    data = {"components": {"plain": {"type": "tests.core.test_pipeline.Plain", "init_parameters": {}}}}
    with pytest.raises(SerializationError, match=r"component 'plain' of type '.*Plain': .*is not a component class"):
        Pipeline.from_dict(data, allowed_modules=ALLOW)  # refused before the class is called


@pytest.mark.parametrize("allowed", [(), ("click",)])
def test_a_type_naming_no_class_is_refused_naming_the_component(allowed: tuple[str, ...]) -> None:
    text = "components:\n  cli:\n    type: handrail.cli.main\n    init_parameters: {}\n"
    with pytest.raises(SerializationError, match=r"pipeline component 'cli' of type 'handrail\.cli\.main'"):
        Pipeline.loads(text, allowed_modules=allowed)


def test_bad_init_parameters_name_the_component() -> None:
    data = expected_dict()
    data["components"]["threshold"]["init_parameters"] = {"limit": 3, "colour": "red"}
    with pytest.raises(SerializationError, match=r"'threshold' of type 'tests.core.test_pipeline.Threshold'.*colour"):
        Pipeline.from_dict(data, allowed_modules=ALLOW)


def test_a_connection_to_an_unknown_socket_names_it() -> None:
    data = expected_dict()
    data["connections"][0]["receiver"] = "counter.amount"
    with pytest.raises(ComponentError, match=r"'counter' \(Counter\) has no input socket 'amount'"):
        Pipeline.from_dict(data, allowed_modules=ALLOW)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("components: [", "Cannot read the pipeline YAML"),
        ("- a\n- b\n", "must be a mapping"),
        ("components: {}\nextra: 1\n", r"Unknown pipeline keys \['extra'\]"),
        ("components: []\n", "'components' must be a mapping"),
        ("components:\n  a: 5\n", "component 'a' must be a mapping with a 'type'"),
        ("connections: {a: b}\n", "'connections' must be a list"),
        ("connections: [{sender: a.x}]\n", "connection must be"),
        ("max_runs_per_component: many\n", "must be an integer"),
        ("!!python/object/apply:os.system ['true']\n", "Cannot read the pipeline YAML"),
    ],
)
def test_malformed_yaml_is_refused(text: str, match: str) -> None:
    with pytest.raises(SerializationError, match=match):
        Pipeline.loads(text)


def test_a_component_that_cannot_be_serialized_is_named() -> None:
    pipeline = Pipeline()
    pipeline.add_component("opaque", Opaque(handle=object()))
    with pytest.raises(SerializationError, match="pipeline component 'opaque'"):
        pipeline.to_dict()


def test_metadata_yaml_cannot_represent_is_reported() -> None:
    pipeline = Pipeline(metadata={"when": object()})
    with pytest.raises(SerializationError, match="its metadata"):
        pipeline.dumps()


def drawn() -> Pipeline:
    pipeline = Pipeline()
    pipeline.add_component("upper", Upper())
    pipeline.add_component("greeter", Greeter())
    pipeline.add_component("counter", Counter())
    pipeline.add_component("start", LoopStart())
    pipeline.connect("upper.text", "greeter.title")
    pipeline.connect("counter.value", "start.value")
    return pipeline


def test_show_draws_components_sockets_and_types_as_mermaid() -> None:
    text = drawn().show()
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    assert '    c0["<b>upper</b><br/><small>Upper</small>"]' in lines
    assert '    c0 -. "text → title: str" .-> c1' in lines  # optional input: dotted
    assert '    c2 -- "value → value: int" --> c3' in lines  # mandatory input: solid
    assert '    pipeline_input([input]) -- "name: str" --> c1' in lines
    assert not any("step: int" in line for line in lines)  # optional unconnected inputs are not drawn
    assert '    c1 -- "text: str" --> pipeline_output([output])' in lines
    assert not any(line.startswith("    c0 --") and "pipeline_output" in line for line in lines)  # text is used


def test_show_escapes_what_mermaid_would_misread() -> None:
    pipeline = Pipeline()
    pipeline.add_component('say "hi" <b>', Upper())
    assert "say #quot;hi#quot; #lt;b#gt;" in pipeline.show()


def test_draw_writes_a_local_file_without_touching_the_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("draw() must not open a socket")

    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    pipeline = drawn()
    pipeline.draw(tmp_path / "graph.mmd")
    assert (tmp_path / "graph.mmd").read_text(encoding="utf-8") == pipeline.show()
    pipeline.draw(str(tmp_path / "graph.md"))
    assert (tmp_path / "graph.md").read_text(encoding="utf-8") == f"```mermaid\n{pipeline.show()}```\n"


def test_from_dict_called_from_python_trusts_the_paths_but_loads_does_not() -> None:
    rebuilt = Pipeline.from_dict(expected_dict())  # Python callers trust the dotted paths
    assert rebuilt.run({"value": 0}) == {"threshold": {"above": 3}}
    with pytest.raises(SerializationError, match="allowlist"):
        Pipeline.from_dict(expected_dict(), allowed_modules=())  # an explicit allowlist still applies


def test_an_agent_pause_inside_a_pipeline_reaches_the_caller_unwrapped() -> None:
    from handrail.components.agents import Agent
    from handrail.dataclasses import ChatMessage
    from handrail.dataclasses.breakpoints import Breakpoint, BreakpointException
    from handrail.testing import ScriptedChatGenerator

    pipeline = Pipeline()
    pipeline.add_component("agent", Agent(chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant("x")])))
    with pytest.raises(BreakpointException):
        pipeline.run({"agent": {"messages": [ChatMessage.from_user("hi")], "break_point": Breakpoint()}})


# ---- wrong types anywhere in a pipeline file (issue 14, item 10) ------------------------------------------

INVOKER_WITH_A_TOOL = """
components:
  invoker:
    type: handrail.components.tools.tool_invoker.ToolInvoker
    init_parameters:
      tools:
      - type: handrail.tools.tool.Tool
        init_parameters:
          name: calculator
          description: Arithmetic.
          parameters: {type: object, properties: {expression: {type: string}}}
          function: handrail.tools.builtin.calculator.calculate
          outputs_to_state: OUTPUTS
connections: []
"""

ROUTER = """
components:
  router:
    type: handrail.components.routers.conditional_router.ConditionalRouter
    init_parameters:
      routes:
      - {condition: '{{ true }}', output: '{{ value }}', output_name: out, output_type: int}
      custom_filters: FILTERS
connections: []
"""


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (INVOKER_WITH_A_TOOL.replace("OUTPUTS", "oops"), "'invoker' of .*outputs_to_state must be a dict, got str"),
        (INVOKER_WITH_A_TOOL.replace("OUTPUTS", "[1]"), "'invoker' of .*outputs_to_state must be a dict, got list"),
        (INVOKER_WITH_A_TOOL.replace("          outputs_to_state: OUTPUTS\n", "          nom: x\n"),
         "'invoker' of type .*unknown init parameters \\['nom'\\]"),
        (ROUTER.replace("FILTERS", "oops"), "'router' of type .*custom_filters must map filter names to callables"),
        (ROUTER.replace("FILTERS", "{}").replace("routes:\n", "optional_variables: 3\n      routes:\n"),
         "'router' of type .*optional_variables must be a list of names, got 3"),
        ("max_runs_per_component: 0\n", "'max_runs_per_component' must be an integer ≥ 1, got 0"),
    ],
)  # fmt: skip
def test_a_value_of_the_wrong_type_is_refused_naming_the_component_and_field(text: str, fragment: str) -> None:
    with pytest.raises(SerializationError, match=fragment) as caught:
        Pipeline.loads(text)
    assert caught.value.__cause__ is None or isinstance(caught.value.__cause__, HandrailError)


@component
class Brittle:
    """Rebuilt by a from_dict that fails as user code can (an AttributeError on a value of the wrong type)."""

    def __init__(self, size: int) -> None:
        self.size = size

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Brittle:
        return cls(size=data["init_parameters"]["size"].bit_length())

    @component.output_types(size=int)
    def run(self) -> dict[str, Any]:
        return {"size": self.size}


def test_whatever_a_components_from_dict_raises_is_a_serialization_error_naming_it() -> None:
    data = {"components": {"b": {"type": f"{__name__}.Brittle", "init_parameters": {"size": "big"}}}}
    with pytest.raises(SerializationError) as caught:
        Pipeline.from_dict(data, allowed_modules=ALLOW)
    assert str(caught.value) == (
        f"Cannot load pipeline component 'b' of type '{__name__}.Brittle': AttributeError: 'str' object has no "
        f"attribute 'bit_length'"
    )
    assert isinstance(caught.value.__cause__, AttributeError)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (ROUTER.replace("FILTERS", "{f: 5}"), "'router' of type .*: custom_filters['f']: Cannot import 5"),
        (ROUTER.replace("FILTERS", "{f: null}"), "'router' of type .*: custom_filters['f']: Cannot import None"),
        (ROUTER.replace("FILTERS", "{}").replace("output_type: int", "output_type: 'list['"),
         "'router' of type .*: routes[0].output_type: Cannot import 'list['"),
        (ROUTER.replace("FILTERS", "{}").replace("output_type: int", "output_type: [int, 'list[']"),
         "'router' of type .*: routes[0].output_type[1]: Cannot import 'list['"),
        (INVOKER_WITH_A_TOOL.replace("OUTPUTS", "{a: {handler: 5}}"),
         "'invoker' of type .*: tools[0].outputs_to_state['a'].handler: Cannot import 5"),
        (INVOKER_WITH_A_TOOL.replace("OUTPUTS", "{source: x, handler: 5}"),
         "'invoker' of type .*: tools[0].outputs_to_state.handler: Cannot import 5"),
        (INVOKER_WITH_A_TOOL.replace("OUTPUTS", "null").replace("handrail.tools.builtin.calculator.calculate", "5"),
         "'invoker' of type .*: tools[0].function: Cannot import 5"),
    ],
)  # fmt: skip
def test_a_path_or_type_that_cannot_be_read_names_its_field(text: str, fragment: str) -> None:
    with pytest.raises(SerializationError) as caught:
        Pipeline.loads(text)
    assert re.search(re.escape(fragment).replace(r"\.\*", ".*"), str(caught.value)), str(caught.value)


@component
class Exits:
    """A component whose constructor calls sys.exit(), as a user's class may."""

    def __init__(self, code: int = 7) -> None:
        raise SystemExit(code)

    @component.output_types(out=int)
    def run(self) -> dict[str, Any]:
        return {"out": 0}


@component
class Interrupted:
    """A component whose constructor is interrupted by Ctrl-C."""

    def __init__(self) -> None:
        raise KeyboardInterrupt

    @component.output_types(out=int)
    def run(self) -> dict[str, Any]:
        return {"out": 0}


def test_a_constructor_that_exits_is_a_serialization_error_naming_the_component_but_ctrl_c_passes() -> None:
    data = {"components": {"quits": {"type": f"{__name__}.Exits", "init_parameters": {"code": 7}}}}
    with pytest.raises(SerializationError) as caught:
        Pipeline.from_dict(data, allowed_modules=ALLOW)
    assert str(caught.value) == f"Cannot load pipeline component 'quits' of type '{__name__}.Exits': SystemExit: 7"
    assert isinstance(caught.value.__cause__, SystemExit)
    with pytest.raises(KeyboardInterrupt):
        data = {"components": {"k": {"type": f"{__name__}.Interrupted", "init_parameters": {}}}}
        Pipeline.from_dict(data, allowed_modules=ALLOW)


@component
class Settings:
    """A component with scalar settings, rebuilt by the default from_dict."""

    def __init__(self, limit: int = 1, ratio: float = 0.5, label: str | None = None) -> None:
        self.limit, self.ratio, self.label = limit, ratio, label

    @component.output_types(text=str)
    def run(self, text: str) -> dict[str, Any]:
        return {"text": text}


def _one(kind: str, params: str) -> str:
    return f"components:\n  c:\n    type: {kind}\n    init_parameters: {params}\nconnections: []\n"


SETTINGS = "tests.core.test_pipeline_io.Settings"
ROUTE = "routes: [{condition: '{{ true }}', output: '{{ value }}', output_name: out, output_type: int}]"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (_one("handrail.components.routers.conditional_router.ConditionalRouter", f"{{{ROUTE}, unsafe: 'false'}}"),
         "'c' of .*'unsafe': expected true or false, got a string \\('false'\\)"),
        (_one("handrail.components.routers.conditional_router.ConditionalRouter", f"{{{ROUTE}, unsafe: '0'}}"),
         "'c' of .*'unsafe': expected true or false, got a string \\('0'\\)"),
        (_one("handrail.components.tools.tool_invoker.ToolInvoker", "{tools: [], raise_on_failure: 'false'}"),
         "'c' of .*'raise_on_failure': expected true or false, got a string"),
        (_one("handrail.components.agents.agent.Agent",
              "{chat_generator: {type: handrail.testing.scripted.ScriptedChatGenerator,"
              " init_parameters: {replies: []}}, raise_on_tool_invocation_failure: 'no'}"),
         "'c' of .*'raise_on_tool_invocation_failure': expected true or false, got a string"),
        (_one(SETTINGS, "{limit: '3'}"), "'c' of .*'limit': expected an integer, got a string"),
        (_one(SETTINGS, "{limit: true}"), "'c' of .*'limit': expected an integer, got a boolean"),
        (_one(SETTINGS, "{label: [a]}"), "'c' of .*'label': expected a string or null, got a list"),
        (_one(SETTINGS, "{ratio: 'x'}"), "'c' of .*'ratio': expected a number, got a string"),
    ],
)  # fmt: skip
def test_a_scalar_setting_of_the_wrong_type_is_refused_naming_the_component_and_field(text: str, fragment: str) -> None:
    with pytest.raises(SerializationError, match=fragment):
        Pipeline.loads(text, allowed_modules=("handrail.", "tests.core"))


def test_scalar_settings_of_the_right_type_load() -> None:
    loaded = Pipeline.loads(_one(SETTINGS, "{limit: 3, ratio: 2, label: null}"), allowed_modules=("tests.core",))
    settings = loaded.get_component("c")
    assert (settings.limit, settings.ratio, settings.label) == (3, 2, None)
