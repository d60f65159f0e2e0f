"""Structural checks: the loop's rules live in the step machine, and importing the Agent stays light."""

from __future__ import annotations

import ast
import inspect
import json
import subprocess
import sys
from types import ModuleType

import pytest

import handrail.components.agents._context as agent_context
import handrail.components.drivers as drivers
import handrail.components.tools._context as tool_context
import handrail.components.tools._execution as execution

DRIVERS = [drivers, agent_context, tool_context, execution]

# Names that belong to the loop's rules (exit, ids, validation, counters), never to a driver.
FORBIDDEN = (
    "exit_reason",
    "exit_tools",
    "exit_conditions",
    "repair_calls",
    "writable_arguments",
    "arguments_error",
    "parse_arguments",
    "step_count",
    "tool_call_counts",
    "max_agent_steps",
    "finish_reason",
)


def identifiers(module: ModuleType) -> set[str]:
    """Every name, attribute, import, argument and string constant in a module's source."""
    tree = ast.parse(inspect.getsource(module))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.alias):
            found.update(node.name.split("."))
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.add(node.value)
        elif isinstance(node, ast.keyword) and node.arg:
            found.add(node.arg)
    return found


@pytest.mark.parametrize("module", DRIVERS, ids=lambda m: m.__name__)
def test_drivers_hold_no_loop_logic(module: ModuleType) -> None:
    names = identifiers(module)
    source = inspect.getsource(module)
    for word in FORBIDDEN:
        assert word not in names, f"{module.__name__} uses {word!r}"
        assert word not in source, f"{module.__name__} mentions {word!r}"


@pytest.mark.parametrize("module", [drivers, execution], ids=lambda m: m.__name__)
def test_drivers_do_not_import_the_rules(module: ModuleType) -> None:
    tree = ast.parse(inspect.getsource(module))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module is not None}
    assert "handrail.components.tools._step" not in imported
    assert "handrail.components.tools._results" not in imported
    assert "handrail.tools._validation" not in imported


def test_drivers_are_short() -> None:
    # Thin drivers (~20 lines each); a generous ceiling catches a loop creeping in.
    for driver in (drivers.SyncDriver.drive, drivers.AsyncDriver.drive):
        lines = inspect.getsource(driver).splitlines()
        assert len(lines) <= 30, f"{driver.__qualname__} has {len(lines)} lines"


def test_from_handrail_import_agent_stays_light() -> None:
    code = (
        "import json, sys\n"
        "from handrail import Agent\n"
        "assert Agent.__name__ == 'Agent'\n"
        "print(json.dumps(sorted(m for m in ('pydantic', 'jsonschema') if m in sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_running_a_tool_less_agent_stays_light() -> None:
    code = (
        "import json, sys\n"
        "from handrail import Agent, ChatMessage\n"
        "from handrail.testing import ScriptedChatGenerator\n"
        "gen = ScriptedChatGenerator([ChatMessage.from_assistant('hi')])\n"
        "out = Agent(chat_generator=gen).run([ChatMessage.from_user('x')])\n"
        "assert out['exit_reason'] == 'text'\n"
        "print(json.dumps(sorted(m for m in ('pydantic', 'jsonschema') if m in sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_the_run_parameters_are_written_once() -> None:
    # run, run_async and start take the same parameters, which are RunRequest's fields: one list, checked here.
    from handrail.components.agents.agent import _RUN_PARAMETERS, Agent

    for method in (Agent.run, Agent.run_async):
        names = set(inspect.signature(method).parameters) - {"self", "kwargs"}
        assert names == _RUN_PARAMETERS, method.__name__
    assert set(inspect.signature(Agent.start).parameters) - {"self", "run_kwargs", "sync"} <= _RUN_PARAMETERS
