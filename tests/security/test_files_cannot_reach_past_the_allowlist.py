"""Data from files (pipeline YAML, snapshots, agent files) must not import or run what the allowlist forbids."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from handrail import Pipeline
from handrail.components.routers import RouteConditionException
from handrail.core.serialization import deserialize_callable, import_object, restricted_imports
from handrail.dataclasses.state import merge_lists
from handrail.errors import PipelineError, SerializationError
from handrail.testing import ScriptedChatGenerator

ROUTER = "handrail.components.routers.conditional_router.ConditionalRouter"


def router_yaml(filter_path: str, marker: Path) -> str:
    return textwrap.dedent(f"""\
        components:
          r:
            type: {ROUTER}
            init_parameters:
              routes:
              - condition: "{{{{ ('os.system' | imp)('touch {marker}') == 0 }}}}"
                output: '{{{{ value }}}}'
                output_name: done
                output_type: int
              custom_filters: {{imp: {filter_path}}}
        connections: []
        """)


def test_a_handrail_function_that_imports_by_name_is_refused_as_a_filter(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    with pytest.raises(SerializationError, match="handrail's own functions are not callables a file may name"):
        Pipeline.loads(router_yaml("handrail.core.serialization.import_object", marker))
    assert not marker.exists()


def test_a_filter_of_an_allowed_module_cannot_import_past_the_allowlist_while_rendering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "myfilters.py").write_text(
        "from handrail.core.serialization import import_object\n\n\ndef imp(path):\n    return import_object(path)\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    marker = tmp_path / "PWNED"
    pipeline = Pipeline.loads(router_yaml("myfilters.imp", marker), allowed_modules=["myfilters"])
    with pytest.raises(PipelineError, match=r"Refusing to import 'os\.system'") as info:
        pipeline.run({"r": {"value": 1}})
    assert isinstance(info.value.__cause__, RouteConditionException)
    assert not marker.exists()


def test_the_same_router_built_in_python_is_trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from handrail.components.routers import ConditionalRouter

    route = {"condition": "{{ ('json.dumps' | imp)(value) == '1' }}", "output": "{{ value }}",
             "output_name": "done", "output_type": int}  # fmt: skip
    router = ConditionalRouter([route], custom_filters={"imp": import_object})
    assert router.run(value=1) == {"done": 1}


@pytest.mark.parametrize("path", ["handrail.cli.__main__.X", "handrail.cli.__main__"])
def test_a_main_module_is_never_imported(path: str) -> None:
    with pytest.raises(SerializationError, match="'__main__' module runs a program"):
        import_object(path)  # importing it would run the CLI and raise SystemExit
    with restricted_imports(()), pytest.raises(SerializationError, match="__main__"):
        import_object(path)


def test_only_marked_handrail_functions_may_be_named_as_callables_in_files() -> None:
    with restricted_imports(()):
        assert deserialize_callable("handrail.dataclasses.state.merge_lists") is merge_lists
        with pytest.raises(SerializationError, match="not callables a file may name"):
            deserialize_callable("handrail.core._files.atomic_write")
    assert callable(deserialize_callable("handrail.core._files.atomic_write"))  # Python callers are trusted


def test_a_scripted_exception_must_name_an_exception_class_before_anything_is_called(tmp_path: Path) -> None:
    target = tmp_path / "created-by-a-file"
    data = {
        "type": "handrail.testing.ScriptedChatGenerator",
        "init_parameters": {"replies": [{"exception": "handrail.stores.open_snapshot_store", "text": str(target)}]},
    }
    with pytest.raises(SerializationError, match="not an exception class"):
        ScriptedChatGenerator.from_dict(json.loads(json.dumps(data)))
    assert not target.exists()


def test_a_file_cannot_make_a_handrail_function_a_tool_but_the_builtin_tools_round_trip(tmp_path: Path) -> None:
    from handrail.components.agents import Agent
    from handrail.dataclasses import ChatMessage, ToolCall
    from handrail.tools.builtin import calculator, search

    step = ChatMessage.from_assistant(tool_calls=[ToolCall("calculator", {"expression": "2*3"}, "c1")])
    pipeline = Pipeline()
    pipeline.add_component(
        "a",
        Agent(
            chat_generator=ScriptedChatGenerator([step, ChatMessage.from_assistant("6")]), tools=[calculator, search]
        ),
    )
    text = pipeline.dumps()
    result = Pipeline.loads(text).run({"a": {"messages": [ChatMessage.from_user("x")]}})
    assert result["a"]["messages"][2].tool_call_result.result == "6"

    marker = tmp_path / "BUILT"
    gadget = text.replace("handrail.tools.builtin.calculator.calculate", "handrail.core.serialization.object_from_dict")
    assert gadget != text
    with pytest.raises(SerializationError, match="object_from_dict' as a callable named in a file"):
        Pipeline.loads(gadget)
    assert not marker.exists()


def test_a_file_cannot_make_a_handrail_function_a_function_hook() -> None:
    from handrail.hooks import FunctionHook

    data = {"type": "handrail.hooks.function_hook.FunctionHook",
            "init_parameters": {"function": "handrail.core._files.atomic_write"}}  # fmt: skip
    with restricted_imports(()), pytest.raises(SerializationError, match="atomic_write' as a callable named in a file"):
        FunctionHook.from_dict(data)


def test_a_recorded_result_in_a_snapshot_file_is_decoded_under_its_allowlist_when_resumed(tmp_path: Path) -> None:
    from handrail.components.agents import Agent
    from handrail.dataclasses import ChatMessage, ToolCall
    from handrail.dataclasses.breakpoints import HITLBreakpointException
    from handrail.dataclasses.decisions import ToolExecutionDecision
    from handrail.dataclasses.snapshot import load_snapshot
    from handrail.errors import SnapshotError
    from handrail.human_in_the_loop import BreakpointConfirmationStrategy
    from handrail.human_in_the_loop.snapshots import record_decision
    from handrail.tools.builtin import calculator, search

    calls = [ToolCall("search", {"query": "x"}, "c1"), ToolCall("calculator", {"expression": "1+1"}, "c2")]
    replies = [ChatMessage.from_assistant(tool_calls=calls), ChatMessage.from_assistant("done")]
    agent = Agent(chat_generator=ScriptedChatGenerator(replies), tools=[search, calculator],
                  confirmation_strategies={"calculator": BreakpointConfirmationStrategy(str(tmp_path))})  # fmt: skip
    with pytest.raises(HITLBreakpointException) as paused:
        agent.run([ChatMessage.from_user("go")])
    path = Path(paused.value.snapshot_file_path)
    data = json.loads(path.read_text())
    marker = tmp_path / "BUILT"
    data["ledger"]["c1"]["result"]["value"] = {
        "$type": "object", "class": "handrail.core.pipeline.Pipeline",
        "data": {"components": {"x": {"type": "subprocess.Popen", "init_parameters": {"args": ["touch", str(marker)]}}},
                 "connections": []},
    }  # fmt: skip
    path.write_text(json.dumps(data))
    record_decision(path, ToolExecutionDecision("calculator", True, "c2"))
    with pytest.raises(SnapshotError, match=r"Refusing to import 'subprocess\.Popen'"):
        agent.run([], snapshot=load_snapshot(path))
    assert not marker.exists()


def test_a_file_cannot_carry_a_regular_expression_that_backtracks_for_hours() -> None:
    from handrail.hooks import RedactionHook
    from handrail.tools import Tool

    hook = {"type": "handrail.hooks.redaction.RedactionHook", "init_parameters": {"patterns": ["(a+)+$"]}}
    tool = {
        "type": "handrail.tools.tool.Tool",
        "init_parameters": {
            "name": "calc", "description": "Calculate.", "function": "handrail.tools.builtin.calculator.calculate",
            "parameters": {"type": "object",
                           "properties": {"expression": {"type": "string", "pattern": r"^(\w+\s?)*$"}}},
        },
    }  # fmt: skip
    with restricted_imports(()):
        with pytest.raises(SerializationError, match=r"patterns\[0\]: the pattern '\(a\+\)\+\$' repeats a group"):
            RedactionHook.from_dict(hook)
        with pytest.raises(SerializationError, match=r"properties\.expression: the pattern"):
            Tool.from_dict(tool)
        assert RedactionHook.from_dict({**hook, "init_parameters": {"patterns": [r"sk-[A-Za-z0-9]{20,}"]}})
    assert RedactionHook(patterns=["(a+)+$"]).patterns == ["(a+)+$"]  # written in Python: the caller's own


def test_an_object_reexported_under_handrail_but_defined_elsewhere_is_refused_in_a_readable_sentence() -> None:
    from handrail.core.serialization import import_object
    from handrail.errors import SerializationError

    with pytest.raises(SerializationError) as caught:
        import_object("handrail.tools.tool.dataclass", allowed_modules=())  # dataclasses.dataclass, imported there
    assert str(caught.value).startswith(
        "Refusing to import 'handrail.tools.tool.dataclass': it is defined in 'dataclasses', which is not in the "
        "allowlist"
    )
