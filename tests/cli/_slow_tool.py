"""A tool module for CLI tests that must catch a run mid-call: ``slowtools.wait`` waits until the test says go.

:func:`write_slow_agent` writes it beside the agent file (``--allow-module slowtools``). The tool writes
``started`` beside itself when it starts, then waits for a ``go`` file there; the test sends its signal (or
reads the terminal) while it waits, and never needs a clock.
"""

from __future__ import annotations

from pathlib import Path

from handrail.dataclasses import ChatMessage, ToolCall
from tests.specs.test_agent_spec import scripted_generator_yaml

SLOW_TOOL = '''
import pathlib
import time

HERE = pathlib.Path(__file__).parent


def wait(text: str) -> str:
    """Wait until the test says go, then shout the text."""
    (HERE / "started").write_text("x")
    while not (HERE / "go").exists():
        time.sleep(0.02)
    return text.upper()
'''

REPLIES = [
    ChatMessage.from_assistant(tool_calls=[ToolCall("wait", {"text": "hi"}, "c1")]),
    ChatMessage.from_assistant("It said HI."),
]


def write_slow_agent(tmp_path: Path, replies: list[ChatMessage] | None = None) -> Path:
    """An agent file whose model calls ``wait`` (never asked) then answers.

    ``search`` is there too, always asked: with ``--pause-for-approval`` the run is durable (it has a pausing
    strategy, so its record is written from its first tool call on).
    """
    (tmp_path / "slowtools.py").write_text(SLOW_TOOL, encoding="utf-8")
    path = tmp_path / "agent.yaml"
    path.write_text(scripted_generator_yaml(replies or REPLIES) + "\ntools: [slowtools.wait, search]\n"
                    "confirmation:\n  wait: never\n  search: always\n", encoding="utf-8")  # fmt: skip
    return path
