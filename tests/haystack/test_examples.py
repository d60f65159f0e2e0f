"""The Haystack 2.x examples under examples/haystack/ run with only their imports changed.

Each example is Haystack documentation code that builds ``OpenAIChatGenerator()``; it runs in a subprocess against
an OpenAI-compatible server on 127.0.0.1 that answers with scripted replies (``OPENAI_BASE_URL``), so the test sees
what the example printed and what the model was sent.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from tests.haystack._loopback_openai import ScriptedOpenAI, serving, text_reply, tool_call_reply

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "haystack"


def _run(name: str, script: ScriptedOpenAI) -> str:
    with serving(script):
        env = {**os.environ, "OPENAI_API_KEY": "sk-test-not-a-key", "OPENAI_BASE_URL": script.base_url}
        done = subprocess.run(
            [sys.executable, str(EXAMPLES / name)], env=env, capture_output=True, text=True, timeout=120, check=False
        )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_example_differs_from_haystack_in_its_imports_only() -> None:
    names = sorted(p.name for p in EXAMPLES.glob("*.py"))
    assert names == ["agent_with_tools.py", "chat_prompt_builder_pipeline.py", "tool_invoker_pipeline.py"]
    for path in EXAMPLES.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imports = {node.lineno for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)}
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if "handrail" in line and not line.startswith("#"):
                assert number in imports, f"{path.name}:{number} names handrail outside an import: {line}"


def test_agent_with_tools_exits_on_the_calculator_and_fills_the_state() -> None:
    script = ScriptedOpenAI([tool_call_reply("calculator", {"expression": "7 * (4 + 2)"})])
    out = _run("agent_with_tools.py", script)
    assert "Calc Result: 42" in out
    (request,) = script.requests  # exit_conditions=["calculator"]: no second model call
    (offered,) = request["tools"]
    assert offered["function"]["name"] == "calculator"
    assert offered["function"]["parameters"]["required"] == ["expression"]
    assert request["messages"][-1] == {"role": "user", "content": "What is 7 * (4 + 2)?"}


def test_tool_invoker_pipeline_runs_the_weather_tool() -> None:
    script = ScriptedOpenAI([tool_call_reply("weather", {"location": "Berlin"}, call_id="call_w")])
    out = _run("tool_invoker_pipeline.py", script)
    assert "tool_invoker" in out and "tool_messages" in out
    assert "°C" in out and "humidity" in out
    assert "call_w" in out
    assert script.requests[0]["model"] == "gpt-4o-mini"


def test_chat_prompt_builder_pipeline_renders_the_runtime_template() -> None:
    reply = "Berlin is the capital of Germany."
    script = ScriptedOpenAI([text_reply(reply)])
    out = _run("chat_prompt_builder_pipeline.py", script)
    assert reply in out
    (request,) = script.requests
    assert request["messages"] == [
        {"role": "system", "content": "You are an assistant giving information to tourists in English"},
        {"role": "user", "content": "Tell me about Berlin"},
    ]
